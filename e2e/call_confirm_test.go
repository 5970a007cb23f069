package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCallConfirmsAtTheTerminal: `parse-mcp call` at a terminal is a client
// whose user is the operator: a delete that confirm_writes guards asks on
// the terminal; "n" writes nothing (the answer says declined), "y" deletes. Piped (no terminal) nobody
// can answer, and the delete is refused with confirmation_unavailable.
func TestCallConfirmsAtTheTerminal(t *testing.T) {
	uri, exists := confirmDB(t)
	environment := env(append(append([]string{}, writeEnv...), uri)...) // confirm_writes defaults to destructive
	atTerminal := func(id, typed string) (string, int) {
		t.Helper()
		cmd := exec.Command(binary, "call", "delete_object", `{"class_name":"Memo","object_id":"`+id+`"}`)
		cmd.Env = environment
		tty, screen, exited := startInPTY(t, cmd)
		question := screen.expect(t, "[y/N] ")
		if !strings.Contains(question, "Memo") || !strings.Contains(question, id) {
			t.Errorf("the question does not say what would be deleted:\n%s", question)
		}
		if _, err := tty.Write([]byte(typed + "\r")); err != nil {
			t.Fatal(err)
		}
		var err error
		select {
		case err = <-exited:
		case <-time.After(60 * time.Second):
			t.Fatal("call did not exit after the answer")
		}
		time.Sleep(100 * time.Millisecond) // the reader drains the last output
		screen.mu.Lock()
		defer screen.mu.Unlock()
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return screen.buf.String(), ee.ExitCode()
		}
		return screen.buf.String(), 0
	}

	if out, code := atTerminal("m3", "n"); code != 0 || !exists("m3") || !strings.Contains(out, `"confirmation": "declined"`) {
		t.Fatalf("answered n: exit %d, m3 exists %v\n%s", code, exists("m3"), out)
	}
	if out, code := atTerminal("m4", "y"); code != 0 || exists("m4") {
		t.Fatalf("answered y: exit %d, m4 exists %v\n%s", code, exists("m4"), out)
	}
	cmd := exec.Command(binary, "call", "delete_object", `{"class_name":"Memo","object_id":"m5"}`)
	cmd.Env = environment
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	if !strings.Contains(string(out), "confirmation_unavailable") || !exists("m5") {
		t.Fatalf("piped: m5 exists %v\n%s", exists("m5"), out)
	}
	if !strings.Contains(stderr.String(), "run the command at a terminal") || !strings.Contains(stderr.String(), `"dry_run": true`) {
		t.Errorf("piped: stderr does not say how to confirm from the CLI:\n%s", stderr.String())
	}
}
