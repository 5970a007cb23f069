package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/tools"
)

// Attacks on the confirm view's token through the binary (SECURITY.md
// "Views"): the model, or a client that claims the extension, tries to make
// one confirmation write twice, write something else, or write in another
// process; and reads of ui:// URIs that are not views.

// viewsWriteServer is a stdio server of a Memo class under confirm_writes:
// always, initialized as an Apps client without elicitation (so a write
// without a valid token is refused, never asked).
func viewsWriteServer(t *testing.T, uri string) *rawServer {
	t.Helper()
	r := startRaw(t, append(append([]string{}, writeEnv...), uri, policyEnv(t, "settings: {confirm_writes: always, rate_limit: {requests: 1000, window: 60s}}\n"))...)
	initializeWith(r, appsCaps)
	return r
}

// callLine sends a tools/call and returns its decoded response.
func (r *rawServer) callLine(id, tool, args, meta string) map[string]any {
	r.t.Helper()
	params := fmt.Sprintf(`{"name":%q,"arguments":%s`, tool, args)
	if meta != "" {
		params += `,"_meta":` + meta
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":%s}}`, id, params))
	return decodeLine(r.t, r.rawAnswer(id))
}

// viewToken is the confirm view's token of a dry run's response.
func viewTokenOf(t *testing.T, resp map[string]any) string {
	t.Helper()
	res := obj(resp["result"])
	tok, _ := obj(res["_meta"])[tools.ViewConfirmationKey].(string)
	if tok == "" {
		t.Fatalf("no confirm view token in %v", resp)
	}
	return tok
}

func TestViewConfirmTokenAttacks(t *testing.T) {
	db, uri := writeDB(t, bson.D{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "n", Value: "number"}})
	ctx := context.Background()
	if _, err := db.Collection("Memo").InsertOne(ctx, bson.D{{Key: "_id", Value: "memo000001"}, {Key: "title", Value: "a"}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	n := func() any {
		var doc bson.M
		if err := db.Collection("Memo").FindOne(ctx, bson.D{{Key: "_id", Value: "memo000001"}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return doc["n"]
	}
	r := viewsWriteServer(t, uri)
	const inc = `{"class_name":"Memo","object_id":"memo000001","fields":{"n":{"__op":"Increment","amount":1}}`
	refused := func(resp map[string]any) bool {
		return obj(resp["result"])["isError"] == true
	}
	meta := func(tok string) string { return fmt.Sprintf(`{%q:%q}`, tools.ViewConfirmationKey, tok) }

	dry := r.callLine("dry", "update_object", inc+`,"dry_run":true}`, "")
	tok := viewTokenOf(t, dry)
	// The token is in the result's _meta only: not in what the model reads.
	res := obj(dry["result"])
	if b, _ := json.Marshal([]any{res["content"], res["structuredContent"]}); strings.Contains(string(b), "parse-mcp.confirm") {
		t.Fatalf("the token is in the model's text or structuredContent")
	}

	t.Run("smuggled in the arguments", func(t *testing.T) {
		args := inc + fmt.Sprintf(`,"_meta":{%q:%q}}`, tools.ViewConfirmationKey, tok)
		if resp := r.callLine("args", "update_object", args, ""); !refused(resp) || fmt.Sprint(n()) != "0" {
			t.Errorf("a token in the arguments confirmed a write: %v, n %v", resp, n())
		}
	})
	t.Run("other arguments", func(t *testing.T) {
		for i, args := range []string{
			`{"class_name":"Memo","object_id":"memo000001","fields":{"n":{"__op":"Increment","amount":1.0}}}`, // 1 vs 1.0
			`{"class_name":"Memo","object_id":"memo000001","fields":{"n":{"__op":"Increment","amount":100}}}`,
			`{"class_name":"Memo","object_id":"memo000001","fields":{"n.x":{"__op":"Increment","amount":1}}}`,
			inc + `,"dry_run":false}`,
		} {
			if resp := r.callLine(fmt.Sprint("other", i), "update_object", args, meta(tok)); !refused(resp) || fmt.Sprint(n()) != "0" {
				t.Errorf("%s with the token: %v, n %v", args, resp, n())
			}
		}
		if resp := r.callLine("del", "delete_object", `{"class_name":"Memo","object_id":"memo000001"}`, meta(tok)); !refused(resp) {
			t.Errorf("another tool took the token: %v", resp)
		}
	})
	t.Run("another process", func(t *testing.T) {
		other := viewsWriteServer(t, uri)
		if resp := other.callLine("x", "update_object", inc+"}", meta(tok)); !refused(resp) || fmt.Sprint(n()) != "0" {
			t.Errorf("another server process took the token: %v, n %v", resp, n())
		}
	})
	t.Run("double spend", func(t *testing.T) {
		// Two calls with the same token at once: exactly one write.
		for _, id := range []string{"a", "b", "c"} {
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"update_object","arguments":%s,"_meta":%s}}`, id, inc+"}", meta(tok)))
		}
		ok, answered := 0, 0
		for answered < 3 {
			m := decodeLine(t, <-r.lines)
			if id := fmt.Sprint(m["id"]); id == "a" || id == "b" || id == "c" {
				answered++
				if !refused(m) {
					ok++
				}
			}
		}
		if ok != 1 || fmt.Sprint(n()) != "1" {
			t.Errorf("%d of three concurrent calls with one token wrote; n = %v, want exactly one write", ok, n())
		}
	})
	t.Run("create and delete", func(t *testing.T) {
		// The view's other writes: each token confirms its write once.
		const create = `{"class_name":"Memo","fields":{"title":"made in the view"}}`
		tok := viewTokenOf(t, r.callLine("dc", "create_object", strings.TrimSuffix(create, "}")+`,"dry_run":true}`, ""))
		for i, want := range []bool{true, false} {
			if resp := r.callLine(fmt.Sprint("c", i), "create_object", create, meta(tok)); refused(resp) == want {
				t.Errorf("create %d with the token: %v", i, resp)
			}
		}
		const del = `{"class_name":"Memo","object_id":"memo000001"}`
		tok = viewTokenOf(t, r.callLine("dd", "delete_object", strings.TrimSuffix(del, "}")+`,"dry_run":true}`, ""))
		if resp := r.callLine("d", "delete_object", del, meta(tok)); refused(resp) {
			t.Errorf("delete with the token: %v", resp)
		}
		if n, err := db.Collection("Memo").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
			t.Errorf("%d objects after one create and one delete, want 1 (%v)", n, err)
		}
	})
	if strings.Contains(r.stderr.String(), "parse-mcp.confirm") {
		t.Errorf("a confirmation token in the server's log")
	}
}

// TestViewResourceReads: a ui:// URI that is not one of the views (another
// name, a traversal) is an unknown resource, not a file of the binary.
func TestViewResourceReads(t *testing.T) {
	r := startRaw(t)
	initializeWith(r, appsCaps)
	for i, uri := range []string{"ui://parse-mcp/nope", "ui://parse-mcp/../rows", "ui://parse-mcp/rows/../../views.go", "ui://parse-mcp/rows?x=1", "ui://parse-mcp/ROWS", "ui://other/rows", "ui://parse-mcp/dist/app.js"} {
		resp := r.rpc(fmt.Sprint("r", i), "resources/read", fmt.Sprintf(`{"uri":%q}`, uri))
		if resp["error"] == nil || strings.Contains(fmt.Sprint(resp), "<!doctype") {
			t.Errorf("%s: %v", uri, resp)
		}
	}
}

// TestViewConfirmTokenOverHTTP: 2026-07-28 over HTTP, two callers (named
// API keys), two processes on one database and a third acting as another
// user. Alice's token is refused to Bob and to the other identity; honoured
// once on the other process (one ledger on the database); three concurrent
// calls with one token, spread over both processes, write once. A caller
// that does not declare the extension gets no token.
func TestViewConfirmTokenOverHTTP(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx := context.Background()
	if _, err := db.Collection("Memo").InsertOne(ctx, bson.D{{Key: "_id", Value: "memo000001"}, {Key: "title", Value: "t0"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: "someoneElse"}, {Key: "username", Value: "else"}}); err != nil {
		t.Fatal(err)
	}
	const alice, bob = "alice-view-key-0123456789", "bob-view-key-0123456789"
	serverEnv := append(append([]string{}, writeEnv...), uri, "PARSE_MCP_API_KEYS=alice:"+alice+",bob:"+bob,
		policyEnv(t, "settings: {confirm_writes: always, rate_limit: {requests: 1000, window: 60s}}\n"))
	a, b := startHTTP(t, serverEnv...), startHTTP(t, serverEnv...)
	other := startHTTP(t, append(append([]string{}, serverEnv...), "PARSE_MCP_ACL_USER=someoneElse")...)
	title := func() string {
		var doc bson.M
		if err := db.Collection("Memo").FindOne(ctx, bson.D{{Key: "_id", Value: "memo000001"}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(doc["title"])
	}
	call := func(h *httpServer, key, caps, args, token string) map[string]any {
		t.Helper()
		extra := ""
		if token != "" {
			extra = fmt.Sprintf(`,%q:%q`, tools.ViewConfirmationKey, token)
		}
		meta := strings.Replace(statelessMeta("", extra), `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":`+caps, 1)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"update_object","arguments":%s,"_meta":%s}}`, args, meta)
		hdr := statelessHeaders("tools/call", "update_object")
		hdr["X-MCP-API-Key"] = key
		resp, raw := h.request("POST", "/mcp", body, hdr)
		return lastResult(t, decodeAnswer(t, resp, raw))
	}
	set := func(v string) string {
		return fmt.Sprintf(`{"class_name":"Memo","object_id":"memo000001","fields":{"title":%q}}`, v)
	}
	dry := func(v string) string { return strings.TrimSuffix(set(v), "}") + `,"dry_run":true}` }
	tokenOf := func(res map[string]any) string {
		t.Helper()
		tok, _ := obj(res["_meta"])[tools.ViewConfirmationKey].(string)
		if tok == "" {
			t.Fatalf("no token: %v", res)
		}
		return tok
	}
	refused := func(what string, res map[string]any) {
		t.Helper()
		if res["isError"] != true || title() != "t0" {
			t.Errorf("%s: %v, title %q", what, res, title())
		}
	}

	if res := call(a, alice, "{}", dry("t1"), ""); obj(res["_meta"])[tools.ViewConfirmationKey] != nil {
		t.Errorf("a client without the extension got a token: %v", res)
	}
	tok := tokenOf(call(a, alice, appsCaps, dry("t1"), ""))
	refused("Bob with Alice's token", call(a, bob, appsCaps, set("t1"), tok))
	refused("another identity with Alice's token", call(other, alice, appsCaps, set("t1"), tok))
	if res := call(b, alice, "{}", set("t1"), tok); res["isError"] == true || title() != "t1" {
		t.Fatalf("Alice's token on the other process: %v, title %q", res, title())
	}
	refused2 := func(what string, res map[string]any, want string) {
		t.Helper()
		if res["isError"] != true || title() != want {
			t.Errorf("%s: %v, title %q", what, res, title())
		}
	}
	refused2("the spent token again", call(a, alice, appsCaps, set("t1"), tok), "t1")

	// A 2026-07-28 requestState (the question an elicitation asks, signed
	// like the view's token) is not the person's answer: presented as the
	// view's token it confirms nothing.
	elicit := call(a, alice, `{"elicitation":{}}`, set("t1b"), "")
	state, _ := elicit["requestState"].(string)
	if elicit["resultType"] != "input_required" || state == "" {
		t.Fatalf("an elicitation client's write: %v", elicit)
	}
	refused2("a requestState as the view's token", call(a, alice, appsCaps, set("t1b"), state), "t1")

	// Three calls at once with one token, on both processes: one write.
	tok = tokenOf(call(a, alice, appsCaps, dry("t2"), ""))
	results := make(chan map[string]any, 3)
	for _, h := range []*httpServer{a, b, a} {
		go func() { results <- call(h, alice, appsCaps, set("t2"), tok) }()
	}
	wrote := 0
	for range 3 {
		if res := <-results; res["isError"] != true {
			wrote++
		}
	}
	if wrote != 1 || title() != "t2" {
		t.Errorf("%d of three concurrent calls with one token wrote (title %q), want exactly one", wrote, title())
	}
	for _, h := range []*httpServer{a, b, other} {
		if strings.Contains(h.stderr.String(), "parse-mcp.confirm") {
			t.Errorf("a confirmation token in the server's log")
		}
	}
}

// TestViewsNoLeakAcrossClients: one server, Apps and plain clients at once
// (sessions and 2026-07-28 requests, interleaved and concurrent): the views'
// _meta, resources and tokens reach only the Apps requests, so nothing an
// Apps client's list or call adds stays in state another client reads.
func TestViewsNoLeakAcrossClients(t *testing.T) {
	db, uri := writeDB(t, bson.D{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}})
	if _, err := db.Collection("Memo").InsertOne(context.Background(), bson.D{{Key: "_id", Value: "memo000001"}, {Key: "title", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	h := startHTTP(t, append(append([]string{}, writeEnv...), uri, policyEnv(t, "settings: {confirm_writes: always, rate_limit: {requests: 10000, window: 60s}}\n"))...)
	apps := h.session(nil)
	plain := h.session(nil)
	// Re-initialize the first as an Apps client.
	resp, b := h.request("POST", "/mcp", strings.Replace(initBody, `"capabilities":{}`, `"capabilities":`+appsCaps, 1), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d %s", resp.StatusCode, b)
	}
	apps.id = resp.Header.Get("Mcp-Session-Id")
	apps.headers["Mcp-Session-Id"] = apps.id
	if resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, apps.headers); resp.StatusCode != 202 {
		t.Fatalf("initialized: %d %s", resp.StatusCode, b)
	}
	const dry = `{"name":"update_object","arguments":{"class_name":"Memo","object_id":"memo000001","fields":{"title":"b"},"dry_run":true}}`
	requests := [][2]string{{"tools/list", "{}"}, {"resources/list", "{}"}, {"tools/call", dry}}
	stateless := func(caps, method, params string) string {
		body := strings.Replace(statelessBody("s", method, params, ""), `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":`+caps, 1)
		name := ""
		if method == "tools/call" {
			name = "update_object"
		}
		resp, raw := h.request("POST", "/mcp", body, statelessHeaders(method, name))
		out, _ := json.Marshal(decodeAnswer(t, resp, raw))
		return string(out)
	}
	var seq atomic.Int64
	session := func(s *mcpSession, method, params string) string {
		out, _ := json.Marshal(s.rpc(fmt.Sprint("x", seq.Add(1)), method, params))
		return string(out)
	}
	viewsIn := func(s string) bool {
		return strings.Contains(s, "ui://parse-mcp/") || strings.Contains(s, tools.ViewConfirmationKey)
	}
	errs := make(chan string, 400)
	done := make(chan struct{})
	var workers int
	for i := range 10 {
		for _, rq := range requests {
			workers += 4
			go func() {
				defer func() { done <- struct{}{} }()
				if got := session(plain, rq[0], rq[1]); viewsIn(got) {
					errs <- fmt.Sprintf("plain session %s (%d): %.300s", rq[0], i, got)
				}
			}()
			go func() {
				defer func() { done <- struct{}{} }()
				if got := stateless("{}", rq[0], rq[1]); viewsIn(got) {
					errs <- fmt.Sprintf("plain 2026-07-28 %s (%d): %.300s", rq[0], i, got)
				}
			}()
			go func() {
				defer func() { done <- struct{}{} }()
				if got := session(apps, rq[0], rq[1]); !viewsIn(got) {
					errs <- fmt.Sprintf("Apps session %s (%d) without views: %.300s", rq[0], i, got)
				}
			}()
			go func() {
				defer func() { done <- struct{}{} }()
				if got := stateless(appsCaps, rq[0], rq[1]); !viewsIn(got) {
					errs <- fmt.Sprintf("Apps 2026-07-28 %s (%d) without views: %.300s", rq[0], i, got)
				}
			}()
		}
	}
	for range workers {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
