package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// ptyScreen collects what the program writes to its terminal.
type ptyScreen struct {
	mu   sync.Mutex
	buf  strings.Builder
	mark int // expect looks after this offset
}

func (s *ptyScreen) add(p []byte) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
}

// startInPTY starts cmd on a pseudo-terminal, as a person runs it, and
// collects what it writes there; exited receives cmd.Wait's result. The
// test's cleanup kills the process and closes the terminal.
func startInPTY(t *testing.T, cmd *exec.Cmd) (*os.File, *ptyScreen, <-chan error) {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatalf("starting under a pty: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = tty.Close()
	})
	screen := &ptyScreen{}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			screen.add(b[:n])
			if err != nil {
				return
			}
		}
	}()
	return tty, screen, exited
}

// expect waits until want appears after the mark, then moves the mark past
// it, and returns the text up to and including it.
func (s *ptyScreen) expect(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		all := s.buf.String()
		rest := all[s.mark:]
		if i := strings.Index(rest, want); i >= 0 {
			s.mark += i + len(want)
			s.mu.Unlock()
			return rest[:i+len(want)]
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; after the last match it shows:\n%s", want, rest)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestChatTerminal drives `parse-mcp --demo chat` in a pseudo-terminal as a
// person would: the line editor (Ctrl-C clears the line, up-arrow recalls
// history), the slash commands, a streamed answer with a tool call, Ctrl-C
// cancelling an answer mid-stream (the model server sees the request go
// away, the question leaves the history), /compact, and Ctrl-D to leave.
func TestChatTerminal(t *testing.T) {
	dir := t.TempDir()
	artists := demo.CollectionCounts[demo.ClassArtist]
	m := newScriptedModel(t, "openai", func(msgs []wireMsg) modelStep {
		var question string
		for _, w := range msgs {
			if w.Role == "user" {
				question = w.Text
			}
		}
		switch {
		case strings.HasPrefix(question, "Summarize our conversation"):
			return modelStep{Answer: "The person asked how many artists there are."}
		case strings.HasPrefix(question, "slow"):
			return modelStep{Answer: "Thinking about it ", Hang: true}
		}
		res := toolResults(msgs)
		if len(res) == 0 {
			return modelStep{Calls: [][2]string{{"count_objects", `{"class_name":"Artist"}`}}}
		}
		var c struct {
			Count int `json:"count"`
		}
		_ = json.Unmarshal([]byte(res[0].Text), &c)
		return modelStep{Answer: fmt.Sprintf("There are %d artists.", c.Count)}
	})

	cmd := exec.Command(binary, "--demo", "chat")
	cmd.Env = env(demoEnv(dir, m)...)
	tty, screen, exited := startInPTY(t, cmd)
	send := func(s string) {
		t.Helper()
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}

	screen.expect(t, "Ctrl-D exits.")
	screen.expect(t, "> ")
	send("/tools\r")
	screen.expect(t, "count_objects")
	listed := screen.expect(t, " tools")
	if strings.Contains(listed, "create_object") {
		t.Errorf("/tools lists write tools in readonly: %s", listed)
	}

	// A question: the tool call shows as it runs, then the answer.
	screen.expect(t, "> ")
	send("how many artists?\r")
	screen.expect(t, "· count_objects ")
	screen.expect(t, fmt.Sprintf("There are %d artists.", artists))
	screen.expect(t, "> ")

	// Ctrl-C while an answer streams cancels it; the server sees the
	// request abandoned.
	send("slow question\r")
	screen.expect(t, "Thinking about it")
	send("\x03")
	if cancelled := screen.expect(t, "answer cancelled"); strings.Count(cancelled, "^C") > 1 {
		t.Errorf("Ctrl-C shows ^C more than once:\n%s", cancelled)
	}
	select {
	case <-m.abandoned:
	case <-time.After(10 * time.Second):
		t.Fatal("the model server's request was not abandoned after Ctrl-C")
	}
	screen.expect(t, "> ")
	send("/history\r")
	hist := screen.expect(t, fmt.Sprintf("assistant: There are %d artists.", artists))
	if !strings.Contains(hist, "you: how many artists?") || !strings.Contains(hist, `→ count_objects {"class_name":"Artist"}`) {
		t.Errorf("/history:\n%s", hist)
	}
	screen.expect(t, "> ")
	send("/trace\r")
	screen.expect(t, "no tool calls") // the cancelled question made none
	send("/trace all\r")
	screen.expect(t, `#1.1 tool count_objects {"class_name":"Artist"}`)
	send("/cost\r")
	// The cancelled reply reported no usage; the first question's two
	// model calls did (1000+2000 in, 10+20 out at $1/$2 per million).
	screen.expect(t, "last question: 0 in / 0 out tokens")
	screen.expect(t, "session:       3000 in / 30 out tokens, $0.0031 (scripted)")

	// Ctrl-C at the prompt clears the line being typed (it does not exit
	// and the text is not sent).
	screen.expect(t, "> ")
	send("half a quest")
	screen.expect(t, "half a quest")
	send("\x03")
	send("/compact\r")
	compacted := screen.expect(t, "tokens (")
	if !strings.Contains(compacted, "history compacted: ") || strings.Contains(compacted, "unknown command") {
		t.Errorf("/compact after Ctrl-C: %q", compacted)
	}
	// Up-arrow recalls the last line.
	screen.expect(t, "> ")
	send("/reset\r")
	screen.expect(t, "history cleared")
	screen.expect(t, "> ")
	send("\x1b[A\r")
	screen.expect(t, "history cleared")
	screen.expect(t, "> ")
	send("/history\r")
	screen.expect(t, "no history")

	screen.expect(t, "> ")
	send("\x04") // Ctrl-D
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatalf("chat exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Ctrl-D did not end the chat")
	}
	if strings.Contains(screen.buf.String(), "sk-e2e-secret") {
		t.Fatal("the API key reached the terminal")
	}
}

// TestChatEndsOnSignalAtPrompt: waiting at the prompt, the chat still ends
// on SIGTERM (in a terminal) and on Ctrl-C's SIGINT (input from a pipe),
// exit 0.
func TestChatEndsOnSignalAtPrompt(t *testing.T) {
	dir := t.TempDir()
	m := newScriptedModel(t, "openai", func([]wireMsg) modelStep { return modelStep{Answer: "unused"} })
	for _, tc := range []struct {
		name string
		tty  bool
		sig  syscall.Signal
	}{{"terminal, SIGTERM", true, syscall.SIGTERM}, {"pipe, SIGINT", false, syscall.SIGINT}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, "--demo", "chat")
			cmd.Env = env(demoEnv(dir, m)...)
			screen := &ptyScreen{}
			var exited <-chan error
			if tc.tty {
				_, screen, exited = startInPTY(t, cmd)
			} else {
				stdin, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close() // open: the chat waits for a line
				cmd.Stdout = writerFunc(screen.add)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				waited := make(chan error, 1)
				go func() { waited <- cmd.Wait() }()
				defer func() { _ = cmd.Process.Kill() }()
				exited = waited
			}
			screen.expect(t, "Ctrl-D exits.")
			time.Sleep(200 * time.Millisecond) // at the prompt, reading
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the chat did not end")
			}
		})
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }
