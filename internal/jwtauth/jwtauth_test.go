package jwtauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

const (
	issuer   = "https://id.example.com/"
	audience = "https://mcp.example.com/mcp"
	secret   = "0123456789abcdef0123456789abcdef-hs256-test-secret"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// users is the _User collection as UserIDByAuth sees it (parsedb's own
// implementation is tested on FerretDB in TestUserIDByAuth).
type users map[string]string // "provider/id" → objectId

func (u users) UserIDByAuth(_ context.Context, provider, id string) (string, error) {
	if u[provider+"/"+id] == "ambiguous" {
		return "", parsedb.ErrAmbiguousUser
	}
	return u[provider+"/"+id], nil
}

var appUsers = users{"/alice01": "alice01", "/bob02": "bob02", "github/48151623": "dave04", "/twins": "ambiguous"}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// provider is an identity provider: signing keys and a JWKS served on
// loopback, whose keys the test can rotate.
type provider struct {
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	ed      ed25519.PrivateKey
	mu      sync.Mutex
	jwks    jose.JSONWebKeySet
	fetches atomic.Int32
	down    atomic.Bool
	srv     *httptest.Server
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	p := &provider{}
	var err error
	if p.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if p.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, p.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	p.jwks = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.rsa.PublicKey, KeyID: "rsa1", Algorithm: "RS256", Use: "sig"},
		{Key: &p.ec.PublicKey, KeyID: "ec1"},
		{Key: p.ed.Public(), KeyID: "ed1"},
	}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		if p.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(p.jwks)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// sign mints a token with key under alg and kid.
func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	return signWith(t, jose.SigningKey{Algorithm: alg, Key: key}, opts, claims)
}

