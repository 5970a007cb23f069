package server

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestEncodeResponseAsMarshal: the response encoder gives exactly the
// bytes of json.Marshal, for tool results whose text and structured
// content hold what encoding/json escapes (HTML, U+2028) and for other
// results.
func TestEncodeResponseAsMarshal(t *testing.T) {
	structured := json.RawMessage(`{"rows":[["<b>a&b</b>","x` + "\u2028" + `y",1.5e3]],"note":"\u003c"}`)
	tool := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(structured))}, StructuredContent: structured}
	failed := mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(`"quoted" <tag>`)}, IsError: true}
	for _, resp := range []mcp.JSONRPCMessage{
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(7)), Result: tool},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId("a<b"), Result: failed},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Result: map[string]any{"x": "<y>"}},
		mcp.JSONRPCError{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(2))},
	} {
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeResponse(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("encodeResponse:\n got %s\nwant %s", got, want)
		}
	}
}
