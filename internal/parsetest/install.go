package parsetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ParseServerVersion is the npm parse-server release the harness installs.
const ParseServerVersion = "9.10.0"

// Environment variables read by the harness.
const (
	// EnvDir overrides the install directory (default: the user cache
	// directory's parse-mcp/parse-server-<version>).
	EnvDir = "PARSE_MCP_TEST_PARSE_SERVER_DIR"
	// EnvRequire turns "Node/npm not available" from a skip into a test
	// failure; CI sets it so the Parse Server tests can never silently skip.
	EnvRequire = "PARSE_MCP_TEST_REQUIRE_PARSE_SERVER"
	// EnvBundledNode forces the npm Node 22 binary even when the system node
	// would do (to exercise that path).
	EnvBundledNode = "PARSE_MCP_TEST_BUNDLED_NODE"
)

// Runtime is an installed parse-server and the node binary that runs it.
type Runtime struct {
	Node    string // path of the node executable
	Modules string // node_modules holding parse-server
}

// unavailableError means the machine cannot provide Node/npm: tests skip.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }

var (
	installMu  sync.Mutex
	installed  *Runtime
	installErr error
)

// Install makes sure parse-server (and, when the system node is too old or
// missing, a Node 22 binary from npm) is installed in the cache directory,
// and returns where. It runs npm at most once per machine: a file lock
// serialises concurrent test processes, and a marker file records a finished
// install. A failed install is not cached across processes.
func Install(ctx context.Context) (*Runtime, error) {
	installMu.Lock()
	defer installMu.Unlock()
	if installed != nil || installErr != nil {
		return installed, installErr
	}
	installed, installErr = install(ctx)
	return installed, installErr
}

// InstallDir is where parse-server is (or will be) installed.
func InstallDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory (%v): set %s", err, EnvDir)
	}
	return filepath.Join(base, "parse-mcp", "parse-server-"+ParseServerVersion), nil
}

func install(ctx context.Context) (*Runtime, error) {
	dir, err := InstallDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return nil, fmt.Errorf("locking %s.lock: %w", dir, err)
	}
	defer unlock()

	modules := filepath.Join(dir, "node_modules")
	marker := filepath.Join(dir, ".parsetest-installed")
	var packages []string
	if _, err := os.Stat(marker); err != nil {
		packages = append(packages, "parse-server@"+ParseServerVersion)
	}

	node, sysErr := systemNode()
	if os.Getenv(EnvBundledNode) != "" {
		node, sysErr = "", errors.New(EnvBundledNode+" is set")
	}
	var bundled string
	if sysErr != nil {
		pkg, ok := bundledNodePackage()
		if !ok {
			return nil, &unavailableError{fmt.Sprintf("Parse Server needs Node.js 20.19+, 22.13+ or 24.11+ (%v) and npm has no Node binary for %s/%s", sysErr, runtime.GOOS, runtime.GOARCH)}
		}
		bundled = filepath.Join(modules, pkg, "bin", "node")
		if _, err := os.Stat(bundled); err != nil {
			packages = append(packages, pkg+"@22")
		}
		node = bundled
	}

	if len(packages) > 0 {
		npm, err := exec.LookPath("npm")
		if err != nil {
			why := "npm is not in PATH"
			if sysErr != nil {
				why = fmt.Sprintf("%s and the system node is unusable (%v)", why, sysErr)
			}
			return nil, &unavailableError{"Parse Server tests need Node.js and npm to install parse-server@" + ParseServerVersion + ": " + why}
		}
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true, "description": "parse-mcp test harness (internal/parsetest)"}`+"\n"), 0o644); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		defer cancel()
		args := append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact"}, packages...)
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		if _, err := os.Stat(filepath.Join(modules, "parse-server", "package.json")); err != nil {
			return nil, fmt.Errorf("npm install finished but %s has no parse-server", modules)
		}
		if err := os.WriteFile(marker, []byte("parse-server@"+ParseServerVersion+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	if bundled != "" {
		if _, err := exec.Command(bundled, "--version").Output(); err != nil {
			return nil, fmt.Errorf("the npm Node binary %s does not run: %v", bundled, err)
		}
	}
	return &Runtime{Node: node, Modules: modules}, nil
}

// systemNode returns the node in PATH if its version satisfies parse-server's
// engines field (>=20.19 <21, >=22.13 <23, >=24.11 <25).
func systemNode() (string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", errors.New("node is not in PATH")
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", node, err)
	}
	v := strings.TrimSpace(string(out))
	if !nodeVersionOK(v) {
		return "", fmt.Errorf("system node is %s", v)
	}
	return node, nil
}

func nodeVersionOK(v string) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	switch major {
	case 20:
		return minor >= 19
	case 22:
		return minor >= 13
	case 24:
		return minor >= 11
	}
	return false
}

// bundledNodePackage is the npm package that ships a Node binary for this platform.
func bundledNodePackage() (string, bool) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" || (runtime.GOOS != "linux" && runtime.GOOS != "darwin") {
		return "", false
	}
	return "node-" + runtime.GOOS + "-" + arch, true
}

// marshalConfig is the JSON handed to server.js.
func marshalConfig(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
