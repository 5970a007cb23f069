package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/tools"
)

// TestFairSharePerClient: one HTTP client cannot take every worker by
// spreading slow calls over several sessions or stateless requests — its
// calls beyond clientShare wait — while another client's call runs at once.
func TestFairSharePerClient(t *testing.T) {
	const workers = 8 // session share 2, client share 4
	entered := make(chan string, 64)
	release := make(chan struct{})
	s := mcpserver.NewMCPServer("fair-test", "1", mcpserver.WithToolCapabilities(false))
	slow := &tools.Tool{
		ToolInfo:    policy.ToolInfo{Name: "slow"},
		Description: "blocks until released",
		Handler: tools.Typed(func(ctx context.Context, _ *tools.Deps, in struct {
			Who string `json:"who"`
		}) (tools.Dynamic, error) {
			entered <- in.Who
			select {
			case <-release:
			case <-ctx.Done():
			}
			return map[string]any{}, nil
		}),
	}
	s.AddTool(slow.MCPTool(nil), slow.Handle(&tools.Deps{}))
	d := NewDispatcher(s, workers, zerolog.Nop())
	ctx := context.Background()
	session := func(id, client string) *Session {
		sess := NewSession(id)
		sess.client = client
		d.Handle(ctx, sess, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`), func([]byte) {})
		return sess
	}
	var wg sync.WaitGroup
	call := func(sess *Session, who string, n int) {
		wg.Go(func() {
			d.Handle(ctx, sess, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{"who":%q}}}`, n, who), func([]byte) {})
		})
	}
	// Client A: three sessions × 2 calls and 4 stateless requests — 10 calls.
	for i := range 3 {
		sess := session(fmt.Sprint("a", i), "10.0.0.1")
		call(sess, "A", 1)
		call(sess, "A", 2)
	}
	for i := range 4 {
		call(session(fmt.Sprint("stateless-a", i), "10.0.0.1"), "A", 1)
	}
	for range clientShare(workers) {
		if who := <-entered; who != "A" {
			t.Fatalf("entered: %s", who)
		}
	}
	// Client B gets a worker while A's further calls wait for A's share.
	call(session("b", "10.0.0.2"), "B", 1)
	select {
	case who := <-entered:
		if who != "B" {
			t.Fatalf("a call of A ran beyond the client share (%d)", clientShare(workers))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("B's call waited behind A's")
	}
	close(release)
	wg.Wait()
	if n := len(entered); n != 10-clientShare(workers) {
		t.Fatalf("%d of A's queued calls ran after release, want %d", n, 10-clientShare(workers))
	}
	if len(d.fair.slots) != 0 || len(d.fairClients.slots) != 0 {
		t.Fatalf("slots not cleaned up: %v %v", d.fair.slots, d.fairClients.slots)
	}
}
