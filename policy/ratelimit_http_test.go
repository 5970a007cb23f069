package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

type fakeSession struct{ id string }

func (s fakeSession) SessionID() string                                   { return s.id }
func (s fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s fakeSession) Initialize()                                         {}
func (s fakeSession) Initialized() bool                                   { return true }

// TestRateLimitCannotBeResetBySessions (leak class 8): over HTTP each
// session has its own window and the process has one ProcessRateLimitFactor
// times as large, so opening new sessions stops helping once the process
// window is full; a refused call uses neither window; subscriptions
// (AllowRequest) count like tool calls.
func TestRateLimitCannotBeResetBySessions(t *testing.T) {
	now := time.Unix(1000, 0)
	e := secEngine(t, "", func(c *config.Config) { c.HTTPAddr = "127.0.0.1:0" })
	e.SetClock(func() time.Time { return now })
	srv := mcpserver.NewMCPServer("t", "1")
	ctxFor := func(id string) context.Context {
		return srv.WithContext(context.Background(), fakeSession{id})
	}
	const perSession = 5 // secPolicyYAML
	calls := 0
	for s := range ProcessRateLimitFactor {
		ctx := ctxFor(fmt.Sprint("s", s))
		for i := range perSession {
			if err := e.checkRate(ctx); err != nil {
				t.Fatalf("session %d call %d refused: %v", s, i, err)
			}
			calls++
		}
		if err := e.checkRate(ctx); err == nil || err.Code != "rate_limited" {
			t.Fatalf("session %d: 6th call %v", s, err)
		}
	}
	// A brand-new session: the process window is full.
	err := e.checkRate(ctxFor("fresh"))
	if err == nil || err.RetryAfter <= 0 {
		t.Fatalf("a new session reset the limit (%d calls so far): %v", calls, err)
	}
	if err := e.AllowRequest(ctxFor("fresh2")); err == nil {
		t.Fatal("a subscription is not counted")
	}
	// The window slides: room again, for sessions old and new.
	now = now.Add(11 * time.Second)
	if err := e.checkRate(ctxFor("fresh")); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if err := e.AllowRequest(ctxFor("s0")); err != nil {
		t.Fatalf("subscription after the window: %v", err)
	}
	// stdio: one process bucket of the configured size.
	st := secEngine(t, "")
	st.SetClock(func() time.Time { return now })
	for i := range perSession {
		if err := st.checkRate(context.Background()); err != nil {
			t.Fatalf("stdio call %d: %v", i, err)
		}
	}
	if err := st.checkRate(context.Background()); err == nil {
		t.Fatal("stdio: 6th call allowed")
	}
}
