package e2e

// Per-request identity over HTTP (docs/team.md "Serve a team"): one process with
// PARSE_MCP_HTTP_AUTH, several people, each by their own Parse session
// (parse-session) or an operator's named key (keys), in both protocol eras.
// The process itself runs in master posture, so any path that fell back to
// the environment identity would show rows the person may not read.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// identityCounts are the counts a per-request identity must see: what the
// same identity sees as the process's fixed identity over stdio.
var identityClasses = []string{"Song", "Invoice", "Playlist"}

func fixedIdentityCounts(t *testing.T, env ...string) map[string]float64 {
	t.Helper()
	c := stdioClient(t, env...)
	out := map[string]float64{}
	for _, cls := range identityClasses {
		n, _ := callOK(t, c, "count_objects", map[string]any{"class_name": cls})["count"].(float64)
		out[cls] = n
	}
	return out
}

// toolText calls a tool in a legacy-era session and returns its result
// text and whether it is an error result.
func (s *mcpSession) toolText(id, tool string, args map[string]any) (string, bool) {
	s.h.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	resp := s.rpc(id, "tools/call", string(b))
	return resultText(s.h.t, resp)
}

func resultText(t testing.TB, resp map[string]any) (string, bool) {
	t.Helper()
	res, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", resp)
	}
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content: %v", res)
	}
	txt, _ := content[0].(map[string]any)["text"].(string)
	return txt, res["isError"] == true
}

// statelessTool calls a tool in the 2026-07-28 era with the given
// credential headers.
func (h *httpServer) statelessTool(id, tool string, args map[string]any, cred map[string]string) (int, string, bool) {
	h.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	headers := statelessHeaders("tools/call", tool)
	maps.Copy(headers, cred)
	resp, body := h.request("POST", "/mcp", statelessBody(id, "tools/call", string(b), ""), headers)
	if resp.StatusCode != 200 {
		return resp.StatusCode, string(body), true
	}
	msgs := decodeAnswer(h.t, resp, body)
	txt, isErr := resultText(h.t, msgs[len(msgs)-1])
	return resp.StatusCode, txt, isErr
}

func countOf(t testing.TB, txt string) float64 {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(txt), &m); err != nil {
		t.Fatalf("count result %q: %v", txt, err)
	}
	n, ok := m["count"].(float64)
	if !ok {
		t.Fatalf("count result without count: %s", txt)
	}
	return n
}

