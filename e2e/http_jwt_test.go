package e2e

// The jwt mode of per-request identity through the binary (docs/team.md "Serve a
// team" → "jwt"; SECURITY.md "JWT mode"): an identity provider served by
// the test on loopback (a JWKS with key rotation, or an HS256 secret),
// users matched by objectId and by authData seeing only their rows, and
// every refusal answering the fixed 401.

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

const (
	jwtIssuer   = "https://id.e2e.example/"
	jwtAudience = "https://mcp.e2e.example/mcp"
	jwtSecret   = "e2e-hs256-secret-0123456789abcdef0123"
	unauthBody  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}`
)

// testIdP is an identity provider: an RSA signing key whose JWKS the test
// serves on loopback and can rotate.
type testIdP struct {
	mu  sync.Mutex
	key *rsa.PrivateKey
	kid string
	url string
}

func newTestIdP(t *testing.T) *testIdP {
	t.Helper()
	idp := &testIdP{}
	idp.rotate(t, "k1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idp.mu.Lock()
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &idp.key.PublicKey, KeyID: idp.kid, Algorithm: "RS256", Use: "sig"}}}
		idp.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(srv.Close)
	idp.url = srv.URL + "/.well-known/jwks.json"
	return idp
}

// rotate replaces the signing key (the old one leaves the JWKS).
func (idp *testIdP) rotate(t *testing.T, kid string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	idp.mu.Lock()
	idp.key, idp.kid = key, kid
	idp.mu.Unlock()
}

// mint signs claims (over valid defaults for sub; nil deletes) with the
// current key.
func (idp *testIdP) mint(t *testing.T, sub string, over map[string]any) string {
	t.Helper()
	idp.mu.Lock()
	key, kid := idp.key, idp.kid
	idp.mu.Unlock()
	return signJWT(t, jose.RS256, key, kid, jwtClaims(sub, over))
}

func jwtClaims(sub string, over map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": jwtIssuer, "aud": jwtAudience, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func signJWT(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func bearerHeader(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

// songCount is count_objects on Song in s.
func songCount(t *testing.T, s *mcpSession) int {
	t.Helper()
	m := s.rpc("count", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Song"}}`)
	res := obj(m["result"])
	content, _ := res["content"].([]any)
	if res["isError"] == true || len(content) == 0 {
		t.Fatalf("count_objects: %v", m)
	}
	var out struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(obj(content[0])["text"].(string)), &out); err != nil {
		t.Fatalf("count_objects text: %v", err)
	}
	return out.Count
}

// refusedJWT checks a token gets the fixed 401, and that the operator log
// says why (reason "" skips that check).
func refusedJWT(t *testing.T, h *httpServer, name, tok, reason string) {
	t.Helper()
	before := len(h.stderr.String())
	// Each refusal from its own address (the server declares the loopback
	// proxy): a refusal's reason is logged once per address and minute.
	hdr := bearerHeader(tok)
	refusedFrom++
	hdr["X-Forwarded-For"] = fmt.Sprintf("198.51.%d.%d", refusedFrom/250, refusedFrom%250+1)
	resp, b := h.request("POST", "/mcp", initBody, hdr)
	if resp.StatusCode != 401 || string(b) != unauthBody {
		t.Fatalf("%s: %d %s, want the fixed 401", name, resp.StatusCode, b)
	}
	if reason == "" {
		return
	}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(h.stderr.String()[before:], reason) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the log does not say %q:\n%s", name, reason, h.stderr.String()[before:])
		}
	}
}

// refusedFrom numbers refusedJWT's client addresses.
var refusedFrom int

// noJWTInLog fails when the server's log holds any part of a token.
func noJWTInLog(t *testing.T, h *httpServer, toks []string) {
	t.Helper()
	logs := h.stderr.String()
	for _, tok := range toks {
		for _, part := range append(strings.Split(tok, "."), tok) {
			if len(part) >= 8 && strings.Contains(logs, part) {
				t.Fatalf("the log holds a token part %q", part)
			}
		}
	}
}

