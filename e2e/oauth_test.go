package e2e

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestOAuthTypeScriptSDK: through the real binary with
// PARSE_MCP_HTTP_AUTH=oauth and a real Parse Server, the official
// TypeScript MCP SDK client completes the OAuth flow with its own OAuth
// client (discovery from the 401, dynamic registration, PKCE, the code
// exchange, a refresh), a scripted person signs in with a Parse username
// and password, and its tool calls see exactly what Parse shows that user.
// Deleting the grant's _Session in Parse ends the token within the
// identity cache's TTL. Then three people by oauth in the same process see
// on five classes exactly what Parse REST shows each of them. No log line
// shows a password, code, token or session token.
func TestOAuthTypeScriptSDK(t *testing.T) {
	node, modules := parsetest.TSSDK(t)
	ps := startParse(t)
	const alicePassword, bobPassword, carolPassword = "alice-Pa55word!", "bob-Pa55word!", "carol-Pa55word!"
	aliceID, alice := ps.SignUp(t, "alice", alicePassword)
	bobID, bob := ps.SignUp(t, "bob", bobPassword)
	carolID, carol := ps.SignUp(t, "carol", carolPassword)
	for i, owner := range []struct{ id, token string }{{aliceID, alice}, {aliceID, alice}, {bobID, bob}, {"*", bob}} {
		acl := map[string]any{owner.id: map[string]any{"read": true, "write": true}}
		if owner.id == "*" {
			acl = map[string]any{"*": map[string]any{"read": true}}
		}
		ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "note " + string(rune('a'+i)), "ACL": acl}, parsetest.AsSession(owner.token))
	}
	parseCount := func(token string) float64 {
		return ps.MustDo(t, "GET", "/classes/Note?count=1&limit=0", nil, parsetest.AsSession(token))["count"].(float64)
	}
	wantAlice := parseCount(alice)
	if wantAlice != 3 {
		t.Fatalf("Parse shows alice %v notes", wantAlice)
	}

	// A public URL that is not an https origin stops the mode at start-up.
	for _, bad := range []string{"http://mcp.example.com", "https://mcp.example.com/mcp"} {
		_, stderr, code := runCLI(t, bridgeEnv(ps, "PARSE_MCP_HTTP_ADDR=127.0.0.1:0", "PARSE_MCP_HTTP_AUTH=oauth", "PARSE_MCP_MASTER_KEY="+ps.MasterKey, "PARSE_MCP_PUBLIC_URL="+bad))
		if code != 2 || !strings.Contains(stderr, "PARSE_MCP_PUBLIC_URL") {
			t.Errorf("PARSE_MCP_PUBLIC_URL=%s: exit %d, %q; want 2 naming the variable", bad, code, stderr)
		}
	}

	// Created before the server starts (its schema cache is loaded then).
	classes := oauthParityFixture(t, ps, map[string][2]string{"alice": {aliceID, alice}, "bob": {bobID, bob}, "carol": {carolID, carol}})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	public := "http://" + addr
	h := startHTTP(t, bridgeEnv(ps, "PARSE_MCP_HTTP_ADDR="+addr, "PARSE_MCP_HTTP_AUTH=oauth", "PARSE_MCP_PUBLIC_URL="+public,
		"PARSE_MCP_MASTER_KEY="+ps.MasterKey, "PARSE_MCP_IDENTITY_CACHE=1s", "PARSE_MCP_LOG_LEVEL=debug")...)

	script, _ := filepath.Abs("testdata/tssdk/oauth_client.mjs")
	out := parsetest.RunNode(t, node, script, "SDK_MODULES="+modules, "MCP_URL="+public+"/mcp",
		"PARSE_USER=alice", "PARSE_PASSWORD="+alicePassword, "TOOL=count_objects", `TOOL_ARGS={"class_name":"Note"}`)
	var facts struct {
		Steps         []string
		Registered    bool
		Iss, Scope    string
		Refresh       string
		Rotated       bool
		AccessToken   string
		First, Second struct {
			IsError bool
			Text    string
		}
	}
	if err := json.Unmarshal(out, &facts); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !facts.Registered || facts.Iss != public || facts.Refresh != "AUTHORIZED" || !facts.Rotated {
		t.Fatalf("the SDK's flow: %s", out)
	}
	for _, r := range []struct {
		IsError bool
		Text    string
	}{facts.First, facts.Second} {
		if r.IsError || countOf(t, r.Text) != wantAlice {
			t.Errorf("count_objects as alice: %+v (Parse says %v)", r, wantAlice)
		}
	}

	// The token is alice's session: delete that _Session in Parse (the
	// dashboard's way) and the token stops working within the cache TTL.
	bearer := map[string]string{"Authorization": "Bearer " + facts.AccessToken}
	if st, txt, isErr := h.statelessTool("c1", "count_objects", map[string]any{"class_name": "Note"}, bearer); st != 200 || isErr || countOf(t, txt) != wantAlice {
		t.Fatalf("the SDK's token directly: %d %s", st, txt)
	}
	sessions := ps.MustDo(t, "GET", `/classes/_Session?where={"user":{"__type":"Pointer","className":"_User","objectId":"`+aliceID+`"}}`, nil, parsetest.AsMaster)["results"].([]any)
	var secrets []string
	for _, s := range sessions {
		s := s.(map[string]any)
		secrets = append(secrets, s["sessionToken"].(string))
		if s["sessionToken"] != alice {
			ps.MustDo(t, "DELETE", "/classes/_Session/"+s["objectId"].(string), nil, parsetest.AsMaster)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	if st, body, _ := h.statelessTool("c2", "count_objects", map[string]any{"class_name": "Note"}, bearer); st != 401 {
		t.Errorf("the token outlived its deleted _Session: %d %s", st, body)
	}

	// Three people by oauth in one process: for every class, parse-mcp
	// answers each exactly what Parse REST answers that person's session
	// (counts, and refusals by CLP); _Session is hidden like a missing
	// class.
	seen := map[string]string{}
	for _, p := range []struct{ name, password, session string }{{"alice", alicePassword, alice}, {"bob", bobPassword, bob}, {"carol", carolPassword, carol}} {
		token := oauthToken(t, public, p.name, p.password)
		secrets = append(secrets, token)
		var got []string
		for _, cls := range classes {
			want, have := parseCountAnswer(t, ps, cls, p.session), mcpCountAnswer(t, h, p.name+cls, cls, token)
			if want != have {
				t.Errorf("%s, %s: parse-mcp answers %s, Parse REST %s", p.name, cls, have, want)
			}
			got = append(got, have)
		}
		if other, dup := seen[strings.Join(got, ",")]; dup {
			t.Errorf("%s and %s see the same %v: the fixture does not tell them apart", p.name, other, got)
		}
		seen[strings.Join(got, ",")] = p.name
		_, hidden, isErr := h.statelessTool(p.name+"s", "count_objects", map[string]any{"class_name": "_Session"}, map[string]string{"Authorization": "Bearer " + token})
		_, missing, _ := h.statelessTool(p.name+"m", "count_objects", map[string]any{"class_name": "NoSuchClass"}, map[string]string{"Authorization": "Bearer " + token})
		if !isErr || strings.ReplaceAll(hidden, "_Session", "NoSuchClass") != missing {
			t.Errorf("%s: _Session answered %q, a missing class %q", p.name, hidden, missing)
		}
		t.Logf("%s sees %v", p.name, got)
	}

	log := h.stderr.String()
	// Audit: the tool calls name the OAuth client, never a token.
	audited := false
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, `"event":"tool_call"`) && strings.Contains(line, `"client_id":"pmcp_client_`) && strings.Contains(line, `"user":`) {
			audited = true
		}
	}
	if !audited {
		t.Errorf("no tool_call audit event names the oauth client")
	}
	for _, s := range append(secrets, alicePassword, bobPassword, carolPassword, facts.AccessToken, "pmcp_at_", "pmcp_rt_", "pmcp_ac_", "pmcp_cs_") {
		if strings.Contains(log, s) {
			t.Errorf("the server log shows a secret (%.12s…)", s)
		}
	}
	if !strings.Contains(log, "oauth:") {
		t.Errorf("no oauth line in the log: the check proves nothing")
	}
}