func TestHTTPPerRequestIdentity(t *testing.T) {
	const opsKey = "ops-key-0123456789abcdef"
	const editorKey = "editor-key-0123456789abcdef"
	h := startHTTP(t, "PARSE_MCP_HTTP_AUTH=keys,parse-session", "PARSE_MCP_IDENTITY_CACHE=1s",
		"PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true", "PARSE_AGENT_ALLOW_RAW_CRUD=true",
		"PARSE_MCP_API_KEYS=ops@master:"+opsKey+",mods@role="+demo.RoleModerator+"/readonly:"+editorKey)

	people := []struct {
		name   string
		cred   map[string]string
		direct string // the same identity as the process's fixed one
	}{
		{"alice (role Admin) by bearer", map[string]string{"Authorization": "Bearer " + demo.AliceSessionToken}, "PARSE_MCP_SESSION_TOKEN=" + demo.AliceSessionToken},
		{"bob by X-Parse-Session-Token", map[string]string{"X-Parse-Session-Token": demo.BobSessionToken}, "PARSE_MCP_SESSION_TOKEN=" + demo.BobSessionToken},
		{"carol by bearer", map[string]string{"Authorization": "Bearer " + demo.CarolSessionToken}, "PARSE_MCP_SESSION_TOKEN=" + demo.CarolSessionToken},
		{"a key acting as role Moderator", map[string]string{"X-MCP-API-Key": editorKey}, "PARSE_MCP_ACL_ROLE=" + demo.RoleModerator},
	}
	seen := map[string]string{}
	sessions := map[string]*mcpSession{}
	for i, p := range people {
		want := fixedIdentityCounts(t, p.direct)
		s := h.session(p.cred)
		sessions[p.name] = s
		for _, cls := range identityClasses {
			txt, isErr := s.toolText(fmt.Sprint("c", i, cls), "count_objects", map[string]any{"class_name": cls})
			if isErr || countOf(t, txt) != want[cls] {
				t.Errorf("%s, session era: count %s = %s, want %v (as the fixed identity)", p.name, cls, txt, want[cls])
			}
			status, txt, isErr := h.statelessTool(fmt.Sprint("s", i, cls), "count_objects", map[string]any{"class_name": cls}, p.cred)
			if status != 200 || isErr || countOf(t, txt) != want[cls] {
				t.Errorf("%s, 2026-07-28: count %s = %d %s, want %v", p.name, cls, status, txt, want[cls])
			}
		}
		// Hidden ≡ missing per identity: _Session (visible in master
		// posture only) answers exactly as a class that does not exist.
		hidden, hErr := s.toolText("h", "count_objects", map[string]any{"class_name": "_Session"})
		if !hErr || !strings.Contains(hidden, "Class _Session does not exist or is not accessible.") {
			t.Errorf("%s: _Session answered %q, want the missing-class answer", p.name, hidden)
		}
		key := fmt.Sprint(want)
		if other, dup := seen[key]; dup && !strings.Contains(p.name, "key") {
			t.Errorf("%s and %s see the same counts %v: the fixture does not tell them apart", p.name, other, want)
		}
		seen[key] = p.name
	}
	if got := fmt.Sprint(fixedIdentityCounts(t, "PARSE_MCP_SESSION_TOKEN="+demo.AliceSessionToken)); got == fmt.Sprint(fixedIdentityCounts(t, "")) {
		t.Fatalf("alice sees what master sees (%s): the test could not tell a fallback to the environment identity", got)
	}

	// The operator's master key: _Session is visible.
	ops := h.session(map[string]string{"X-MCP-API-Key": opsKey})
	if txt, isErr := ops.toolText("m", "count_objects", map[string]any{"class_name": "_Session"}); isErr {
		t.Errorf("master key: _Session refused: %s", txt)
	}
	// tools/list per identity: the server runs with the write tier, the
	// Moderator key is capped at readonly.
	lists := func(s *mcpSession) bool {
		b, _ := json.Marshal(s.rpc("l", "tools/list", ""))
		return strings.Contains(string(b), `"name":"create_object"`)
	}
	if !lists(sessions[people[0].name]) || lists(sessions["a key acting as role Moderator"]) {
		t.Errorf("tools/list: alice lists create_object %v (want true), the readonly key %v (want false)", lists(sessions[people[0].name]), lists(sessions["a key acting as role Moderator"]))
	}
	if txt, isErr := sessions["a key acting as role Moderator"].toolText("w", "create_object", map[string]any{"class_name": "Song", "fields": map[string]any{"title": "x"}}); !isErr || !strings.Contains(txt, "caps the tier at readonly") {
		t.Errorf("the readonly key called a write tool: %s", txt)
	}

	// A session belongs to its identity: bob presenting alice's session id
	// is answered as for an unknown session.
	alice := sessions[people[0].name]
	stolen := map[string]string{"Mcp-Session-Id": alice.id, "X-Parse-Session-Token": demo.BobSessionToken}
	if resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`, stolen); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob with alice's session id: %d %s, want 404", resp.StatusCode, b)
	}

	// Refusals: no credential, an unknown token, an expired session, an
	// unknown key — the fixed 401 body, the same for all.
	for name, cred := range map[string]map[string]string{
		"none":          {},
		"unknown token": {"Authorization": "Bearer r:00000000000000000000000000000000"},
		"expired":       {"X-Parse-Session-Token": demo.ExpiredSessionToken},
		"unknown key":   {"X-MCP-API-Key": "not-a-key-0123456789abcdef"},
	} {
		resp, b := h.request("POST", "/mcp", initBody, cred)
		if resp.StatusCode != http.StatusUnauthorized || string(b) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}` {
			t.Errorf("%s: %d %s, want the fixed 401", name, resp.StatusCode, b)
		}
	}

	// A deleted _Session stops working within PARSE_MCP_IDENTITY_CACHE.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	token := "r:deadbeefdeadbeefdeadbeefdeadbeef"
	sessions2 := testDB.Collection("_Session")
	if _, err := sessions2.InsertOne(ctx, bson.D{{Key: "_id", Value: "idhttpsess1"}, {Key: "_session_token", Value: token},
		{Key: "_p_user", Value: "_User$" + demo.UserBobID}, {Key: "expiresAt", Value: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	cred := map[string]string{"X-Parse-Session-Token": token}
	short := h.session(cred)
	if txt, isErr := short.toolText("d1", "count_objects", map[string]any{"class_name": "Song"}); isErr {
		t.Fatalf("fresh session refused: %s", txt)
	}
	if _, err := sessions2.DeleteOne(ctx, bson.D{{Key: "_id", Value: "idhttpsess1"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":"d2","method":"tools/list","params":{}}`, short.headers); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("deleted session after the cache TTL: %d %s, want 401", resp.StatusCode, b)
	}
	if status, b, _ := h.statelessTool("d3", "count_objects", map[string]any{"class_name": "Song"}, cred); status != http.StatusUnauthorized {
		t.Errorf("deleted session, 2026-07-28: %d %s, want 401", status, b)
	}
	// Audit events say who (user, client_id), and no credential reaches a
	// log line.
	logs := h.stderr.String()
	for _, who := range []string{`"user":"user:` + demo.UserAliceID + `"`, `"user":"user:` + demo.UserBobID + `"`, `"user":"role:` + demo.RoleModerator + `","client_id":"mods"`, `"user":"master","client_id":"ops"`} {
		if !strings.Contains(logs, who) {
			t.Errorf("no audit event with %s", who)
		}
	}
	for _, secret := range []string{demo.AliceSessionToken, demo.BobSessionToken, token, opsKey, editorKey} {
		if strings.Contains(logs, secret) {
			t.Errorf("a credential is in the log")
		}
	}
}

// TestHTTPAuthStartupRefusals: PARSE_MCP_HTTP_AUTH problems stop the
// process with exit 2, naming the variable.
func TestHTTPAuthStartupRefusals(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"PARSE_MCP_HTTP_AUTH=passwords"}, "PARSE_MCP_HTTP_AUTH"},
		{[]string{"PARSE_MCP_HTTP_AUTH=jwt"}, "PARSE_MCP_JWT_ISSUER"},
		{[]string{"PARSE_MCP_HTTP_AUTH=jwt", "PARSE_MCP_JWT_ISSUER=https://id.example"}, "PARSE_MCP_JWT_AUDIENCE"},
		{[]string{"PARSE_MCP_HTTP_AUTH=oauth"}, "PARSE_MCP_SERVER_URL"},
		{[]string{"PARSE_MCP_HTTP_AUTH=parse-session", "PARSE_MCP_API_KEY=0123456789abcdef0123"}, "PARSE_MCP_HTTP_AUTH"},
		{[]string{"PARSE_MCP_API_KEYS=ops@master:0123456789abcdef0123"}, "PARSE_MCP_API_KEYS"},
	} {
		_, stderr, code := runCLI(t, append([]string{"PARSE_MCP_HTTP_ADDR=127.0.0.1:0"}, tc.env...), "describe")
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", tc.env, code, stderr, tc.want)
		}
	}
}

