//go:build !linux

package enginetest

import (
	"context"
	"os"
	"runtime"
	"testing"
)

// Environment variables read by the harness (see enginetest.go).
const (
	EnvDir     = "PARSE_MCP_TEST_ENGINE2_DIR"
	EnvRequire = "PARSE_MCP_TEST_REQUIRE_SECOND_ENGINE"
)

// UnavailableError means the machine cannot run the second engine.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return "the second engine cannot run here: " + e.Reason }

// IsUnavailable reports whether err is an *UnavailableError.
func IsUnavailable(err error) bool { _, ok := err.(*UnavailableError); return ok }

// Acquire always fails off Linux: the engine runs in a Linux chroot.
func Acquire(context.Context) (string, error) {
	return "", &UnavailableError{"it needs Linux (chroot, bind mounts); this is " + runtime.GOOS}
}

// Release does nothing off Linux.
func Release() {}

// URI skips (or, with PARSE_MCP_TEST_REQUIRE_SECOND_ENGINE, fails) the test.
func URI(t testing.TB) string {
	t.Helper()
	_, err := Acquire(context.Background())
	if os.Getenv(EnvRequire) == "" {
		t.Skipf("skipping: %v", err)
	}
	t.Fatal(err)
	return ""
}

// DatabaseURI is URI (never reached off Linux).
func DatabaseURI(t testing.TB) string { return URI(t) }