func signWith(t *testing.T, key jose.SigningKey, opts *jose.SignerOptions, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// claims are valid claims for user sub at t0, with overrides (nil deletes).
func claims(sub string, over map[string]any) map[string]any {
	c := map[string]any{"iss": issuer, "aud": audience, "sub": sub, "iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix()}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func newAuth(t *testing.T, cfg Config, log *bytes.Buffer, clk *clock) *Authenticator {
	t.Helper()
	cfg.Issuer, cfg.Audience = issuer, audience
	if cfg.Tier == "" {
		cfg.Tier = "write"
	}
	cfg.Now = clk.Now
	cfg.Log = zerolog.New(log)
	a, err := New(cfg, appUsers)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func bearer(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

// noTokenIn fails when text quotes the token or any of its parts.
func noTokenIn(t *testing.T, what, text, tok string) {
	t.Helper()
	for _, part := range append(strings.Split(tok, "."), tok) {
		if len(part) >= 8 && strings.Contains(text, part) {
			t.Fatalf("%s quotes the token: %s", what, text)
		}
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestAuthenticateAccepts(t *testing.T) {
	p := newProvider(t)
	clk := &clock{now: t0}
	var log bytes.Buffer
	jwks := newAuth(t, Config{JWKSURL: p.srv.URL}, &log, clk)
	hs := newAuth(t, Config{Secret: []byte(secret)}, &log, clk)
	gh := newAuth(t, Config{JWKSURL: p.srv.URL, AuthProvider: "github"}, &log, clk)
	custom := newAuth(t, Config{Secret: []byte(secret), UserClaim: "https://app.example.com/parse_user"}, &log, clk)
	exp := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		a    *Authenticator
		tok  string
		want authn.Principal
	}{
		{"RS256 by objectId", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", nil)),
			authn.Principal{Mode: "jwt", UserID: "alice01", ExpiresAt: exp}},
		{"ES256, key without alg pinned by its curve", jwks, sign(t, jose.ES256, p.ec, "ec1", claims("bob02", nil)),
			authn.Principal{Mode: "jwt", UserID: "bob02", ExpiresAt: exp}},
		{"EdDSA without kid", jwks, sign(t, jose.EdDSA, p.ed, "", claims("bob02", nil)),
			authn.Principal{Mode: "jwt", UserID: "bob02", ExpiresAt: exp}},
		{"HS256 with the secret", hs, sign(t, jose.HS256, []byte(secret), "", claims("alice01", nil)),
			authn.Principal{Mode: "jwt", UserID: "alice01", ExpiresAt: exp}},
		{"authData.github.id", gh, sign(t, jose.RS256, p.rsa, "rsa1", claims("48151623", nil)),
			authn.Principal{Mode: "jwt", UserID: "dave04", ExpiresAt: exp}},
		{"a configured user claim", custom, sign(t, jose.HS256, []byte(secret), "", claims("someone-else", map[string]any{"https://app.example.com/parse_user": "bob02"})),
			authn.Principal{Mode: "jwt", UserID: "bob02", ExpiresAt: exp}},
		{"parse_session_token", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("nobody", map[string]any{"parse_session_token": "r:0123456789abcdef"})),
			authn.Principal{Mode: "jwt", SessionToken: "r:0123456789abcdef", ExpiresAt: exp}},
		{"azp, tenant, permissions", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"azp": "claude-connector", "tenant_id": "acme", "permissions": "readonly"})),
			authn.Principal{Mode: "jwt", UserID: "alice01", ClientID: "claude-connector", Tenant: "acme", Tier: "readonly", ExpiresAt: exp}},
		{"client_id, scope narrows", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"client_id": "ci", "scope": "openid parse:read"})),
			authn.Principal{Mode: "jwt", UserID: "alice01", ClientID: "ci", Tier: "readonly", ExpiresAt: exp}},
		{"scope parse:write under write", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"scope": "parse:read parse:write"})),
			authn.Principal{Mode: "jwt", UserID: "alice01", Tier: "write", ExpiresAt: exp}},
		{"scope without parse scopes does not narrow", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"scope": "openid email"})),
			authn.Principal{Mode: "jwt", UserID: "alice01", ExpiresAt: exp}},
		{"scp array", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"scp": []string{"parse:read"}})),
			authn.Principal{Mode: "jwt", UserID: "alice01", Tier: "readonly", ExpiresAt: exp}},
		{"a claim asking for admin gets the configured write", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"permissions": "admin", "scope": "parse:admin"})),
			authn.Principal{Mode: "jwt", UserID: "alice01", Tier: "write", ExpiresAt: exp}},
		{"aud array holding ours", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"aud": []string{"other", audience}})),
			authn.Principal{Mode: "jwt", UserID: "alice01", ExpiresAt: exp}},
		{"expired within the skew", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"exp": t0.Add(-Skew + time.Second).Unix()})),
			authn.Principal{Mode: "jwt", UserID: "alice01", ExpiresAt: t0.Add(-Skew + time.Second)}},
		{"nbf within the skew", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"nbf": t0.Add(Skew - time.Second).Unix()})),
			authn.Principal{Mode: "jwt", UserID: "alice01", ExpiresAt: exp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.a.Authenticate(bearer(tc.tok))
			if err != nil {
				t.Fatal(err)
			}
			got.ExpiresAt = got.ExpiresAt.UTC()
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Requests without a JWT belong to another mode.
func TestAuthenticateNoCredential(t *testing.T) {
	a := newAuth(t, Config{Secret: []byte(secret)}, &bytes.Buffer{}, &clock{now: t0})
	for name, header := range map[string]string{
		"none":                     "",
		"parse session token":      "Bearer r:0123456789abcdef0123456789abcdef",
		"API key":                  "Bearer k3y-0123456789abcdef",
		"API key with two dots":    "Bearer abc.def.ghi",
		"Basic":                    "Basic " + b64("u:p"),
		"JWT under another scheme": "Token " + sign(t, jose.HS256, []byte(secret), "", claims("alice01", nil)),
		"JWE (five segments)":      "Bearer " + b64(`{"alg":"dir","enc":"A256GCM"}`) + "..iv.ct.tag",
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if header != "" {
				r.Header.Set("Authorization", header)
			}
			if _, err := a.Authenticate(r); !errors.Is(err, authn.ErrNoCredential) {
				t.Fatalf("got %v, want ErrNoCredential", err)
			}
		})
	}
}