func TestHTTPJWT(t *testing.T) {
	idp := newTestIdP(t)
	h := startHTTP(t, policyFile(t, "demo"), "PARSE_MCP_HTTP_AUTH=jwt", "PARSE_MCP_TRUSTED_PROXIES=127.0.0.1,::1",
		"PARSE_MCP_JWT_JWKS_URL="+idp.url, "PARSE_MCP_JWT_ISSUER="+jwtIssuer, "PARSE_MCP_JWT_AUDIENCE="+jwtAudience)
	var minted []string
	mint := func(sub string, over map[string]any) string {
		tok := idp.mint(t, sub, over)
		minted = append(minted, tok)
		return tok
	}

	// Users by objectId, and by a Parse session token in a claim, each see
	// what Parse's ACLs show them.
	alice := h.session(bearerHeader(mint(demo.UserAliceID, nil)))
	bob := h.session(bearerHeader(mint(demo.UserBobID, map[string]any{"azp": "e2e-client"})))
	carol := h.session(bearerHeader(mint("ignored-when-a-session-is-named", map[string]any{"parse_session_token": demo.CarolSessionToken})))
	for _, c := range []struct {
		name string
		s    *mcpSession
		want int
	}{
		{"alice", alice, demo.ActiveSongReadableByAlice},
		{"bob", bob, demo.ActiveSongReadableByBob},
		{"carol", carol, demo.ActiveSongReadableByCarol},
	} {
		if got := songCount(t, c.s); got != c.want {
			t.Errorf("%s counts %d songs, fixture says %d", c.name, got, c.want)
		}
	}
	if demo.ActiveSongReadableByAlice == demo.ActiveSongReadableByBob {
		t.Fatal("the fixture does not tell alice from bob")
	}
	// Bob holding alice's session id (his own valid token) gets 404.
	stolen := &mcpSession{h: h, id: alice.id, headers: map[string]string{"Authorization": bob.headers["Authorization"], "Mcp-Session-Id": alice.id}}
	if status, _ := stolen.post(`{"jsonrpc":"2.0","id":"p","method":"ping"}`); status != 404 {
		t.Fatalf("bob on alice's session: HTTP %d, want 404", status)
	}

	// Refusals.
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	idp.mu.Lock()
	pubDER, err := x509.MarshalPKIXPublicKey(&idp.key.PublicKey)
	kid := idp.kid
	idp.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	valid := mint(demo.UserAliceID, nil)
	parts := strings.Split(valid, ".")
	for _, c := range []struct{ name, tok, reason string }{
		{"expired", mint(demo.UserAliceID, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}), "jwt: expired"},
		{"not yet valid", mint(demo.UserAliceID, map[string]any{"nbf": time.Now().Add(time.Minute).Unix()}), "jwt: not valid yet"},
		{"wrong issuer", mint(demo.UserAliceID, map[string]any{"iss": "https://evil.example/"}), "jwt: wrong issuer"},
		{"wrong audience", mint(demo.UserAliceID, map[string]any{"aud": "https://other.example/"}), "jwt: wrong audience"},
		{"minted for another resource", mint(demo.UserAliceID, map[string]any{"aud": []string{"https://other-mcp.e2e.example/mcp"}}), "jwt: wrong audience"},
		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + ".", "jwt: algorithm not allowed"},
		{"HS256 signed with the RSA public key", signJWT(t, jose.HS256, pubDER, kid, jwtClaims(demo.UserAliceID, nil)), "jwt: algorithm not allowed"},
		{"unknown kid", signJWT(t, jose.RS256, otherKey, "made-up", jwtClaims(demo.UserAliceID, nil)), "jwt: no key in the JWKS has this kid and algorithm"},
		{"bad signature", parts[0] + "." + parts[1] + "." + b64([]byte("not the signature")), "jwt: bad signature"},
		{"malformed", parts[0] + "." + parts[1] + ".!!!", "jwt: malformed token"},
		{"a user that does not exist", mint("noSuchUser01", nil), "jwt: no such user"},
		{"an authData id without the provider set", mint("48151623", nil), "jwt: no such user"},
		{"a session token that does not exist", mint(demo.UserAliceID, map[string]any{"parse_session_token": "r:00000000000000000000000000000000"}), "unknown session token"},
	} {
		minted = append(minted, c.tok)
		refusedJWT(t, h, c.name, c.tok, c.reason)
	}
	// A token of no mode at all (not a JWT) is refused too.
	refusedJWT(t, h, "not a JWT", "opaque-token-0123456789", "no credential of any configured mode")

	// Rotation: the provider replaces k1 by k2. A k2 token is accepted
	// once the JWKS is fetched again (at most once per 5 s), and k1 tokens
	// stop working.
	idp.rotate(t, "k2")
	rotated := mint(demo.UserBobID, nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, _ := h.request("POST", "/mcp", initBody, bearerHeader(rotated))
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a token of the rotated key is still refused: %d", resp.StatusCode)
		}
		time.Sleep(500 * time.Millisecond)
	}
	refusedJWT(t, h, "a token of the key rotated out", valid, "jwt: no key in the JWKS has this kid and algorithm")

	noJWTInLog(t, h, minted)
	if !strings.Contains(h.stderr.String(), `"client_id":"e2e-client"`) {
		t.Fatal("bob's tool call's audit event does not name his token's azp as client_id")
	}
	if strings.Contains(h.stderr.String(), demo.CarolSessionToken) {
		t.Fatal("the log holds the session token of a claim")
	}
}

