package oauth

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// fixture is one real Parse Server on an embedded FerretDB, users on it,
// and an oauth Server in front, with its log captured.
type fixture struct {
	t      *testing.T
	ps     *parsetest.Server
	store  *parsedb.Store
	bridge *parseserver.Client
	srv    *Server
	http   *httptest.Server
	log    *parsetest.SyncBuffer
	clock  *clock
	// secrets are every password and token the tests saw: none may appear
	// in the log.
	mu      sync.Mutex
	secrets []string
}

type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

const alicePassword = "alice-Pa55word!"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	uri := parsetest.MongoURI(t)
	ps := parsetest.Start(t, parsetest.Options{MongoURI: uri})
	ps.SignUp(t, "alice", alicePassword)
	ps.SignUp(t, "bob", "bob-Pa55word!")
	cl, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Disconnect(context.Background()) })
	bridge, err := parseserver.New(parseserver.Config{URL: ps.URL, ApplicationID: ps.AppID})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ps: ps, store: parsedb.NewStore(cl, ps.Database, ""), bridge: bridge, log: &parsetest.SyncBuffer{}, clock: &clock{}}
	f.secrets = append(f.secrets, alicePassword, "bob-Pa55word!")
	f.srv, f.http = f.server(config.TierWrite, nil)
	return f
}

// server starts an oauth Server on its own listener (its public URL is the
// listener's), on the fixture's database and bridge.
func (f *fixture) server(tier string, metadata *http.Client) (*Server, *httptest.Server) {
	return f.serverWith(tier, metadata, nil)
}

func (f *fixture) serverWith(tier string, metadata *http.Client, rates limits.Store) (*Server, *httptest.Server) {
	f.t.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewUnstartedServer(mux)
	hs.Start()
	f.t.Cleanup(hs.Close)
	srv, err := New(Config{
		PublicURL: hs.URL, Tier: tier, Store: f.store, Parse: f.bridge,
		Log: zerolog.New(f.log), MetadataClient: metadata, Now: f.clock.now, Limits: rates,
		// Each test browser is its own client address (the per-address
		// limits would otherwise count every subtest together).
		ClientAddr: func(r *http.Request) string { return cmp.Or(r.Header.Get("X-Test-Addr"), "127.0.0.1") },
	})
	if err != nil {
		f.t.Fatal(err)
	}
	srv.Mount(mux)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := srv.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", srv.Challenge(r))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(p)
	}))
	return srv, hs
}

func (f *fixture) remember(s ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets = append(f.secrets, s...)
}

// checkLog: no password, token, code or session token in any log line.
func (f *fixture) checkLog() {
	f.t.Helper()
	log := f.log.String()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.secrets {
		if s != "" && strings.Contains(log, s) {
			f.t.Errorf("the log shows a secret (%.12s…)", s)
		}
	}
	if !strings.Contains(log, "oauth:") {
		f.t.Errorf("nothing was logged: the log check proves nothing")
	}
}

// browser is a person's browser: cookies kept, redirects not followed.
type browser struct {
	f    *fixture
	base string
	c    *http.Client
	last string // the last page's HTML
}

