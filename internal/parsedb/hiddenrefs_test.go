package parsedb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func testHiddenRefs() *HiddenRefs {
	return NewHiddenRefs([]string{"VaultSecret", "_Join:users:_Role", "_Hooks"}, func(c string) bool {
		return c == "VaultSecret" || c == "_Hooks" || strings.HasPrefix(c, "_Join:")
	})
}

func hiddenSchema() *Schema {
	s := whereSchema()
	song := s.Classes["Song"]
	song.Fields["secret"] = &Field{Name: "secret", Type: TypePointer, TargetClass: "VaultSecret"}
	song.Fields["ghost"] = &Field{Name: "ghost", Type: TypePointer, TargetClass: "NoSuchClass"}
	song.Fields["leak"] = &Field{Name: "leak", Type: TypeString}
	return s
}

// TestNotHiddenRefGolden pins the conjunct for each path shape.
func TestNotHiddenRefGolden(t *testing.T) {
	song := hiddenSchema().Classes["Song"]
	h := testHiddenRefs()
	re := `{"$not":{"$regularExpression":{"pattern":"^(?:VaultSecret|_Hooks)\\$[A-Za-z0-9_-]{10,32}$","options":""}}}`
	names := `{"$nin":["VaultSecret","_Hooks"]}`
	cases := []struct{ path, want string }{
		{"leak", `[{"leak":` + re + `}]`},
		{"cover", `[{"cover":` + re + `}]`},
		{"meta", `[{"meta":` + re + `},{"meta.className":` + names + `}]`},
		{"tags", `[{"tags":` + re + `},{"tags.className":` + names + `}]`},
		{"unknownField", `[{"unknownField":` + re + `},{"unknownField.className":` + names + `}]`},
		{"meta.a.b", `[{"meta":` + re + `},{"meta.className":` + names + `},{"meta.a":` + re + `},{"meta.a.className":` + names + `},{"meta.a.b":` + re + `},{"meta.a.b.className":` + names + `}]`},
		{"plays", `null`},
		{"releasedAt", `null`},
		{"objectId", `null`},
		{"createdAt", `null`},
		{"artist", `null`},
		{"loc", `null`},
	}
	for _, tc := range cases {
		got, _ := bson.MarshalExtJSON(bson.D{{Key: "x", Value: h.NotHiddenRef(song, tc.path)}}, false, false)
		want := `{"x":` + tc.want + `}`
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.path, got, want)
		}
	}
	var nilRefs *HiddenRefs
	if nilRefs.NotHiddenRef(song, "leak") != nil || (&HiddenRefs{}).NotHiddenRef(song, "leak") != nil {
		t.Error("no hidden classes must give no conjunct")
	}
}

// TestWhereHiddenRefEveryOperator walks every field operator over every
// path shape that may hold a hidden reference, alone and under $or/$nor/
// $and: each translated constraint must carry the conjunct for its path in
// the same where object, so no operator can test a hidden reference.
func TestWhereHiddenRefEveryOperator(t *testing.T) {
	schema := hiddenSchema()
	song := schema.Classes["Song"]
	h := testHiddenRefs()
	ops := []string{
		`"VaultSecret$abcabcabca"`,
		`{"$eq":"VaultSecret$abcabcabca"}`, `{"$ne":"VaultSecret$abcabcabca"}`,
		`{"$gt":"VaultSecret$mmmmmmmmmm"}`, `{"$gte":"VaultSecret$mmmmmmmmmm"}`, `{"$lt":"VaultSecret$mmmmmmmmmm"}`, `{"$lte":"VaultSecret$mmmmmmmmmm"}`,
		`{"$in":["VaultSecret$aaaaaaaaaa","VaultSecret$bbbbbbbbbb"]}`, `{"$nin":["VaultSecret$aaaaaaaaaa"]}`, `{"$all":["VaultSecret$aaaaaaaaaa"]}`,
		`{"$exists":true}`, `{"$exists":false}`,
		`{"$regex":"^VaultSecret\\$a"}`, `{"$regex":"secret","$options":"i"}`,
	}
	paths := []string{"leak", "meta", "tags", "meta.credential", "meta.credential.objectId", "meta.credential.className", "tags.x", "unknownField", "unknownField.y"}
	wrap := []string{"%s", `{"$or":[%s,{"title":"x"}]}`, `{"$nor":[%s]}`, `{"$and":[%s]}`}
	for _, p := range paths {
		want := h.NotHiddenRef(song, p)
		if want == nil {
			t.Fatalf("%s: no conjunct", p)
		}
		for _, op := range ops {
			want := want
			if strings.Contains(op, "$exists") {
				// $exists answers by what is shown: only the prefixes above
				// the path (TestWhereExistsAnswersByShownValue).
				if want = h.NotHiddenRefAbove(song, p); want == nil {
					continue
				}
			}
			wantJSON, _ := bson.MarshalExtJSON(bson.D{{Key: "$and", Value: want}}, false, false)
			for _, w := range wrap {
				src := fmt.Sprintf(w, fmt.Sprintf(`{%q:%s}`, p, op))
				var where map[string]any
				if err := json.Unmarshal([]byte(src), &where); err != nil {
					t.Fatal(err)
				}
				f, err := WhereToFilter(context.Background(), song, where, WhereOptions{Schema: schema, Hidden: h})
				if err != nil {
					if strings.Contains(op, "$all") && !strings.Contains(p, ".") && p != "tags" && p != "unknownField" {
						continue
					}
					t.Errorf("%s: %v", src, err)
					continue
				}
				got, _ := bson.MarshalExtJSON(f, false, false)
				inner := strings.TrimSuffix(strings.TrimPrefix(string(wantJSON), `{"$and":[`), `]}`)
				if !strings.Contains(string(got), inner) {
					t.Errorf("%s: the conjunct for %s is missing:\n%s", src, p, got)
				}
			}
		}
	}
}

// TestWherePointerToHiddenRefused: every operator on a pointer whose
// target is hidden, or missing from the schema, is refused with the same
// message (hidden equals missing).
func TestWherePointerToHiddenRefused(t *testing.T) {
	schema := hiddenSchema()
	song := schema.Classes["Song"]
	ops := []string{`"abc"`, `{"__type":"Pointer","className":"VaultSecret","objectId":"abc"}`, `{"$exists":true}`, `{"$in":["a"]}`,
		`{"$gt":"a"}`, `{"$ne":null}`, `{"$regex":"a"}`, `{"$inQuery":{"className":"VaultSecret","where":{}}}`}
	for _, op := range ops {
		var msgs []string
		for _, field := range []string{"secret", "ghost"} {
			var where map[string]any
			_ = json.Unmarshal([]byte(fmt.Sprintf(`{"$or":[{%q:%s}]}`, field, op)), &where)
			_, err := WhereToFilter(context.Background(), song, where, WhereOptions{Schema: schema, Hidden: testHiddenRefs()})
			if err == nil {
				t.Errorf("%s %s: accepted", field, op)
				continue
			}
			msgs = append(msgs, strings.Replace(err.Error(), field, "F", 1))
		}
		if len(msgs) == 2 && msgs[0] != msgs[1] {
			t.Errorf("%s: hidden and missing targets answer differently:\n%s\n%s", op, msgs[0], msgs[1])
		}
	}
	// Without Hidden (operator-written policy filters) nothing changes.
	if _, err := WhereToFilter(context.Background(), song, map[string]any{"secret": map[string]any{"$exists": true}}, WhereOptions{Schema: schema}); err != nil {
		t.Errorf("policy filter refused: %v", err)
	}
}
