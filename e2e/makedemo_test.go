package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestMakeDemo runs `make demo` as a newcomer does, on a binary that is
// already built (BIN points at a copy of the one under test): make prints no
// build banner, and the server says nothing on stderr until a client speaks
// to it; a Ctrl-C (SIGINT to the whole foreground process group, as a
// terminal sends it) stops the server, and make, interrupted as well,
// reports at most its own "Interrupt" line (README "The two commands").
func TestMakeDemo(t *testing.T) {
	makePath, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make in PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "parse-mcp")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(makePath, "-s", "-C", "..", "demo", "BIN="+bin)
	// A person types `make demo` in a shell, not inside another make: when this
	// test itself runs under make (`make test` runs the second-engine pass as
	// a sub-make), the inherited MAKEFLAGS carries -w and the child would print
	// "Entering directory" on stdout, which a shell never causes.
	cmd.Env = slices.DeleteFunc(append(env("PARSE_MCP_DEMO_DIR="+filepath.Join(dir, "demo"), "PARSE_MCP_LOG_LEVEL=info"), "PARSE_MCP_MONGODB_URI="), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKELEVEL" || name == "MAKEOVERRIDES"
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &parsetest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	// The client speaks: the answer proves the server is up (make's build
	// step may relink first; a loaded machine gets a generous ceiling).
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+ProtocolVersion+`","capabilities":{},"clientInfo":{"name":"newcomer","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, `"id":1`) || !strings.Contains(l, `"result"`) {
			t.Fatalf("initialize answer: %s", l)
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("no initialize answer; stderr:\n%s", stderr.String())
	}
	if s := stderr.String(); s != "" {
		t.Fatalf("make demo printed on stderr before serving a client:\n%s", s)
	}
	// Ctrl-C.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		err := waitErr
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("make exited %v, want interrupted", err)
		}
		// make dies of the SIGINT itself (the shell shows 130); the server
		// had stopped first, or make would still be waiting for it.
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGINT {
			t.Errorf("make: %v, want killed by SIGINT", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("make demo still running 30 s after Ctrl-C")
	}
	if s := strings.TrimSpace(stderr.String()); s != "" && !strings.HasSuffix(s, "Interrupt") {
		t.Errorf("after Ctrl-C stderr holds more than make's Interrupt line:\n%s", s)
	}
}
