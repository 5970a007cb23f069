package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// FuzzStdioFraming feeds arbitrary bytes through the stdio line reader and
// the dispatcher: no panic, every emitted line is within the cap and has no
// newline, and every reply is a single JSON-RPC 2.0 object.
func FuzzStdioFraming(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}` + "\n",
		"\n\n  \r\n",
		`[1,2,3]` + "\n" + `{"jsonrpc":"2.0"` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"\x00\xff\xfe{",
	} {
		f.Add([]byte(seed))
	}
	s := mcpserver.NewMCPServer("fuzz", "1")
	d := NewDispatcher(s, 2, zerolog.Nop())
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := make(chan []byte, 1024)
		tooLong := 0
		err := readLines(context.Background(), bytes.NewReader(data), func(l []byte) bool { lines <- l; return true }, func() { tooLong++ })
		close(lines)
		if err != io.EOF {
			t.Fatalf("readLines: %v", err)
		}
		sess := NewSession("fuzz")
		for line := range lines {
			if len(line) > MaxMessageBytes || bytes.IndexByte(line, '\n') >= 0 || len(bytes.TrimSpace(line)) != len(line) {
				t.Fatalf("bad frame %q", line)
			}
			resp := d.Handle(context.Background(), sess, line, func(n []byte) {
				if !json.Valid(n) {
					t.Fatalf("invalid notification %q", n)
				}
			})
			if resp == nil {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(resp, &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("reply to %q is not JSON-RPC: %q", line, resp)
			}
			if _, hasErr := m["error"]; !hasErr {
				if _, hasRes := m["result"]; !hasRes {
					t.Fatalf("reply has neither result nor error: %q", resp)
				}
			}
		}
	})
}

// FuzzJSONDepth checks the HTTP depth scanner against encoding/json: for
// valid JSON it must report balanced input.
func FuzzJSONDepth(f *testing.F) {
	for _, seed := range []string{`{}`, `[[[]]]`, `{"a":"[[[\"]]]"}`, `"\\"`, `{"a":[1,{"b":2}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		depth, ok := jsonDepth(data)
		if json.Valid(data) && !ok {
			t.Fatalf("valid JSON %q reported unbalanced", data)
		}
		if depth < 0 {
			t.Fatalf("negative depth")
		}
	})
}
