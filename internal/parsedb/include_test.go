package parsedb

import (
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

func includeSchema() map[string]*Class {
	return map[string]*Class{
		"Song":   ClassFromSchemaDoc(bson.M{"_id": "Song", "title": "string", "artist": "*Artist", "album": "*Album", "leak": "*Vault"}),
		"Album":  ClassFromSchemaDoc(bson.M{"_id": "Album", "title": "string", "artist": "*Artist"}),
		"Artist": ClassFromSchemaDoc(bson.M{"_id": "Artist", "name": "string"}),
		"Vault":  ClassFromSchemaDoc(bson.M{"_id": "Vault", "key": "string"}),
	}
}

func TestBuildIncludeTree(t *testing.T) {
	classes := includeSchema()
	var steps []string
	resolve := func(from *Class, f *Field, path string) (*Class, error) {
		steps = append(steps, from.Name+"."+f.Name+"→"+path)
		if f.TargetClass == "Vault" {
			return nil, toolerror.Denied("hidden_class", "hidden")
		}
		return classes[f.TargetClass], nil
	}
	roots, err := BuildIncludeTree(classes["Song"], []string{"artist", "album.artist", "album"}, resolve)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	WalkIncludes(roots, func(n *IncludeNode) {
		got = append(got, n.Path+":"+n.Field+":"+n.Target.Name+":"+strings.Repeat("+", n.Level))
	})
	want := "artist:artist:Artist:,album:album:Album:,album.artist:artist:Artist:+"
	if strings.Join(got, ",") != want {
		t.Errorf("tree = %s\nwant %s", strings.Join(got, ","), want)
	}
	// Each step is resolved once, even when paths share a prefix.
	if strings.Join(steps, ",") != "Song.artist→artist,Song.album→album,Album.artist→album.artist" {
		t.Errorf("resolver calls = %v", steps)
	}

	_, err = BuildIncludeTree(classes["Song"], []string{"leak"}, resolve)
	if te, ok := toolerror.As(err); !ok || te.Details == nil || te.Details.Kind != "hidden_class" {
		t.Errorf("hidden target: err = %v", err)
	}
	_, err = BuildIncludeTree(classes["Song"], []string{"title"}, resolve)
	if te, ok := toolerror.As(err); !ok || te.Code != toolerror.InvalidArgument || !strings.Contains(te.Message, "pointer fields of Song: album, artist, leak") {
		t.Errorf("non-pointer include: err = %v", err)
	}
	_, err = BuildIncludeTree(classes["Song"], []string{"album.nope"}, resolve)
	if err == nil || !strings.Contains(err.Error(), "Album.nope is not a field") {
		t.Errorf("unknown nested field: err = %v", err)
	}
	if r, err := BuildIncludeTree(classes["Song"], nil, resolve); err != nil || r != nil {
		t.Errorf("no includes: %v %v", r, err)
	}
}

func TestPointerRefAndDocID(t *testing.T) {
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: "s1"}, {Key: "_p_artist", Value: "Artist$a1"}, {Key: "_p_album", Value: nil}, {Key: "_p_bad", Value: "nodollar"}, {Key: "_p_num", Value: int32(3)}})
	if c, id, ok := PointerRef(doc, "artist"); !ok || c != "Artist" || id != "a1" {
		t.Errorf("artist = %q %q %v", c, id, ok)
	}
	for _, f := range []string{"album", "bad", "num", "missing"} {
		if _, _, ok := PointerRef(doc, f); ok {
			t.Errorf("%s: want no pointer", f)
		}
	}
	if DocID(doc) != "s1" {
		t.Errorf("DocID = %q", DocID(doc))
	}
}

func TestRowFieldsAndSplice(t *testing.T) {
	row := []byte(`{"objectId":"s1","title":"a \"quoted\" },{ title","artist":{"__type":"Pointer","className":"Artist","objectId":"a1"},"tags":["x","]"],"n":-1.5e3,"ok":true,"z":null}`)
	fields := RowFields(row)
	var keys []string
	for _, f := range fields {
		keys = append(keys, string(f.Key)+"="+string(row[f.Start:f.End]))
	}
	want := []string{`objectId="s1"`, `title="a \"quoted\" },{ title"`, `artist={"__type":"Pointer","className":"Artist","objectId":"a1"}`, `tags=["x","]"]`, `n=-1.5e3`, `ok=true`, `z=null`}
	if strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Errorf("RowFields:\n got %v\nwant %v", keys, want)
	}
	out := SpliceRow(nil, row, map[string][]byte{"artist": []byte(`{"__type":"Object","className":"Artist","objectId":"a1","name":"X"}`), "absent": []byte(`1`)})
	if !json.Valid(out) || !strings.Contains(string(out), `"artist":{"__type":"Object","className":"Artist","objectId":"a1","name":"X"},"tags"`) {
		t.Errorf("SpliceRow = %s", out)
	}
	if string(SpliceRow(nil, row, nil)) != string(row) {
		t.Error("SpliceRow without replacements must copy the row")
	}
	if RowFields([]byte(`[1]`)) != nil || RowFields([]byte(`{"a"`)) != nil {
		t.Error("RowFields must reject non-objects and truncated input")
	}
	if len(RowFields([]byte(`{}`))) != 0 {
		t.Error("empty object")
	}
}

