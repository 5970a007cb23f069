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
	// The shapes appendToolResult leaves to MarshalJSON, and the edges of
	// the ones it writes.
	withMeta := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("x")}, IsError: true,
		Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"parse.error_code": "invalid_query"}}}}
	annotated := mcp.NewTextContent("<a>")
	annotated.Annotations = &mcp.Annotations{Priority: new(1.0)}
	twoTexts := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("a\u2028\n\t\x00"), annotated}}
	image := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent("AAAA", "image/png")}, StructuredContent: map[string]any{"k": "<v>"}}
	rawField := &mcp.CallToolResult{Content: []mcp.Content{}, RawStructuredContent: json.RawMessage(`{"a":"\u2029 & ` + "\u2029" + `"}`)}
	rawField.ResultType = "complete"
	nilRaw := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("é" + "\xff")}, StructuredContent: json.RawMessage(nil)}
	empty := &mcp.CallToolResult{}
	for _, resp := range []mcp.JSONRPCMessage{
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(7)), Result: tool},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId("a<b"), Result: failed},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Result: map[string]any{"x": "<y>"}},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(3)), Result: withMeta},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(4)), Result: twoTexts},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(5)), Result: image},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(6)), Result: rawField},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId("n"), Result: nilRaw},
		mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(8)), Result: empty},
		mcp.JSONRPCError{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(2))},
	} {
		encodesAsMarshal(t, resp)
	}
}

// encodesAsMarshal reports (t.Errorf) and is false when encodeResponse
// writes other bytes than json.Marshal for resp.
func encodesAsMarshal(t *testing.T, resp mcp.JSONRPCMessage) bool {
	t.Helper()
	want, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("encodeResponse:\n got %q\nwant %q", got, want)
		return false
	}
	return true
}
