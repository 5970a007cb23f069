package e2e

// Resources through the binary: resources/list, resources/read of every
// kind (and the refusals), templates, completion, and subscriptions on both
// transports (a write by another client → exactly one debounced update →
// unsubscribe → no more; scoped servers hear only about what they can read;
// session teardown frees the watchers).

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// rpc sends a request on a raw server and returns its response.
func (r *rawServer) rpc(id, method, paramsJSON string) map[string]any {
	r.t.Helper()
	if paramsJSON == "" {
		paramsJSON = "{}"
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, paramsJSON))
	notes, resp := r.collect(id, 30*time.Second)
	if resp == nil {
		r.t.Fatalf("%s: no response", method)
	}
	for _, n := range notes {
		if n["method"] != "notifications/progress" && n["method"] != "notifications/message" {
			r.t.Fatalf("%s: unexpected notification %v", method, n)
		}
	}
	return resp
}

func result(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	res, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", m)
	}
	return res
}

// rpcError asserts a JSON-RPC error with code and returns its message.
func rpcError(t testing.TB, m map[string]any, code int) string {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok || e["code"] != float64(code) {
		t.Fatalf("want error %d, got %v", code, m)
	}
	return e["message"].(string)
}

// visibleClasses is what get_all_schemas lists.
func visibleClasses(t testing.TB, r *rawServer) []string {
	t.Helper()
	res := result(t, r.rpc("schemas", "tools/call", `{"name":"get_all_schemas","arguments":{}}`))
	var out struct {
		BuiltIn []struct{ Name string } `json:"built_in"`
		Custom  []struct{ Name string } `json:"custom"`
	}
	sc, _ := json.Marshal(res["structuredContent"])
	if err := json.Unmarshal(sc, &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range append(out.BuiltIn, out.Custom...) {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

func TestResourcesList(t *testing.T) {
	r := startRaw(t, scratchEnv(t)...)
	r.initialize()
	classes := visibleClasses(t, r)
	res := result(t, r.rpc("l", "resources/list", ""))
	var got []string
	for _, x := range res["resources"].([]any) {
		rs := x.(map[string]any)
		if rs["mimeType"] != "application/json" || rs["name"] == "" || rs["description"] == "" {
			t.Fatalf("resource %v", rs)
		}
		got = append(got, rs["uri"].(string))
	}
	var want []string
	for _, c := range classes {
		if c == demo.HiddenClassName {
			t.Fatalf("get_all_schemas lists the hidden class")
		}
		for _, k := range []string{"schema", "count", "samples"} {
			want = append(want, "parse://"+c+"/"+k)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("resources/list:\n got %v\nwant %v", got, want)
	}
	if strings.Contains(strings.Join(got, " "), demo.HiddenClassName) {
		t.Fatal("a hidden class is listed")
	}
	t.Logf("%d resources for %d classes", len(got), len(classes))
}

// TestResourcesRead: each kind is exactly what its tool returns; hidden,
// unknown, internal and malformed URIs are -32602.
func TestResourcesRead(t *testing.T) {
	r := startRaw(t, scratchEnv(t)...)
	r.initialize()
	toolText := func(id, name, args string) string {
		res := result(t, r.rpc(id, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)))
		if res["isError"] == true {
			t.Fatalf("%s: %v", name, res)
		}
		return res["content"].([]any)[0].(map[string]any)["text"].(string)
	}
	read := func(uri string) string {
		res := result(t, r.rpc("read", "resources/read", fmt.Sprintf(`{"uri":%q}`, uri)))
		c := res["contents"].([]any)
		if len(c) != 1 {
			t.Fatalf("%s: %d contents", uri, len(c))
		}
		rc := c[0].(map[string]any)
		if rc["uri"] != uri || rc["mimeType"] != "application/json" {
			t.Fatalf("%s: %v", uri, rc)
		}
		return rc["text"].(string)
	}
	for _, class := range []string{"Song", "_User", "Artist"} {
		args := fmt.Sprintf(`{"class_name":%q}`, class)
		for kind, tool := range map[string]string{"schema": "get_schema", "count": "count_objects"} {
			if got, want := read("parse://"+class+"/"+kind), toolText(kind, tool, args); got != want {
				t.Fatalf("parse://%s/%s differs from %s:\n%s\n%s", class, kind, tool, got, want)
			}
		}
		samples := read("parse://" + class + "/samples")
		if want := toolText("s", "get_sample_objects", fmt.Sprintf(`{"class_name":%q,"limit":5}`, class)); samples != want {
			t.Fatalf("samples differ from get_sample_objects:\n%s\n%s", samples, want)
		}
	}
	// The count resource applies the default filters like count_objects.
	var cnt struct{ Count int }
	_ = json.Unmarshal([]byte(read("parse://Song/count")), &cnt)
	if cnt.Count >= demo.SongCount {
		t.Fatalf("parse://Song/count = %d: the canonical filter is not applied", cnt.Count)
	}
	for _, uri := range []string{
		"parse://VaultSecret/schema", "parse://VaultSecret/count", "parse://VaultSecret/samples",
		"parse://Nope/schema", "parse://_SCHEMA/schema", "parse://_Hooks/count", "parse://_Join:users:_Role/count",
		"parse://Song/bogus", "parse://Song/count?x=1", "parse://Song/", "parse://../count", "http://example.com/x", "",
	} {
		msg := rpcError(t, r.rpc("bad", "resources/read", fmt.Sprintf(`{"uri":%q}`, uri)), -32602)
		if strings.Contains(msg, "VaultSecret") && !strings.HasPrefix(uri, "parse://VaultSecret") {
			t.Fatalf("%s: the message leaks the hidden class: %s", uri, msg)
		}
		if strings.Contains(msg, "sk_test") {
			t.Fatalf("%s: leaks a secret: %s", uri, msg)
		}
	}
	// A URI of no known shape gets the same message in both protocol eras.
	const unknownURI = "Unknown resource URI: expected parse://{className}/schema, /count or /samples"
	for _, uri := range []string{"parse://Song/bogus", "parse:/Song", "http://example.com/x"} {
		session := rpcError(t, r.rpc("s", "resources/read", fmt.Sprintf(`{"uri":%q}`, uri)), -32602)
		r.send(statelessBody("st", "resources/read", fmt.Sprintf(`{"uri":%q}`, uri), ""))
		_, resp := r.collect("st", 30*time.Second)
		stateless := rpcError(t, resp, -32602)
		if session != unknownURI || stateless != unknownURI {
			t.Errorf("%s: session revision %q, 2026-07-28 %q; want %q in both", uri, session, stateless, unknownURI)
		}
	}
	// Hidden reads are indistinguishable from unknown classes.
	hidden := rpcError(t, r.rpc("h", "resources/read", `{"uri":"parse://VaultSecret/count"}`), -32602)
	unknown := rpcError(t, r.rpc("u", "resources/read", `{"uri":"parse://VaultSecrets/count"}`), -32602)
	if !strings.Contains(hidden, "does not exist or is not accessible") || !strings.Contains(unknown, "does not exist or is not accessible") {
		t.Fatalf("hidden %q / unknown %q", hidden, unknown)
	}
	if strings.Contains(unknown, "VaultSecret ") || strings.Contains(unknown, "VaultSecret?") || strings.Contains(unknown, "VaultSecret,") {
		t.Fatalf("the hidden class is suggested: %q", unknown)
	}
}

func TestResourceTemplatesAndCompletion(t *testing.T) {
	r := startRaw(t, scratchEnv(t)...)
	r.initialize()
	res := result(t, r.rpc("t", "resources/templates/list", ""))
	var tmpls []string
	for _, x := range res["resourceTemplates"].([]any) {
		tm := x.(map[string]any)
		if tm["mimeType"] != "application/json" || tm["description"] == "" {
			t.Fatalf("template %v", tm)
		}
		tmpls = append(tmpls, tm["uriTemplate"].(string))
	}
	sort.Strings(tmpls)
	if want := "parse://{className}/count parse://{className}/samples parse://{className}/schema"; strings.Join(tmpls, " ") != want {
		t.Fatalf("templates %v", tmpls)
	}
	complete := func(ref, arg, value, ctx string) []string {
		if ctx == "" {
			ctx = "{}"
		}
		res := result(t, r.rpc("c", "completion/complete", fmt.Sprintf(`{"ref":%s,"argument":{"name":%q,"value":%q},"context":{"arguments":%s}}`, ref, arg, value, ctx)))
		var out []string
		for _, v := range res["completion"].(map[string]any)["values"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	res1 := `{"type":"ref/resource","uri":"parse://{className}/count"}`
	prompt := func(name string) string { return fmt.Sprintf(`{"type":"ref/prompt","name":%q}`, name) }
	cases := []struct {
		ref, arg, value, ctx string
		want                 string
	}{
		{res1, "className", "so", "", "Song"},
		{res1, "className", "Vault", "", ""},
		{res1, "className", "_", "", "_Installation _Role _Session _User"},
		{`{"type":"ref/resource","uri":"parse://{className}/schema"}`, "className", "Art", "", "Artist"},
		{prompt("class_overview"), "class_name", "Al", "", "Album _Installation"}, // prefix matches first, then "contains"
		{prompt("class_overview"), "class_name", "VaultS", "", ""},
		{prompt("count_by"), "group_by", "gen", `{"class_name":"Song"}`, "genre"},
		{prompt("count_by"), "group_by", "_hashed", `{"class_name":"_User"}`, ""},
		{prompt("find_relationship"), "pointer_field", "", `{"child_class":"Song","parent_class":"Artist"}`, "artist"},
		{prompt("find_relationship"), "child_class", "So", "", "Song"},
		{prompt("parse_relations"), "classes", "Song,Alb", "", "Song,Album"},
		{prompt("created_in_range"), "since", "2", "", ""},
	}
	for _, c := range cases {
		got := strings.Join(complete(c.ref, c.arg, c.value, c.ctx), " ")
		if got != c.want {
			t.Errorf("complete %s %s=%q: got %q, want %q", c.ref, c.arg, c.value, got, c.want)
		}
	}
	all := complete(res1, "className", "", "")
	if len(all) != len(visibleClasses(t, r)) {
		t.Fatalf("empty prefix completes %v", all)
	}
}

var songSeq atomic.Int64

// insertSong writes a Song straight into the scratch app with the driver,
// as another client (Parse Server, a script) would.
func insertSong(t testing.TB, archived bool, rperm []string) {
	t.Helper()
	id := fmt.Sprintf("e2eSub%04d", songSeq.Add(1))
	now := time.Now().UTC()
	doc := bson.D{{Key: "_id", Value: id}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now},
		{Key: "title", Value: "Subscription test " + id}, {Key: "genre", Value: "rock"}, {Key: "plays", Value: 1}, {Key: "archived", Value: archived}}
	if rperm != nil {
		doc = append(doc, bson.E{Key: "_rperm", Value: rperm}, bson.E{Key: "_wperm", Value: rperm})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := testDB.Collection(scratchPrefix+demo.ClassSong).InsertOne(ctx, doc); err != nil {
		t.Fatal(err)
	}
}

// updates reads the raw server's messages for d and returns the URIs of the
// notifications/resources/updated among them (anything else fails).
func (r *rawServer) updates(d time.Duration) []string {
	r.t.Helper()
	return r.collectUpdates(0, d)
}

// settle is how long a test waits to be sure that a write is NOT notified:
// up to 1s of polling, 250ms of debounce, plus slack.
const settle = 3500 * time.Millisecond

// expectUpdates waits (up to 30s, the poller stretches its interval on a
// loaded or instrumented machine) until n updates arrived, then 1.5s more to catch any
// duplicate, and returns them sorted.
func (r *rawServer) expectUpdates(n int) []string {
	r.t.Helper()
	return r.collectUpdates(n, 1500*time.Millisecond)
}

// collectUpdates reads the URIs of notifications/resources/updated (anything
// else fails) until n have arrived, then for extra more, and returns them
// sorted; the wait for the n is capped at 30 s.
func (r *rawServer) collectUpdates(n int, extra time.Duration) []string {
	r.t.Helper()
	return r.collectUpdatesWithin(n, extra, 30*time.Second)
}

// collectUpdatesWithin is collectUpdates with the wait for the n capped at
// ceiling.
func (r *rawServer) collectUpdatesWithin(n int, extra, ceiling time.Duration) []string {
	r.t.Helper()
	var uris []string
	deadline := time.After(ceiling)
	var after <-chan time.Time
	for {
		if len(uris) >= n && after == nil {
			after = time.After(extra)
		}
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatal("server closed stdout")
			}
			m := decodeLine(r.t, line)
			if m["method"] != "notifications/resources/updated" {
				r.t.Fatalf("unexpected message %v", m)
			}
			uris = append(uris, params(m)["uri"].(string))
		case <-deadline:
			sort.Strings(uris)
			return uris
		case <-after:
			sort.Strings(uris)
			return uris
		}
	}
}

func TestResourceSubscriptionsStdio(t *testing.T) {
	r := startRaw(t, scratchEnv(t)...)
	r.initialize()
	msg := rpcError(t, r.rpc("s0", "resources/subscribe", `{"uri":"parse://Song/schema"}`), -32602)
	if !strings.Contains(msg, "cannot be subscribed") {
		t.Fatalf("schema subscribe: %s", msg)
	}
	rpcError(t, r.rpc("s1", "resources/subscribe", `{"uri":"parse://VaultSecret/count"}`), -32602)
	rpcError(t, r.rpc("s2", "resources/subscribe", `{"uri":"parse://Nope/count"}`), -32602)
	rpcError(t, r.rpc("s3", "resources/subscribe", `{"uri":"file:///etc/passwd"}`), -32602)
	result(t, r.rpc("s4", "resources/subscribe", `{"uri":"parse://Song/count"}`))
	result(t, r.rpc("s5", "resources/subscribe", `{"uri":"parse://Song/samples"}`))
	result(t, r.rpc("s6", "resources/subscribe", `{"uri":"parse://Song/count"}`)) // twice: no-op

	// An archived song is outside the canonical filter: nothing this server
	// can read changed, so nobody is told.
	insertSong(t, true, nil)
	if u := r.updates(settle); len(u) != 0 {
		t.Fatalf("archived insert notified %v", u)
	}
	// A burst of three visible writes, back to back (well inside the 250 ms
	// debounce even on a loaded machine): exactly one update per URI. The
	// debounce itself is checked step by step in server.
	for range 3 {
		insertSong(t, false, nil)
	}
	if u := r.expectUpdates(2); strings.Join(u, " ") != "parse://Song/count parse://Song/samples" {
		t.Fatalf("after a burst of writes: %v, want one update per subscribed URI", u)
	}
	// Unsubscribe count: the next write only reaches samples.
	result(t, r.rpc("u1", "resources/unsubscribe", `{"uri":"parse://Song/count"}`))
	result(t, r.rpc("u2", "resources/unsubscribe", `{"uri":"parse://Never/subscribed"}`)) // no-op
	insertSong(t, false, nil)
	if u := r.expectUpdates(1); strings.Join(u, " ") != "parse://Song/samples" {
		t.Fatalf("after unsubscribing count: %v", u)
	}
	result(t, r.rpc("u3", "resources/unsubscribe", `{"uri":"parse://Song/samples"}`))
	insertSong(t, false, nil)
	if u := r.updates(settle); len(u) != 0 {
		t.Fatalf("after unsubscribing everything: %v", u)
	}
}

// TestResourceSubscriptionsScoped: a server scoped to a user (ACL) is only
// told about writes that user could read.
func TestResourceSubscriptionsScoped(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_ACL_USER="+demo.UserCarolID)...)
	r.initialize()
	result(t, r.rpc("s", "resources/subscribe", `{"uri":"parse://Song/count"}`))
	insertSong(t, false, []string{"role:" + demo.RoleAdmin})
	if u := r.updates(settle); len(u) != 0 {
		t.Fatalf("a write carol cannot read notified %v", u)
	}
	insertSong(t, false, []string{"*"})
	if u := r.expectUpdates(1); strings.Join(u, " ") != "parse://Song/count" {
		t.Fatalf("a public write: %v", u)
	}
}

// TestResourceSubscriptionsHTTP: the update reaches the subscribed session's
// GET stream only; DELETE frees the session's subscriptions.
func TestResourceSubscriptionsHTTP(t *testing.T) {
	h := startHTTP(t, scratchEnv(t)...)
	a, b := h.session(nil), h.session(nil)
	ctx := t.Context()
	streamA, streamB := a.listen(ctx), b.listen(ctx)
	if m := a.rpc("s", "resources/subscribe", `{"uri":"parse://Song/count"}`); m["result"] == nil {
		t.Fatalf("subscribe: %v", m)
	}
	if m := a.rpc("s2", "resources/subscribe", `{"uri":"parse://Song/schema"}`); m["error"] == nil || m["error"].(map[string]any)["code"] != float64(-32602) {
		t.Fatalf("schema subscribe: %v", m)
	}
	insertSong(t, false, nil)
	drain := func(ch <-chan map[string]any, d time.Duration) []map[string]any {
		var out []map[string]any
		deadline := time.After(d)
		for {
			select {
			case m := <-ch:
				out = append(out, m)
			case <-deadline:
				return out
			}
		}
	}
	var gotA []map[string]any
	select {
	case m := <-streamA:
		gotA = append(append(gotA, m), drain(streamA, 1500*time.Millisecond)...)
	case <-time.After(30 * time.Second):
	}
	if len(gotA) != 1 || gotA[0]["method"] != "notifications/resources/updated" || params(gotA[0])["uri"] != "parse://Song/count" {
		t.Fatalf("session a's stream: %v", gotA)
	}
	if gotB := drain(streamB, 100*time.Millisecond); len(gotB) != 0 {
		t.Fatalf("session b (not subscribed) got %v", gotB)
	}
	// Teardown: deleting the session stops the watcher.
	if resp, _ := h.request("DELETE", "/mcp", "", a.headers); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(h.stderr.String(), "stopped watching class") {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher was not stopped after DELETE:\n%s", h.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	insertSong(t, false, nil)
	if gotB := drain(streamB, settle); len(gotB) != 0 {
		t.Fatalf("after teardown: %v", gotB)
	}
}
