package parsetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TSSDKVersion is the official TypeScript MCP SDK release the tests drive
// parse-mcp with (npm @modelcontextprotocol/sdk).
const TSSDKVersion = "1.32.2"

// TSSDK installs the TypeScript MCP SDK once per machine (beside Parse
// Server, in the same cache directory) and returns the node binary and the
// node_modules holding it. It skips the test when Node/npm are missing,
// or fails it when PARSE_MCP_TEST_REQUIRE_PARSE_SERVER is set.
func TSSDK(t testing.TB) (node, modules string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping under -short: installs and runs the TypeScript MCP SDK")
	}
	rt, err := Install(context.Background())
	if err != nil {
		if ue, ok := err.(*unavailableError); ok && os.Getenv(EnvRequire) == "" {
			t.Skipf("skipping: no Node.js: %s", ue.msg)
		}
		t.Fatal(err)
	}
	base, err := InstallDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(base), "ts-sdk-"+TSSDKVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	modules = filepath.Join(dir, "node_modules")
	marker := filepath.Join(dir, ".parsetest-installed")
	if _, err := os.Stat(marker); err == nil {
		return rt.Node, modules
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv(EnvRequire) == "" {
			t.Skip("skipping: npm is not in PATH (needed to install the TypeScript MCP SDK)")
		}
		t.Fatal("npm is not in PATH")
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true, "type": "module", "description": "parse-mcp test harness (internal/parsetest)"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact", "@modelcontextprotocol/sdk@"+TSSDKVersion)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install @modelcontextprotocol/sdk@%s in %s: %v\n%s", TSSDKVersion, dir, err, out)
	}
	if err := os.WriteFile(marker, []byte("@modelcontextprotocol/sdk@"+TSSDKVersion+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return rt.Node, modules
}

// RunNode runs a script with node and the given environment added, and
// returns its stdout; a failure shows its stderr.
func RunNode(t testing.TB, node, script string, env ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), env...)
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", filepath.Base(script), err, stderr.String())
	}
	return out
}
