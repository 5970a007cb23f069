package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestHTTPAbuse (leak class 8) through the binary over HTTP: a client that
// opens more sessions than its cap (16) is never refused — its least
// recently used idle session ends instead, so it cannot lock others out for
// the idle TTL; and the rate limit is per session and per client (2×; every
// loopback address is one client), so opening new sessions does not reset
// it.
func TestHTTPAbuse(t *testing.T) {
	h := startHTTP(t, policyEnv(t, "settings: {rate_limit: {requests: 3, window: 60s}}\n"))
	var sessions []*mcpSession
	for range 17 {
		sessions = append(sessions, h.session(nil)) // fails the test on a refusal
	}
	status, _ := sessions[0].post(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if status != 404 {
		t.Errorf("the least recently used session should have ended, got HTTP %d", status)
	}
	if m := sessions[16].rpc("p2", "ping", ""); m["result"] == nil {
		t.Errorf("newest session: %v", m)
	}

	call := func(s *mcpSession, id string) string {
		m := s.rpc(id, "tools/call", `{"name":"count_objects","arguments":{"class_name":"Song"}}`)
		res := obj(m["result"])
		if res["isError"] == true {
			code, _ := obj(res["_meta"])["parse.error_code"].(string)
			return code
		}
		return "ok"
	}
	// 2 sessions × 3 calls fill the client's window (3 × 2 = 6).
	for s := 1; s <= 2; s++ {
		for i := range 3 {
			if got := call(sessions[s], fmt.Sprint("c", s, i)); got != "ok" {
				t.Fatalf("session %d call %d: %s", s, i, got)
			}
		}
		if got := call(sessions[s], fmt.Sprint("over", s)); got != "rate_limited" {
			t.Errorf("session %d 4th call: %s", s, got)
		}
	}
	if got := call(sessions[5], "fresh"); got != "rate_limited" {
		t.Errorf("an unused session got past the client's full window: %s", got)
	}
	if got := call(h.session(nil), "brand-new"); got != "rate_limited" {
		t.Errorf("a new session reset the limit: %s", got)
	}
	// resources/subscribe is counted too.
	m := sessions[16].rpc("sub", "resources/subscribe", `{"uri":"parse://Song/count"}`)
	if m["error"] == nil {
		t.Errorf("subscribe past the rate limit: %v", m)
	}
}

// TestHTTPStreamsCannotLockOut (leak class 8) through the binary: one
// client holding a listening stream on every session it may open (16, all
// on loopback, so every local client counts as the same one) does not lock
// a newcomer out: the newcomer's initialize succeeds and the session with
// the oldest stream ends (its stream closes; it can reconnect).
func TestHTTPStreamsCannotLockOut(t *testing.T) {
	h := startHTTP(t)
	ctx := t.Context()
	var streams []<-chan map[string]any
	var sessions []*mcpSession
	for range 16 {
		s := h.session(nil)
		sessions = append(sessions, s)
		streams = append(streams, s.listen(ctx))
		// The stream is open once the server answers on the session (a
		// ping after the GET is accepted), so the next one is newer.
		if m := s.rpc("p", "ping", ""); m["result"] == nil {
			t.Fatalf("ping: %v", m)
		}
	}
	newcomer := h.session(nil) // fails the test on a refusal
	if m := newcomer.rpc("p", "ping", ""); m["result"] == nil {
		t.Fatalf("newcomer ping: %v", m)
	}
	select {
	case _, open := <-streams[0]:
		for open {
			_, open = <-streams[0]
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the oldest stream was not ended")
	}
	if status, _ := sessions[0].post(`{"jsonrpc":"2.0","id":"q","method":"ping"}`); status != 404 {
		t.Errorf("the session whose stream ended should be gone, got HTTP %d", status)
	}
	if m := sessions[15].rpc("q", "ping", ""); m["result"] == nil {
		t.Errorf("a newer streaming session was ended: %v", m)
	}
}
