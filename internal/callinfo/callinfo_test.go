package callinfo

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestFromWith(t *testing.T) {
	if got := From(context.Background()); got != (Info{}) {
		t.Fatalf("a context without Info: %+v, want the zero Info", got)
	}
	if raw := From(context.Background()).RawArguments(); raw != nil {
		t.Fatalf("raw arguments outside a tool call: %s", raw)
	}
	// Each layer amends what the one before it set.
	ctx := With(context.Background(), Info{Credential: "ops", NoServerRequests: true})
	info := From(ctx)
	info.Client, info.Session, info.Method = "key:ops", "s1", "tools/call"
	ctx = With(ctx, info)
	var req mcp.CallToolRequest
	req.Params.Name = "query_class"
	req.Params.RawArguments = json.RawMessage(`{"class_name":"Song"}`)
	info = From(ctx)
	info.ToolCall = &req
	inner := With(ctx, info)

	got := From(inner)
	if got.Credential != "ops" || !got.NoServerRequests || got.Client != "key:ops" || got.Session != "s1" || got.Method != "tools/call" {
		t.Fatalf("amended Info lost a field: %+v", got)
	}
	if string(got.RawArguments()) != `{"class_name":"Song"}` || got.ToolCall.Params.Name != "query_class" {
		t.Fatalf("tool call: %+v", got.ToolCall)
	}
	// The outer context is unchanged: a nested scope does not leak out.
	if From(ctx).ToolCall != nil {
		t.Fatal("the tool call leaked into the enclosing context")
	}
}
