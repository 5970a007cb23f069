package policy

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestServerProtectedFields: Parse Server's default server-level
// protectedFields {_User: {"*": ["email"]}} applies to every scoped
// identity, merged with the class CLP (union per audience, then the
// intersection over the audiences the identity belongs to), can be replaced
// or turned off by settings.protected_fields, and never applies to the
// master posture.
func TestServerProtectedFields(t *testing.T) {
	schema := trustSchema()
	user := schema.Class("_User")
	cases := []struct {
		name, yml string
		opts      []secOpt
		want      string // protected fields of _User, sorted, comma-joined
	}{
		{"master default", "", nil, ""},
		{"user default", "", []secOpt{withACLUser(secUserID)}, "email"},
		{"role default", "", []secOpt{withACLRole("Moderator")}, "email"},
		{"session default", "", []secOpt{withSessionToken("r:x")}, "email"},
		{"off", "settings: {protected_fields: {}}", []secOpt{withACLUser(secUserID)}, ""},
		{"replaced", "settings: {protected_fields: {_User: {'*': [orgId]}}}", []secOpt{withACLUser(secUserID)}, "orgId"},
		{"authenticated un-protects", "settings: {protected_fields: {_User: {'*': [email, orgId], authenticated: [orgId]}}}", []secOpt{withACLUser(secUserID)}, "orgId"},
		{"role un-protects", "settings: {protected_fields: {_User: {'*': [email], 'role:Moderator': []}}}", []secOpt{withACLRole("Moderator")}, ""},
	}
	for _, c := range cases {
		e := secEngine(t, c.yml, c.opts...)
		var got []string
		for f := range e.ProtectedFields(user) {
			got = append(got, f)
		}
		if s := strings.Join(sortedStrings(got), ","); s != c.want {
			t.Errorf("%s: protected %q, want %q", c.name, s, c.want)
		}
	}
	// Merged with the class CLP: Song's CLP protects lyrics for "*", the
	// server level adds title for "*" → both for a non-Admin role.
	e := secEngine(t, "settings: {protected_fields: {Song: {'*': [title]}}}", withACLRole("Moderator"), withTenant("t1"))
	pf := e.ProtectedFields(schema.Class("Song"))
	if !pf["lyrics"] || !pf["title"] || len(pf) != 2 {
		t.Fatalf("merged Song protectedFields: %v", pf)
	}
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestProtectedEmailEveryPosition: with the default, another user's email
// is refused wherever a read names it (where at any depth, keys, order,
// group/distinct field, include-less dotted path), and left out of every
// row — except the user's own _User row, which Parse shows whole
// (credentials aside).
func TestProtectedEmailEveryPosition(t *testing.T) {
	schema := trustSchema()
	user := schema.Class("_User")
	for _, ident := range [][]secOpt{{withACLUser(secUserID)}, {withACLRole("Moderator")}, {withSessionToken("r:x")}} {
		e := secEngine(t, "", ident...)
		for _, f := range []string{"email", "email.x", "-email"} {
			if got := outcome(e.CheckReadFields(user, []string{f})); got != "access_denied/protected_field" {
				t.Errorf("field %s: %s", f, got)
			}
		}
		for _, where := range []map[string]any{
			{"email": "a@b.c"},
			{"email": map[string]any{"$regex": "^a"}},
			{"email": map[string]any{"$exists": true}},
			{"$or": []any{map[string]any{"username": "x"}, map[string]any{"email": map[string]any{"$gt": "m"}}}},
			{"$and": []any{map[string]any{"$nor": []any{map[string]any{"email": "a"}}}}},
		} {
			_, err := e.ComposeWhere(callCtx(e, "query_class", "_User"), user, where, true)
			if got := outcome(err); got != "access_denied/protected_field" {
				t.Errorf("where %v: %s", where, got)
			}
		}
		own, _ := bson.Marshal(bson.D{{Key: "_id", Value: secUserID}, {Key: "username", Value: "alice"}, {Key: "email", Value: "alice@example.com"},
			{Key: "_hashed_password", Value: "bcrypt"}, {Key: "password", Value: "plain"}, {Key: "_session_token", Value: "r:zz"}})
		other, _ := bson.Marshal(bson.D{{Key: "_id", Value: "uBob000002"}, {Key: "username", Value: "bob"}, {Key: "email", Value: "bob@example.com"}})
		enc := e.RowEncoder(schema, user, nil)
		o, err := enc.AppendRow(nil, own)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := enc.AppendRow(nil, other)
		if strings.Contains(string(b), "bob@example.com") {
			t.Errorf("another user's email shown: %s", b)
		}
		ownWanted := e.Identity() != nil && e.Identity().UserID == secUserID
		if strings.Contains(string(o), "alice@example.com") != ownWanted {
			t.Errorf("own row (identity %+v): %s", e.Identity(), o)
		}
		for _, bad := range []string{"bcrypt", "plain", "r:zz"} {
			if strings.Contains(string(o), bad) {
				t.Errorf("own row shows credential %q: %s", bad, o)
			}
		}
	}
	// Master posture: email readable and queryable.
	m := secEngine(t, "")
	if err := m.CheckReadField(user, "email"); err != nil {
		t.Fatalf("master email: %v", err)
	}
}