// Users matched by authData.<provider>.id, with an HS256 secret; on this
// server the objectId is not a user claim, and RS tokens are refused.
func TestHTTPJWTAuthData(t *testing.T) {
	h := startHTTP(t, policyFile(t, "demo"), "PARSE_MCP_HTTP_AUTH=jwt", "PARSE_MCP_TRUSTED_PROXIES=127.0.0.1,::1",
		"PARSE_MCP_JWT_SECRET="+jwtSecret, "PARSE_MCP_JWT_ISSUER="+jwtIssuer, "PARSE_MCP_JWT_AUDIENCE="+jwtAudience,
		"PARSE_MCP_JWT_AUTH_PROVIDER=github")
	dave := signJWT(t, jose.HS256, []byte(jwtSecret), "", jwtClaims("48151623", nil))
	s := h.session(bearerHeader(dave))
	if got, want := songCount(t, s), demo.ActiveSongReadable["dave"]; got != want {
		t.Fatalf("dave counts %d songs, fixture says %d", got, want)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	toks := []string{dave}
	for _, c := range []struct{ name, tok, reason string }{
		{"an objectId", signJWT(t, jose.HS256, []byte(jwtSecret), "", jwtClaims(demo.UserDaveID, nil)), "jwt: no such user"},
		{"another provider's id", signJWT(t, jose.HS256, []byte(jwtSecret), "", jwtClaims("1", nil)), "jwt: no such user"},
		{"another secret", signJWT(t, jose.HS256, []byte(jwtSecret+"x"), "", jwtClaims("48151623", nil)), "jwt: bad signature"},
		{"RS256 against the secret", signJWT(t, jose.RS256, rsaKey, "k", jwtClaims("48151623", nil)), "jwt: algorithm not allowed"},
	} {
		toks = append(toks, c.tok)
		refusedJWT(t, h, c.name, c.tok, c.reason)
	}
	noJWTInLog(t, h, toks)
}

// The jwt mode's configuration is checked at start-up: exit 2 naming the
// variable.
func TestHTTPJWTConfiguration(t *testing.T) {
	base := []string{"PARSE_MCP_HTTP_ADDR=127.0.0.1:0", "PARSE_MCP_HTTP_AUTH=jwt"}
	for _, c := range []struct {
		name, mention string
		env           []string
	}{
		{"no key", "PARSE_MCP_JWT_JWKS_URL", []string{"PARSE_MCP_JWT_ISSUER=" + jwtIssuer, "PARSE_MCP_JWT_AUDIENCE=" + jwtAudience}},
		{"short secret", "PARSE_MCP_JWT_SECRET", []string{"PARSE_MCP_JWT_SECRET=short-s3cret", "PARSE_MCP_JWT_ISSUER=" + jwtIssuer, "PARSE_MCP_JWT_AUDIENCE=" + jwtAudience}},
		{"JWKS over plain http", "PARSE_MCP_JWT_JWKS_URL", []string{"PARSE_MCP_JWT_JWKS_URL=http://id.example.com/jwks", "PARSE_MCP_JWT_ISSUER=" + jwtIssuer, "PARSE_MCP_JWT_AUDIENCE=" + jwtAudience}},
		{"bad provider", "PARSE_MCP_JWT_AUTH_PROVIDER", []string{"PARSE_MCP_JWT_SECRET=" + jwtSecret, "PARSE_MCP_JWT_ISSUER=" + jwtIssuer, "PARSE_MCP_JWT_AUDIENCE=" + jwtAudience, "PARSE_MCP_JWT_AUTH_PROVIDER=a.b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary)
			cmd.Env = append(env(base...), c.env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), c.mention) {
				t.Fatalf("got %v, stderr %q; want exit 2 naming %s", err, stderr.String(), c.mention)
			}
			if strings.Contains(stderr.String(), "s3cret") || strings.Contains(stderr.String(), jwtSecret) {
				t.Fatalf("stderr quotes the secret: %s", stderr.String())
			}
		})
	}
}

