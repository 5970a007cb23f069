package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestProgressNeverRacesResponse drives the binary with a client built like
// the TypeScript SDK and Claude Code: it reads stdout in chunks, handles the
// responses of a chunk before its notifications (retiring each call's
// progress token), and treats a progress notification for a retired token as
// fatal (Claude Code tears the connection down over it). The client is also
// slow between reads, so that a notification and a response written close
// together land in one chunk unless the server holds the response back.
func TestProgressNeverRacesResponse(t *testing.T) {
	cmd := exec.Command(binary)
	cmd.Env = env(scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=100ms")...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &parsetest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()

	write := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + ProtocolVersion + `","capabilities":{},"clientInfo":{"name":"chunky","version":"1"}}}`)
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const calls = 4
	live := map[string]bool{}
	for i := range calls {
		tok := fmt.Sprintf("tok-%d", i)
		live[tok] = true
		// A slow count sends elapsed-time heartbeats right up to its end.
		write(slowCount(fmt.Sprintf("call-%d", i), fmt.Sprintf(`{"progressToken":%q}`, tok)))
	}

	type message struct {
		ID     any            `json:"id"`
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
		Result map[string]any `json:"result"`
	}
	retired := map[string]bool{}
	retiredAt := map[string]int{}
	var pending []byte
	buf := make([]byte, 1<<20)
	answered, progress, chunks := 0, 0, 0
	deadline := time.Now().Add(3 * time.Minute)
	for answered < calls {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls answered within 3 minutes\n%s", answered, calls, stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // a busy client
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("reading stdout: %v\n%s", err, stderr.String())
		}
		chunks++
		pending = append(pending, buf[:n]...)
		var msgs []message
		for {
			i := bytes.IndexByte(pending, '\n')
			if i < 0 {
				break
			}
			var m message
			if err := json.Unmarshal(pending[:i], &m); err != nil {
				t.Fatalf("stdout line is not JSON: %q", pending[:i])
			}
			msgs = append(msgs, m)
			pending = pending[i+1:]
		}
		// Responses first, as those SDKs do within one chunk.
		for _, m := range msgs {
			if m.Method == "" && m.ID != "init" {
				// A timeout (isError) is an answer too: it retires the token.
				if m.Result == nil {
					t.Fatalf("call %v: no result", m.ID)
				}
				var i int
				fmt.Sscanf(fmt.Sprint(m.ID), "call-%d", &i)
				retired[fmt.Sprintf("tok-%d", i)] = true
				retiredAt[fmt.Sprintf("tok-%d", i)] = chunks
				answered++
			}
		}
		for _, m := range msgs {
			if m.Method != "notifications/progress" {
				continue
			}
			progress++
			tok := fmt.Sprint(m.Params["progressToken"])
			if retired[tok] {
				t.Fatalf("progress for %s handled after its response (response in chunk %d, this notification in chunk %d): a client like Claude Code would disconnect", tok, retiredAt[tok], chunks)
			}
			if !live[tok] {
				t.Fatalf("progress for unknown token %s", tok)
			}
		}
	}
	t.Logf("%d calls, %d progress notifications, %d chunks", calls, progress, chunks)
	if progress == 0 {
		t.Fatalf("no progress notification at all: the calls were too fast to test anything")
	}
}
