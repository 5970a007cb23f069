package parsedb

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestWhereInvisibleTargetsNamedNowhere: every where position that can name
// a Pointer or Relation field whose target is hidden or missing — the
// field itself with any operator, a dotted path into it, $inQuery/$select,
// $relatedTo on a relation — is refused, with byte-identical messages for
// a hidden and a missing target, and no message names the target (the
// relation and dotted-path hints used to).
func TestWhereInvisibleTargetsNamedNowhere(t *testing.T) {
	schema := hiddenSchema()
	song := schema.Classes["Song"]
	song.Fields["secrets"] = &Field{Name: "secrets", Type: TypeRelation, TargetClass: "VaultSecret"}
	song.Fields["ghosts"] = &Field{Name: "ghosts", Type: TypeRelation, TargetClass: "NoSuchClass"}
	positions := []string{
		`{"F":"abc"}`, `{"F":{"__type":"Pointer","className":"Song","objectId":"abc"}}`,
		`{"F":{"$eq":{"__type":"Pointer","className":"Song","objectId":"abc"}}}`,
		`{"F":{"$in":[{"__type":"Pointer","className":"Song","objectId":"abc"}]}}`,
		`{"F":{"$exists":true}}`, `{"F":{"$regex":"a"}}`, `{"F":{"$gt":"a"}}`, `{"F":{"$ne":null}}`,
		`{"F":{"$all":["a"]}}`, `{"F":{"$nin":["a"]}}`,
		`{"F":{"$inQuery":{"className":"Song","where":{}}}}`,
		`{"F":{"$select":{"query":{"className":"Song","where":{}},"key":"objectId"}}}`,
		`{"F.objectId":"abc"}`, `{"F.name":"x"}`, `{"F.a.b":{"$exists":true}}`,
		`{"$or":[{"F":{"$exists":true}}]}`, `{"$and":[{"F.x":1}]}`,
	}
	for _, pair := range [][2]string{{"secret", "ghost"}, {"secrets", "ghosts"}} {
		for _, pos := range positions {
			var msgs []string
			for _, field := range pair {
				var where map[string]any
				if err := json.Unmarshal([]byte(strings.ReplaceAll(pos, "F", field)), &where); err != nil {
					t.Fatal(err)
				}
				_, err := WhereToFilter(context.Background(), song, where, WhereOptions{Schema: schema, Hidden: testHiddenRefs()})
				if err == nil {
					t.Errorf("%s %s: accepted", field, pos)
					continue
				}
				for _, name := range []string{"VaultSecret", "NoSuchClass"} {
					if strings.Contains(err.Error(), name) {
						t.Errorf("%s %s: the message names %s: %v", field, pos, name, err)
					}
				}
				msgs = append(msgs, strings.ReplaceAll(err.Error(), field, "F"))
			}
			if len(msgs) == 2 && msgs[0] != msgs[1] {
				t.Errorf("%v %s: hidden and missing differ:\n%s\n%s", pair, pos, msgs[0], msgs[1])
			}
		}
	}
	// Visible targets keep their helpful hints.
	song.Fields["fans"] = &Field{Name: "fans", Type: TypeRelation, TargetClass: "Song"}
	_, err := WhereToFilter(context.Background(), song, map[string]any{"fans": map[string]any{"$exists": true}}, WhereOptions{Schema: schema, Hidden: testHiddenRefs()})
	if err == nil || !strings.Contains(err.Error(), "fans is a Relation to Song") {
		t.Errorf("visible relation hint lost: %v", err)
	}
}

func TestTargetInvisible(t *testing.T) {
	schema := hiddenSchema()
	hidden := testHiddenRefs().IsHidden
	for _, c := range []struct {
		class string
		want  bool
	}{{"Song", false}, {"VaultSecret", true}, {"NoSuchClass", true}, {"_Hooks", true}} {
		if got := TargetInvisible(schema, hidden, c.class); got != c.want {
			t.Errorf("%s: got %v", c.class, got)
		}
		want := c.class
		if c.want {
			want = InvisibleTargetLabel
		}
		if got := TargetLabel(schema, hidden, c.class); got != want {
			t.Errorf("%s: label %q", c.class, got)
		}
	}
	// Without a schema only hidden classes are invisible.
	if TargetInvisible(nil, hidden, "NoSuchClass") || !TargetInvisible(nil, hidden, "VaultSecret") {
		t.Error("nil schema")
	}
}