// listedToolNames is tools/list in s, as a set.
func listedToolNames(t *testing.T, s *mcpSession) map[string]bool {
	t.Helper()
	m := s.rpc("list", "tools/list", "")
	out := map[string]bool{}
	for _, tool := range obj(m["result"])["tools"].([]any) {
		out[obj(tool)["name"].(string)] = true
	}
	return out
}

// Claims only narrow: under PARSE_MCP_PERMISSIONS=write a token asking for
// admin gets write (no admin tool is listed), and one with parse:read gets
// readonly.
func TestHTTPJWTClaimsOnlyNarrow(t *testing.T) {
	h := startHTTP(t, append([]string{policyFile(t, "demo"), "PARSE_MCP_HTTP_AUTH=jwt",
		"PARSE_MCP_JWT_SECRET=" + jwtSecret, "PARSE_MCP_JWT_ISSUER=" + jwtIssuer, "PARSE_MCP_JWT_AUDIENCE=" + jwtAudience},
		append(append([]string{}, writeEnv...), "PARSE_MCP_PERMISSIONS=write")...)...)
	for _, c := range []struct {
		name         string
		over         map[string]any
		write, admin bool
	}{
		{"no claim", nil, true, false},
		{"permissions admin", map[string]any{"permissions": "admin"}, true, false},
		{"scope parse:admin", map[string]any{"scope": "parse:admin"}, true, false},
		{"permissions readonly", map[string]any{"permissions": "readonly"}, false, false},
		{"scope parse:read", map[string]any{"scope": "openid parse:read"}, false, false},
	} {
		tok := signJWT(t, jose.HS256, []byte(jwtSecret), "", jwtClaims(demo.UserAliceID, c.over))
		tools := listedToolNames(t, h.session(bearerHeader(tok)))
		if !tools["count_objects"] || tools["create_object"] != c.write || tools["create_class"] != c.admin {
			t.Errorf("%s: count_objects %v, create_object %v (want %v), create_class %v (want %v)", c.name,
				tools["count_objects"], tools["create_object"], c.write, tools["create_class"], c.admin)
		}
	}
}