// listenAs opens a 2026-07-28 subscriptions/listen stream on uri with the
// given credential; the channel carries its messages and is closed when the
// stream ends.
func (h *httpServer) listenAs(t *testing.T, id, uri string, cred map[string]string) <-chan map[string]any {
	t.Helper()
	body := statelessBody(id, "subscriptions/listen", `{"notifications":{"resourceSubscriptions":["`+uri+`"]}}`, "")
	req, _ := http.NewRequestWithContext(t.Context(), "POST", h.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range statelessHeaders("subscriptions/listen", "") {
		req.Header.Set(k, v)
	}
	for k, v := range cred {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listen %s: %d %s", id, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	msgs := sseMessages(resp.Body)
	select {
	case ack := <-msgs:
		if ack["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("listen %s: first message %v", id, ack)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("listen %s: no acknowledgement", id)
	}
	return msgs
}

// TestHTTPIdentitySubscriptions: subscriptions follow the identity — a row
// only bob may read notifies bob's stream and not alice's — and a listen
// stream ends once its session is deleted (the credential is checked again
// every PARSE_MCP_IDENTITY_CACHE).
func TestHTTPIdentitySubscriptions(t *testing.T) {
	h := startHTTP(t, scratchEnv(t, "PARSE_MCP_HTTP_AUTH=parse-session", "PARSE_MCP_IDENTITY_CACHE=1s")...)
	alice := h.listenAs(t, "alice-listen", "parse://Song/count", map[string]string{"X-Parse-Session-Token": demo.AliceSessionToken})
	bob := h.listenAs(t, "bob-listen", "parse://Song/count", map[string]string{"Authorization": "Bearer " + demo.BobSessionToken})
	insertSong(t, false, []string{demo.UserBobID})
	select {
	case m := <-bob:
		if m["method"] != "notifications/resources/updated" {
			t.Fatalf("bob: %v", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("bob was not notified of a row he may read")
	}
	select {
	case m := <-alice:
		t.Fatalf("alice was notified of a row only bob may read: %v", m)
	case <-time.After(settle):
	}

	// A session deleted while its stream is open: the stream ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sessions := testDB.Collection(scratchPrefix + "_Session")
	token := "r:feedfacefeedfacefeedfacefeedface"
	if _, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: "idlisten1"}, {Key: "_session_token", Value: token}, {Key: "_p_user", Value: "_User$" + demo.UserCarolID}}); err != nil {
		t.Fatal(err)
	}
	carol := h.listenAs(t, "carol-listen", "parse://Song/count", map[string]string{"X-Parse-Session-Token": token})
	if _, err := sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: "idlisten1"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, open := <-carol:
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("the listen stream of a deleted session is still open after 10 s (cache 1 s)")
		}
	}
}

