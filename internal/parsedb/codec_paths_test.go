package parsedb

import (
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// pathsRow is a stored Song row holding references to the hidden class
// StudentSSN in every shape a path can reach: an embedded pointer in an
// Object field, one inside an array of an Object field, a "Hidden$id"
// string in an Object field and in an Array field, a nested object carrying
// a hidden className, and ordinary visible data next to each.
func pathsRow() bson.D {
	ptr := func(cls, id string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: cls}, {Key: "objectId", Value: id}}
	}
	return bson.D{
		{Key: "_id", Value: "s1"},
		{Key: "title", Value: "t"},
		{Key: "leak", Value: "StudentSSN$abc123abc1"},
		{Key: "meta", Value: bson.D{
			{Key: "source", Value: "sync"},
			{Key: "credential", Value: ptr("StudentSSN", "secretId1")},
			{Key: "friend", Value: ptr("Artist", "a1")},
			{Key: "ref", Value: "StudentSSN$secretId2s"},
			{Key: "list", Value: bson.A{ptr("StudentSSN", "secretId3"), ptr("Artist", "a2"), "StudentSSN$secretId4s", "plain", bson.A{ptr("StudentSSN", "secretId5")}}},
			{Key: "deep", Value: bson.D{{Key: "className", Value: "StudentSSN"}, {Key: "inner", Value: bson.D{{Key: "objectId", Value: "secretId6"}}}}},
			{Key: "_rperm", Value: bson.A{"*"}},
		}},
		{Key: "tags", Value: bson.A{"a", "StudentSSN$secretId7s", bson.D{{Key: "x", Value: "StudentSSN$secretId8s"}}}},
	}
}

// TestSelectKeysRedactsEveryPathShape walks every path shape into the row
// above: each answer must be the documented projection, and no answer may
// contain an id of the hidden class.
func TestSelectKeysRedactsEveryPathShape(t *testing.T) {
	song := songClass()
	song.Fields["leak"] = &Field{Name: "leak", Type: TypeString}
	red := `{"__redacted":true}`
	cases := []struct {
		keys []string
		want string // the row without objectId
	}{
		{[]string{"meta.source"}, `"meta":{"source":"sync"}`},
		{[]string{"meta.credential"}, `"meta":{"credential":` + red + `}`},
		{[]string{"meta.credential.objectId"}, `"meta":{"credential":` + red + `}`},
		{[]string{"meta.credential.className"}, `"meta":{"credential":` + red + `}`},
		{[]string{"meta.friend.objectId"}, `"meta":{"friend":{"objectId":"a1"}}`},
		{[]string{"meta.ref"}, `"meta":{"ref":` + red + `}`},
		{[]string{"meta.ref.x"}, `"meta":{"ref":` + red + `}`},
		{[]string{"meta.list"}, `"meta":{"list":[` + red + `,{"__type":"Pointer","className":"Artist","objectId":"a2"},` + red + `,"plain",[` + red + `]]}`},
		{[]string{"meta.list.objectId"}, `"meta":{"list":[` + red + `,{"objectId":"a2"},` + red + `,[` + red + `]]}`},
		{[]string{"meta.list.className"}, `"meta":{"list":[` + red + `,{"className":"Artist"},` + red + `,[` + red + `]]}`},
		{[]string{"meta.deep.inner.objectId"}, `"meta":{"deep":` + red + `}`},
		{[]string{"meta.deep.inner"}, `"meta":{"deep":` + red + `}`},
		{[]string{"meta._rperm"}, `"meta":{}`},
		{[]string{"meta.nothing"}, `"meta":{}`},
		{[]string{"meta.source", "meta"}, ""}, // whole meta wins: checked below
		{[]string{"leak.objectId"}, `"leak":` + red},
		{[]string{"title.x"}, ``},
		{[]string{"tags.x"}, `"tags":[` + red + `,{"x":` + red + `}]`},
		{[]string{"tags.y"}, `"tags":[` + red + `,{}]`},
		{[]string{"nosuch.a.b"}, ``},
		{[]string{"meta.source", "meta.credential.objectId", "title"}, `"title":"t","meta":{"source":"sync","credential":` + red + `}`},
	}
	for _, tc := range cases {
		enc := RowEncoder{Class: song, HiddenClass: hideSSN}
		enc.SelectKeys(tc.keys)
		out, err := enc.AppendRow(nil, mustRaw(t, pathsRow()))
		if err != nil {
			t.Fatalf("%v: %v", tc.keys, err)
		}
		got := string(out)
		for _, secret := range []string{"abc123", "secretId"} {
			if strings.Contains(got, secret) {
				t.Errorf("keys %v leak %q: %s", tc.keys, secret, got)
			}
		}
		if !json.Valid(out) {
			t.Errorf("keys %v: invalid JSON %s", tc.keys, got)
		}
		if tc.want == "" && tc.keys[len(tc.keys)-1] == "meta" {
			if !strings.Contains(got, `"credential":`+red) || !strings.Contains(got, `"friend":{"__type":"Pointer"`) {
				t.Errorf("keys %v: whole meta expected, got %s", tc.keys, got)
			}
			continue
		}
		want := `{"objectId":"s1"`
		if tc.want != "" {
			want += "," + tc.want
		}
		want += "}"
		if got != want {
			t.Errorf("keys %v:\n got %s\nwant %s", tc.keys, got, want)
		}
	}
}

