package tools

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

type progressSession struct {
	ch chan mcp.JSONRPCNotification
}

func (s *progressSession) Initialize()                                         {}
func (s *progressSession) Initialized() bool                                   { return true }
func (s *progressSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.ch }
func (s *progressSession) SessionID() string                                   { return "p" }

func drainProgress(ch chan mcp.JSONRPCNotification) []map[string]any {
	var out []map[string]any
	for {
		select {
		case n := <-ch:
			out = append(out, n.Params.AdditionalFields)
		default:
			return out
		}
	}
}

func TestProgressHeartbeatsThenOwnUnits(t *testing.T) {
	srv := mcpserver.NewMCPServer("t", "1", mcpserver.WithToolCapabilities(false))
	sess := &progressSession{ch: make(chan mcp.JSONRPCNotification, 256)}
	// Progress reaches the client through the server in the call's context,
	// which HandleMessage provides: run the scenario inside a tool handler.
	srv.AddTool(mcp.NewTool("export_data"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runProgressScenario(t, ctx, req, sess)
		return mcp.NewToolResultText("ok"), nil
	})
	ctx := srv.WithContext(context.Background(), sess)
	srv.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"export_data","_meta":{"progressToken":"tok"}}}`))
}

// waitProgress waits (generously) until n notifications have arrived.
func waitProgress(t *testing.T, ch chan mcp.JSONRPCNotification, n int) []map[string]any {
	t.Helper()
	var out []map[string]any
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case m := <-ch:
			out = append(out, m.Params.AdditionalFields)
		case <-deadline:
			t.Fatalf("%d of %d notifications within 30s: %v", len(out), n, out)
		}
	}
	return out
}

func runProgressScenario(t *testing.T, ctx context.Context, req mcp.CallToolRequest, sess *progressSession) {
	// A call that finishes within the first interval sends nothing, not
	// even for the units it reported.
	_, quick := startProgress(ctx, "export_data", req, time.Hour)
	quick.Report(5, 10, "5 rows")
	quick.finish()
	if got := drainProgress(sess.ch); len(got) != 0 {
		t.Fatalf("a quick call sent %v", got)
	}

	ctx, p := startProgress(ctx, "export_data", req, 20*time.Millisecond)
	if ProgressFrom(ctx) != p || p == nil {
		t.Fatal("ProgressFrom does not return the call's reporter")
	}
	// Elapsed-time heartbeats: increasing, no total, the message states the
	// number.
	last := 0.0
	for _, b := range waitProgress(t, sess.ch, 3) {
		v := b["progress"].(float64)
		want := fmt.Sprintf("export_data running for %.1f s", v)
		if v <= last || b["message"] != want || b["total"] != nil || b["progressToken"] != "tok" {
			t.Fatalf("heartbeat %v after %v (want message %q)", b, last, want)
		}
		last = v
	}
	// Own units from the first Report on: sent on the next tick.
	p.Report(5, 10, "5 rows")
	got := waitProgress(t, sess.ch, 1)
	for got[0]["progress"] != 5.0 { // a heartbeat may have been on its way
		got = waitProgress(t, sess.ch, 1)
	}
	if got[0]["total"] != 10.0 || got[0]["message"] != "5 rows" {
		t.Fatalf("own units: %v", got)
	}
	p.Report(3, 10, "3 rows") // not increasing: never sent
	p.Report(7, 10, "7 rows")
	if got := waitProgress(t, sess.ch, 1); got[0]["progress"] != 7.0 || got[0]["message"] != "7 rows" {
		t.Fatalf("after 7 units: %v", got)
	}
	p.finish()
	time.Sleep(100 * time.Millisecond)
	if got := drainProgress(sess.ch); len(got) != 0 {
		t.Fatalf("notifications after finish: %v", got)
	}
}

func TestProgressWithoutToken(t *testing.T) {
	ctx, p := startProgress(context.Background(), "x", mcp.CallToolRequest{}, DefaultHeartbeatInterval)
	if p != nil || ProgressFrom(ctx) != nil {
		t.Fatal("no token, no reporter")
	}
	p.Report(1, 2, "ignored") // nil-safe
	p.finish()
}
