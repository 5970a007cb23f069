package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
)

// TestRateLimitCannotBeResetBySessions (leak class 8): over HTTP each
// session has its own window, each client (the transport's opaque key) one
// twice as large over all its sessions and stateless requests, and the
// process one four times as large — so opening new sessions or going
// sessionless stops helping once the client's window is full, one client
// cannot fill the process's window alone, and a refused call uses no
// window; subscriptions (AllowRequest) count like tool calls.
func TestRateLimitCannotBeResetBySessions(t *testing.T) {
	now := time.Unix(1000, 0)
	e := secEngine(t, "", func(c *config.Config) { c.HTTPAddr = "127.0.0.1:0" })
	e.SetClock(func() time.Time { return now })
	from := func(client, session string) context.Context {
		return callinfo.With(context.Background(), callinfo.Info{Client: client, Session: session})
	}
	const perSession = 5 // secPolicyYAML
	_, _, clientFactor, processFactor := (&config.Config{}).HTTPCaps()
	refusedFor := func(ctx context.Context, scope string) {
		t.Helper()
		err := e.checkRate(ctx)
		if err == nil || err.Code != "rate_limited" || err.RetryAfter <= 0 || !strings.Contains(err.Message, "for "+scope) {
			t.Fatalf("want refused for %s, got %v", scope, err)
		}
	}
	// Client a: its sessions each take perSession, up to the client's window.
	for s := range clientFactor {
		ctx := from("a", fmt.Sprint("a", s))
		for i := range perSession {
			if err := e.checkRate(ctx); err != nil {
				t.Fatalf("session %d call %d refused: %v", s, i, err)
			}
		}
		refusedFor(ctx, "this session")
	}
	refusedFor(from("a", "fresh"), "this client") // a new session does not reset it
	refusedFor(from("a", ""), "this client")      // nor going sessionless
	if err := e.AllowRequest(from("a", "fresh2")); err == nil {
		t.Fatal("a subscription is not counted")
	}
	// Another client still has the rest of the process's window: a greedy
	// client has not starved it.
	for i := range perSession * min(clientFactor, processFactor-clientFactor) {
		if err := e.checkRate(from("b", "")); err != nil {
			t.Fatalf("client b call %d: %v", i, err)
		}
	}

	// The window slides: room again, for sessions old and new.
	now = now.Add(11 * time.Second)
	if err := e.checkRate(from("a", "fresh")); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if err := e.AllowRequest(from("a", "a0")); err != nil {
		t.Fatalf("subscription after the window: %v", err)
	}
	// Clients together fill the process's window: then everyone waits.
	now = now.Add(11 * time.Second)
	for c := range processFactor / clientFactor {
		for i := range perSession * clientFactor {
			if err := e.checkRate(from(fmt.Sprint("c", c), "")); err != nil {
				t.Fatalf("client c%d call %d: %v", c, i, err)
			}
		}
	}
	refusedFor(from("newcomer", ""), "this server, all clients together")

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
