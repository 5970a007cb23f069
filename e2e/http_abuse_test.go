package e2e

import (
	"fmt"
	"testing"
)

// TestHTTPAbuse (leak class 8) through the binary over HTTP: a client that
// opens more sessions than its cap (16) is never refused — its least
// recently used idle session ends instead, so it cannot lock others out for
// the idle TTL; and the rate limit is per session and per process (4×), so
// opening new sessions does not reset it.
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
	// 4 sessions × 3 calls fill the process window (3 × 4 = 12).
	for s := 1; s <= 4; s++ {
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
		t.Errorf("an unused session got past the full process window: %s", got)
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