// TestSelectKeysPointerRootsStayWhole: sub-paths of a Pointer field select
// fields of an included object, so the pointer column is kept whole (and a
// pointer to a hidden class is the marker).
func TestSelectKeysPointerRootsStayWhole(t *testing.T) {
	song := songClass()
	enc := RowEncoder{Class: song, HiddenClass: hideSSN}
	enc.SelectKeys([]string{"artist.name", "secret.objectId"})
	if enc.Paths != nil {
		t.Fatalf("pointer roots must not get sub-path selection: %v", enc.Paths)
	}
	doc := bson.D{{Key: "_id", Value: "s1"}, {Key: "_p_artist", Value: "Artist$a1"}, {Key: "_p_secret", Value: "StudentSSN$x9x9x9x9x9"}}
	out, err := enc.AppendRow(nil, mustRaw(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"objectId":"s1","artist":{"__type":"Pointer","className":"Artist","objectId":"a1"},"secret":{"__redacted":true}}`
	if string(out) != want {
		t.Errorf("got %s\nwant %s", out, want)
	}
}

// FuzzSelectKeysRedaction: whatever keys are requested (any dotted path,
// any number of them), the encoded row never shows an id or a stored
// reference of the hidden class, and is valid JSON.
func FuzzSelectKeysRedaction(f *testing.F) {
	for _, seed := range []string{"meta.credential.objectId", "meta.list.objectId,meta.ref", "tags.x", "leak.objectId",
		"meta.deep.inner.objectId", "meta", "meta.list", "meta.list.0.objectId", "title,meta.friend.objectId", "-meta.ref.x"} {
		f.Add(seed)
	}
	song := songClass()
	song.Fields["leak"] = &Field{Name: "leak", Type: TypeString}
	row := mustRaw(f, pathsRow())
	f.Fuzz(func(t *testing.T, keyList string) {
		keys := strings.Split(keyList, ",")
		enc := RowEncoder{Class: song, HiddenClass: hideSSN}
		enc.SelectKeys(keys)
		out, err := enc.AppendRow(nil, row)
		if err != nil {
			t.Fatalf("%q: %v", keyList, err)
		}
		if !json.Valid(out) {
			t.Fatalf("%q: invalid JSON %s", keyList, out)
		}
		for _, secret := range []string{"abc123", "secretId", "StudentSSN$"} {
			if strings.Contains(string(out), secret) {
				t.Fatalf("keys %q leak %q: %s", keyList, secret, out)
			}
		}
		// The same holds for the projection the find sends: it never
		// reaches below a top-level field.
		for _, e := range Projection(song, keys) {
			if strings.Contains(e.Key, ".") {
				t.Fatalf("keys %q project the sub-path %q server-side", keyList, e.Key)
			}
		}
	})
}