func (f *fixture) browser(base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{f: f, base: base, c: &http.Client{
		Jar: jar, Transport: fromAddr{newSecret("")},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// fromAddr sends requests as one client address (see fixture.server).
type fromAddr struct{ addr string }

func (a fromAddr) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Addr", a.addr)
	return http.DefaultTransport.RoundTrip(r)
}

func (b *browser) get(u string) *http.Response {
	b.f.t.Helper()
	resp, err := b.c.Get(u)
	if err != nil {
		b.f.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	b.last = string(body)
	return resp
}

func (b *browser) post(u string, form url.Values) *http.Response {
	b.f.t.Helper()
	resp, err := b.c.PostForm(u, form)
	if err != nil {
		b.f.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	b.last = string(body)
	return resp
}

var hiddenRe = regexp.MustCompile(`name="(request|csrf)" value="([^"]*)"`)

// hidden reads the form's request id and CSRF token from the last page.
func (b *browser) hidden() url.Values {
	v := url.Values{}
	for _, m := range hiddenRe.FindAllStringSubmatch(b.last, -1) {
		v.Set(m[1], m[2])
	}
	return v
}

// pkce is a verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	verifier = newSecret("")
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

type registered struct {
	ID, Secret string
}

func (f *fixture) register(base string, body map[string]any) (int, map[string]any) {
	f.t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(base+"/register", "application/json", bytes.NewReader(raw))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if s, ok := out["client_secret"].(string); ok {
		f.remember(s)
	}
	return resp.StatusCode, out
}

const redirect = "http://127.0.0.1:9/callback"

func (f *fixture) publicClient(base string) registered {
	f.t.Helper()
	st, out := f.register(base, map[string]any{"redirect_uris": []string{redirect}, "client_name": "Test client", "token_endpoint_auth_method": "none"})
	if st != http.StatusCreated {
		f.t.Fatalf("registration: %d %v", st, out)
	}
	return registered{ID: out["client_id"].(string)}
}

// authRequest is an authorization request's parameters.
func authRequest(clientID, challenge string, extra ...string) url.Values {
	v := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"st-1"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v
}

// authorize runs the browser part: the login page, Parse's login, consent.
// It returns the redirect the consent answered with.
func (f *fixture) authorize(base string, params url.Values, username, password string) *url.URL {
	f.t.Helper()
	b := f.browser(base)
	if resp := b.get(base + "/authorize?" + params.Encode()); resp.StatusCode != http.StatusOK {
		f.t.Fatalf("login page: %d %s", resp.StatusCode, b.last)
	}
	// Every login counts against the user's window (loginsPerUser in
	// loginWindow): the tests sign alice in far more often than a person
	// would, so each sign-in takes its share of the window.
	f.clock.advance(loginWindow / loginsPerUser)
	form := b.hidden()
	form.Set("step", "login")
	form.Set("username", username)
	form.Set("password", password)
	if resp := b.post(base+"/authorize", form); resp.StatusCode != http.StatusOK {
		f.t.Fatalf("login: %d %s", resp.StatusCode, b.last)
	}
	form = b.hidden()
	form.Set("step", "consent")
	form.Set("decision", "approve")
	resp := b.post(base+"/authorize", form)
	if resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("consent: %d %s", resp.StatusCode, b.last)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.remember(u.Query().Get("code"))
	return u
}

func (f *fixture) tokenCall(base string, form url.Values) (int, map[string]any) {
	f.t.Helper()
	resp, err := http.PostForm(base+"/token", form)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	for _, k := range []string{"access_token", "refresh_token"} {
		if s, ok := out[k].(string); ok {
			f.remember(s)
		}
	}
	return resp.StatusCode, out
}

func exchange(c registered, code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "client_id": {c.ID}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
}

// tokens runs the whole flow for alice and returns the token answer.
func (f *fixture) tokens(base string, c registered, extra ...string) map[string]any {
	f.t.Helper()
	verifier, challenge := pkce()
	back := f.authorize(base, authRequest(c.ID, challenge, extra...), "alice", alicePassword)
	st, out := f.tokenCall(base, exchange(c, back.Query().Get("code"), verifier))
	if st != http.StatusOK {
		f.t.Fatalf("token: %d %v", st, out)
	}
	return out
}

// principal is what /mcp sees for a bearer token: the Principal, or the
// status and challenge of a refusal.
func (f *fixture) principal(base, token string) (authn.Principal, int, string) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p authn.Principal
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&p)
		f.remember(p.SessionToken)
	}
	return p, resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// sessionAlive asks Parse whether a session token still works.
func (f *fixture) sessionAlive(token string) bool {
	st, _, err := f.ps.Do("GET", "/users/me", nil, parsetest.AsSession(token))
	if err != nil {
		f.t.Fatal(err)
	}
	return st == http.StatusOK
}

func getJSON(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
