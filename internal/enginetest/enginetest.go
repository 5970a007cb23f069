//go:build linux

// Package enginetest provides the tests' second engine: FerretDB 2.7 on
// PostgreSQL 18 + DocumentDB 1.0, far closer to MongoDB than the embedded
// FerretDB 1.24 (it runs $lookup, $facet, $unionWith, expressions and date
// operators, nested arrays, $text and $vectorSearch; it has no change
// streams, transactions, Atlas $search or explain plans).
//
// A test gets the engine's MongoDB URI with
//
//	uri := enginetest.URI(t)          // mongodb://127.0.0.1:PORT/
//	uri := enginetest.DatabaseURI(t)  // …/<unique database>, dropped after the test
//
// and the e2e suite runs against it with `make test-engine2` (that is,
// PARSE_MCP_TEST_ENGINE=documentdb go test ./e2e/).
//
// How it is provisioned, on first use:
//   - a Debian-testing tree with postgresql-18-documentdb is built once with
//     mmdebstrap into the cache directory (~50 s, ~700 MB):
//     os.UserCacheDir()/parse-mcp/engine2/root, or $PARSE_MCP_TEST_ENGINE2_DIR/root;
//   - the supervisor program in ./ferretdb2 — a module of its own, so
//     FerretDB v2 and its dependencies stay out of parse-mcp's go.mod and
//     binary — is built with `go build` (the first build takes about two
//     minutes, later ones come from the Go build cache);
//   - the supervisor bind-mounts /proc and /dev into the tree, runs initdb
//     and PostgreSQL inside it (chroot) on a free loopback port, creates the
//     documentdb extension and serves FerretDB v2 on another free port.
//
// One instance serves every test process on the machine: starting is
// serialised by a file lock (run/ctl.lock) and each process that uses the
// engine holds a shared lock on run/users.lock until it exits (or calls
// Release). The supervisor tears the engine down — FerretDB, PostgreSQL and
// the mounts — once no process has held that lock for 15 s. Tests sharing
// the instance must use their own database names (DatabaseURI does).
//
// It needs Linux, root (chroot, mount), mmdebstrap (apt-get install
// mmdebstrap), the Debian mirror and the Go module proxy. When any is
// missing URI skips the test with a message naming it, or fails it when
// PARSE_MCP_TEST_REQUIRE_SECOND_ENGINE is set (CI sets it).
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Environment variables read by the harness.
const (
	// EnvDir overrides the cache directory (default
	// os.UserCacheDir()/parse-mcp/engine2).
	EnvDir = "PARSE_MCP_TEST_ENGINE2_DIR"
	// EnvRequire turns "the second engine cannot run here" from a skip into
	// a failure; CI sets it.
	EnvRequire = "PARSE_MCP_TEST_REQUIRE_SECOND_ENGINE"
)

// treeRecipe is what the tree is built from; a tree built from another
// recipe is rebuilt.
var treeRecipe = []string{
	"--variant=apt",
	`--aptopt=Acquire::Check-Valid-Until "false"`, // testing's Release file may be past its Valid-Until
	"--include=postgresql-18-documentdb,ca-certificates",
	"testing",
}

// UnavailableError means the machine cannot run the second engine (not
// root, no mmdebstrap, no packages …): tests skip unless EnvRequire is set.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return "the second engine cannot run here: " + e.Reason }

// IsUnavailable reports whether err is an *UnavailableError.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

var (
	mu       sync.Mutex
	held     *os.File // the shared lock on users.lock while this process uses the engine
	heldURI  string
	failed   error
	dbSerial atomic.Int64
)

// URI returns the base URI (mongodb://127.0.0.1:PORT/) of the shared
// second engine, starting it when no process runs it. The test is skipped
// under -short and when the engine cannot run here (failed instead when
// PARSE_MCP_TEST_REQUIRE_SECOND_ENGINE is set).
func URI(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping under -short: the second engine (FerretDB 2 on PostgreSQL + DocumentDB) takes seconds to start; make test runs it")
	}
	uri, err := Acquire(context.Background())
	if err != nil {
		if IsUnavailable(err) && os.Getenv(EnvRequire) == "" {
			t.Skipf("skipping: %v", err)
		}
		t.Fatalf("second engine: %v", err)
	}
	return uri
}

// DatabaseURI is URI with a database of the test's own, dropped when the
// test ends.
func DatabaseURI(t testing.TB) string {
	t.Helper()
	base := URI(t)
	db := fmt.Sprintf("enginetest_%d_%d", os.Getpid(), dbSerial.Add(1))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if cl, err := mongo.Connect(options.Client().ApplyURI(base)); err == nil {
			_ = cl.Database(db).Drop(ctx)
			_ = cl.Disconnect(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	return u.String()
}

// Acquire is URI for code without a testing.TB (a TestMain): it returns the
// engine's base URI and holds it for this process until Release or exit.
// An *UnavailableError means the engine cannot run on this machine.
func Acquire(ctx context.Context) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if held != nil {
		return heldURI, nil
	}
	if failed != nil {
		return "", failed
	}
	uri, f, err := acquire(ctx)
	if err != nil {
		failed = err
		return "", err
	}
	held, heldURI = f, uri
	return uri, nil
}

// Release gives up this process's hold on the engine; the supervisor stops
// it 15 s after the last holder is gone. Exiting releases it too.
func Release() {
	mu.Lock()
	defer mu.Unlock()
	if held != nil {
		_ = held.Close()
		held, heldURI = nil, ""
	}
}

// Dir is the cache directory holding the tree, the supervisor binary and
// its run state.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", &UnavailableError{fmt.Sprintf("no user cache directory (%v): set %s", err, EnvDir)}
	}
	return filepath.Join(base, "parse-mcp", "engine2"), nil
}

