package chat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/server"
)

// TestMCPToolboxThroughTheDispatcher: the toolbox is an MCP session on the
// server's Dispatcher. Tools here are small test tools on a plain mcp-go
// server (the real catalog and policy are exercised through the binary by
// the e2e tests); what is checked is the client side: listing, the text the
// model is shown for a result, an isError result and a JSON-RPC error, and
// that cancelling the chat's context cancels a running call's context (the
// database work of a real tool).
func TestMCPToolboxThroughTheDispatcher(t *testing.T) {
	s := mcpserver.NewMCPServer("t", "1", mcpserver.WithToolCapabilities(false), mcpserver.WithInstructions("be careful"))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo the text."), mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(`{"_note":"data","echo":` + mustMarshal(req.GetString("text", "")) + `}`), nil
		})
	s.AddTool(mcp.NewTool("refuse", mcp.WithDescription("Always refuses.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("class does not exist or is not accessible"), nil
		})
	started, cancelled := make(chan struct{}), make(chan struct{})
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("Waits for its context.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			select {
			case <-ctx.Done():
				close(cancelled)
				return nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return mcp.NewToolResultText("finished"), nil
			}
		})
	tb := NewMCPToolbox(server.NewDispatcher(s, 4, zerolog.Nop()))
	ctx := context.Background()
	tools, instr, err := tb.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if instr != "be careful" || len(tools) != 3 {
		t.Fatalf("instructions %q, tools %+v", instr, tools)
	}
	for _, tool := range tools {
		if tool.Name == "echo" && (tool.Description != "Echo the text." || !strings.Contains(string(tool.InputSchema), `"required":["text"]`)) {
			t.Fatalf("echo listed as %+v (%s)", tool, tool.InputSchema)
		}
	}
	if r := tb.Call(ctx, "echo", json.RawMessage(`{"text":"hi"}`)); r.IsError || r.Text != `{"_note":"data","echo":"hi"}` {
		t.Fatalf("echo: %+v", r)
	}
	if r := tb.Call(ctx, "refuse", json.RawMessage(`{}`)); !r.IsError || r.Text != "class does not exist or is not accessible" {
		t.Fatalf("refuse: %+v", r)
	}
	if r := tb.Call(ctx, "drop_database", json.RawMessage(`{}`)); !r.IsError || !strings.Contains(r.Text, "drop_database") {
		t.Fatalf("unknown tool: %+v", r)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() { <-started; cancel() }()
	r := tb.Call(cctx, "slow", json.RawMessage(`{}`))
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the tool's context was not cancelled")
	}
	if !r.IsError || r.Text != "cancelled" {
		t.Fatalf("slow: %+v", r)
	}
}

func mustMarshal(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestMCPToolboxArgumentCap: a tool call whose message exceeds the stdio
// transport's cap (server.MaxMessageBytes) is refused as over stdio, without
// running; one under it runs. The trace shows at most maxShownArgs of it.
func TestMCPToolboxArgumentCap(t *testing.T) {
	s := mcpserver.NewMCPServer("t", "1", mcpserver.WithToolCapabilities(false))
	ran := 0
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return mcp.NewToolResultText("ok"), nil
		})
	tb := NewMCPToolbox(server.NewDispatcher(s, 4, zerolog.Nop()))
	ctx := context.Background()
	if _, _, err := tb.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 6<<20) + `"}`)
	if r := tb.Call(ctx, "echo", big); !r.IsError || r.Text != "error: Invalid Request: message exceeds 4 MiB" || ran != 0 {
		t.Fatalf("6 MiB argument: %+v, ran %d", r, ran)
	}
	under := json.RawMessage(`{"text":"` + strings.Repeat("x", server.MaxMessageBytes-200) + `"}`)
	if r := tb.Call(ctx, "echo", under); r.IsError || ran != 1 {
		t.Fatalf("argument under the cap: %+v, ran %d", r, ran)
	}
	line := TraceEntry{Name: "echo", Args: big}.String()
	if len(line) > 2*maxShownArgs || !strings.Contains(line, "(6291467 bytes)") {
		t.Fatalf("trace line of %d bytes: %.200q", len(line), line)
	}
}