// TestHTTPIdentityLimitsAndConfirmations: one identity's rate window and
// confirmation tokens are its own — bob is not limited by alice's calls and
// cannot spend alice's confirmation.
func TestHTTPIdentityLimitsAndConfirmations(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tokens := map[string]string{"alice": "r:a11ce000000000000000000000000000", "bob": "r:b0b00000000000000000000000000000"}
	for name, tok := range tokens {
		if _, err := db.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: name + "Id"}, {Key: "username", Value: name}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Collection("_Session").InsertOne(ctx, bson.D{{Key: "_id", Value: name + "Sess"}, {Key: "_session_token", Value: tok}, {Key: "_p_user", Value: "_User$" + name + "Id"}}); err != nil {
			t.Fatal(err)
		}
	}
	// rate_limit 3: one identity's window over HTTP is 3 × the client
	// factor (2) = 6 calls, the process's 3 × 4 = 12.
	h := startHTTP(t, append(append([]string{}, writeEnv...), uri, "PARSE_MCP_HTTP_AUTH=parse-session",
		policyEnv(t, "settings: {confirm_writes: always, rate_limit: {requests: 3, window: 60s}}\n"))...)
	as := func(name string) func(body []byte) map[string]any {
		return func(body []byte) map[string]any {
			hdr := statelessHeaders("tools/call", "create_object")
			hdr["Authorization"] = "Bearer " + tokens[name]
			resp, raw := h.request("POST", "/mcp", string(body), hdr)
			return lastResult(t, decodeAnswer(t, resp, raw))
		}
	}
	memos := func() int64 {
		n, err := db.Collection("Memo").CountDocuments(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := confirmCreate(t, as("alice"), "alice's", "")
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("alice's first call: %v", first)
	}
	if res := confirmCreate(t, as("bob"), "alice's", state); res["resultType"] != "input_required" || memos() != 0 {
		t.Fatalf("bob spent alice's confirmation: %v (%d objects)", res, memos())
	}
	if res := confirmCreate(t, as("alice"), "alice's", state); obj(res["structuredContent"])["created"] != true {
		t.Fatalf("alice's own confirmation: %v", res)
	}

	count := func(name string) (int, string) {
		status, txt, _ := h.statelessTool("n", "count_objects", map[string]any{"class_name": "Memo"}, map[string]string{"Authorization": "Bearer " + tokens[name]})
		return status, txt
	}
	limited := false
	for range 10 {
		if _, txt := count("alice"); strings.Contains(txt, "rate limit") {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("alice was never rate limited")
	}
	if status, txt := count("bob"); status != 200 || strings.Contains(txt, "rate limit") {
		t.Fatalf("bob is limited by alice's calls: %d %s", status, txt)
	}
}

// TestHTTPTenantFromUser: with tenant_scope.from_user each person's tenant
// is their own _User row's, per request; it equals the fixed identity with
// PARSE_MCP_TENANT_ID set to that tenant; a user without one is refused.
func TestHTTPTenantFromUser(t *testing.T) {
	pol := policyFile(t, "tenant_from_user")
	h := startHTTP(t, pol, "PARSE_MCP_HTTP_AUTH=parse-session")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// alice's tenant and a user of another one, with a session of its own.
	tokens := map[string]string{"alice": demo.AliceSessionToken}
	for user, org := range demo.UserOrg {
		if org != demo.UserOrg["alice"] {
			tokens[user] = "r:0000000000000000000000000000" + fmt.Sprintf("%04x", len(user))
			if _, err := testDB.Collection("_Session").InsertOne(ctx, bson.D{{Key: "_id", Value: "tenantSess" + user}, {Key: "_session_token", Value: tokens[user]}, {Key: "_p_user", Value: "_User$" + demo.UserIDs[user]}}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = testDB.Collection("_Session").DeleteOne(context.Background(), bson.D{{Key: "_id", Value: "tenantSess" + user}})
			})
			break
		}
	}
	orgs := map[string]bool{}
	i := 0
	for user, tok := range tokens {
		i++
		org := demo.UserOrg[user]
		orgs[org] = true
		want := fixedIdentityCounts(t, pol, "PARSE_MCP_SESSION_TOKEN="+tok, "PARSE_MCP_TENANT_ID="+org)
		if got := fixedIdentityCounts(t, pol, "PARSE_MCP_SESSION_TOKEN="+tok); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s over stdio: from_user gives %v, PARSE_MCP_TENANT_ID=%s %v", user, got, org, want)
		}
		for _, cls := range identityClasses {
			status, txt, isErr := h.statelessTool(fmt.Sprint("t", i, cls), "count_objects", map[string]any{"class_name": cls}, map[string]string{"X-Parse-Session-Token": tok})
			if status != 200 || isErr || countOf(t, txt) != want[cls] {
				t.Errorf("%s: count %s = %d %s, want %v (tenant %s)", user, cls, status, txt, want[cls], org)
			}
		}
	}
	if len(orgs) < 2 {
		t.Fatalf("the fixture's users are all in one tenant: %v", orgs)
	}
	if _, err := testDB.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: "noTenantUser"}, {Key: "username", Value: "drifter"}}); err != nil {
		t.Fatal(err)
	}
	tok := "r:0000000000000000000000000000abcd"
	if _, err := testDB.Collection("_Session").InsertOne(ctx, bson.D{{Key: "_id", Value: "noTenantSess"}, {Key: "_session_token", Value: tok}, {Key: "_p_user", Value: "_User$noTenantUser"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = testDB.Collection("_User").DeleteOne(context.Background(), bson.D{{Key: "_id", Value: "noTenantUser"}})
		_, _ = testDB.Collection("_Session").DeleteOne(context.Background(), bson.D{{Key: "_id", Value: "noTenantSess"}})
	})
	if status, txt, _ := h.statelessTool("nt", "count_objects", map[string]any{"class_name": "Artist"}, map[string]string{"X-Parse-Session-Token": tok}); status != http.StatusUnauthorized {
		t.Errorf("a user without a tenant: %d %s, want 401", status, txt)
	}
}