// instance is the supervisor's instance.json.
type instance struct {
	PID int    `json:"pid"`
	URI string `json:"uri"`
}

func acquire(ctx context.Context) (string, *os.File, error) {
	if runtime.GOOS != "linux" {
		return "", nil, &UnavailableError{"it needs Linux (chroot, bind mounts); this is " + runtime.GOOS}
	}
	if os.Geteuid() != 0 {
		return "", nil, &UnavailableError{"it needs root (it runs PostgreSQL in a chroot with /proc and /dev bind-mounted); run the tests as root"}
	}
	dir, err := Dir()
	if err != nil {
		return "", nil, err
	}
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		return "", nil, err
	}
	unlock, err := lockFile(filepath.Join(run, "ctl.lock"), syscall.LOCK_EX)
	if err != nil {
		return "", nil, fmt.Errorf("locking %s: %w", run, err)
	}
	defer unlock()

	uri, err := running(run)
	if err != nil {
		root, err := ensureTree(ctx, dir)
		if err != nil {
			return "", nil, err
		}
		bin, err := buildSupervisor(ctx, dir)
		if err != nil {
			return "", nil, err
		}
		if uri, err = startSupervisor(ctx, bin, root, run); err != nil {
			return "", nil, err
		}
	}
	users, err := os.OpenFile(filepath.Join(run, "users.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Flock(int(users.Fd()), syscall.LOCK_SH); err != nil {
		users.Close()
		return "", nil, err
	}
	return uri, users, nil
}

// running returns the URI of the instance a live supervisor serves.
func running(run string) (string, error) {
	b, err := os.ReadFile(filepath.Join(run, "instance.json"))
	if err != nil {
		return "", err
	}
	var in instance
	if err := json.Unmarshal(b, &in); err != nil || in.PID <= 0 || in.URI == "" {
		return "", fmt.Errorf("bad instance.json: %s", b)
	}
	if syscall.Kill(in.PID, 0) != nil {
		return "", fmt.Errorf("supervisor %d is gone", in.PID)
	}
	u, err := url.Parse(in.URI)
	if err == nil {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", u.Host, 2*time.Second); err == nil {
			c.Close()
			return in.URI, nil
		}
	}
	// Alive but not serving: end it; the next supervisor cleans up after it
	// (stale postmaster, mounts).
	_ = syscall.Kill(in.PID, syscall.SIGKILL)
	return "", fmt.Errorf("supervisor %d does not answer on %s: %v", in.PID, in.URI, err)
}

// ensureTree builds the Debian-testing tree once (under ctl.lock).
func ensureTree(ctx context.Context, dir string) (string, error) {
	root := filepath.Join(dir, "root")
	marker := filepath.Join(dir, "root.recipe")
	want := strings.Join(treeRecipe, "\n") + "\n"
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		return root, nil
	}
	mmdebstrap, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return "", &UnavailableError{"mmdebstrap is not installed (apt-get install mmdebstrap); it builds the Debian-testing tree with postgresql-18-documentdb"}
	}
	for _, d := range []string{root, root + ".tmp"} {
		if err := removeTree(d); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(os.Stderr, "enginetest: building the Debian-testing tree with PostgreSQL 18 + DocumentDB in %s (once, about a minute)\n", root)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mmdebstrap, append(append([]string{"--quiet"}, treeRecipe...), root+".tmp")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = removeTree(root + ".tmp")
		return "", &UnavailableError{fmt.Sprintf("mmdebstrap could not build the tree with postgresql-18-documentdb from Debian testing (%v):\n%s", err, tail(out, 3000))}
	}
	if err := os.Rename(root+".tmp", root); err != nil {
		return "", err
	}
	return root, os.WriteFile(marker, []byte(want), 0o644)
}

// removeTree deletes a tree, refusing while anything is mounted inside it
// (a bind-mounted /dev or /proc would be emptied on the host).
func removeTree(root string) error {
	if _, err := os.Lstat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	for line := range strings.SplitSeq(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == abs || strings.HasPrefix(f[4], abs+"/")) {
			if err := syscall.Unmount(f[4], syscall.MNT_DETACH); err != nil {
				return fmt.Errorf("%s is mounted inside %s and could not be unmounted (%v): not removing the tree", f[4], root, err)
			}
		}
	}
	return os.RemoveAll(root)
}

// buildSupervisor builds ./ferretdb2 into the cache directory.
func buildSupervisor(ctx context.Context, dir string) (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("enginetest: cannot locate its source directory")
	}
	src := filepath.Join(filepath.Dir(self), "ferretdb2")
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		return "", fmt.Errorf("enginetest: the supervisor's source is not at %s: %v", src, err)
	}
	bin := filepath.Join(dir, "bin", "ferretdb2")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+".tmp", ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the FerretDB v2 supervisor (%s): %v\n%s", src, err, tail(out, 3000))
	}
	return bin, os.Rename(bin+".tmp", bin)
}

// startSupervisor starts it detached (its own session, output to
// run/ferretdb2.log: `go test` must not wait for it) and waits for its
// instance.json.
func startSupervisor(ctx context.Context, bin, root, run string) (string, error) {
	logPath := filepath.Join(run, "ferretdb2.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	_ = os.Remove(filepath.Join(run, "instance.json"))
	cmd := exec.Command(bin, "-root", root, "-state", run)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.After(3 * time.Minute)
	for {
		if uri, err := running(run); err == nil {
			return uri, nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("the second engine's supervisor exited during start-up:\n%s", tail(b, 4000))
		case <-deadline:
			_ = cmd.Process.Kill()
			b, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("the second engine did not start within 3 minutes:\n%s", tail(b, 4000))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// lockFile takes a flock of kind how on path, waiting for it.
func lockFile(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
