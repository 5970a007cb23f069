package e2e

// Protocol 2026-07-28 (the stateless revision) through the binary, on stdio
// and streamable HTTP: server/discover without a handshake, per-request _meta
// (version, client capabilities, log level), resultType and cache hints,
// Mcp-Method/Mcp-Name, no sessions over HTTP (GET/DELETE 405), two
// instances serving one client alternately, and subscriptions/listen.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const statelessVersion = "2026-07-28"

// statelessMeta is the _meta of a 2026-07-28 request; logLevel "" asks for
// no notifications/message.
func statelessMeta(logLevel string, extra string) string {
	m := `{"io.modelcontextprotocol/protocolVersion":"` + statelessVersion + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"stateless-e2e","version":"1"}`
	if logLevel != "" {
		m += `,"io.modelcontextprotocol/logLevel":"` + logLevel + `"`
	}
	return m + extra + `}`
}

// statelessBody is a 2026-07-28 request with params (a JSON object, without
// _meta).
func statelessBody(id, method, paramsJSON, logLevel string) string {
	if paramsJSON == "" {
		paramsJSON = "{}"
	}
	p := strings.TrimSuffix(strings.TrimSpace(paramsJSON), "}")
	if strings.TrimSpace(p) != "{" {
		p += ","
	}
	p += `"_meta":` + statelessMeta(logLevel, "") + "}"
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, p)
}

// statelessHeaders are the headers 2026-07-28 requires on a POST.
func statelessHeaders(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": statelessVersion, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// statelessPost sends one 2026-07-28 request to an HTTP server and returns
// its status, its messages (notifications, then the response) and headers.
func (h *httpServer) statelessPost(id, method, name, paramsJSON, logLevel string) (int, []map[string]any, http.Header) {
	h.t.Helper()
	resp, b := h.request("POST", "/mcp", statelessBody(id, method, paramsJSON, logLevel), statelessHeaders(method, name))
	return resp.StatusCode, decodeAnswer(h.t, resp, b), resp.Header
}

func lastResult(t testing.TB, msgs []map[string]any) map[string]any {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatalf("no answer")
	}
	res, ok := msgs[len(msgs)-1]["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", msgs[len(msgs)-1])
	}
	return res
}

func checkDiscover(t testing.TB, res map[string]any) {
	t.Helper()
	b, _ := json.Marshal(res["supportedVersions"])
	for _, v := range []string{statelessVersion, "2025-11-25", "2025-06-18", "2025-03-26"} {
		if !strings.Contains(string(b), `"`+v+`"`) {
			t.Fatalf("server/discover supportedVersions %s lacks %s", b, v)
		}
	}
	if res["capabilities"] == nil || res["resultType"] != "complete" {
		t.Fatalf("server/discover result %v", res)
	}
	if _, ok := res["ttlMs"]; !ok || res["cacheScope"] != "private" {
		t.Fatalf("server/discover without cache hints: %v", res)
	}
}

// TestStatelessStdio: a 2026-07-28 client on stdio needs no handshake; the
// per-request log level decides whether a denial is sent as
// notifications/message (before the response).
func TestStatelessStdio(t *testing.T) {
	r := startRaw(t, scratchEnv(t)...)
	r.send(statelessBody("d", "server/discover", "", ""))
	_, resp := r.collect("d", 10*time.Second)
	checkDiscover(t, result(t, resp))

	r.send(statelessBody("l", "tools/list", "", ""))
	_, resp = r.collect("l", 10*time.Second)
	res := result(t, resp)
	if res["resultType"] != "complete" || res["cacheScope"] != "private" || res["ttlMs"] == nil {
		t.Fatalf("tools/list decoration: resultType %v ttlMs %v cacheScope %v", res["resultType"], res["ttlMs"], res["cacheScope"])
	}

	// A logged denial: a security violation (warning). A hidden class is
	// answered like a missing one and not logged.
	hidden := `{"name":"count_objects","arguments":{"class_name":"Song","where":{"$where":"secret-value"}}}`
	r.send(statelessBody("quiet", "tools/call", hidden, ""))
	notes, resp := r.collect("quiet", 10*time.Second)
	if resp == nil || len(notes) != 0 {
		t.Fatalf("no logLevel: notes %v resp %v", notes, resp)
	}
	if e, _ := resp["error"].(map[string]any); e == nil || e["code"] != float64(-32602) {
		t.Fatalf("refused call %v", resp)
	}
	r.send(statelessBody("ok", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Song"}}`, ""))
	_, resp = r.collect("ok", 10*time.Second)
	if res := result(t, resp); res["isError"] == true || res["resultType"] != "complete" {
		t.Fatalf("call result %v", res)
	}
	r.send(statelessBody("loud", "tools/call", hidden, "warning"))
	notes, resp = r.collect("loud", 10*time.Second)
	if resp == nil || len(notes) != 1 || notes[0]["method"] != "notifications/message" {
		t.Fatalf("logLevel warning: notes %v resp %v", notes, resp)
	}
	if b, _ := json.Marshal(notes[0]); strings.Contains(string(b), "secret-value") || !strings.Contains(string(b), "security_violation") {
		t.Fatalf("log message %s", b)
	}
	r.send(statelessBody("err", "tools/call", hidden, "error"))
	if notes, _ := r.collect("err", 10*time.Second); len(notes) != 0 {
		t.Fatalf("logLevel error let a warning through: %v", notes)
	}
	// The legacy handshake still works on the same connection.
	r.initialize()
	if m := r.rpc("p", "ping", `{}`); m["result"] == nil {
		t.Fatalf("ping after initialize: %v", m)
	}
}

