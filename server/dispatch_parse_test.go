package server

import (
	"context"
	"encoding/json"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// TestHandleMalformedMessage: invalid JSON is a parse error (-32700), valid
// JSON that is not one JSON-RPC object an invalid request (-32600).
func TestHandleMalformedMessage(t *testing.T) {
	d := NewDispatcher(mcpserver.NewMCPServer("t", "1"), 1, zerolog.Nop())
	for _, tc := range []struct {
		msg  string
		code int
	}{
		{``, codeParseError},
		{"  \t", codeParseError},
		{`{`, codeParseError},
		{`not json`, codeParseError},
		{`[1,`, codeParseError},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} x`, codeParseError},
		{`[1]`, codeInvalidRequest},
		{`42`, codeInvalidRequest},
		{`null`, codeInvalidRequest},
		{`"x"`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, codeInvalidRequest},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, codeInvalidRequest},
	} {
		resp := d.Handle(context.Background(), NewSession("t"), []byte(tc.msg), func([]byte) {})
		var m struct {
			Error struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal(resp, &m); err != nil || m.Error.Code != tc.code {
			t.Errorf("%q: got %s, want code %d", tc.msg, resp, tc.code)
		}
	}
}
