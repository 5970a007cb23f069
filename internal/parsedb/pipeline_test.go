package parsedb

import (
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

func pipelineTestSchema() *Schema {
	s := &Schema{Classes: map[string]*Class{}}
	for _, d := range []bson.M{
		{"_id": "Song", "title": "string", "genre": "string", "plays": "number", "artist": "*Artist",
			"album": "*Album", "releasedAt": "date", "tags": "array", "meta": "object"},
		{"_id": "Artist", "name": "string", "parent": "*Artist"},
		{"_id": "Album", "title": "string", "artist": "*Artist"},
	} {
		c := ClassFromSchemaDoc(d)
		s.Classes[c.Name] = c
	}
	return s
}

// orderedJSON decodes JSON with object key order kept (bson.D).
func pipeOrderedJSON(t *testing.T, s string) []any {
	t.Helper()
	var raw bson.D
	if err := bson.UnmarshalExtJSON([]byte(`{"p":`+s+`}`), false, &raw); err != nil {
		t.Fatalf("bad test JSON: %v", err)
	}
	arr, ok := raw[0].Value.(bson.A)
	if !ok {
		t.Fatalf("not an array: %s", s)
	}
	return []any(arr)
}

// extJSON renders a translated pipeline as relaxed Extended JSON.
func pipeExtJSON(t *testing.T, p bson.A) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(bson.D{{Key: "p", Value: p}}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return s[len(`{"p":`) : len(s)-1]
}

func pipeTranslate(t *testing.T, class, in string, joins map[string]*JoinScope) (string, *Class, error) {
	t.Helper()
	s := pipelineTestSchema()
	out, end, err := TranslatePipeline(s.Class(class), pipeOrderedJSON(t, in), PipelineOptions{Schema: s, Prefix: "pfx_", Joins: joins})
	if err != nil {
		return "", nil, err
	}
	return pipeExtJSON(t, out), end, nil
}

func TestTranslatePipelineGolden(t *testing.T) {
	artistScope := map[string]*JoinScope{
		"Artist": {Filter: bson.D{{Key: "_rperm", Value: bson.D{{Key: "$in", Value: bson.A{nil, "*"}}}}}, Fields: []string{"_id", "_created_at", "_updated_at", "name", "_p_parent"}},
		"Song":   {Fields: []string{"_id", "title", "_p_artist"}},
	}
	cases := []struct{ name, in, want string }{
		{"pointer and identity renames in every position",
			`[{"$match":{"artist":"a1","objectId":{"$ne":"x"}}},{"$group":{"_id":"$artist","n":{"$sum":1},"last":{"$max":"$createdAt"}}}]`,
			`[{"$match":{"_p_artist":"Artist$a1","_id":{"$ne":"x"}}},{"$group":{"_id":"$_p_artist","n":{"$sum":1},"last":{"$max":"$_created_at"}}}]`},
		{"$sort $project $unset $addFields $unwind",
			`[{"$sort":{"plays":-1,"createdAt":1}},{"$project":{"title":1,"artist":1,"updatedAt":1,"a":"$album"}},{"$unset":["album"]},{"$addFields":{"artist":"$album","x":{"$concat":["$title","$$ROOT.artist"]}}},{"$unwind":{"path":"$tags","includeArrayIndex":"i"}}]`,
			`[{"$sort":{"plays":-1,"_created_at":1}},{"$project":{"title":1,"_p_artist":1,"_updated_at":1,"a":"$_p_album"}},{"$unset":["_p_album"]},{"$addFields":{"_p_artist":"$_p_album","x":{"$concat":["$title","$$ROOT._p_artist"]}}},{"$unwind":{"path":"$tags","includeArrayIndex":"i"}}]`},
		{"pointer values: bare id, Pointer object, $in",
			`[{"$match":{"album":{"__type":"Pointer","className":"Album","objectId":"b2"},"artist":{"$in":["a1",{"__type":"Pointer","className":"Artist","objectId":"a2"}]}}}]`,
			`[{"$match":{"_p_album":"Album$b2","_p_artist":{"$in":["Artist$a1","Artist$a2"]}}}]`},
		{"dates: ISO on a Date field, __type Date, $date",
			`[{"$match":{"releasedAt":{"$gte":"2020-01-01","$lt":{"__type":"Date","iso":"2021-01-01T00:00:00Z"}},"createdAt":{"$gt":{"$date":"2019-06-01T00:00:00Z"}}}}]`,
			`[{"$match":{"releasedAt":{"$gte":{"$date":"2020-01-01T00:00:00Z"},"$lt":{"$date":"2021-01-01T00:00:00Z"}},"_created_at":{"$gt":{"$date":"2019-06-01T00:00:00Z"}}}}]`},
		{"no renaming once the class shape is gone",
			`[{"$group":{"_id":"$genre","artist":{"$first":"$artist"}}},{"$match":{"artist":"x","_id":"rock"}},{"$sort":{"artist":1}}]`,
			`[{"$group":{"_id":"$genre","artist":{"$first":"$_p_artist"}}},{"$match":{"artist":"x","_id":"rock"}},{"$sort":{"artist":1}}]`},
		{"$expr, $literal, $getField, $let",
			`[{"$match":{"$expr":{"$gt":["$plays",{"$literal":"$artist"}]}}},{"$project":{"a":{"$getField":"artist"},"b":{"$getField":{"field":"album","input":"$$CURRENT"}},"c":{"$let":{"vars":{"v":"$artist"},"in":"$$v"}}}}]`,
			`[{"$match":{"$expr":{"$gt":["$plays",{"$literal":"$artist"}]}}},{"$project":{"a":{"$getField":"_p_artist"},"b":{"$getField":{"field":"_p_album","input":"$$CURRENT"}},"c":{"$let":{"vars":{"v":"$_p_artist"},"in":"$$v"}}}}]`},
		{"$facet branches keep the class shape",
			`[{"$facet":{"byArtist":[{"$sortByCount":"$artist"}],"recent":[{"$sort":{"createdAt":-1}},{"$limit":3}]}}]`,
			`[{"$facet":{"byArtist":[{"$sortByCount":"$_p_artist"}],"recent":[{"$sort":{"_created_at":-1}},{"$limit":3}]}}]`},
		{"$lookup pointer → objectId becomes let/$expr, scoped",
			`[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}}]`,
			`[{"$lookup":{"from":"pfx_Artist","let":{"parsemcpjoinkey":{"$arrayElemAt":[{"$split":[{"$ifNull":["$_p_artist",""]},{"$literal":"$"}]},1]}},"pipeline":[{"$match":{"$expr":{"$eq":["$_id","$$parsemcpjoinkey"]}}},{"$match":{"_rperm":{"$in":[null,"*"]}}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"name":1,"_p_parent":1}}],"as":"a"}}]`},
		{"$lookup objectId → pointer",
			`[{"$lookup":{"from":"Song","localField":"objectId","foreignField":"artist","as":"songs"}}]`,
			`[{"$lookup":{"from":"pfx_Song","let":{"parsemcpjoinkey":{"$concat":["Artist$","$_id"]}},"pipeline":[{"$match":{"$expr":{"$eq":["$_p_artist","$$parsemcpjoinkey"]}}},{"$project":{"_id":1,"title":1,"_p_artist":1}}],"as":"songs"}}]`},
		{"$lookup plain fields keeps localField/foreignField, user sub-pipeline translated",
			`[{"$lookup":{"from":"Artist","localField":"title","foreignField":"name","pipeline":[{"$match":{"parent":"p1"}}],"as":"same"}}]`,
			`[{"$lookup":{"from":"pfx_Artist","localField":"title","foreignField":"name","pipeline":[{"$match":{"_rperm":{"$in":[null,"*"]}}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"name":1,"_p_parent":1}},{"$match":{"_p_parent":"Artist$p1"}}],"as":"same"}}]`},
		{"$unionWith string and object forms",
			`[{"$unionWith":"Artist"},{"$unionWith":{"coll":"Artist","pipeline":[{"$project":{"parent":1}}]}}]`,
			`[{"$unionWith":{"coll":"pfx_Artist","pipeline":[{"$match":{"_rperm":{"$in":[null,"*"]}}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"name":1,"_p_parent":1}}]}},{"$unionWith":{"coll":"pfx_Artist","pipeline":[{"$match":{"_rperm":{"$in":[null,"*"]}}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"name":1,"_p_parent":1}},{"$project":{"_p_parent":1}}]}}]`},
		{"$graphLookup: scope in restrictSearchWithMatch, as rebuilt from visible fields",
			`[{"$graphLookup":{"from":"Artist","startWith":"$artist","connectFromField":"parent","connectToField":"objectId","as":"tree","depthField":"d","restrictSearchWithMatch":{"name":"x"}}}]`,
			`[{"$graphLookup":{"from":"pfx_Artist","startWith":"$_p_artist","connectFromField":"_p_parent","connectToField":"_id","as":"tree","depthField":"d","restrictSearchWithMatch":{"$and":[{"name":"x"},{"_rperm":{"$in":[null,"*"]}}]}}},{"$set":{"tree":{"$map":{"input":"$tree","as":"parsemcpdoc","in":{"_id":"$$parsemcpdoc._id","_created_at":"$$parsemcpdoc._created_at","_updated_at":"$$parsemcpdoc._updated_at","name":"$$parsemcpdoc.name","_p_parent":"$$parsemcpdoc._p_parent","d":"$$parsemcpdoc.d"}}}}}]`},
		{"numbers become integers",
			`[{"$limit":5.0},{"$skip":2},{"$match":{"plays":{"$gt":1.5}}}]`,
			`[{"$limit":5},{"$skip":2},{"$match":{"plays":{"$gt":1.5}}}]`},
		{"$elemMatch sub-filter is not renamed",
			`[{"$match":{"meta.items":{"$elemMatch":{"artist":"x"}}}}]`,
			`[{"$match":{"meta.items":{"$elemMatch":{"artist":"x"}}}}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := pipeTranslate(t, "Song", c.in, artistScope)
			if c.name == "$lookup objectId → pointer" {
				got, _, err = pipeTranslate(t, "Artist", c.in, artistScope)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestTranslatePipelineEndClass(t *testing.T) {
	_, end, err := pipeTranslate(t, "Song", `[{"$match":{}},{"$project":{"title":1}}]`, nil)
	if err != nil || end == nil || end.Name != "Song" {
		t.Fatalf("class shape after $project: %v %v", end, err)
	}
	for _, p := range []string{`[{"$group":{"_id":null}}]`, `[{"$count":"n"}]`, `[{"$replaceRoot":{"newRoot":"$meta"}}]`, `[{"$facet":{"a":[]}}]`, `[{"$sortByCount":"$genre"}]`} {
		if _, end, err := pipeTranslate(t, "Song", p, nil); err != nil || end != nil {
			t.Errorf("%s: end class %v, err %v", p, end, err)
		}
	}
}

func TestTranslatePipelineErrors(t *testing.T) {
	// A storage-form pointer value gets the where translator's guidance.
	_, _, err := pipeTranslate(t, "Song", `[{"$match":{"artist":"Artist$a1"}}]`, nil)
	if te, ok := toolerror.As(err); !ok || te.Code != toolerror.PointerShapeMismatch || !strings.Contains(te.Message, "storage form") {
		t.Fatalf("storage-form pointer value: %v", err)
	}
	_, _, err = pipeTranslate(t, "Song", `[{"$match":{"releasedAt":"yesterday"}}]`, nil)
	if te, ok := toolerror.As(err); !ok || te.Code != toolerror.InvalidQuery {
		t.Fatalf("bad date: %v", err)
	}
	// A join that was not scoped fails closed.
	_, _, err = pipeTranslate(t, "Song", `[{"$lookup":{"from":"Artist","pipeline":[],"as":"a"}}]`, nil)
	if err == nil {
		t.Fatal("unscoped join translated")
	}
	if _, ok := toolerror.As(err); ok {
		t.Fatalf("unscoped join must be an internal error, got %v", err)
	}
}

func TestTranslatePipelineMapsInput(t *testing.T) {
	// Unordered input (map[string]any from Args) is accepted; keys sorted.
	var p []any
	_ = json.Unmarshal([]byte(`[{"$match":{"genre":"rock","artist":"a1"}},{"$limit":3}]`), &p)
	s := pipelineTestSchema()
	out, _, err := TranslatePipeline(s.Class("Song"), p, PipelineOptions{Schema: s})
	if err != nil {
		t.Fatal(err)
	}
	if got := pipeExtJSON(t, out); got != `[{"$match":{"_p_artist":"Artist$a1","genre":"rock"}},{"$limit":3}]` {
		t.Fatalf("got %s", got)
	}
}

func TestVisibleProjectionFields(t *testing.T) {
	s := pipelineTestSchema()
	cls := s.Class("Song")
	fields := []*Field{cls.Field("title"), cls.Field("artist"), cls.Field("createdAt"), {Name: "likes", Type: TypeRelation, TargetClass: "_User"}}
	fields[0].Name, fields[1].Name = "title", "artist"
	got := strings.Join(VisibleProjectionFields(cls, fields), ",")
	if got != "_id,_created_at,_updated_at,title,_p_artist" {
		t.Fatalf("got %s", got)
	}
}

func TestStaticSchemaCache(t *testing.T) {
	s := pipelineTestSchema()
	got, err := StaticSchemaCache(s).Get(t.Context())
	if err != nil || got != s {
		t.Fatalf("static cache: %v %v", got, err)
	}
}
