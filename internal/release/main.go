// Command release builds parse-mcp for every desktop platform and packs the
// MCP bundles (`make release`; README "Install in Claude Desktop" and
// docs/release.md "Release builds"):
//
//	dist/parse-mcp-VERSION-OS-ARCH[.exe]    static binaries (CGO_ENABLED=0, -trimpath, stamped)
//	dist/parse-mcp-VERSION-PLATFORM.mcpb    one MCP bundle per desktop platform
//	dist/server.json                        the MCP Registry entry for those bundles
//	dist/SHA256SUMS                         checksums of all of the above
//
// The bundles are packed, validated and inspected with the official MCPB CLI
// (npm @anthropic-ai/mcpb, run through npx); the manifest's tool and prompt
// lists come from the host binary itself, over MCP, so they cannot drift.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/version"
)

// mcpbCLI is the official bundle CLI, pinned.
const mcpbCLI = "@anthropic-ai/mcpb@2.1.2"

func main() {
	out := flag.String("out", "dist", "output directory (emptied first)")
	tags := flag.String("tags", "", "build tags (the Makefile's BUILD_TAGS)")
	version := flag.String("version", version.Version, "version to stamp and release")
	only := flag.String("targets", "", "comma-separated GOOS/GOARCH subset (default: every release target)")
	writeIcon := flag.String("write-icon", "", "only redraw the bundle icon into this file")
	flag.Parse()
	if *writeIcon != "" {
		if err := WriteIcon(*writeIcon); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *tags, *version, *only); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(out, tags, version, only string) error {
	targets := Targets
	if only != "" {
		targets = nil
		for t := range strings.SplitSeq(only, ",") {
			goos, goarch, ok := strings.Cut(strings.TrimSpace(t), "/")
			if !ok {
				return fmt.Errorf("-targets: %q is not GOOS/GOARCH", t)
			}
			targets = append(targets, Target{goos, goarch})
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	stamp := Stamp{Version: version, Commit: gitCommit()}
	fmt.Fprintf(os.Stderr, "release %s (commit %s)\n", stamp.Version, stamp.Commit)

	built := map[Target]string{}
	for _, t := range targets {
		path := filepath.Join(out, t.BinaryName(version))
		if err := Build(t, tags, stamp, path); err != nil {
			return err
		}
		built[t] = path
	}
	host, ok := built[Target{runtime.GOOS, runtime.GOARCH}]
	if !ok {
		return fmt.Errorf("the host platform %s/%s is not among the targets: its binary lists the tools and prompts for the manifest", runtime.GOOS, runtime.GOARCH)
	}
	lists, err := Describe(host)
	if err != nil {
		return fmt.Errorf("listing tools and prompts from %s: %w", host, err)
	}

	var bundles []string
	for _, p := range BundlePlatforms(built) {
		stage := filepath.Join(out, "bundle", p.Name)
		if err := Stage(stage, p, built, lists, version); err != nil {
			return err
		}
		file := filepath.Join(out, p.FileName(version))
		if err := Pack(stage, file); err != nil {
			return err
		}
		bundles = append(bundles, file)
	}
	if err := os.RemoveAll(filepath.Join(out, "bundle")); err != nil {
		return err
	}
	sj, err := RegistryEntry(version, bundles)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "server.json"), sj, 0o644); err != nil {
		return err
	}
	return WriteChecksums(out)
}

// gitCommit is the checked-out revision, "-dirty" when the tree has changes.
func gitCommit() string {
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "-dirty"
	}
	return c
}

// Pack validates the staged bundle directory, packs it into file and prints
// what the CLI reads back from the packed file, all with the official CLI.
func Pack(stage, file string) error {
	for _, args := range [][]string{
		{"validate", filepath.Join(stage, "manifest.json")},
		{"pack", stage, file},
		{"info", file},
	} {
		cmd := exec.Command("npx", append([]string{"--yes", mcpbCLI}, args...)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("mcpb %s: %w", args[0], err)
		}
	}
	return nil
}
