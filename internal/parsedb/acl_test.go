package parsedb

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// aclStore is the demo app seeded once into an embedded FerretDB (or
// PARSE_MCP_TEST_MONGODB_URI).
var (
	aclOnce  sync.Once
	aclS     *Store
	aclErr   error
	aclClose func()
	// aclURI is the test server's URI (for tests that need a client of
	// their own).
	aclURI string
)

func aclStore(t testing.TB) *Store {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a database")
	}
	aclOnce.Do(func() {
		dir, err := os.MkdirTemp("", "parsedb-acl-")
		if err != nil {
			aclErr = err
			return
		}
		uri, _, stop, err := parsetest.Database(dir)
		if err != nil {
			aclErr = err
			return
		}
		aclClose = func() { stop(); os.RemoveAll(dir) }
		aclURI = uri
		cl, err := mongo.Connect(options.Client().ApplyURI(uri))
		if err != nil {
			aclErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		db := cl.Database("parsedb_acl_test")
		if aclErr = demo.ForceSeed(ctx, db, "acl_"); aclErr != nil {
			return
		}
		aclS = NewStore(cl, "parsedb_acl_test", "acl_")
	})
	if aclErr != nil {
		t.Fatalf("test database: %v", aclErr)
	}
	return aclS
}

func TestResolveIdentities(t *testing.T) {
	s := aclStore(t)
	ctx := context.Background()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

	id, err := ResolveSessionToken(ctx, s, demo.AliceSessionToken, now)
	if err != nil {
		t.Fatal(err)
	}
	if id.Kind != IdentitySession || id.UserID != demo.UserAliceID || strings.Join(id.Roles, ",") != "Admin,Moderator" || id.ExpiresAt.Year() != 2099 {
		t.Fatalf("alice: %+v", id)
	}
	if got := strings.Join(id.Entries(), ","); got != "*,"+demo.UserAliceID+",role:Admin,role:Moderator" {
		t.Fatalf("entries %s", got)
	}
	id, err = ResolveSessionToken(ctx, s, demo.BobSessionToken, now)
	if err != nil || strings.Join(id.Roles, ",") != "Moderator" {
		t.Fatalf("bob: %+v %v", id, err)
	}
	id, err = ResolveSessionToken(ctx, s, demo.CarolSessionToken, now)
	if err != nil || len(id.Roles) != 0 || id.UserID != demo.UserCarolID {
		t.Fatalf("carol: %+v %v", id, err)
	}
	// Expired and unknown tokens are identity errors naming the variable.
	var ie *IdentityError
	_, err = ResolveSessionToken(ctx, s, demo.ExpiredSessionToken, now)
	if !errors.As(err, &ie) || ie.Variable != "PARSE_MCP_SESSION_TOKEN" || !strings.Contains(ie.Problem, "expired") {
		t.Fatalf("expired: %v", err)
	}
	_, err = ResolveSessionToken(ctx, s, "r:00000000000000000000000000000000", now)
	if !errors.As(err, &ie) || !strings.Contains(ie.Problem, "unknown session token") {
		t.Fatalf("unknown: %v", err)
	}
	// A valid session is refused once expired (the check uses now).
	if _, err := ResolveSessionToken(ctx, s, demo.AliceSessionToken, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.As(err, &ie) {
		t.Fatalf("alice in 2100: %v", err)
	}

	id, err = ResolveUser(ctx, s, demo.UserBobID)
	if err != nil || id.Kind != IdentityUser || strings.Join(id.Roles, ",") != "Moderator" {
		t.Fatalf("ACL user bob: %+v %v", id, err)
	}
	if _, err := ResolveUser(ctx, s, "nobody1234"); !errors.As(err, &ie) || ie.Variable != "PARSE_MCP_ACL_USER" {
		t.Fatalf("unknown user: %v", err)
	}
	id, err = ResolveRole(ctx, s, "Admin")
	if err != nil || strings.Join(id.Roles, ",") != "Admin,Moderator" || id.UserID != "" || !id.Authenticated() {
		t.Fatalf("role Admin: %+v %v", id, err)
	}
	id, err = ResolveRole(ctx, s, "Moderator")
	if err != nil || strings.Join(id.Roles, ",") != "Moderator" {
		t.Fatalf("role Moderator: %+v %v", id, err)
	}
	if _, err := ResolveRole(ctx, s, "Root"); !errors.As(err, &ie) || ie.Variable != "PARSE_MCP_ACL_ROLE" {
		t.Fatalf("unknown role: %v", err)
	}
}

// TestReadACLCountsMatchFixtures: the _rperm constraint lets each identity
// count exactly the Song rows Parse's ACL rules give it.
func TestReadACLCountsMatchFixtures(t *testing.T) {
	s := aclStore(t)
	ctx := context.Background()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	identities := map[string]*Identity{
		"public": {Kind: IdentityRole}, // holds only "*"
	}
	for _, u := range []string{"alice", "bob", "carol"} {
		id, err := ResolveSessionToken(ctx, s, demo.SessionTokens[u], now)
		if err != nil {
			t.Fatal(err)
		}
		identities[u] = id
	}
	for _, u := range []string{"dave", "erin", "frank"} {
		id, err := ResolveUser(ctx, s, demo.UserIDs[u])
		if err != nil {
			t.Fatal(err)
		}
		identities[u] = id
	}
	for _, r := range []string{"Admin", "Moderator"} {
		id, err := ResolveRole(ctx, s, r)
		if err != nil {
			t.Fatal(err)
		}
		identities["role:"+r] = id
	}
	for key, id := range identities {
		n, err := s.Count(ctx, "Song", id.ReadACLFilter())
		if err != nil {
			t.Fatal(err)
		}
		if want := demo.SongReadable[key]; int(n) != want {
			t.Errorf("%s reads %d songs, fixture says %d", key, n, want)
		}
		n, err = s.Count(ctx, "Invoice", id.ReadACLFilter())
		if err != nil {
			t.Fatal(err)
		}
		if want := demo.InvoiceReadable[key]; int(n) != want {
			t.Errorf("%s reads %d invoices, fixture says %d", key, n, want)
		}
	}
	// CLP is read from the stored _SCHEMA (nested documents decode as bson.D).
	schema, err := s.Schema.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pf, _ := schema.Class("Song").Permissions["protectedFields"].(bson.M)
	if l, _ := pf["*"].(bson.A); len(l) != 1 || l[0] != demo.ProtectedField {
		t.Fatalf("Song CLP protectedFields: %#v", schema.Class("Song").Permissions)
	}
	if (&Identity{Kind: IdentityMaster}).ReadACLFilter() != nil {
		t.Fatal("master posture has no ACL filter")
	}
}

func TestRoleHierarchyCycles(t *testing.T) {
	s := aclStore(t)
	ctx := context.Background()
	// A private copy of the role collections with a cycle A → B → C → A and a
	// self-loop D → D.
	cs := NewStore(s.Client, s.DB.Name(), "cyc_")
	for _, c := range []string{"_Role", "_Join:users:_Role", "_Join:roles:_Role", "_User"} {
		_ = cs.Collection(c).Drop(ctx)
	}
	roles := []any{}
	for _, r := range []string{"A", "B", "C", "D"} {
		roles = append(roles, bson.D{{Key: "_id", Value: "r" + r}, {Key: "name", Value: r}})
	}
	if _, err := cs.Collection("_Role").InsertMany(ctx, roles); err != nil {
		t.Fatal(err)
	}
	// owningId = parent, relatedId = child: members of the child hold the parent.
	joins := []any{
		bson.D{{Key: "owningId", Value: "rB"}, {Key: "relatedId", Value: "rA"}},
		bson.D{{Key: "owningId", Value: "rC"}, {Key: "relatedId", Value: "rB"}},
		bson.D{{Key: "owningId", Value: "rA"}, {Key: "relatedId", Value: "rC"}},
		bson.D{{Key: "owningId", Value: "rD"}, {Key: "relatedId", Value: "rD"}},
	}
	if _, err := cs.JoinCollection("roles", "_Role").InsertMany(ctx, joins); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: "u1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.JoinCollection("users", "_Role").InsertOne(ctx, bson.D{{Key: "owningId", Value: "rA"}, {Key: "relatedId", Value: "u1"}}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id, err := ResolveUser(cctx, cs, "u1")
	if err != nil || strings.Join(id.Roles, ",") != "A,B,C" {
		t.Fatalf("cycle: %+v %v", id, err)
	}
	id, err = ResolveRole(cctx, cs, "D")
	if err != nil || strings.Join(id.Roles, ",") != "D" {
		t.Fatalf("self loop: %+v %v", id, err)
	}
}

func TestUserIDByAuth(t *testing.T) {
	s := aclStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, provider, id, want string
		wantErr                  bool
	}{
		{"objectId", "", demo.UserBobID, demo.UserBobID, false},
		{"unknown objectId", "", "nobody", "", false},
		{"authData id", "github", "48151623", demo.UserDaveID, false},
		{"authData id of another provider", "google", "48151623", "", false},
		{"unknown authData id", "github", "1", "", false},
		{"an objectId is not an authData id", "github", demo.UserDaveID, "", false},
		{"empty id", "github", "", "", false},
		{"provider with a dot", "github.id", "48151623", "", true},
		{"provider with an operator", "$where", "x", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.UserIDByAuth(ctx, tc.provider, tc.id)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("UserIDByAuth(%q, %q) = %q, %v; want %q (error %v)", tc.provider, tc.id, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// Two users holding the same authData id (Parse refuses to link an id
// twice, but a hand-edited database may): neither is picked.
func TestUserIDByAuthAmbiguous(t *testing.T) {
	s := NewStore(aclStore(t).Client, "parsedb_acl_test", "ambiguous_")
	ctx := context.Background()
	users := s.Collection("_User")
	_ = users.Drop(ctx)
	for _, id := range []string{"u1", "u2"} {
		if _, err := users.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "_auth_data_acme", Value: bson.D{{Key: "id", Value: "same"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.UserIDByAuth(ctx, "acme", "same"); !errors.Is(err, ErrAmbiguousUser) || got != "" {
		t.Fatalf("got %q, %v; want ErrAmbiguousUser", got, err)
	}
}
