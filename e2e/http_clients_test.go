package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Who "one client" is over HTTP, through the binary on loopback: behind a
// proxy the operator declared (PARSE_MCP_TRUSTED_PROXIES) each forwarded
// address is its own client — for the session caps and the rate limit —
// while X-Forwarded-For from a peer that is not a declared proxy is ignored.

// forwardedSession opens a session as the client a proxy forwards.
func forwardedSession(h *httpServer, client string) *mcpSession {
	return h.session(map[string]string{"X-Forwarded-For": client})
}

// statelessPostHeaders is statelessPost with further headers.
func (h *httpServer) statelessPostHeaders(id, method, name, paramsJSON string, extra map[string]string) (int, []map[string]any, http.Header) {
	h.t.Helper()
	hdr := statelessHeaders(method, name)
	maps.Copy(hdr, extra)
	resp, b := h.request("POST", "/mcp", statelessBody(id, method, paramsJSON, ""), hdr)
	return resp.StatusCode, decodeAnswer(h.t, resp, b), resp.Header
}

// countCall runs one cheap tool call and returns "ok" or the error code.
func countCall(s *mcpSession, id string) string {
	m := s.rpc(id, "tools/call", `{"name":"count_objects","arguments":{"class_name":"Song"}}`)
	res := obj(m["result"])
	if res["isError"] == true {
		code, _ := obj(res["_meta"])["parse.error_code"].(string)
		return code
	}
	return "ok"
}

// TestHTTPClientsBehindProxy: 50 clients behind one declared proxy (a
// reverse proxy on loopback) each keep their session: none is evicted by
// the per-client cap (16), which counted them all as one client before.
func TestHTTPClientsBehindProxy(t *testing.T) {
	h := startHTTP(t, "PARSE_MCP_TRUSTED_PROXIES=127.0.0.1,::1",
		policyEnv(t, "settings: {rate_limit: {requests: 100, window: 60s}}\n"))
	const clients = 50
	sessions := make([]*mcpSession, clients)
	for i := range clients {
		sessions[i] = forwardedSession(h, fmt.Sprintf("198.51.100.%d", i+1))
	}
	var wg sync.WaitGroup
	failed := make(chan string, clients*3)
	for i, s := range sessions {
		wg.Go(func() {
			for j := range 3 {
				status, msgs := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, j))
				if status != 200 || len(msgs) == 0 || msgs[0]["result"] == nil {
					failed <- fmt.Sprintf("client %d ping %d: HTTP %d %v", i, j, status, msgs)
				}
			}
			if got := countCall(s, "c"); got != "ok" {
				failed <- fmt.Sprintf("client %d call: %s", i, got)
			}
		})
	}
	wg.Wait()
	close(failed)
	n := 0
	for f := range failed {
		if n++; n <= 5 {
			t.Error(f)
		}
	}
	if n > 0 {
		t.Fatalf("%d failed requests among %d clients behind the proxy", n, clients)
	}
}

// TestHTTPGreedyClientCannotStarveAnother: one client behind the declared
// proxy spends everything the rate limit gives it — over several sessions
// and stateless requests — and another client's calls still go through.
func TestHTTPGreedyClientCannotStarveAnother(t *testing.T) {
	h := startHTTP(t, "PARSE_MCP_TRUSTED_PROXIES=127.0.0.1,::1",
		policyEnv(t, "settings: {rate_limit: {requests: 3, window: 60s}}\n"))
	const greedy, modest = "198.51.100.66", "203.0.113.7"
	refused := 0
	for s := range 6 {
		sess := forwardedSession(h, greedy)
		for i := range 4 {
			if countCall(sess, fmt.Sprint("g", s, i)) == "rate_limited" {
				refused++
			}
		}
	}
	for i := range 4 {
		status, msgs, _ := h.statelessPostHeaders(fmt.Sprint("gs", i), "tools/call", base64Name("count_objects"),
			`{"name":"count_objects","arguments":{"class_name":"Song"}}`, map[string]string{"X-Forwarded-For": greedy})
		if res := lastResult(t, msgs); status != 200 || obj(res["_meta"])["parse.error_code"] != "rate_limited" {
			t.Fatalf("greedy stateless call %d past its client's window: %d %v", i, status, res)
		}
	}
	if refused < 6*4-6 { // 3 calls per session, 6 per client (2×)
		t.Fatalf("the greedy client was refused only %d times", refused)
	}
	other := forwardedSession(h, modest)
	for i := range 3 {
		if got := countCall(other, fmt.Sprint("m", i)); got != "ok" {
			t.Fatalf("the other client's call %d after the greedy one: %s", i, got)
		}
	}
}