// Every refusal: the error wraps ErrUnauthorized (the fixed 401), and
// neither it nor the log quotes the token.
func TestAuthenticateRefuses(t *testing.T) {
	p := newProvider(t)
	clk := &clock{now: t0}
	var log bytes.Buffer
	jwks := newAuth(t, Config{JWKSURL: p.srv.URL}, &log, clk)
	hs := newAuth(t, Config{Secret: []byte(secret)}, &log, clk)
	readonly := newAuth(t, Config{JWKSURL: p.srv.URL, Tier: "readonly"}, &log, clk)

	rsaPub, err := x509.MarshalPKIXPublicKey(&p.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	valid := sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", nil))
	parts := strings.Split(valid, ".")
	payload := b64(`{"iss":"` + issuer + `","aud":"` + audience + `","sub":"alice01","exp":` + jsonInt(t0.Add(time.Hour).Unix()) + `}`)

	for _, tc := range []struct {
		name, reason string
		a            *Authenticator
		tok          string
	}{
		{"expired", "expired", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"exp": t0.Add(-Skew - time.Second).Unix()}))},
		{"not yet valid", "not valid yet", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"nbf": t0.Add(Skew + time.Second).Unix()}))},
		{"issued in the future", "issued in the future", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"iat": t0.Add(time.Hour).Unix()}))},
		{"no exp", "no exp claim", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"exp": nil}))},
		{"wrong issuer", "wrong issuer", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"iss": "https://evil.example.com/"}))},
		{"issuer differing by a slash", "wrong issuer", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"iss": strings.TrimSuffix(issuer, "/")}))},
		{"wrong audience", "wrong audience", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"aud": "https://api.example.com/"}))},
		{"minted for another resource", "wrong audience", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"aud": "https://other-mcp.example.com/mcp"}))},
		{"no audience", "wrong audience", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"aud": nil}))},
		{"alg none", "algorithm not allowed", jwks, b64(`{"alg":"none","typ":"JWT"}`) + "." + payload + "."},
		{"alg none with the secret", "algorithm not allowed", hs, b64(`{"alg":"none","typ":"JWT"}`) + "." + payload + "."},
		{"alg None", "algorithm not allowed", jwks, b64(`{"alg":"None"}`) + "." + payload + "."},
		{"HS256 signed with the RSA public key's PEM", "algorithm not allowed", jwks, sign(t, jose.HS256, rsaPEM, "rsa1", claims("alice01", nil))},
		{"HS256 signed with the RSA public key's DER", "algorithm not allowed", jwks, sign(t, jose.HS256, rsaPub, "rsa1", claims("alice01", nil))},
		{"RS256 against the secret", "algorithm not allowed", hs, valid},
		{"PS256 with a key pinned to RS256", "no key in the JWKS has this kid and algorithm", jwks, sign(t, jose.PS256, p.rsa, "rsa1", claims("alice01", nil))},
		{"ES256 naming the RSA key", "no key in the JWKS has this kid and algorithm", jwks, sign(t, jose.ES256, p.ec, "rsa1", claims("alice01", nil))},
		{"unknown kid", "no key in the JWKS has this kid and algorithm", jwks, sign(t, jose.RS256, otherRSA, "rsa2", claims("alice01", nil))},
		{"known kid, another key", "bad signature", jwks, sign(t, jose.RS256, otherRSA, "rsa1", claims("alice01", nil))},
		{"the signer's own key embedded in the header", "bad signature", jwks, embeddedJWK(t, otherRSA, "rsa1", claims("alice01", nil))},
		{"a jku pointing elsewhere", "no key in the JWKS has this kid and algorithm", jwks, withHeader(t, otherRSA, map[string]any{"kid": "evil", "jku": "https://evil.example.com/jwks"}, claims("alice01", nil))},
		{"HS256 with another secret", "bad signature", hs, sign(t, jose.HS256, []byte(secret+"x"), "", claims("alice01", nil))},
		{"payload swapped", "bad signature", jwks, parts[0] + "." + payload + "." + parts[2]},
		{"signature cut", "bad signature", jwks, parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-8]},
		{"signature not base64", "malformed token", jwks, parts[0] + "." + parts[1] + ".!!!"},
		{"payload not JSON", "malformed claims", hs, hsRaw(t, "not json")},
		{"exp a string", "malformed claims", hs, hsRaw(t, `{"iss":"`+issuer+`","aud":"`+audience+`","sub":"alice01","exp":"tomorrow"}`)},
		{"user that does not exist", "no such user", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("mallory", nil))},
		{"an id two users share", "more than one user has this id", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("twins", nil))},
		{"no user claim", "no user claim", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("", map[string]any{"sub": nil}))},
		{"user claim a number", "malformed claims", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("", map[string]any{"sub": 42}))},
		{"permissions naming no tier", "permissions claim names no tier", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"permissions": "root"}))},
		{"client_id with a newline", "claim azp is not a valid string", jwks, sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"azp": "a\nb"}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log.Reset()
			got, err := tc.a.Authenticate(bearer(tc.tok))
			if !errors.Is(err, authn.ErrUnauthorized) || !strings.HasSuffix(err.Error(), tc.reason) {
				t.Fatalf("got %+v, %v; want a refusal ending %q", got, err, tc.reason)
			}
			noTokenIn(t, "error", err.Error(), tc.tok)
			noTokenIn(t, "log", log.String(), tc.tok)
		})
	}

	// A tier claim asking for more than configured narrows only.
	p2, err := readonly.Authenticate(bearer(sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", map[string]any{"permissions": "admin"}))))
	if err != nil || p2.Tier != "readonly" {
		t.Fatalf("permissions admin under readonly: %+v, %v", p2, err)
	}
}

// embeddedJWK signs with key and puts its public half in the header's jwk,
// which must never be the key that verifies.
func embeddedJWK(t *testing.T, key *rsa.PrivateKey, kid string, c map[string]any) string {
	t.Helper()
	return signWith(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{EmbedJWK: true}).WithType("JWT"), c)
}