// TestHTTPBridgeActsAsTheRequest: with the Parse Server bridge, a write or
// Cloud function of a request acting as a Parse session goes to Parse with
// that session — its triggers see the user, its CLPs apply — although the
// process itself runs in master posture with the master key; an identity
// without a session (a key naming a user) cannot write through the bridge.
func TestHTTPBridgeActsAsTheRequest(t *testing.T) {
	ps := startParse(t)
	ps.CreateClass(t, "Locked", map[string]string{"title": "String"}, map[string]any{
		"find": map[string]any{"*": true}, "get": map[string]any{"*": true}, "count": map[string]any{"*": true},
		"create": map[string]any{}, "update": map[string]any{}, "delete": map[string]any{}, "addField": map[string]any{},
	})
	aliceID, alice := ps.SignUp(t, "alice", "pw")
	bobID, bob := ps.SignUp(t, "bob", "pw")
	const readerKey = "bridge-reader-key-0123456789"
	h := startHTTP(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, bridgePolicy),
		"PARSE_MCP_HTTP_AUTH=keys,parse-session", "PARSE_MCP_IDENTITY_CACHE=1s", "PARSE_MCP_API_KEYS=reader@user="+bobID+":"+readerKey), writeEnv...)...)
	call := func(s *mcpSession, tool string, args map[string]any) (map[string]any, string, bool) {
		txt, isErr := s.toolText("b", tool, args)
		var out map[string]any
		_ = json.Unmarshal([]byte(txt), &out)
		return out, txt, isErr
	}
	as := h.session(map[string]string{"Authorization": "Bearer " + alice})
	out, txt, isErr := call(as, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{"title": "alice's"}})
	if isErr {
		t.Fatalf("alice's create: %s", txt)
	}
	if row := waitAudit(t, ps, out["object_id"].(string), "create"); row["user"] != aliceID {
		t.Fatalf("the trigger did not see alice: %v", row)
	}
	if fn, txt, isErr := call(as, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"name": "Ada"}}); isErr {
		t.Fatalf("alice's function: %s", txt)
	} else if r, _ := fn["result"].(map[string]any); r["user"] != "alice" || r["master"] != false {
		t.Fatalf("the function did not run as alice: %v", fn)
	}
	bs := h.session(map[string]string{"X-Parse-Session-Token": bob})
	if _, txt, isErr := call(bs, "create_object", map[string]any{"class_name": "Locked", "fields": map[string]any{"title": "no"}}); !isErr {
		t.Fatalf("bob created an object in a class whose CLP forbids it (a master write would): %s", txt)
	}
	if n := ps.MustDo(t, "GET", "/classes/Locked?count=1&limit=0", nil, parsetest.AsMaster)["count"]; n != float64(0) {
		t.Fatalf("Locked holds %v objects", n)
	}
	// A Parse logout (the session is resolved by Parse's /users/me here)
	// ends alice's access within the cache time.
	ps.MustDo(t, "POST", "/logout", nil, parsetest.AsSession(alice))
	time.Sleep(1500 * time.Millisecond)
	if resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{}}`, as.headers); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("alice after her Parse logout: %d %s, want 401", resp.StatusCode, b)
	}
	rs := h.session(map[string]string{"X-MCP-API-Key": readerKey})
	if _, txt, isErr := call(rs, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{"title": "x"}}); !isErr || !strings.Contains(txt, "session token") {
		t.Fatalf("a key naming a user wrote through the bridge: %s", txt)
	}
}