// TestStatelessHTTP: 2026-07-28 over HTTP: no session header is needed or
// minted; GET and DELETE answer 405; Mcp-Method/Mcp-Name must match the body.
func TestStatelessHTTP(t *testing.T) {
	h := startHTTP(t, scratchEnv(t)...)
	status, msgs, hdr := h.statelessPost("d", "server/discover", "", "", "")
	if status != 200 || hdr.Get("Mcp-Session-Id") != "" {
		t.Fatalf("discover: %d, session %q", status, hdr.Get("Mcp-Session-Id"))
	}
	checkDiscover(t, lastResult(t, msgs))

	name := base64Name("count_objects")
	status, msgs, _ = h.statelessPost("c", "tools/call", name, `{"name":"count_objects","arguments":{"class_name":"Song"}}`, "")
	if res := lastResult(t, msgs); status != 200 || res["isError"] == true || res["resultType"] != "complete" {
		t.Fatalf("tools/call: %d %v", status, res)
	}
	// A logged denial (a security violation) with logLevel info arrives as
	// a notification on the request's own SSE stream, before the response.
	_, msgs, _ = h.statelessPost("v", "tools/call", name, `{"name":"count_objects","arguments":{"class_name":"Song","where":{"$where":"1"}}}`, "info")
	if len(msgs) != 2 || msgs[0]["method"] != "notifications/message" {
		t.Fatalf("denial with logLevel info: %v", msgs)
	}

	for _, m := range []string{"GET", "DELETE"} {
		resp, _ := h.request(m, "/mcp", "", map[string]string{"Mcp-Protocol-Version": statelessVersion})
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Fatalf("%s in 2026-07-28: %d (Allow %q)", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	bad := []struct {
		name    string
		headers map[string]string
	}{
		{"no Mcp-Method", map[string]string{"Mcp-Protocol-Version": statelessVersion}},
		{"wrong Mcp-Method", statelessHeaders("tools/list", name)},
		{"no Mcp-Name", statelessHeaders("tools/call", "")},
		{"wrong Mcp-Name", statelessHeaders("tools/call", base64Name("query_class"))},
		{"no protocol header", map[string]string{"Mcp-Protocol-Version": "", "Mcp-Method": "tools/call", "Mcp-Name": name}},
		{"header mismatch", map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": name}},
	}
	for _, c := range bad {
		resp, b := h.request("POST", "/mcp", statelessBody("x", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Song"}}`, ""), c.headers)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"error"`) {
			t.Fatalf("%s: %d %s", c.name, resp.StatusCode, b)
		}
	}
	// A malformed _meta clientCapabilities (or none) is a malformed request:
	// -32602 with HTTP 400, as the revision (and the conformance suite's
	// server-stateless) requires, not a 200.
	for name, caps := range map[string]string{"malformed": `"not an object"`, "wrong field type": `{"sampling":"yes"}`, "missing": ""} {
		meta := `{"io.modelcontextprotocol/protocolVersion":"` + statelessVersion + `"`
		if caps != "" {
			meta += `,"io.modelcontextprotocol/clientCapabilities":` + caps
		}
		body := `{"jsonrpc":"2.0","id":"caps","method":"tools/list","params":{"_meta":` + meta + `}}}`
		resp, b := h.request("POST", "/mcp", body, statelessHeaders("tools/list", ""))
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		e, _ := m["error"].(map[string]any)
		if resp.StatusCode != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "clientCapabilities") {
			t.Fatalf("%s clientCapabilities: %d %s", name, resp.StatusCode, b)
		}
	}
	// A session client on the same endpoint is unaffected.
	s := h.session(nil)
	if m := s.rpc("p", "ping", `{}`); m["result"] == nil {
		t.Fatalf("legacy session ping: %v", m)
	}
}

// base64Name encodes an Mcp-Name value. Plain ASCII names may be sent as
// is; the base64 form exercises the decoder.
func base64Name(s string) string {
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// TestStatelessScaleOut: two parse-mcp processes behind a (simulated) load
// balancer: a 2026-07-28 client alternates between them request by request,
// including following a pagination cursor minted by the other instance.
func TestStatelessScaleOut(t *testing.T) {
	a, b := startHTTP(t, scratchEnv(t)...), startHTTP(t, scratchEnv(t)...)
	instances := []*httpServer{a, b}
	name := base64Name("query_class")
	seen := map[string]bool{}
	args := map[string]any{"class_name": "Song", "limit": 5, "keys": []string{"title"}, "order": "title"}
	for i := range 4 {
		h := instances[i%2]
		p, _ := json.Marshal(map[string]any{"name": "query_class", "arguments": args})
		status, msgs, hdr := h.statelessPost(fmt.Sprint("q", i), "tools/call", name, string(p), "")
		res := lastResult(t, msgs)
		if status != 200 || res["isError"] == true || hdr.Get("Mcp-Session-Id") != "" {
			t.Fatalf("page %d on instance %d: %d %v", i, i%2, status, res)
		}
		sc, _ := res["structuredContent"].(map[string]any)
		rows := rowObjects(sc, "results")
		if len(rows) == 0 {
			t.Fatalf("page %d: no rows in %v", i, sc)
		}
		for _, r := range rows {
			k, _ := json.Marshal(r)
			if seen[string(k)] {
				t.Fatalf("page %d repeats row %s", i, k)
			}
			seen[string(k)] = true
		}
		next, _ := sc["next_call"].(map[string]any)
		if next == nil {
			t.Fatalf("page %d has no next_call: %v", i, sc)
		}
		args = next["arguments"].(map[string]any)
	}
	if len(seen) < 20 {
		t.Fatalf("only %d rows over alternating instances", len(seen))
	}
	for _, h := range instances {
		_, msgs, _ := h.statelessPost("d", "server/discover", "", "", "")
		checkDiscover(t, lastResult(t, msgs))
	}
}

// TestStatelessListenHTTP: subscriptions/listen over HTTP in 2026-07-28: the
// stream acknowledges, then carries notifications/resources/updated for a
// visible write, tagged with the listen request's id; closing the request
// ends the subscription.
func TestStatelessListenHTTP(t *testing.T) {
	h := startHTTP(t, scratchEnv(t)...)
	msgs := h.listenAs(t, "listen-1", "parse://Song/count", nil) // acknowledged
	next := func() map[string]any {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("listen stream ended")
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("nothing on the listen stream within 30s")
		}
		return nil
	}
	insertSong(t, false, nil)
	upd := next()
	p := params(upd)
	meta, _ := p["_meta"].(map[string]any)
	if upd["method"] != "notifications/resources/updated" || p["uri"] != "parse://Song/count" || meta["io.modelcontextprotocol/subscriptionId"] != "listen-1" {
		t.Fatalf("update %v", upd)
	}
}

// TestViolationLogged: a security violation (here a $where) is answered
// -32602 with the generic message and, when the request's log level admits
// warnings, preceded by notifications/message (level warning) that names no
// reason and echoes nothing of the request — in both eras.
func TestViolationLogged(t *testing.T) {
	r := startRaw(t, scratchEnv(t)...)
	r.initialize()
	attack := `{"name":"count_objects","arguments":{"class_name":"Song","where":{"$where":"sleep(10000)"}}}`
	check := func(id string, wantNote bool) {
		t.Helper()
		notes, resp := r.collect(id, 10*time.Second)
		if e, _ := resp["error"].(map[string]any); e == nil || e["code"] != float64(-32602) {
			t.Fatalf("%s: want -32602, got %v", id, resp)
		}
		if !wantNote {
			if len(notes) != 0 {
				t.Fatalf("%s: notifications %v", id, notes)
			}
			return
		}
		if len(notes) != 1 || notes[0]["method"] != "notifications/message" {
			t.Fatalf("%s: want one notifications/message, got %v", id, notes)
		}
		p := params(notes[0])
		b, _ := json.Marshal(p)
		if p["level"] != "warning" || !strings.Contains(string(b), `"security_violation"`) || strings.Contains(string(b), "sleep") || strings.Contains(string(b), "$where") {
			t.Fatalf("%s: log message %s", id, b)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":"v0","method":"tools/call","params":` + attack + `}`)
	check("v0", false) // no level chosen yet
	r.send(`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"warning"}}`)
	r.collect("lvl", 5*time.Second)
	r.send(`{"jsonrpc":"2.0","id":"v1","method":"tools/call","params":` + attack + `}`)
	check("v1", true)
	r.send(`{"jsonrpc":"2.0","id":"lvl2","method":"logging/setLevel","params":{"level":"error"}}`)
	r.collect("lvl2", 5*time.Second)
	r.send(`{"jsonrpc":"2.0","id":"v2","method":"tools/call","params":` + attack + `}`)
	check("v2", false)

	// 2026-07-28: the per-request level decides.
	r.send(statelessBody("m1", "tools/call", attack, "warning"))
	check("m1", true)
	r.send(statelessBody("m2", "tools/call", attack, ""))
	check("m2", false)

	// Over HTTP, on the request's own stream.
	h := startHTTP(t, scratchEnv(t)...)
	_, msgs, _ := h.statelessPost("h1", "tools/call", base64Name("count_objects"), attack, "info")
	if len(msgs) != 2 || msgs[0]["method"] != "notifications/message" || msgs[1]["error"] == nil {
		t.Fatalf("HTTP 2026-07-28 violation: %v", msgs)
	}
}