// withHeader signs with key under RS256 with extra header fields.
func withHeader(t *testing.T, key *rsa.PrivateKey, hdr map[string]any, c map[string]any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	for k, v := range hdr {
		opts = opts.WithHeader(jose.HeaderKey(k), v)
	}
	return signWith(t, jose.SigningKey{Algorithm: jose.RS256, Key: key}, opts, c)
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// hsRaw signs an arbitrary payload with the secret.
func hsRaw(t *testing.T, payload string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte(secret)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Keys rotate: a new kid is fetched, a removed one stops working, and
// tokens naming made-up kids fetch at most once per refetchInterval.
func TestJWKSRotationAndRefetchLimit(t *testing.T) {
	p := newProvider(t)
	clk := &clock{now: t0}
	var log bytes.Buffer
	a := newAuth(t, Config{JWKSURL: p.srv.URL}, &log, clk)
	ok := func(tok string) {
		t.Helper()
		if _, err := a.Authenticate(bearer(tok)); err != nil {
			t.Fatalf("refused: %v", err)
		}
	}
	refused := func(tok string) {
		t.Helper()
		if _, err := a.Authenticate(bearer(tok)); !errors.Is(err, authn.ErrUnauthorized) {
			t.Fatalf("got %v, want a refusal", err)
		}
	}
	old := sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", nil))
	ok(old)
	if n := p.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches after the first token, want 1", n)
	}

	// An attacker's tokens with made-up kids: one refetch per interval.
	forged, _ := rsa.GenerateKey(rand.Reader, 2048)
	clk.Add(refetchInterval)
	for i := range 100 {
		refused(sign(t, jose.RS256, forged, "made-up-"+string(rune('a'+i%26)), claims("alice01", nil)))
	}
	if n := p.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after 100 unknown kids, want 2", n)
	}

	// Rotation: the provider replaces rsa1 by rsa2.
	next, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.mu.Lock()
	p.jwks.Keys[0] = jose.JSONWebKey{Key: &next.PublicKey, KeyID: "rsa2", Algorithm: "RS256", Use: "sig"}
	p.mu.Unlock()
	rotated := sign(t, jose.RS256, next, "rsa2", claims("bob02", nil))
	refused(rotated) // within the interval: not fetched yet
	clk.Add(refetchInterval)
	ok(rotated)
	refused(old) // rsa1 is gone from the set
	if n := p.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}
	// The set is refreshed when older than keysMaxAge even without an
	// unknown kid; a provider that is down leaves the keys held in use.
	p.down.Store(true)
	clk.Add(keysMaxAge + time.Second)
	ok(rotated)
	if n := p.fetches.Load(); n != 4 {
		t.Fatalf("%d fetches, want 4", n)
	}
	if !strings.Contains(log.String(), "cannot fetch the JWKS") || !strings.Contains(log.String(), "status 503") {
		t.Fatalf("log: %s", log.String())
	}
	noTokenIn(t, "log", log.String(), rotated)
}

