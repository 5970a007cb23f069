package policy

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCheckDottedWrite: a dotted key is refused when its path passes
// through a value the row codec redacts or its parent object holds one at
// any depth; the refusal is one sentence for every cause (hidden class,
// missing class, reference string, redacted object key, field not shown,
// row not readable).
func TestCheckDottedWrite(t *testing.T) {
	master := secEngine(t, "")
	scoped := secEngine(t, "", withACLUser(secUserID))
	schema := secSchema()
	ptr := func(class string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: class}, {Key: "objectId", Value: "v1secretid"}}
	}
	row := func(meta any) bson.Raw {
		b, err := bson.Marshal(bson.D{{Key: "_id", Value: "s1"}, {Key: "title", Value: "t"}, {Key: "meta", Value: meta}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hidden := row(bson.D{{Key: "ref", Value: ptr("VaultSecret")}, {Key: "n", Value: int32(1)}, {Key: "sub", Value: bson.D{{Key: "k", Value: int32(1)}}}})
	missing := row(bson.D{{Key: "ref", Value: ptr("Nowhere")}, {Key: "n", Value: int32(1)}, {Key: "sub", Value: bson.D{{Key: "k", Value: int32(1)}}}})
	str := row(bson.D{{Key: "ref", Value: "VaultSecret$v1secretid"}, {Key: "n", Value: int32(1)}, {Key: "sub", Value: bson.D{{Key: "k", Value: int32(1)}}}})
	inArray := row(bson.D{{Key: "ref", Value: bson.A{"x", ptr("VaultSecret")}}, {Key: "n", Value: int32(1)}, {Key: "sub", Value: bson.D{{Key: "k", Value: int32(1)}}}})
	keyed := row(bson.D{{Key: "ref", Value: bson.D{{Key: "VaultSecret$v1secretid", Value: true}}}, {Key: "n", Value: int32(1)}, {Key: "sub", Value: bson.D{{Key: "k", Value: int32(1)}}}})
	whole := row(ptr("VaultSecret"))
	visible := row(bson.D{{Key: "ref", Value: ptr("Artist")}, {Key: "n", Value: int32(1)}})
	const refused = "invalid_argument"
	for _, tc := range []struct {
		name     string
		e        *Engine
		existing bson.Raw
		readable bool
		key      string
		want     string
	}{
		{"into a hidden pointer: className", master, hidden, true, "meta.ref.className", refused},
		{"into a hidden pointer: objectId", master, hidden, true, "meta.ref.objectId", refused},
		{"replace a hidden pointer", master, hidden, true, "meta.ref", refused},
		{"beside a hidden pointer", master, hidden, true, "meta.n", refused},
		{"new key beside a hidden pointer", master, hidden, true, "meta.z", refused},
		{"below a sibling of a hidden pointer", master, hidden, true, "meta.sub.k", "ok"},
		{"new object beside a hidden pointer", master, hidden, true, "meta.fresh.k", refused},
		{"new field, a hidden pointer in another", master, hidden, true, "other.k", "ok"},
		{"missing class alike", scoped, missing, true, "meta.ref.className", refused},
		{"missing class beside", scoped, missing, true, "meta.n", refused},
		{"reference string", scoped, str, true, "meta.ref.className", refused},
		{"reference string beside", scoped, str, true, "meta.n", refused},
		{"array element", master, inArray, true, "meta.ref.1.className", refused},
		{"array beside", master, inArray, true, "meta.n", refused},
		{"index past the end of an array holding one", master, inArray, true, "meta.ref.9.x", refused},
		{"redacted object key", master, keyed, true, "meta.ref.x", refused},
		{"whole field is the reference", master, whole, true, "meta.className", refused},
		{"whole field, deeper", master, whole, true, "meta.a.b", refused},
		{"visible pointer", scoped, visible, true, "meta.ref.objectId", "ok"},
		{"visible beside", scoped, visible, true, "meta.n", "ok"},
		{"path not stored", scoped, visible, true, "meta.new.deep", "ok"},
		{"row not readable", scoped, visible, false, "meta.n", refused},
		{"row not readable, nothing stored", scoped, row(nil), false, "meta.n", refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.e.CheckDottedWrite(schema, schema.Class("Song"), tc.existing, tc.readable, map[string]any{tc.key: 1, "title": "x"})
			if got := outcome(err); got != tc.want {
				t.Fatalf("%s: got %s (%v), want %s", tc.key, got, err, tc.want)
			}
			if err != nil && err.Error() != dottedIntoRedacted(tc.key).Error() {
				t.Fatalf("the refusal is not the one sentence: %v", err)
			}
		})
	}
	// A field this identity is not shown: refused whatever is stored.
	pat := schema.Class("Patient")
	for _, doc := range []bson.D{{{Key: "_id", Value: "p"}, {Key: "ssn", Value: bson.D{{Key: "a", Value: 1}}}}, {{Key: "_id", Value: "p"}}} {
		raw, _ := bson.Marshal(doc)
		if got := outcome(master.CheckDottedWrite(schema, pat, raw, true, map[string]any{"ssn.a": 2})); got != refused {
			t.Errorf("ssn.a on %v: %s", doc, got)
		}
	}
}
