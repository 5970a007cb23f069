package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Target is one release platform.
type Target struct{ GOOS, GOARCH string }

// Targets are the desktop platforms a release covers.
var Targets = []Target{
	{"darwin", "arm64"}, {"darwin", "amd64"},
	{"windows", "amd64"},
	{"linux", "amd64"}, {"linux", "arm64"},
}

func (t Target) String() string { return t.GOOS + "/" + t.GOARCH }

// BinaryName is the released file's name.
func (t Target) BinaryName(version string) string {
	name := fmt.Sprintf("parse-mcp-%s-%s-%s", version, t.GOOS, t.GOARCH)
	if t.GOOS == "windows" {
		name += ".exe"
	}
	return name
}

// Stamp is what --version reports.
type Stamp struct{ Version, Commit string }

// LDFlags strips the symbol table and DWARF (a third of the size; stack
// traces keep their function names and lines) and stamps the version and
// commit that `parse-mcp --version` prints.
func (s Stamp) LDFlags() string {
	return fmt.Sprintf("-s -w -X github.com/parse-mcp/parse-mcp/internal/version.Version=%s -X main.commit=%s", s.Version, s.Commit)
}

// BuildCommand is the go build invocation for a target: static (no cgo —
// the embedded database is FerretDB on modernc's pure-Go SQLite, so the demo
// works in every build), with paths trimmed so the binary names no directory
// of the machine that built it.
func BuildCommand(t Target, tags string, s Stamp, out string) *exec.Cmd {
	args := []string{"build", "-trimpath", "-ldflags", s.LDFlags(), "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "github.com/parse-mcp/parse-mcp")...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOOS=") || strings.HasPrefix(kv, "GOARCH=") || strings.HasPrefix(kv, "CGO_ENABLED=")
	}), "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

// Build compiles one target and reports the time it took.
func Build(t Target, tags string, s Stamp, out string) error {
	start := time.Now()
	if err := BuildCommand(t, tags, s, out).Run(); err != nil {
		return fmt.Errorf("building %s: %w", t, err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "built %-13s %5.1f MB in %s\n", t, float64(fi.Size())/1e6, time.Since(start).Round(time.Second))
	return nil
}

// WriteChecksums writes dir/SHA256SUMS for every file in dir, in the format
// `sha256sum -c` reads.
func WriteChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range entries {
		if e.IsDir() || e.Name() == "SHA256SUMS" {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, e.Name())
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