// A JWKS never fetched refuses every token (fail closed) and says why in
// the log; the URL's query (which may hold a credential) is not logged.
func TestJWKSUnavailable(t *testing.T) {
	p := newProvider(t)
	p.down.Store(true)
	var log bytes.Buffer
	a := newAuth(t, Config{JWKSURL: p.srv.URL + "/jwks?access_token=s3cr3t-query"}, &log, &clock{now: t0})
	tok := sign(t, jose.RS256, p.rsa, "rsa1", claims("alice01", nil))
	if _, err := a.Authenticate(bearer(tok)); err == nil || !strings.Contains(err.Error(), "JWKS is unavailable") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(log.String(), "s3cr3t-query") || !strings.Contains(log.String(), "status 503") {
		t.Fatalf("log: %s", log.String())
	}
	noTokenIn(t, "log", log.String(), tok)
}

// The JWKS's own contents are untrusted: symmetric keys (the HS/RS
// confusion by another road), short RSA keys, encryption keys and keys
// whose alg disagrees with their type are not used; an unreadable key does
// not take the others down.
func TestJWKSUnusableKeys(t *testing.T) {
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keys := []any{
		map[string]any{"kty": "oct", "kid": "oct", "k": b64(secret), "alg": "HS256"},
		jose.JSONWebKey{Key: &weak.PublicKey, KeyID: "weak"},
		jose.JSONWebKey{Key: &good.PublicKey, KeyID: "enc", Use: "enc"},
		jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "ec-as-rs", Algorithm: "RS256"},
		map[string]any{"kty": "XYZ", "kid": "future"},
		jose.JSONWebKey{Key: &good.PublicKey, KeyID: "good"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}))
	defer srv.Close()
	a := newAuth(t, Config{JWKSURL: srv.URL}, &bytes.Buffer{}, &clock{now: t0})
	for _, tc := range []struct {
		name string
		tok  string
		ok   bool
	}{
		{"good key", sign(t, jose.RS256, good, "good", claims("alice01", nil)), true},
		{"oct key in the JWKS", sign(t, jose.HS256, []byte(secret), "oct", claims("alice01", nil)), false},
		{"1024-bit RSA", sign(t, jose.RS256, weak, "weak", claims("alice01", nil)), false},
		{"encryption key", sign(t, jose.RS256, good, "enc", claims("alice01", nil)), false},
		{"EC key labelled RS256", sign(t, jose.ES256, ec, "ec-as-rs", claims("alice01", nil)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.Authenticate(bearer(tc.tok))
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	for name, cfg := range map[string]Config{
		"neither key":  {Issuer: issuer, Audience: audience, Tier: "readonly"},
		"both keys":    {JWKSURL: "https://id.example.com/jwks", Secret: []byte(secret), Issuer: issuer, Audience: audience, Tier: "readonly"},
		"no issuer":    {Secret: []byte(secret), Audience: audience, Tier: "readonly"},
		"no audience":  {Secret: []byte(secret), Issuer: issuer, Tier: "readonly"},
		"unknown tier": {Secret: []byte(secret), Issuer: issuer, Audience: audience, Tier: "root"},
	} {
		if _, err := New(cfg, appUsers); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// countingUsers counts lookups.
type countingUsers struct {
	users
	n atomic.Int32
}

func (c *countingUsers) UserIDByAuth(ctx context.Context, provider, id string) (string, error) {
	c.n.Add(1)
	return c.users.UserIDByAuth(ctx, provider, id)
}

// A found user is looked up once per PARSE_MCP_IDENTITY_CACHE, not on every
// request; 0 looks up every time.
func TestUserLookupCache(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int32
	}{{30 * time.Second, 2}, {0, 4}} {
		clk := &clock{now: t0}
		u := &countingUsers{users: appUsers}
		a, err := New(Config{Secret: []byte(secret), Issuer: issuer, Audience: audience, Tier: "readonly", AuthProvider: "github", CacheTTL: tc.ttl, Now: clk.Now}, u)
		if err != nil {
			t.Fatal(err)
		}
		tok := sign(t, jose.HS256, []byte(secret), "", claims("48151623", nil))
		for _, step := range []time.Duration{0, time.Second, 30 * time.Second, time.Second} {
			clk.Add(step)
			if p, err := a.Authenticate(bearer(tok)); err != nil || p.UserID != "dave04" {
				t.Fatalf("ttl %v: %+v, %v", tc.ttl, p, err)
			}
		}
		if got := u.n.Load(); got != tc.want {
			t.Errorf("ttl %v: %d lookups, want %d", tc.ttl, got, tc.want)
		}
	}
}
