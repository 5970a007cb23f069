package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
)

// TestClientMetadataDocuments: a client_id that is an https URL is
// registered by the document at that URL (fetched here from a loopback TLS
// server through the test's client), and a document that lies about
// itself is refused.
func TestClientMetadataDocuments(t *testing.T) {
	f := newFixture(t)
	docs := map[string]map[string]any{}
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(ts.Close)
	good, liar, secretive := ts.URL+"/good.json", ts.URL+"/liar.json", ts.URL+"/secret.json"
	docs["/good.json"] = map[string]any{"client_id": good, "client_name": "Metadata <b>client</b>", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"}
	docs["/liar.json"] = map[string]any{"client_id": good, "redirect_uris": []string{redirect}}
	docs["/secret.json"] = map[string]any{"client_id": secretive, "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "private_key_jwt"}

	_, hs := f.server(config.TierWrite, ts.Client())
	base := hs.URL
	c := registered{ID: good}
	tok := f.tokens(base, c)
	p, code, _ := f.principal(base, tok["access_token"].(string))
	if code != 200 || p.ClientID != good {
		t.Fatalf("principal: %d %+v", code, p)
	}
	_, challenge := pkce()
	for _, id := range []string{liar, secretive, ts.URL + "/missing.json", ts.URL + "/", "http://127.0.0.1/x.json"} {
		b := f.browser(base)
		resp := b.get(base + "/authorize?" + authRequest(id, challenge).Encode())
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("client_id %s: %d", id, resp.StatusCode)
		}
	}
	b := f.browser(base)
	b.get(base + "/authorize?" + authRequest(good, challenge, "redirect_uri", "https://evil.example/cb").Encode())
	if !strings.Contains(b.last, "not one this application registered") {
		t.Errorf("a metadata client's unlisted redirect was not refused")
	}
	f.checkLog()
}

// TestMetadataFetchRefusesInsideAddresses: the default fetcher never
// connects to loopback, private, link-local (cloud metadata), CGNAT or
// other non-public addresses, nor to a port other than 443, whatever name
// resolves there.
func TestMetadataFetchRefusesInsideAddresses(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the guarded fetcher reached %s", r.URL)
	}))
	t.Cleanup(ts.Close)
	srv := &Server{fetch: guardedClient()}
	for _, id := range []string{ts.URL + "/client.json", strings.Replace(ts.URL, "127.0.0.1", "localhost", 1) + "/client.json", "https://127.0.0.1/client.json", "https://[::1]/client.json", "https://169.254.169.254/latest.json", "https://10.0.0.1/c.json"} {
		_, err := srv.fetchClientMetadata(context.Background(), id)
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v", id, err)
		}
	}
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1", "224.0.0.1", "198.18.0.1"} {
		if publicAddress(netip.MustParseAddr(a)) {
			t.Errorf("%s counted as public", a)
		}
	}
	for _, a := range []string{"93.184.215.14", "2606:4700::1111"} {
		if !publicAddress(netip.MustParseAddr(a)) {
			t.Errorf("%s counted as inside", a)
		}
	}
}

// TestNewRefuses: no bridge, no public URL, or a public URL that is not an
// https origin (plain http only on loopback) stop the mode at start-up.
func TestNewRefuses(t *testing.T) {
	store := &parsedb.Store{}
	bridge := f0Bridge(t)
	for _, c := range []Config{
		{PublicURL: "https://mcp.example.com", Tier: config.TierReadonly, Store: store},
		{PublicURL: "", Tier: config.TierReadonly, Store: store, Parse: bridge},
		{PublicURL: "http://mcp.example.com", Tier: config.TierReadonly, Store: store, Parse: bridge},
		{PublicURL: "https://mcp.example.com/mcp", Tier: config.TierReadonly, Store: store, Parse: bridge},
		{PublicURL: "https://user@mcp.example.com", Tier: config.TierReadonly, Store: store, Parse: bridge},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, u := range []string{"https://mcp.example.com", "https://mcp.example.com/", "http://127.0.0.1:8080", "http://localhost:1"} {
		if _, err := PublicOrigin(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func f0Bridge(t *testing.T) *parseserver.Client {
	t.Helper()
	c, err := parseserver.New(parseserver.Config{URL: "http://127.0.0.1:1/parse", ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLoginLimitsShared: with the shared rate-window store
// (PARSE_MCP_LIMITS_STORE=mongodb) two processes count one login window:
// the guesses made through one are refused through the other.
func TestLoginLimitsShared(t *testing.T) {
	f := newFixture(t)
	shared := func() limits.Store {
		return limits.NewMongo(f.store.Collection(limits.Collection), "oauth-test", zerolog.New(f.log), "test")
	}
	_, a := f.serverWith(config.TierReadonly, nil, shared())
	_, b := f.serverWith(config.TierReadonly, nil, shared())
	guess := func(base string, i int) int {
		c := f.publicClient(base)
		_, challenge := pkce()
		br := f.browser(base)
		br.get(base + "/authorize?" + authRequest(c.ID, challenge).Encode())
		form := br.hidden()
		form.Set("step", "login")
		form.Set("username", "bob")
		form.Set("password", fmt.Sprint("guess-", i))
		return br.post(base+"/authorize", form).StatusCode
	}
	for i := range loginsPerUser {
		if st := guess(a.URL, i); st != http.StatusUnauthorized {
			t.Fatalf("guess %d through A: %d", i, st)
		}
	}
	if st := guess(b.URL, loginsPerUser); st != http.StatusTooManyRequests {
		t.Fatalf("through B after %d guesses through A: %d, want 429", loginsPerUser, st)
	}
}
