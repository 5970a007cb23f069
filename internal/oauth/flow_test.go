package oauth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestOAuth runs every flow and every refusal against one real Parse
// Server (logins are Parse's own) on an embedded FerretDB; at the end, no
// password, code, token or session token is in the captured log.
func TestOAuth(t *testing.T) {
	f := newFixture(t)
	base := f.http.URL
	pub := f.publicClient(base)

	t.Run("metadata", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
			st, prm := getJSON(t, base+path)
			if st != 200 || prm["resource"] != base+"/mcp" || prm["authorization_servers"].([]any)[0] != base {
				t.Errorf("%s: %d %v", path, st, prm)
			}
		}
		st, as := getJSON(t, base+"/.well-known/oauth-authorization-server")
		if st != 200 || as["issuer"] != base || as["token_endpoint"] != base+"/token" || as["authorization_response_iss_parameter_supported"] != true {
			t.Errorf("AS metadata: %d %v", st, as)
		}
		if m := as["code_challenge_methods_supported"].([]any); len(m) != 1 || m[0] != "S256" {
			t.Errorf("PKCE methods: %v", m)
		}
		if st, _ := getJSON(t, base+"/.well-known/openid-configuration"); st != http.StatusNotFound {
			t.Errorf("OIDC discovery answered %d: parse-mcp is no OpenID provider", st)
		}
		_, code, challenge := f.principal(base, "")
		if code != 401 || !strings.Contains(challenge, `resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`) || !strings.Contains(challenge, `scope="parse:read parse:write"`) {
			t.Errorf("401 challenge: %d %q", code, challenge)
		}
	})

	t.Run("whole flow, refresh rotation, replay revokes the family", func(t *testing.T) {
		verifier, challenge := pkce()
		back := f.authorize(base, authRequest(pub.ID, challenge, "resource", base+"/mcp"), "alice", alicePassword)
		if back.Query().Get("iss") != base || back.Query().Get("state") != "st-1" || !strings.HasPrefix(back.String(), redirect+"?") {
			t.Fatalf("authorization response %s", back)
		}
		st, tok := f.tokenCall(base, exchange(pub, back.Query().Get("code"), verifier))
		if st != 200 || tok["token_type"] != "Bearer" || tok["scope"] != "parse:read parse:write" {
			t.Fatalf("token: %d %v", st, tok)
		}
		p, code, _ := f.principal(base, tok["access_token"].(string))
		if code != 200 || p.Mode != authn.ModeOAuth || p.Tier != config.TierWrite || p.ClientID != pub.ID || !strings.HasPrefix(p.SessionToken, "r:") || p.ExpiresAt.IsZero() {
			t.Fatalf("principal: %d %+v", code, p)
		}
		_, me, _ := f.ps.Do("GET", "/users/me", nil, parsetest.AsSession(p.SessionToken))
		if me["username"] != "alice" {
			t.Fatalf("the session is not alice's: %v", me["username"])
		}
		refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {pub.ID}, "refresh_token": {tok["refresh_token"].(string)}}
		st, tok2 := f.tokenCall(base, refresh)
		if st != 200 || tok2["refresh_token"] == tok["refresh_token"] {
			t.Fatalf("refresh: %d %v", st, tok2)
		}
		if p2, code, _ := f.principal(base, tok2["access_token"].(string)); code != 200 || p2.SessionToken != p.SessionToken {
			t.Fatalf("refreshed token: %d", code)
		}
		// The old refresh token again: a replay. The family dies, and the
		// Parse session with it.
		if st, out := f.tokenCall(base, refresh); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("refresh replay: %d %v", st, out)
		}
		if _, code, ch := f.principal(base, tok2["access_token"].(string)); code != 401 || !strings.Contains(ch, `error="invalid_token"`) {
			t.Errorf("the family's access token survived a replay: %d %q", code, ch)
		}
		if st, _ := f.tokenCall(base, url.Values{"grant_type": {"refresh_token"}, "client_id": {pub.ID}, "refresh_token": {tok2["refresh_token"].(string)}}); st != 400 {
			t.Errorf("the family's newest refresh token survived a replay: %d", st)
		}
		if f.sessionAlive(p.SessionToken) {
			t.Errorf("the Parse session survived the family's revocation")
		}
	})

	t.Run("a reused authorization code revokes what it obtained", func(t *testing.T) {
		verifier, challenge := pkce()
		back := f.authorize(base, authRequest(pub.ID, challenge), "alice", alicePassword)
		form := exchange(pub, back.Query().Get("code"), verifier)
		st, tok := f.tokenCall(base, form)
		if st != 200 {
			t.Fatalf("first exchange: %d %v", st, tok)
		}
		if st, out := f.tokenCall(base, form); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("second exchange: %d %v", st, out)
		}
		if _, code, _ := f.principal(base, tok["access_token"].(string)); code != 401 {
			t.Errorf("the first exchange's token survived the code's reuse: %d", code)
		}
	})

	t.Run("a stolen code without the verifier, or by another client", func(t *testing.T) {
		other := f.publicClient(base)
		verifier, challenge := pkce()
		back := f.authorize(base, authRequest(pub.ID, challenge), "alice", alicePassword)
		code := back.Query().Get("code")
		wrong, _ := pkce()
		if st, out := f.tokenCall(base, exchange(pub, code, wrong)); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("PKCE mismatch: %d %v", st, out)
		}
		// The mismatch burnt the code: the right verifier is too late.
		if st, _ := f.tokenCall(base, exchange(pub, code, verifier)); st != 400 {
			t.Fatalf("a code survived a PKCE mismatch: %d", st)
		}
		back = f.authorize(base, authRequest(pub.ID, challenge), "alice", alicePassword)
		if st, out := f.tokenCall(base, exchange(other, back.Query().Get("code"), verifier)); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("another client's exchange: %d %v", st, out)
		}
		back = f.authorize(base, authRequest(pub.ID, challenge), "alice", alicePassword)
		form := exchange(pub, back.Query().Get("code"), verifier)
		form.Set("redirect_uri", "http://127.0.0.1:9/other")
		if st, _ := f.tokenCall(base, form); st != 400 {
			t.Fatalf("a different redirect_uri at the token endpoint: %d", st)
		}
		back = f.authorize(base, authRequest(pub.ID, challenge), "alice", alicePassword)
		f.clock.advance(codeTTL + time.Second)
		if st, out := f.tokenCall(base, exchange(pub, back.Query().Get("code"), verifier)); st != 400 || !strings.Contains(out["error_description"].(string), "expired") {
			t.Fatalf("an expired code: %d %v", st, out)
		}
	})

	t.Run("PKCE S256 only", func(t *testing.T) {
		verifier, _ := pkce()
		for name, params := range map[string]url.Values{
			"plain":   authRequest(pub.ID, verifier, "code_challenge_method", "plain"),
			"none":    authRequest(pub.ID, "", "code_challenge_method", ""),
			"no code": authRequest(pub.ID, verifier, "response_type", "token"),
		} {
			b := f.browser(base)
			resp := b.get(base + "/authorize?" + params.Encode())
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || loc.Query().Get("error") == "" || loc.Query().Get("iss") != base || strings.Contains(b.last, `name="password"`) {
				t.Errorf("%s: %d %s", name, resp.StatusCode, loc)
			}
		}
	})

	t.Run("unregistered and open redirects are never followed", func(t *testing.T) {
		_, challenge := pkce()
		for _, r := range []string{"https://evil.example/callback", redirect + "/x", redirect + "?next=https://evil.example", "http://localhost:9/callback", "http://127.0.0.1.evil.example:9/callback", ""} {
			b := f.browser(base)
			resp := b.get(base + "/authorize?" + authRequest(pub.ID, challenge, "redirect_uri", r).Encode())
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Errorf("redirect_uri %q: %d %q", r, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
		b := f.browser(base)
		if resp := b.get(base + "/authorize?" + authRequest("pmcp_client_unknown", challenge).Encode()); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("unknown client: %d", resp.StatusCode)
		}
		// RFC 8252: a registered loopback redirect matches any port.
		b = f.browser(base)
		if resp := b.get(base + "/authorize?" + authRequest(pub.ID, challenge, "redirect_uri", "http://127.0.0.1:54321/callback").Encode()); resp.StatusCode != http.StatusOK {
			t.Errorf("loopback on another port: %d", resp.StatusCode)
		}
		for _, uris := range [][]string{{"javascript:alert(1)"}, {"http://evil.example/cb"}, {"https://x.example/cb#frag"}, {"data:text/html,hi"}, {}} {
			if st, out := f.register(base, map[string]any{"redirect_uris": uris, "token_endpoint_auth_method": "none"}); st != 400 {
				t.Errorf("registered %v: %d %v", uris, st, out)
			}
		}
	})

	t.Run("forms need their CSRF token and cookie", func(t *testing.T) {
		_, challenge := pkce()
		b := f.browser(base)
		b.get(base + "/authorize?" + authRequest(pub.ID, challenge).Encode())
		good := b.hidden()
		login := url.Values{"step": {"login"}, "username": {"alice"}, "password": {alicePassword}, "request": {good.Get("request")}}
		if resp := b.post(base+"/authorize", login); resp.StatusCode != http.StatusForbidden {
			t.Errorf("login without the CSRF token: %d", resp.StatusCode)
		}
		login.Set("csrf", good.Get("csrf"))
		stranger := f.browser(base) // another browser: the form's token, not its cookie
		if resp := stranger.post(base+"/authorize", login); resp.StatusCode != http.StatusForbidden {
			t.Errorf("login from a browser without the cookie: %d", resp.StatusCode)
		}
		// A cookie the attacker planted (a sibling subdomain can) with a
		// form token to match: the token is not the request's.
		planted := f.browser(base)
		u, _ := url.Parse(base + "/authorize")
		planted.c.Jar.SetCookies(u, []*http.Cookie{{Name: csrfCookiePrefix + good.Get("request")[:16], Value: "planted-token", Path: "/authorize"}})
		forged := url.Values{"step": {"login"}, "username": {"alice"}, "password": {alicePassword}, "request": {good.Get("request")}, "csrf": {"planted-token"}}
		if resp := planted.post(base+"/authorize", forged); resp.StatusCode != http.StatusForbidden {
			t.Errorf("login with a planted cookie and token: %d", resp.StatusCode)
		}
		if resp := b.post(base+"/authorize", login); resp.StatusCode != http.StatusOK || !strings.Contains(b.last, `value="approve"`) {
			t.Fatalf("login: %d", resp.StatusCode)
		}
		consent := url.Values{"step": {"consent"}, "decision": {"approve"}, "request": {good.Get("request")}}
		if resp := b.post(base+"/authorize", consent); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Errorf("consent without the CSRF token: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		consent.Set("csrf", "forged-"+good.Get("csrf"))
		if resp := b.post(base+"/authorize", consent); resp.StatusCode != http.StatusForbidden {
			t.Errorf("consent with a wrong CSRF token: %d", resp.StatusCode)
		}
		consent.Set("csrf", good.Get("csrf"))
		if resp := stranger.post(base+"/authorize", consent); resp.StatusCode != http.StatusForbidden {
			t.Errorf("consent from a browser without the cookie: %d", resp.StatusCode)
		}
		consent.Set("decision", "deny")
		resp := b.post(base+"/authorize", consent)
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusSeeOther || loc.Query().Get("error") != "access_denied" {
			t.Errorf("deny: %d %s", resp.StatusCode, loc)
		}
		consent.Set("decision", "approve")
		if resp := b.post(base+"/authorize", consent); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("a decided request approved again: %d", resp.StatusCode)
		}
	})

	t.Run("pages escape what the client chose and load nothing", func(t *testing.T) {
		st, out := f.register(base, map[string]any{"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
			"client_name": `<script>alert("x")</script><img src=x onerror=alert(1)>`, "client_uri": "javascript:alert(1)"})
		if st != 201 {
			t.Fatalf("register: %d %v", st, out)
		}
		_, challenge := pkce()
		b := f.browser(base)
		resp := b.get(base + "/authorize?" + authRequest(out["client_id"].(string), challenge).Encode())
		if strings.Contains(b.last, "<script") || strings.Contains(b.last, "<img") || strings.Contains(b.last, "javascript:") || !strings.Contains(b.last, "&lt;script&gt;") {
			t.Errorf("the page shows the client's markup: %s", b.last)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
			t.Errorf("CSP %q", csp)
		}
		if !strings.Contains(b.last, `name="username"`) || !strings.Contains(b.last, `type="password" id="password" name="password" autocomplete="current-password"`) {
			t.Errorf("the login form has no standard username/password fields")
		}
	})

	t.Run("wrong passwords are Parse's, then rate-limited", func(t *testing.T) {
		_, challenge := pkce()
		b := f.browser(base)
		b.get(base + "/authorize?" + authRequest(pub.ID, challenge).Encode())
		form := b.hidden()
		form.Set("step", "login")
		form.Set("username", "bob")
		var last int
		for i := range loginsPerUser + 2 {
			form.Set("password", "guess-"+string(rune('a'+i)))
			last = b.post(base+"/authorize", form).StatusCode
			if i < loginsPerUser && (last != http.StatusUnauthorized || !strings.Contains(b.last, "Invalid username/password")) {
				t.Fatalf("attempt %d: %d %s", i, last, b.last)
			}
		}
		if last != http.StatusTooManyRequests {
			t.Fatalf("attempt %d was not rate-limited: %d", loginsPerUser+2, last)
		}
		// The right password is refused too while the window lasts, without
		// reaching Parse.
		form.Set("password", "bob-Pa55word!")
		if st := b.post(base+"/authorize", form).StatusCode; st != http.StatusTooManyRequests {
			t.Fatalf("the right password got through the limit: %d", st)
		}
		f.clock.advance(loginWindow)
		b = f.browser(base)
		b.get(base + "/authorize?" + authRequest(pub.ID, challenge).Encode())
		form = b.hidden()
		form.Set("step", "login")
		form.Set("username", "bob")
		form.Set("password", "bob-Pa55word!")
		if st := b.post(base+"/authorize", form).StatusCode; st != http.StatusOK {
			t.Fatalf("after the window: %d %s", st, b.last)
		}
	})

	t.Run("one address: login attempts and sign-ins started are limited", func(t *testing.T) {
		_, challenge := pkce()
		b := f.browser(base)
		b.get(base + "/authorize?" + authRequest(pub.ID, challenge).Encode())
		form := b.hidden()
		form.Set("step", "login")
		form.Set("password", "wrong")
		var last int
		for i := range loginsPerAddress + 1 {
			form.Set("username", "nobody-"+string(rune('a'+i))) // never the same user twice
			last = b.post(base+"/authorize", form).StatusCode
			if i < loginsPerAddress && last != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d", i, last)
			}
		}
		if last != http.StatusTooManyRequests {
			t.Fatalf("attempt %d from one address was not limited: %d", loginsPerAddress+1, last)
		}
		for i := range authorizationsPerMin + 1 {
			last = b.get(base + "/authorize?" + authRequest(pub.ID, challenge).Encode()).StatusCode
			if i < authorizationsPerMin-1 && last != http.StatusOK {
				t.Fatalf("sign-in %d: %d", i, last)
			}
		}
		if last != http.StatusTooManyRequests {
			t.Fatalf("sign-ins started from one address were not limited: %d", last)
		}
	})

	t.Run("the login step posted twice logs the first Parse session out", func(t *testing.T) {
		_, challenge := pkce()
		b := f.browser(base)
		b.get(base + "/authorize?" + authRequest(pub.ID, challenge).Encode())
		form := b.hidden()
		id := form.Get("request")
		form.Set("step", "login")
		form.Set("username", "alice")
		form.Set("password", alicePassword)
		stored := func() string {
			g, err := f.srv.store.find(t.Context(), kindRequest, id)
			if err != nil {
				t.Fatal(err)
			}
			session, err := open(id, g.Session)
			if err != nil {
				t.Fatal(err)
			}
			f.remember(session.Reveal())
			return session.Reveal()
		}
		f.clock.advance(loginWindow / loginsPerUser)
		if st := b.post(base+"/authorize", form).StatusCode; st != http.StatusOK {
			t.Fatalf("first login: %d %s", st, b.last)
		}
		first := stored()
		f.clock.advance(loginWindow / loginsPerUser)
		if st := b.post(base+"/authorize", form).StatusCode; st != http.StatusOK {
			t.Fatalf("second login: %d %s", st, b.last)
		}
		second := stored()
		if first == second {
			t.Fatalf("the second login stored the same session")
		}
		if f.sessionAlive(first) {
			t.Errorf("the replaced Parse session is still live: nobody holds it")
		}
		if !f.sessionAlive(second) {
			t.Errorf("the stored Parse session was logged out")
		}
	})

	t.Run("scopes only narrow the configured tier", func(t *testing.T) {
		ro, roHTTP := f.server(config.TierReadonly, nil)
		roBase := roHTTP.URL
		c := f.publicClient(roBase)
		verifier, challenge := pkce()
		b := f.browser(roBase)
		b.get(roBase + "/authorize?" + authRequest(c.ID, challenge, "scope", "parse:admin parse:write").Encode())
		form := b.hidden()
		form.Set("step", "login")
		form.Set("username", "alice")
		form.Set("password", alicePassword)
		b.post(roBase+"/authorize", form)
		if !strings.Contains(b.last, "<code>parse:read</code>") || strings.Contains(b.last, "<code>parse:write") || !strings.Contains(b.last, "asked for more") {
			t.Errorf("consent page does not show the narrowed scope: %s", b.last)
		}
		form = b.hidden()
		form.Set("step", "consent")
		form.Set("decision", "approve")
		loc, _ := url.Parse(b.post(roBase+"/authorize", form).Header.Get("Location"))
		st, tok := f.tokenCall(roBase, exchange(c, loc.Query().Get("code"), verifier))
		if st != 200 || tok["scope"] != "parse:read" {
			t.Fatalf("token: %d %v", st, tok)
		}
		if p, _, _ := f.principal(roBase, tok["access_token"].(string)); p.Tier != config.TierReadonly {
			t.Errorf("tier %q", p.Tier)
		}
		_ = ro
		tok = f.tokens(base, pub, "scope", "parse:read")
		if p, _, _ := f.principal(base, tok["access_token"].(string)); p.Tier != config.TierReadonly || tok["scope"] != "parse:read" {
			t.Errorf("parse:read on a write server: tier %q scope %v", p.Tier, tok["scope"])
		}
		// A refresh may narrow, never widen.
		st, tok = f.tokenCall(base, url.Values{"grant_type": {"refresh_token"}, "client_id": {pub.ID}, "refresh_token": {tok["refresh_token"].(string)}, "scope": {"parse:admin"}})
		if st != 200 || tok["scope"] != "parse:read" {
			t.Errorf("a refresh widened the scope: %d %v", st, tok)
		}
	})

	t.Run("tokens are for this resource only", func(t *testing.T) {
		verifier, challenge := pkce()
		b := f.browser(base)
		resp := b.get(base + "/authorize?" + authRequest(pub.ID, challenge, "resource", "https://other.example/mcp").Encode())
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc == nil || loc.Query().Get("error") != "invalid_target" {
			t.Errorf("authorization for another resource: %d %v", resp.StatusCode, loc)
		}
		back := f.authorize(base, authRequest(pub.ID, challenge), "alice", alicePassword)
		form := exchange(pub, back.Query().Get("code"), verifier)
		form.Set("resource", "https://other.example/mcp")
		if st, out := f.tokenCall(base, form); st != 400 || out["error"] != "invalid_target" {
			t.Errorf("token for another resource: %d %v", st, out)
		}
		// Another parse-mcp on the same database (another public URL): its
		// tokens are not this server's.
		_, otherHTTP := f.server(config.TierWrite, nil)
		oc := f.publicClient(otherHTTP.URL)
		tok := f.tokens(otherHTTP.URL, oc)
		if _, code, _ := f.principal(otherHTTP.URL, tok["access_token"].(string)); code != 200 {
			t.Fatalf("the other server refuses its own token: %d", code)
		}
		if _, code, _ := f.principal(base, tok["access_token"].(string)); code != 401 {
			t.Errorf("a token minted for another resource was accepted: %d", code)
		}
		if st, _ := f.tokenCall(base, url.Values{"grant_type": {"refresh_token"}, "client_id": {oc.ID}, "refresh_token": {tok["refresh_token"].(string)}}); st == 200 {
			t.Errorf("another resource's refresh token was honoured")
		}
	})

	t.Run("expired and revoked tokens", func(t *testing.T) {
		tok := f.tokens(base, pub)
		access := tok["access_token"].(string)
		p, code, _ := f.principal(base, access)
		if code != 200 {
			t.Fatal(code)
		}
		f.clock.advance(accessTTL)
		if _, code, _ := f.principal(base, access); code != 401 {
			t.Errorf("an expired token was accepted: %d", code)
		}
		st, tok2 := f.tokenCall(base, url.Values{"grant_type": {"refresh_token"}, "client_id": {pub.ID}, "refresh_token": {tok["refresh_token"].(string)}})
		if st != 200 {
			t.Fatalf("refresh after the access token expired: %d %v", st, tok2)
		}
		// Revocation: another client cannot; the client can, and it ends
		// the family and the Parse session.
		other := f.publicClient(base)
		resp, _ := http.PostForm(base+"/revoke", url.Values{"client_id": {other.ID}, "token": {tok2["access_token"].(string)}})
		if resp.StatusCode != 200 {
			t.Fatal(resp.StatusCode)
		}
		if _, code, _ := f.principal(base, tok2["access_token"].(string)); code != 200 {
			t.Fatalf("another client revoked the token: %d", code)
		}
		resp, _ = http.PostForm(base+"/revoke", url.Values{"client_id": {pub.ID}, "token": {tok2["refresh_token"].(string)}, "token_type_hint": {"refresh_token"}})
		if resp.StatusCode != 200 {
			t.Fatal(resp.StatusCode)
		}
		if _, code, _ := f.principal(base, tok2["access_token"].(string)); code != 401 {
			t.Errorf("a revoked grant's access token was accepted: %d", code)
		}
		if f.sessionAlive(p.SessionToken) {
			t.Errorf("revocation left the Parse session alive")
		}
		for _, bad := range []string{"pmcp_at_unknown", "pmcp_at_" + strings.Repeat("A", 43)} {
			if _, code, _ := f.principal(base, bad); code != 401 {
				t.Errorf("unknown token %q: %d", bad, code)
			}
		}
	})

	t.Run("a grant whose Parse session ended cannot be refreshed", func(t *testing.T) {
		tok := f.tokens(base, pub)
		p, _, _ := f.principal(base, tok["access_token"].(string))
		if st, _, err := f.ps.Do("POST", "/logout", map[string]any{}, parsetest.AsSession(p.SessionToken)); err != nil || st != 200 {
			t.Fatalf("Parse logout: %d %v", st, err)
		}
		st, out := f.tokenCall(base, url.Values{"grant_type": {"refresh_token"}, "client_id": {pub.ID}, "refresh_token": {tok["refresh_token"].(string)}})
		if st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("refresh after a Parse logout: %d %v", st, out)
		}
		if _, code, _ := f.principal(base, tok["access_token"].(string)); code != 401 {
			t.Errorf("the grant's access token outlived the refused refresh: %d", code)
		}
	})

	t.Run("confidential clients authenticate", func(t *testing.T) {
		st, out := f.register(base, map[string]any{"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "client_secret_post"})
		if st != 201 || out["client_secret"] == nil {
			t.Fatalf("register: %d %v", st, out)
		}
		c := registered{ID: out["client_id"].(string), Secret: out["client_secret"].(string)}
		verifier, challenge := pkce()
		back := f.authorize(base, authRequest(c.ID, challenge), "alice", alicePassword)
		form := exchange(c, back.Query().Get("code"), verifier)
		if st, out := f.tokenCall(base, form); st != 401 || out["error"] != "invalid_client" {
			t.Errorf("no secret: %d %v", st, out)
		}
		form.Set("client_secret", "pmcp_cs_wrong")
		if st, _ := f.tokenCall(base, form); st != 401 {
			t.Errorf("wrong secret: %d", st)
		}
		form.Set("client_secret", c.Secret)
		if st, out := f.tokenCall(base, form); st != 200 {
			t.Errorf("right secret: %d %v", st, out)
		}
	})

	t.Run("other modes' credentials pass through", func(t *testing.T) {
		for _, h := range []string{"", "Bearer r:abcdef", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x", "Basic dXNlcjpwdw=="} {
			req, _ := http.NewRequest(http.MethodPost, base+"/mcp", nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			if _, err := f.srv.Authenticate(req); err != authn.ErrNoCredential {
				t.Errorf("%q: %v", h, err)
			}
		}
	})

	f.checkLog()
}