// TestHTTPSpoofedForwardedForIgnored: a peer that is not a declared proxy
// cannot pose as many clients through X-Forwarded-For (nor Forwarded): its
// calls all count as its own, and its sessions past its cap are evicted.
func TestHTTPSpoofedForwardedForIgnored(t *testing.T) {
	h := startHTTP(t, "PARSE_MCP_TRUSTED_PROXIES=10.0.0.0/8",
		policyEnv(t, "settings: {rate_limit: {requests: 3, window: 60s}}\n"))
	outcomes := map[string]int{}
	for i := range 10 {
		s := h.session(map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i+1), "Forwarded": fmt.Sprintf("for=203.0.113.%d", i+1)})
		outcomes[countCall(s, fmt.Sprint("s", i))]++
	}
	if outcomes["ok"] != 6 || outcomes["rate_limited"] != 4 {
		t.Fatalf("spoofed addresses counted as other clients: %v (want 6 ok, then rate_limited)", outcomes)
	}
	var sessions []*mcpSession
	for i := range 17 {
		sessions = append(sessions, h.session(map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", 100+i)}))
	}
	if status, _ := sessions[0].post(`{"jsonrpc":"2.0","id":"p","method":"ping"}`); status != 404 {
		t.Errorf("17 sessions with spoofed addresses: the first should have been evicted (one client, cap 16), got HTTP %d", status)
	}
}

// TestHTTPNamedKeysAreClients: with PARSE_MCP_API_KEYS every named key is
// its own client, on loopback too (where every process is otherwise one
// client): one key spending its whole window does not starve another, a
// key that matches none is refused, and one key cannot use another's
// session.
func TestHTTPNamedKeysAreClients(t *testing.T) {
	const alice, bob = "alice-e2e-key-0123456789", "bob-e2e-key-0123456789ab"
	h := startHTTP(t, "PARSE_MCP_API_KEYS=alice:"+alice+",bob:"+bob,
		policyEnv(t, "settings: {rate_limit: {requests: 3, window: 60s}}\n"))
	outcomes := map[string]int{}
	for s := range 3 {
		sess := h.session(map[string]string{"X-MCP-API-Key": alice})
		for i := range 4 {
			outcomes[countCall(sess, fmt.Sprint("a", s, i))]++
		}
	}
	if outcomes["ok"] != 6 || outcomes["rate_limited"] != 6 {
		t.Fatalf("alice: %v (want her client window of 6, then rate_limited)", outcomes)
	}
	other := h.session(map[string]string{"Authorization": "Bearer " + bob})
	for i := range 3 {
		if got := countCall(other, fmt.Sprint("b", i)); got != "ok" {
			t.Fatalf("bob's call %d after alice's: %s", i, got)
		}
	}
	if resp, _ := h.request("POST", "/mcp", initBody, map[string]string{"X-MCP-API-Key": alice[:len(alice)-1] + "x"}); resp.StatusCode != 401 {
		t.Fatalf("a key matching none: HTTP %d", resp.StatusCode)
	}
	// A session belongs to the key that opened it: bob holding alice's
	// session id gets 404, as for an unknown session.
	mine := h.session(map[string]string{"X-MCP-API-Key": alice})
	stolen := &mcpSession{h: h, id: mine.id, headers: map[string]string{"X-MCP-API-Key": bob, "Mcp-Session-Id": mine.id}}
	if status, _ := stolen.post(`{"jsonrpc":"2.0","id":"p","method":"ping"}`); status != 404 {
		t.Fatalf("another key on alice's session: HTTP %d", status)
	}
	if m := mine.rpc("p", "ping", ""); m["result"] == nil {
		t.Fatalf("alice's own session: %v", m)
	}
	// The audit event says which named key made each call, by name only.
	logs := h.stderr.String()
	if !strings.Contains(logs, `"api_key":"alice"`) || !strings.Contains(logs, `"api_key":"bob"`) {
		t.Fatalf("tool_call events do not name the API key:\n%s", logs)
	}
	if strings.Contains(logs, alice) || strings.Contains(logs, bob) {
		t.Fatal("a key's secret is in the log")
	}
}
