package tools

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestRPermScopeAdmits: the in-memory evaluation of a write result's read
// scope matches MongoDB's for {_rperm: {$in: [null, entries…]}} and leaves
// every other scope or _rperm type undecided (the object is read back).
func TestRPermScopeAdmits(t *testing.T) {
	acl := bson.D{{Key: "_rperm", Value: bson.D{{Key: "$in", Value: bson.A{nil, "*", "u1", "role:Admin"}}}}}
	doc := func(rperm ...any) bson.Raw {
		d := bson.D{{Key: "_id", Value: "a1"}}
		if len(rperm) == 1 {
			d = append(d, bson.E{Key: "_rperm", Value: rperm[0]})
		}
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for _, tc := range []struct {
		name            string
		scope           bson.D
		doc             bson.Raw
		admits, decided bool
	}{
		{"master posture", nil, doc(bson.A{"u2"}), true, true},
		{"no _rperm", acl, doc(), true, true},
		{"null _rperm", acl, doc(nil), true, true},
		{"public", acl, doc(bson.A{"*"}), true, true},
		{"the user", acl, doc(bson.A{"u2", "u1"}), true, true},
		{"a role", acl, doc(bson.A{"role:Admin"}), true, true},
		{"another user only", acl, doc(bson.A{"u2"}), false, true},
		{"nobody", acl, doc(bson.A{}), false, true},
		{"a string", acl, doc("u1"), true, true},
		{"another type", acl, doc(int32(1)), false, false},
		{"pointer permissions too", append(append(bson.D{}, acl...), bson.E{Key: "owner", Value: "u1"}), doc(), false, false},
		{"another field", bson.D{{Key: "_wperm", Value: bson.D{{Key: "$in", Value: bson.A{nil}}}}}, doc(), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admits, decided := rpermScopeAdmits(tc.scope, tc.doc)
			if admits != tc.admits || decided != tc.decided {
				t.Fatalf("admits %v decided %v, want %v %v", admits, decided, tc.admits, tc.decided)
			}
		})
	}
}
