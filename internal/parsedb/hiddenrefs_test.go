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
	re := `{"$not":{"$regularExpression":{"pattern":"^(?:VaultSecret|_Hooks)\\$[A-Za-z0-9_-]{10,32}\\z","options":""}}}`
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

// TestWhereRedactedOperatorTable pins the exact filter of each operator
// on a path that may hold a hidden reference (SECURITY.md "Hidden
// references", the operator table): a hidden reference at the path is one
// present, non-null value equal to no operand (NH: the conjunct over every
// prefix), a path below one is absent (AB: the conjunct over the proper
// prefixes), so a hidden-reference row and a missing-reference row answer
// every operator as one value does, and {p: null} / {p: {$ne: null}} never
// both leave it out.
func TestWhereRedactedOperatorTable(t *testing.T) {
	schema := hiddenSchema()
	song := schema.Classes["Song"]
	h := testHiddenRefs()
	js := func(v any) string {
		b, err := bson.MarshalExtJSON(bson.D{{Key: "x", Value: v}}, false, false)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(strings.TrimPrefix(string(b), `{"x":`), `}`)
	}
	for _, tc := range []struct{ path, where, want string }{
		{"meta.ref", `"x"`, `{"meta.ref":"x","$and":NH}`},
		{"meta.ref", `{"$eq":"x"}`, `{"meta.ref":{"$eq":"x"},"$and":NH}`},
		{"meta.ref", `null`, `{"$or":[{"meta.ref":null,"$and":NH},{"$nor":[{"$and":AB}]}]}`},
		{"meta.ref", `{"$eq":null}`, `{"$or":[{"meta.ref":{"$eq":null},"$and":NH},{"$nor":[{"$and":AB}]}]}`},
		{"meta.ref", `{"$ne":"x"}`, `{"$or":[{"meta.ref":{"$ne":"x"},"$and":NH},{"$nor":[{"$and":NH}]}]}`},
		{"meta.ref", `{"$ne":null}`, `{"$or":[{"meta.ref":{"$ne":null},"$and":NH},{"$and":AB,"$nor":[{"$and":NH}]}]}`},
		{"meta.ref", `{"$in":["x"]}`, `{"meta.ref":{"$in":["x"]},"$and":NH}`},
		{"meta.ref", `{"$in":["x",null]}`, `{"$or":[{"meta.ref":{"$in":["x",null]},"$and":NH},{"$nor":[{"$and":AB}]}]}`},
		{"meta.ref", `{"$nin":["x"]}`, `{"$or":[{"meta.ref":{"$nin":["x"]},"$and":NH},{"$nor":[{"$and":NH}]}]}`},
		{"meta.ref", `{"$nin":["x",null]}`, `{"$or":[{"meta.ref":{"$nin":["x",null]},"$and":NH},{"$and":AB,"$nor":[{"$and":NH}]}]}`},
		{"meta.ref", `{"$exists":true}`, `{"meta.ref":{"$exists":true},"$and":AB}`},
		{"meta.ref", `{"$exists":true,"$ne":"x"}`, `{"$or":[{"meta.ref":{"$exists":true,"$ne":"x"},"$and":NH},{"$and":AB,"$nor":[{"$and":NH}]}]}`},
		{"meta.ref", `{"$gt":"a","$ne":"x"}`, `{"meta.ref":{"$gt":"a","$ne":"x"},"$and":NH}`},
		{"meta.ref", `{"$regex":"a","$options":"i"}`, `{"meta.ref":{"$regex":"a","$options":"i"},"$and":NH}`},
		{"meta.ref", `{"$containedBy":["x"]}`, `{"$or":[{"$nor":[{"meta.ref":{"$elemMatch":{"$nin":["x"]}}}],"$and":NH},{"$nor":[{"$and":NH}]}]}`},
		{"leak", `null`, `{"leak":null,"$and":NH}`},
		{"leak", `{"$ne":null}`, `{"$or":[{"leak":{"$ne":null},"$and":NH},{"$nor":[{"$and":NH}]}]}`},
		{"leak", `{"$nin":[null]}`, `{"$or":[{"leak":{"$nin":[null]},"$and":NH},{"$nor":[{"$and":NH}]}]}`},
	} {
		var where map[string]any
		if err := json.Unmarshal([]byte(fmt.Sprintf(`{%q:%s}`, tc.path, tc.where)), &where); err != nil {
			t.Fatal(err)
		}
		f, err := WhereToFilter(context.Background(), song, where, WhereOptions{Schema: schema, Hidden: h})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.path, tc.where, err)
		}
		got, _ := bson.MarshalExtJSON(f, false, false)
		want := strings.ReplaceAll(tc.want, "NH", js(h.NotHiddenRef(song, tc.path)))
		if ab := h.NotHiddenRefAbove(song, tc.path); ab != nil {
			want = strings.ReplaceAll(want, "AB", js(ab))
		}
		if string(got) != want {
			t.Errorf("%s %s:\n got %s\nwant %s", tc.path, tc.where, got, want)
		}
	}
}
