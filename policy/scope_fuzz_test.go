package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FuzzReadScope drives arbitrary where objects through the read path of a
// scoped, tenant-bound session (class gate, composition, translation,
// storage scope). Nothing may panic, and whatever is accepted must carry
// the tenant filter and the _rperm constraint, reference no internal field
// and no forbidden operator, and on the allowlisted class name no field
// outside agent_fields.
func FuzzReadScope(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"genre":"rock"}`, `{"orgId":"t1"}`, `{"orgId":"evil"}`, `{"org_id":"t1"}`,
		`{"$or":[{"genre":"rock"},{"plays":{"$gt":3}}]}`, `{"$where":"1"}`, `{"_hashed_password":1}`,
		`{"title":{"$regex":"^(a+)+$"}}`, `{"ssn":"1"}`, `{"name":{"$in":["a","b"]},"age":{"$gte":3}}`,
		`{"meta.x":{"$exists":true}}`, `{"$nor":[{"orgId":"t1"}]}`, `{"lyrics":{"$exists":true}}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	e := secEngine(f, "", withTenant("t1"), withACLRole("Moderator"))
	f.Fuzz(func(t *testing.T, where string, patient bool) {
		var w map[string]any
		if json.Unmarshal([]byte(where), &w) != nil {
			return
		}
		class := "Song"
		if patient {
			class = "Patient"
		}
		filter, _, err := secRead(e, callCtx(e, "query_class", class), class, w)
		if err != nil {
			return
		}
		js, merr := bson.MarshalExtJSON(bson.D{{Key: "f", Value: filter}}, false, false)
		if merr != nil {
			t.Fatalf("unencodable filter: %v", merr)
		}
		s := string(js)
		if !strings.Contains(s, `"_rperm":{"$in":[null,"*","role:Moderator"]}`) {
			t.Fatalf("accepted without the ACL scope: %s → %s", where, s)
		}
		if class == "Song" && !strings.Contains(s, `{"orgId":"t1"}`) {
			t.Fatalf("accepted without the tenant filter: %s → %s", where, s)
		}
		checkKeys(t, where, filter, class == "Patient")
	})
}

// checkKeys walks a filter's keys.
func checkKeys(t *testing.T, where string, v any, allowlisted bool) {
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			k := e.Key
			switch k {
			case "$where", "$function", "$accumulator", "$expr":
				t.Fatalf("forbidden operator %s accepted: %s", k, where)
			}
			for seg := range strings.SplitSeq(k, ".") {
				if seg != "_rperm" && isFloorName(seg) {
					t.Fatalf("internal field %s accepted: %s", seg, where)
				}
			}
			if allowlisted && !strings.HasPrefix(k, "$") && k != "_rperm" && k != "_id" && k != "_created_at" && k != "_updated_at" {
				root, _, _ := strings.Cut(k, ".")
				switch root {
				case "name", "age", "_p_doctor":
				default:
					t.Fatalf("field %s outside agent_fields accepted: %s", k, where)
				}
			}
			checkKeys(t, where, e.Value, allowlisted && (k == "$and" || k == "$or" || k == "$nor"))
		}
	case bson.A:
		for _, el := range x {
			checkKeys(t, where, el, allowlisted)
		}
	}
}

func isFloorName(s string) bool {
	switch s {
	case "_hashed_password", "_password_history", "_session_token", "sessionToken", "_email_verify_token",
		"_email_verify_token_expires_at", "_perishable_token", "_perishable_token_expires_at",
		"_failed_login_count", "_account_lockout_expires_at", "_wperm", "_acl", "_tombstone", "authData":
		return true
	}
	return strings.HasPrefix(s, "_auth_data")
}
