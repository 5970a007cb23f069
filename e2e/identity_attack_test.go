package e2e

// Attacks on per-request identity over HTTP (docs/team.md "Serve a team",
// SECURITY.md "Per-request identity") through the built binary, in both
// protocol eras: header games, sessions of deleted users, stolen HTTP
// session ids, and the credential never reaching a log line. The process
// runs in master posture, so a fallback to the environment identity shows
// as master's counts (or a visible _Session).

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

func TestHTTPIdentityAttacks(t *testing.T) {
	const opsKey = "ops-key-attack-0123456789abcdef"
	h := startHTTP(t, "PARSE_MCP_HTTP_AUTH=keys,parse-session", "PARSE_MCP_IDENTITY_CACHE=1s",
		"PARSE_MCP_API_KEYS=ops@master:"+opsKey)

	// who tells the identity a request acted as by its Song count and
	// whether _Session is visible (master posture only); "401" when refused.
	who := func(id string, cred map[string]string) string {
		t.Helper()
		status, txt, isErr := h.statelessTool(id+"s", "count_objects", map[string]any{"class_name": "Song"}, cred)
		if status != 200 {
			if status == http.StatusUnauthorized && txt != `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}` {
				t.Errorf("%s: 401 with body %q, want the fixed body", id, txt)
			}
			return fmt.Sprint(status)
		}
		if isErr {
			return "error: " + txt
		}
		_, _, hidden := h.statelessTool(id+"h", "count_objects", map[string]any{"class_name": "_Session"}, cred)
		return fmt.Sprintf("songs=%v session-visible=%v", countOf(t, txt), !hidden)
	}
	alice := who("ref-alice", map[string]string{"X-Parse-Session-Token": demo.AliceSessionToken})
	bob := who("ref-bob", map[string]string{"X-Parse-Session-Token": demo.BobSessionToken})
	master := who("ref-master", map[string]string{"X-MCP-API-Key": opsKey})
	if alice == bob || alice == master || bob == master || !strings.Contains(master, "session-visible=true") {
		t.Fatalf("the fixture does not tell the identities apart: alice %s, bob %s, master %s", alice, bob, master)
	}

	// A user whose _Session outlives the _User (Parse does not cascade).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ghostToken = "r:9h05700000000000000000000000000a"
	const orphanToken = "r:0rphan0000000000000000000000000b"
	const roleToken = "r:r01e000000000000000000000000000c"
	if _, err := testDB.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: "advGhostUser"}, {Key: "username", Value: "adv-ghost"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []bson.D{
		{{Key: "_id", Value: "advGhostSess"}, {Key: "_session_token", Value: ghostToken}, {Key: "_p_user", Value: "_User$advGhostUser"}},
		{{Key: "_id", Value: "advOrphanSess"}, {Key: "_session_token", Value: orphanToken}, {Key: "_p_user", Value: "_User$noSuchUser42"}},
		{{Key: "_id", Value: "advRoleSess"}, {Key: "_session_token", Value: roleToken}, {Key: "_p_user", Value: "_Role$" + demo.RoleModerator}},
	} {
		if _, err := testDB.Collection("_Session").InsertOne(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = testDB.Collection("_Session").DeleteMany(context.Background(), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"advGhostSess", "advOrphanSess", "advRoleSess"}}}}})
		_, _ = testDB.Collection("_User").DeleteOne(context.Background(), bson.D{{Key: "_id", Value: "advGhostUser"}})
	})
	ghost := map[string]string{"Authorization": "Bearer " + ghostToken}
	if got := who("ghost-live", ghost); got == "401" || got == master {
		t.Fatalf("a live user's session: %s", got)
	}
	if _, err := testDB.Collection("_User").DeleteOne(ctx, bson.D{{Key: "_id", Value: "advGhostUser"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past PARSE_MCP_IDENTITY_CACHE

	long := "r:" + strings.Repeat("a", 600)
	cases := []struct {
		name string
		cred map[string]string
		want string
	}{
		// Bearer spelling: the scheme is case-insensitive (RFC 9110), anything
		// else is no credential.
		{"lower-case scheme", map[string]string{"Authorization": "bearer " + demo.AliceSessionToken}, alice},
		{"upper-case scheme, two spaces", map[string]string{"Authorization": "BEARER  " + demo.AliceSessionToken}, alice},
		{"tab after the scheme", map[string]string{"Authorization": "Bearer\t" + demo.AliceSessionToken}, "401"},
		{"no space after the scheme", map[string]string{"Authorization": "Bearer" + demo.AliceSessionToken}, "401"},
		{"Basic scheme", map[string]string{"Authorization": "Basic " + demo.AliceSessionToken}, "401"},
		{"scheme only", map[string]string{"Authorization": "Bearer "}, "401"},
		{"r: alone", map[string]string{"Authorization": "Bearer r:"}, "401"},
		{"token with a suffix", map[string]string{"Authorization": "Bearer " + demo.AliceSessionToken + "x"}, "401"},
		{"token prefix", map[string]string{"Authorization": "Bearer " + demo.AliceSessionToken[:len(demo.AliceSessionToken)-1]}, "401"},
		{"token upper-cased", map[string]string{"X-Parse-Session-Token": strings.ToUpper(demo.AliceSessionToken)}, "401"},
		{"token with an inner tab", map[string]string{"X-Parse-Session-Token": demo.AliceSessionToken[:5] + "\t" + demo.AliceSessionToken[5:]}, "401"},
		{"token with non-ASCII", map[string]string{"X-Parse-Session-Token": demo.AliceSessionToken + "\u00e9"}, "401"},
		{"token longer than 512", map[string]string{"Authorization": "Bearer " + long}, "401"},
		{"operator-shaped token", map[string]string{"X-Parse-Session-Token": `{"$ne":null}`}, "401"},
		{"regex-shaped token", map[string]string{"X-Parse-Session-Token": `r:.*`}, "401"},
		{"whitespace-only session header", map[string]string{"X-Parse-Session-Token": " "}, "401"},
		{"expired session", map[string]string{"X-Parse-Session-Token": demo.ExpiredSessionToken}, "401"},
		{"session of a deleted user", ghost, "401"},
		{"session naming no user", map[string]string{"X-Parse-Session-Token": orphanToken}, "401"},
		{"session pointing at a role", map[string]string{"X-Parse-Session-Token": roleToken}, "401"},
		// Two credentials: X-Parse-Session-Token is read first by the
		// parse-session mode; neither becomes master or the other person.
		{"both headers, different users", map[string]string{"X-Parse-Session-Token": demo.BobSessionToken, "Authorization": "Bearer " + demo.AliceSessionToken}, bob},
		{"wrong API key beside a valid session", map[string]string{"X-MCP-API-Key": "not-a-key-0123456789abcdef", "Authorization": "Bearer " + demo.AliceSessionToken}, "401"},
		{"wrong API key beside the master key as bearer", map[string]string{"X-MCP-API-Key": "not-a-key-0123456789abcdef", "Authorization": "Bearer " + opsKey}, "401"},
		{"master key with a bad session token", map[string]string{"X-MCP-API-Key": opsKey, "X-Parse-Session-Token": "r:nope"}, master},
		{"master key with surrounding spaces", map[string]string{"Authorization": "Bearer  " + opsKey + "  "}, master},
		{"master key upper-cased", map[string]string{"X-MCP-API-Key": strings.ToUpper(opsKey)}, "401"},
		{"session token as an API key", map[string]string{"X-MCP-API-Key": demo.AliceSessionToken}, "401"},
	}
	for _, tc := range cases {
		if got := who(tc.name, tc.cred); got != tc.want {
			t.Errorf("%s: acted as %q, want %q", tc.name, got, tc.want)
		}
	}

	// Session era: bob holding alice's Mcp-Session-Id gets 404 on every
	// method (POST request, POST notification, GET stream, DELETE), and
	// alice's session survives his attempts.
	as := h.session(map[string]string{"Authorization": "Bearer " + demo.AliceSessionToken})
	stolen := map[string]string{"Mcp-Session-Id": as.id, "X-Parse-Session-Token": demo.BobSessionToken}
	for _, m := range []struct{ method, body, accept string }{
		{"POST", `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`, ""},
		{"POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`, ""},
		{"GET", "", "text/event-stream"},
		{"DELETE", "", ""},
	} {
		hdr := maps.Clone(stolen)
		if m.accept != "" {
			hdr["Accept"] = m.accept
		}
		if resp, b := h.request(m.method, "/mcp", m.body, hdr); resp.StatusCode != http.StatusNotFound {
			t.Errorf("bob on alice's session, %s %s: %d %s, want 404", m.method, m.body, resp.StatusCode, b)
		}
	}
	// The master key on alice's session: also another party.
	if resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":"y","method":"tools/list","params":{}}`,
		map[string]string{"Mcp-Session-Id": as.id, "X-MCP-API-Key": opsKey}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the master key on alice's session: %d %s, want 404", resp.StatusCode, b)
	}
	if txt, isErr := as.toolText("alive", "count_objects", map[string]any{"class_name": "Song"}); isErr || fmt.Sprintf("songs=%v session-visible=false", countOf(t, txt)) != alice {
		t.Errorf("alice's own session after bob's attempts: %s (want %s)", txt, alice)
	}

	logs := h.stderr.String()
	for _, secret := range []string{demo.AliceSessionToken, demo.BobSessionToken, ghostToken, orphanToken, roleToken, opsKey, strings.ToUpper(opsKey), as.id} {
		if strings.Contains(logs, secret) {
			t.Errorf("a credential or session id (%.6s…) is in the log", secret)
		}
	}
}

// TestHTTPIdentityBridgeSessionExpiry: with the Parse Server bridge a session
// is checked by Parse's GET /users/me, and the cached identity still never
// outlives the session's expiresAt (docs/team.md "Serve a team"), as it does not
// through _Session directly.
func TestHTTPIdentityBridgeSessionExpiry(t *testing.T) {
	ps := startParse(t)
	aliceID, alice := ps.SignUp(t, "alice", "pw")
	h := startHTTP(t, bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, "PARSE_MCP_HTTP_AUTH=parse-session", "PARSE_MCP_IDENTITY_CACHE=60s")...)
	count := func(id, token string) int {
		status, _, _ := h.statelessTool(id, "count_objects", map[string]any{"class_name": "Note"}, map[string]string{"Authorization": "Bearer " + token})
		return status
	}
	if status := count("login", alice); status != 200 {
		t.Fatalf("alice's own session through the bridge: %d", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const short = "r:5h0r7000000000000000000000000001"
	expires := time.Now().Add(3 * time.Second)
	if _, err := testDB.Client().Database(ps.Database).Collection("_Session").InsertOne(ctx, bson.D{{Key: "_id", Value: "advShortSess"},
		{Key: "_session_token", Value: short}, {Key: "_p_user", Value: "_User$" + aliceID}, {Key: "expiresAt", Value: expires},
		{Key: "createdWith", Value: bson.D{{Key: "action", Value: "login"}, {Key: "authProvider", Value: "password"}}}}); err != nil {
		t.Fatal(err)
	}
	if status := count("before", short); status != 200 {
		t.Fatalf("a session expiring in 3 s, before its expiry: %d", status)
	}
	// Past the expiry and past Parse Server's own short session cache.
	time.Sleep(time.Until(expires) + 7*time.Second)
	if status, _, _ := ps.Do("GET", "/users/me", nil, parsetest.AsSession(short)); status == 200 {
		t.Fatalf("Parse Server itself still accepts the expired session")
	}
	if status := count("after", short); status != http.StatusUnauthorized {
		t.Errorf("an expired session through the bridge, within PARSE_MCP_IDENTITY_CACHE: %d, want 401 (the cache never outlives expiresAt)", status)
	}
}

// TestHTTPIdentitySurfaces: what a session lists and completes follows its
// own identity and tier, not the process's (master posture, admin, every
// gate open): tools/list, resources/list and completions never show a
// person a tool above their tier or a class only master may see.
func TestHTTPIdentitySurfaces(t *testing.T) {
	const opsKey = "ops-key-surfaces-0123456789abcdef"
	const roKey = "ro-key-surfaces-0123456789abcdef"
	h := startHTTP(t, append(append([]string{}, writeEnv...), "PARSE_MCP_HTTP_AUTH=keys,parse-session",
		"PARSE_MCP_API_KEYS=ops@master:"+opsKey+",ro@user="+demo.UserAliceID+"/readonly:"+roKey)...)
	surfaces := func(s *mcpSession) (tools, resources, completions string) {
		var names []string
		for _, tl := range result(t, s.rpc("t", "tools/list", ""))["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		var uris []string
		for _, r := range result(t, s.rpc("r", "resources/list", ""))["resources"].([]any) {
			uris = append(uris, r.(map[string]any)["uri"].(string))
		}
		res := result(t, s.rpc("c", "completion/complete", `{"ref":{"type":"ref/resource","uri":"parse://{className}/count"},"argument":{"name":"className","value":"_"}}`))
		var values []string
		for _, v := range res["completion"].(map[string]any)["values"].([]any) {
			values = append(values, v.(string))
		}
		return strings.Join(names, " "), strings.Join(uris, " "), strings.Join(values, " ")
	}
	mTools, _, mComp := surfaces(h.session(map[string]string{"X-MCP-API-Key": opsKey}))
	if !strings.Contains(mComp, "_Session") || !strings.Contains(mTools, "create_object") {
		t.Fatalf("master key: tools %q, completions %q: the test cannot tell master's surfaces", mTools, mComp)
	}
	for name, cred := range map[string]map[string]string{
		"alice's session":      {"Authorization": "Bearer " + demo.AliceSessionToken},
		"a readonly user key":  {"X-MCP-API-Key": roKey},
		"bob's session header": {"X-Parse-Session-Token": demo.BobSessionToken},
	} {
		tools, res, comp := surfaces(h.session(cred))
		if strings.Contains(comp, "_Session") || strings.Contains(res, "_Session") {
			t.Errorf("%s: _Session offered (resources %q, completions %q)", name, res, comp)
		}
		if name == "a readonly user key" {
			for _, w := range []string{"create_object", "update_object", "delete_object", "create_class", "delete_class"} {
				if strings.Contains(" "+tools+" ", " "+w+" ") {
					t.Errorf("%s: tools/list offers %s above its tier", name, w)
				}
			}
		} else if !strings.Contains(tools, "create_object") {
			t.Errorf("%s: tools/list %q lacks create_object at the process's tier", name, tools)
		}
	}
}

// TestHTTPIdentityRateWindowPerPerson: a person cannot reset their rate
// window by logging in again (a second session token), switching headers or
// claiming another address; another person keeps theirs.
func TestHTTPIdentityRateWindowPerPerson(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tokens := map[string]string{"alice": "r:a11ce000000000000000000000000001", "alice2": "r:a11ce000000000000000000000000002", "bob": "r:b0b00000000000000000000000000001"}
	for _, u := range []string{"alice", "bob"} {
		if _, err := db.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: u + "Id"}, {Key: "username", Value: u}}); err != nil {
			t.Fatal(err)
		}
	}
	for name, tok := range tokens {
		if _, err := db.Collection("_Session").InsertOne(ctx, bson.D{{Key: "_id", Value: name + "Sess"}, {Key: "_session_token", Value: tok}, {Key: "_p_user", Value: "_User$" + strings.TrimSuffix(name, "2") + "Id"}}); err != nil {
			t.Fatal(err)
		}
	}
	// rate_limit 3: one identity's window over HTTP is 3 × 2 = 6 calls.
	h := startHTTP(t, uri, "PARSE_MCP_HTTP_AUTH=parse-session", policyEnv(t, "settings: {rate_limit: {requests: 3, window: 60s}}\n"))
	limited := func(id string, cred map[string]string) bool {
		status, txt, _ := h.statelessTool(id, "count_objects", map[string]any{"class_name": "Memo"}, cred)
		if status != 200 {
			t.Fatalf("%s: %d %s", id, status, txt)
		}
		return strings.Contains(txt, "rate limit")
	}
	// Six calls spread over alice's two logins, both headers and made-up
	// forwarded addresses.
	creds := []map[string]string{
		{"Authorization": "Bearer " + tokens["alice"]},
		{"X-Parse-Session-Token": tokens["alice2"], "X-Forwarded-For": "203.0.113.7"},
		{"Authorization": "Bearer " + tokens["alice2"], "X-Forwarded-For": "198.51.100.9"},
	}
	for i := range 6 {
		if limited(fmt.Sprint("a", i), creds[i%len(creds)]) {
			t.Fatalf("alice limited after %d calls, want 6", i)
		}
	}
	for i, c := range creds {
		if !limited(fmt.Sprint("over", i), c) {
			t.Errorf("alice's 7th call by credential %d was not limited: a new login, header or address reset her window", i)
		}
	}
	if limited("bob", map[string]string{"Authorization": "Bearer " + tokens["bob"]}) {
		t.Error("bob is limited by alice's calls")
	}
}

// TestHTTPIdentityDatabaseOutage: a database outage while a credential is
// resolved answers 503, never the environment identity (master posture
// here) and never a 401 that would tell the client its token is bad; once
// the database is back the same token acts as its own user again.
func TestHTTPIdentityDatabaseOutage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	db, err := embeddeddb.StartAt(dir, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	running := true
	t.Cleanup(func() {
		if running {
			db.Stop()
		}
	})
	seedDatabase(t, db.URI, "idoutage")
	h := startHTTP(t, "PARSE_MCP_MONGODB_URI=mongodb://"+addr+"/idoutage", "PARSE_MCP_HTTP_AUTH=parse-session", "PARSE_MCP_IDENTITY_CACHE=0s")
	bob := map[string]string{"Authorization": "Bearer " + demo.BobSessionToken}
	status, before, isErr := h.statelessTool("before", "count_objects", map[string]any{"class_name": "Song"}, bob)
	if status != 200 || isErr {
		t.Fatalf("before the outage: %d %s", status, before)
	}

	db.Stop()
	running = false
	for name, cred := range map[string]map[string]string{"bob": bob, "made-up": {"X-Parse-Session-Token": "r:00000000000000000000000000000000"}} {
		start := time.Now()
		status, body, _ := h.statelessTool("down-"+name, "count_objects", map[string]any{"class_name": "Song"}, cred)
		if status != http.StatusServiceUnavailable || strings.Contains(body, "Song") {
			t.Errorf("%s during the outage: %d %s, want 503", name, status, body)
		}
		t.Logf("%s during the outage answered in %s", name, time.Since(start).Round(time.Millisecond))
	}

	db, err = embeddeddb.StartAt(dir, addr, nil)
	if err != nil {
		t.Fatalf("restarting the database: %v", err)
	}
	running = true
	if status, after, isErr := h.statelessTool("after", "count_objects", map[string]any{"class_name": "Song"}, bob); status != 200 || isErr || after != before {
		t.Fatalf("bob after the restart: %d %s, want %s", status, after, before)
	}
	for _, secret := range []string{demo.BobSessionToken, "r:00000000000000000000000000000000"} {
		if strings.Contains(h.stderr.String(), secret) {
			t.Error("a session token is in the log")
		}
	}
}

// TestHTTPIdentityJWTAttacks: JWTs from the trusted secret that try to climb
// (a master tier, a master-looking subject, the operator's key name as azp,
// a tenant), carry a dead session, or arrive by the wrong header, beside an
// operator's master key in the same chain: each is refused or acts as its
// own user, never as master.
func TestHTTPIdentityJWTAttacks(t *testing.T) {
	const opsKey = "ops-key-jwt-attack-0123456789abcdef"
	h := startHTTP(t, "PARSE_MCP_HTTP_AUTH=keys,jwt,parse-session", "PARSE_MCP_IDENTITY_CACHE=1s",
		"PARSE_MCP_API_KEYS=ops@master:"+opsKey,
		"PARSE_MCP_JWT_SECRET="+jwtSecret, "PARSE_MCP_JWT_ISSUER="+jwtIssuer, "PARSE_MCP_JWT_AUDIENCE="+jwtAudience)
	hs := func(sub any, over map[string]any) string {
		c := jwtClaims("", over)
		c["sub"] = sub
		if sub == nil {
			delete(c, "sub")
		}
		return signJWT(t, jose.HS256, []byte(jwtSecret), "", c)
	}
	// acts is "401", or whether the request saw master's _Session.
	acts := func(name string, cred map[string]string) string {
		t.Helper()
		status, body, hidden := h.statelessTool(name, "count_objects", map[string]any{"class_name": "_Session"}, cred)
		switch {
		case status == http.StatusUnauthorized && body == unauthBody:
			return "401"
		case status != 200:
			return fmt.Sprint(status, body)
		case hidden:
			return "user"
		}
		return "master"
	}
	hs512, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS512, Key: []byte(jwtSecret + jwtSecret)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok512, err := jwt.Signed(hs512).Claims(jwtClaims(demo.UserAliceID, nil)).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	minted := []string{tok512}
	bearer := func(tok string) map[string]string { minted = append(minted, tok); return bearerHeader(tok) }
	for _, c := range []struct {
		name string
		cred map[string]string
		want string
	}{
		{"a valid user token", bearer(hs(demo.UserAliceID, nil)), "user"},
		{"permissions: master", bearer(hs(demo.UserAliceID, map[string]any{"permissions": "master"})), "401"},
		{"scope parse:master", bearer(hs(demo.UserAliceID, map[string]any{"scope": "parse:master"})), "user"},
		{"sub *", bearer(hs("*", nil)), "401"},
		{"sub master", bearer(hs("master", nil)), "401"},
		{"sub role:Admin", bearer(hs("role:"+demo.RoleAdmin, nil)), "401"},
		{"sub a number", bearer(hs(42, nil)), "401"},
		{"no sub", bearer(hs(nil, nil)), "401"},
		{"the master key's name as azp", bearer(hs(demo.UserAliceID, map[string]any{"azp": "ops"})), "user"},
		{"azp with a space", bearer(hs(demo.UserAliceID, map[string]any{"azp": "ops key"})), "401"},
		{"a tenant this server does not bind", bearer(hs(demo.UserAliceID, map[string]any{"tenant_id": "org-1"})), "401"},
		{"an expired session in the claim", bearer(hs(demo.UserAliceID, map[string]any{"parse_session_token": demo.ExpiredSessionToken})), "401"},
		{"HS512 (the secret is pinned to HS256)", bearerHeader(tok512), "401"},
		{"the JWT as X-Parse-Session-Token", map[string]string{"X-Parse-Session-Token": hs(demo.UserAliceID, nil)}, "401"},
		{"the JWT as X-MCP-API-Key", map[string]string{"X-MCP-API-Key": hs(demo.UserAliceID, nil)}, "401"},
		{"a valid JWT beside a wrong API key", map[string]string{"X-MCP-API-Key": "wrong-0123456789abcdef", "Authorization": "Bearer " + hs(demo.UserAliceID, nil)}, "401"},
		{"a bad JWT beside the master key", map[string]string{"X-MCP-API-Key": opsKey, "Authorization": "Bearer " + hs("nobody", nil)}, "master"},
	} {
		if got := acts(c.name, c.cred); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	noJWTInLog(t, h, minted)
}

// TestHTTPIdentitySubscriptionAfterDemotion: what a stream watches follows
// its identity as it is now. Once a user leaves a role (and the identity
// cache has expired) a row only that role may read notifies neither their
// still-open 2026-07-28 listen stream nor their session-era subscription:
// the stream ends (and the HTTP session with its subscriptions), and what
// they subscribe to next is watched under their current roles.
func TestHTTPIdentitySubscriptionAfterDemotion(t *testing.T) {
	h := startHTTP(t, scratchEnv(t, "PARSE_MCP_HTTP_AUTH=parse-session", "PARSE_MCP_IDENTITY_CACHE=1s")...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const token = "r:dem07ed000000000000000000000000a"
	join := testDB.Collection(scratchPrefix + "_Join:users:_Role")
	for coll, doc := range map[string]bson.D{
		"_User":    {{Key: "_id", Value: "advDemoted"}, {Key: "username", Value: "adv-demoted"}},
		"_Role":    {{Key: "_id", Value: "advRoleId"}, {Key: "name", Value: "AdvListeners"}},
		"_Session": {{Key: "_id", Value: "advDemotedSess"}, {Key: "_session_token", Value: token}, {Key: "_p_user", Value: "_User$advDemoted"}},
	} {
		if _, err := testDB.Collection(scratchPrefix+coll).InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := join.InsertOne(ctx, bson.D{{Key: "_id", Value: "advJoin1"}, {Key: "owningId", Value: "advRoleId"}, {Key: "relatedId", Value: "advDemoted"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c := context.Background()
		_, _ = testDB.Collection(scratchPrefix+"_User").DeleteOne(c, bson.D{{Key: "_id", Value: "advDemoted"}})
		_, _ = testDB.Collection(scratchPrefix+"_Role").DeleteOne(c, bson.D{{Key: "_id", Value: "advRoleId"}})
		_, _ = testDB.Collection(scratchPrefix+"_Session").DeleteOne(c, bson.D{{Key: "_id", Value: "advDemotedSess"}})
		_, _ = join.DeleteOne(c, bson.D{{Key: "_id", Value: "advJoin1"}})
	})
	cred := map[string]string{"X-Parse-Session-Token": token}
	listen := h.listenAs(t, "demoted-listen", "parse://Song/count", cred)
	sess := h.session(cred)
	result(t, sess.rpc("sub", "resources/subscribe", `{"uri":"parse://Song/count"}`))
	sctx, scancel := context.WithCancel(t.Context())
	defer scancel()
	get := sess.listen(sctx)
	time.Sleep(settle)
	updated := func(ch <-chan map[string]any, within time.Duration) bool {
		deadline := time.After(within)
		for {
			select {
			case m, open := <-ch:
				if !open {
					return false
				}
				if m["method"] == "notifications/resources/updated" {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	insertSong(t, false, []string{"role:AdvListeners"})
	if !updated(listen, 30*time.Second) || !updated(get, 30*time.Second) {
		t.Fatal("a member of the role was not notified of a row the role may read")
	}

	if _, err := join.DeleteOne(ctx, bson.D{{Key: "_id", Value: "advJoin1"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // past PARSE_MCP_IDENTITY_CACHE and a recheck
	insertSong(t, false, []string{"role:AdvListeners"})
	if updated(listen, settle+5*time.Second) {
		t.Error("the listen stream of a user who left the role was notified of a row only the role may read")
	}
	if updated(get, settle) {
		t.Error("the session-era subscription of a user who left the role was notified of a row only the role may read")
	}
	// What they watch now is watched under their current roles.
	again := h.listenAs(t, "demoted-again", "parse://Song/count", cred)
	insertSong(t, false, []string{"role:AdvListeners"})
	if updated(again, settle+5*time.Second) {
		t.Error("a new listen stream after leaving the role is notified of a row only the role may read")
	}
}

// TestHTTPIdentityOAuthAttacks: oauth access tokens through the binary with
// a real Parse Server: altered, in the wrong header, on another person's
// HTTP session, beside a master key's name; and the Parse _Session behind
// a grant deleted, or its user deleted, ends the token within
// PARSE_MCP_IDENTITY_CACHE.
func TestHTTPIdentityOAuthAttacks(t *testing.T) {
	ps := startParse(t)
	aliceID, _ := ps.SignUp(t, "alice", "alice-pw-0123")
	bobID, _ := ps.SignUp(t, "bob", "bob-pw-0123")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	public := "http://" + addr
	h := startHTTP(t, bridgeEnv(ps, "PARSE_MCP_HTTP_ADDR="+addr, "PARSE_MCP_HTTP_AUTH=oauth,parse-session", "PARSE_MCP_PUBLIC_URL="+public,
		"PARSE_MCP_MASTER_KEY="+ps.MasterKey, "PARSE_MCP_IDENTITY_CACHE=1s")...)
	alice := oauthToken(t, public, "alice", "alice-pw-0123")
	bob := oauthToken(t, public, "bob", "bob-pw-0123")
	status := func(id string, cred map[string]string) int {
		s, _, _ := h.statelessTool(id, "count_objects", map[string]any{"class_name": "Note"}, cred)
		return s
	}
	for _, c := range []struct {
		name string
		cred map[string]string
		want int
	}{
		{"alice's token", map[string]string{"Authorization": "Bearer " + alice}, 200},
		{"lower-case scheme", map[string]string{"Authorization": "bearer " + alice}, 200},
		{"altered token", map[string]string{"Authorization": "Bearer " + alice[:len(alice)-1] + "x"}, 401},
		{"token with a suffix", map[string]string{"Authorization": "Bearer " + alice + "a"}, 401},
		{"the access token as a Parse session", map[string]string{"X-Parse-Session-Token": alice}, 401},
		{"a refresh-token prefix", map[string]string{"Authorization": "Bearer pmcp_rt_" + strings.TrimPrefix(alice, "pmcp_at_")}, 401},
	} {
		if got := status(c.name, c.cred); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// Bob's token on alice's HTTP session.
	as := h.session(map[string]string{"Authorization": "Bearer " + alice})
	if resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`,
		map[string]string{"Mcp-Session-Id": as.id, "Authorization": "Bearer " + bob}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob's token on alice's session: %d %s, want 404", resp.StatusCode, b)
	}

	// The Parse sessions behind alice's grant deleted (the dashboard, a
	// password change): her token stops working within the cache.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sessions := testDB.Client().Database(ps.Database).Collection("_Session")
	if _, err := sessions.DeleteMany(ctx, bson.D{{Key: "_p_user", Value: "_User$" + aliceID}}); err != nil {
		t.Fatal(err)
	}
	// bob's user deleted through Parse (which keeps or drops his sessions
	// as it does): his token stops too.
	ps.MustDo(t, "DELETE", "/users/"+bobID, nil, parsetest.AsMaster)
	time.Sleep(7 * time.Second) // past PARSE_MCP_IDENTITY_CACHE and Parse Server's own session cache
	for name, tok := range map[string]string{"alice after her _Session was deleted": alice, "bob after his _User was deleted": bob} {
		if got := status(name, map[string]string{"Authorization": "Bearer " + tok}); got != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, got)
		}
	}
	logs := h.stderr.String()
	for _, secret := range []string{alice, bob, "alice-pw-0123", "bob-pw-0123"} {
		if strings.Contains(logs, secret) {
			t.Errorf("a token or password (%.8s…) is in the log", secret)
		}
	}
}