func TestFieldSizes(t *testing.T) {
	sizes := map[string]int{}
	AddFieldSizes(sizes, []byte(`{"objectId":"s1","lyrics":"`+strings.Repeat("x", 100)+`"}`))
	AddFieldSizes(sizes, []byte(`{"objectId":"s2","title":"t"}`))
	if sizes["lyrics"] != len(`"lyrics":`)+102 || sizes["objectId"] != 2*(len(`"objectId":`)+4) {
		t.Errorf("sizes = %v", sizes)
	}
	h := HeaviestFields(sizes)
	if h[0].Field != "lyrics" || h[len(h)-1].Field != "title" {
		t.Errorf("HeaviestFields = %v", h)
	}
}

func TestObjectPrefix(t *testing.T) {
	if got := string(ObjectPrefix(nil, "Artist", []byte(`{"objectId":"a1","name":"X"}`))); got != `{"__type":"Object","className":"Artist","objectId":"a1","name":"X"}` {
		t.Errorf("got %s", got)
	}
	if got := string(ObjectPrefix(nil, "Artist", []byte(`{}`))); got != `{"__type":"Object","className":"Artist"}` {
		t.Errorf("empty: got %s", got)
	}
}

// TestSpliceAfterAppendRow: the scanner understands everything the codec
// writes (escapes, nested documents, arrays, numbers, redaction).
func TestSpliceAfterAppendRow(t *testing.T) {
	enc := RowEncoder{Class: includeSchema()["Song"], HiddenClass: func(c string) bool { return c == "Vault" }}
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: "s1"}, {Key: "title", Value: "q\"}{,\n\u2028"},
		{Key: "_p_leak", Value: "Vault$v1v1v1v1v1"}, {Key: "meta", Value: bson.D{{Key: "a", Value: bson.A{1, "}", bson.D{{Key: "b", Value: 2.5}}}}}},
		{Key: "_p_artist", Value: "Artist$a1"}})
	row, err := enc.AppendRow(nil, doc)
	if err != nil {
		t.Fatal(err)
	}
	out := SpliceRow(nil, row, map[string][]byte{"artist": []byte(`{"x":1}`)})
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if a, _ := m["artist"].(map[string]any); a["x"] != 1.0 {
		t.Errorf("artist not spliced: %s", out)
	}
	if m["title"] != "q\"}{,\n\u2028" {
		t.Errorf("title = %q", m["title"])
	}
}

// TestSpliceRowRemoves: a nil replacement removes the member and exactly
// one separating comma, wherever it stands.
func TestSpliceRowRemoves(t *testing.T) {
	row := []byte(`{"objectId":"x","a":{"__type":"Pointer"},"b":2,"c":"s,}"}`)
	for _, c := range []struct {
		repl map[string][]byte
		want string
	}{
		{map[string][]byte{"a": nil}, `{"objectId":"x","b":2,"c":"s,}"}`},
		{map[string][]byte{"c": nil}, `{"objectId":"x","a":{"__type":"Pointer"},"b":2}`},
		{map[string][]byte{"objectId": nil}, `{"a":{"__type":"Pointer"},"b":2,"c":"s,}"}`},
		{map[string][]byte{"objectId": nil, "a": nil}, `{"b":2,"c":"s,}"}`},
		{map[string][]byte{"a": nil, "b": nil, "c": nil}, `{"objectId":"x"}`},
		{map[string][]byte{"objectId": nil, "a": nil, "b": nil, "c": nil}, `{}`},
		{map[string][]byte{"a": nil, "b": []byte(`3`)}, `{"objectId":"x","b":3,"c":"s,}"}`},
	} {
		if got := string(SpliceRow(nil, row, c.repl)); got != c.want {
			t.Errorf("SpliceRow(%v) = %s, want %s", c.repl, got, c.want)
		}
	}
}
