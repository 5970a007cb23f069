package server

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestErrorCode: the JSON-RPC error code is read from the head of both
// encoders' answers; a result is 0 even when its text holds an error.
func TestErrorCode(t *testing.T) {
	mcpErr, _ := json.Marshal(mcp.JSONRPCError{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(7)), Error: mcp.JSONRPCErrorDetails{Code: -32601, Message: "x"}})
	tests := []struct {
		resp, id string
		want     int
	}{
		{string(ErrorResponse(json.RawMessage(`"a"`), codeInvalidParams, "m")), `"a"`, codeInvalidParams},
		{string(ErrorResponse(nil, codeParseError, "m")), ``, codeParseError},
		{string(mcpErr), `7`, -32601},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"error\":{\"code\":-32603"}]}}`, `1`, 0},
		{``, `1`, 0},
	}
	for _, tc := range tests {
		if got := errorCode([]byte(tc.resp), json.RawMessage(tc.id)); got != tc.want {
			t.Errorf("errorCode(%s) = %d, want %d", tc.resp, got, tc.want)
		}
	}
}
