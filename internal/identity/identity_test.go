package identity

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// demoStore is the demo app in an embedded FerretDB (or
// PARSE_MCP_TEST_MONGODB_URI).
func demoStore(t testing.TB) *parsedb.Store {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a database")
	}
	dir := t.TempDir()
	uri, _, stop, err := parsetest.Database(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := parsedb.Connect(ctx, uri, "identity_test_"+time.Now().Format("150405.000000")[7:], "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DB.Drop(context.Background()); _ = s.Close(context.Background()) })
	if err := demo.ForceSeed(ctx, s.DB, ""); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestResolver(t *testing.T) {
	store := demoStore(t)
	ctx := context.Background()
	cfg := &config.Config{Permissions: config.TierWrite, IdentityCache: 30 * time.Second, TenantID: ""}
	r := New(store, nil, cfg, nil)
	now := time.Now()
	r.SetClock(func() time.Time { return now })

	refused := []struct {
		name string
		p    authn.Principal
	}{
		{"master from a session token", authn.Principal{Mode: authn.ModeParseSession, SessionToken: demo.BobSessionToken, Master: true}},
		{"master from a jwt", authn.Principal{Mode: authn.ModeJWT, Master: true, ClientID: "app"}},
		{"master from the shared key", authn.Principal{Mode: authn.ModeKeys, Master: true}},
		{"unknown session", authn.Principal{Mode: authn.ModeParseSession, SessionToken: "r:nope"}},
		{"expired session", authn.Principal{Mode: authn.ModeParseSession, SessionToken: demo.ExpiredSessionToken}},
		{"unknown user", authn.Principal{Mode: authn.ModeKeys, ClientID: "k", UserID: "nobody"}},
		{"unknown role", authn.Principal{Mode: authn.ModeKeys, ClientID: "k", Role: "Nobody"}},
		{"a tenant that does not agree", authn.Principal{Mode: authn.ModeParseSession, SessionToken: demo.BobSessionToken, Tenant: "org-x"}},
		{"an unknown tier", authn.Principal{Mode: authn.ModeParseSession, SessionToken: demo.BobSessionToken, Tier: "root"}},
	}
	for _, tt := range refused {
		if s, err := r.Resolve(ctx, tt.p); !errors.Is(err, authn.ErrUnauthorized) {
			t.Errorf("%s: got %+v, %v; want unauthorized", tt.name, s, err)
		}
	}

	s, err := r.Resolve(ctx, authn.Principal{Mode: authn.ModeParseSession, SessionToken: demo.AliceSessionToken, Tier: config.TierAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if s.User != "user:"+demo.UserAliceID || s.Identity.Master() || len(s.Identity.Roles) == 0 || s.Tier != config.TierWrite || s.Key != s.User {
		t.Fatalf("alice resolved to %+v (identity %+v): want her user, her roles and the configured tier (a credential never raises it)", s, s.Identity)
	}
	if s, err := r.Resolve(ctx, authn.Principal{Mode: authn.ModeKeys, ClientID: "ops", Master: true}); err != nil || !s.Identity.Master() || s.Key != "ops" {
		t.Fatalf("an operator's master key: %+v, %v", s, err)
	}
	if s, err := r.Resolve(ctx, authn.Principal{Mode: authn.ModeKeys, ClientID: "plain"}); err != nil || s != nil {
		t.Fatalf("a key naming nothing: %+v, %v; want the environment identity (nil scope)", s, err)
	}

	// A deleted session keeps working from the cache, at most for the TTL.
	tok := "r:0123456789abcdef0123456789abcdef"
	sessions := store.Collection("_Session")
	if _, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: "resolverSess"}, {Key: "_session_token", Value: tok}, {Key: "_p_user", Value: "_User$" + demo.UserBobID}}); err != nil {
		t.Fatal(err)
	}
	p := authn.Principal{Mode: authn.ModeParseSession, SessionToken: tok}
	if _, err := r.Resolve(ctx, p); err != nil {
		t.Fatal(err)
	}
	for k := range r.cache {
		if string(k[:]) == tok {
			t.Fatal("the cache is keyed by the token itself")
		}
	}
	if _, err := sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: "resolverSess"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(29 * time.Second)
	if _, err := r.Resolve(ctx, p); err != nil {
		t.Fatalf("within the TTL: %v", err)
	}
	now = now.Add(2 * time.Second)
	if _, err := r.Resolve(ctx, p); !errors.Is(err, authn.ErrUnauthorized) {
		t.Fatalf("after the TTL: %v, want unauthorized", err)
	}

	// A session expiring before the TTL is cached only until it expires.
	exp := now.Add(5 * time.Second)
	if _, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: "resolverSess2"}, {Key: "_session_token", Value: tok + "2"}, {Key: "_p_user", Value: "_User$" + demo.UserBobID}, {Key: "expiresAt", Value: exp}}); err != nil {
		t.Fatal(err)
	}
	p.SessionToken = tok + "2"
	if _, err := r.Resolve(ctx, p); err != nil {
		t.Fatal(err)
	}
	now = exp.Add(time.Millisecond)
	if _, err := r.Resolve(ctx, p); !errors.Is(err, authn.ErrUnauthorized) {
		t.Fatalf("after the session's expiry: %v, want unauthorized", err)
	}
}

// TestTokenNamingNoIdentity: a token mode's principal that names no identity
// (a mode that returned an empty principal, with or without a tier) is
// refused, never the environment identity, which is master posture when
// unset (SECURITY.md "Per-request identity": no token reaches master).
func TestTokenNamingNoIdentity(t *testing.T) {
	cfg := &config.Config{Permissions: config.TierWrite, IdentityCache: 30 * time.Second}
	r := New(nil, nil, cfg, nil)
	for _, mode := range []string{authn.ModeParseSession, authn.ModeJWT, authn.ModeOAuth} {
		for _, p := range []authn.Principal{{Mode: mode}, {Mode: mode, Tier: config.TierReadonly}, {Mode: mode, ClientID: "app"}} {
			if s, err := r.Resolve(context.Background(), p); !errors.Is(err, authn.ErrUnauthorized) {
				t.Errorf("%+v: got %+v, %v; want unauthorized", p, s, err)
			}
		}
	}
}
