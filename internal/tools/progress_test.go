package tools

import (
	"context"
	"strings"
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

func runProgressScenario(t *testing.T, ctx context.Context, req mcp.CallToolRequest, sess *progressSession) {
	ctx, p := startProgress(ctx, "export_data", req, 20*time.Millisecond)
	if ProgressFrom(ctx) != p || p == nil {
		t.Fatal("ProgressFrom does not return the call's reporter")
	}
	time.Sleep(130 * time.Millisecond)
	beats := drainProgress(sess.ch)
	if len(beats) < 4 {
		t.Fatalf("%d notifications in 130ms at 20ms", len(beats))
	}
	if beats[0]["progress"] != 0.0 || beats[0]["message"] != "export_data started" || beats[0]["progressToken"] != "tok" {
		t.Fatalf("first: %v", beats[0])
	}
	last := 0.0
	for _, b := range beats[1:] {
		v := b["progress"].(float64)
		if v <= last || v >= 1 || !strings.HasPrefix(b["message"].(string), "export_data running for") || b["total"] != nil {
			t.Fatalf("heartbeat %v after %v", b, last)
		}
		last = v
	}

	p.Report(5, 10, "5 rows")
	p.Report(3, 10, "3 rows") // not increasing: skipped
	time.Sleep(80 * time.Millisecond)
	p.Report(7, 10, "7 rows")
	got := drainProgress(sess.ch)
	if len(got) != 2 || got[0]["progress"] != 5.0 || got[0]["total"] != 10.0 || got[1]["progress"] != 7.0 || got[1]["message"] != "7 rows" {
		t.Fatalf("after the tool reported its own units: %v", got)
	}
	p.finish()
	time.Sleep(50 * time.Millisecond)
	if got := drainProgress(sess.ch); len(got) != 0 {
		t.Fatalf("heartbeats after finish: %v", got)
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
