package parsedb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// whereSong is the fixture class of the translator tests.
func whereSong() *Class {
	return ClassFromSchemaDoc(bson.M{
		"_id": "Song", "title": "string", "plays": "number", "releasedAt": "date", "tags": "array",
		"artist": "*Artist", "likes": "relation<_User>", "loc": "geopoint", "meta": "object",
		"area": "polygon", "cover": "file", "blob": "bytes",
	})
}

func whereSchema() *Schema {
	return &Schema{Classes: map[string]*Class{
		"Song": whereSong(),
		"Playlist": ClassFromSchemaDoc(bson.M{
			"_id": "Playlist", "name": "string", "songs": "relation<Song>", "owner": "*_User",
		}),
		"Artist": ClassFromSchemaDoc(bson.M{"_id": "Artist", "name": "string"}),
	}}
}

type whereSubCall struct {
	Method string
	Args   []any
}

// whereFakeSub is a SubQueries that records its calls and answers from
// fixed tables.
type whereFakeSub struct {
	calls    []whereSubCall
	ids      map[string][]string // className → MatchingIDs
	values   []any               // SelectValues answer
	related  []string            // RelatedIDs answer
	err      error               // returned by every call when set
	selfTest func(className string, where map[string]any) error
}

func (s *whereFakeSub) MatchingIDs(ctx context.Context, className string, where map[string]any) ([]string, error) {
	s.calls = append(s.calls, whereSubCall{"MatchingIDs", []any{className, where}})
	if s.err != nil {
		return nil, s.err
	}
	if s.selfTest != nil {
		if err := s.selfTest(className, where); err != nil {
			return nil, err
		}
	}
	return s.ids[className], nil
}

func (s *whereFakeSub) SelectValues(ctx context.Context, className string, where map[string]any, key string) ([]any, error) {
	s.calls = append(s.calls, whereSubCall{"SelectValues", []any{className, where, key}})
	if s.err != nil {
		return nil, s.err
	}
	return s.values, nil
}

func (s *whereFakeSub) RelatedIDs(ctx context.Context, ownerClass, ownerID, key string) ([]string, error) {
	s.calls = append(s.calls, whereSubCall{"RelatedIDs", []any{ownerClass, ownerID, key}})
	if s.err != nil {
		return nil, s.err
	}
	return s.related, nil
}

// whereFakeOwners adds RelationOwners.
type whereFakeOwners struct {
	whereFakeSub
	owners []string
}

func (s *whereFakeOwners) OwningIDs(ctx context.Context, ownerClass, key string, relatedIDs []string) ([]string, error) {
	s.calls = append(s.calls, whereSubCall{"OwningIDs", []any{ownerClass, key, relatedIDs}})
	if s.err != nil {
		return nil, s.err
	}
	return s.owners, nil
}

func newWhereFakeSub() *whereFakeSub {
	return &whereFakeSub{
		ids:     map[string][]string{"Artist": {"a1", "a2"}, "_User": {"u1"}},
		values:  []any{"rock", float64(3)},
		related: []string{"s1", "s2"},
	}
}

func decodeWhere(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func extJSON(t testing.TB, d bson.D) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		t.Fatalf("MarshalExtJSON: %v", err)
	}
	return string(b)
}

func TestWhereToFilterGolden(t *testing.T) {
	cases := []struct {
		name, where, want string
	}{
		// Empty and plain equality.
		{"empty", `{}`, `{}`},
		{"string equality", `{"title":"Hey Jude"}`, `{"title":"Hey Jude"}`},
		{"number equality", `{"plays":3}`, `{"plays":3.0}`},
		{"null equality", `{"title":null}`, `{"title":null}`},
		{"boolean equality on unknown field passes through", `{"explicit":true}`, `{"explicit":true}`},
		{"keys sorted", `{"title":"a","plays":1,"$or":[{"title":"b"}]}`,
			`{"$or":[{"title":"b"}],"plays":1.0,"title":"a"}`},

		// Renames.
		{"objectId", `{"objectId":"abc"}`, `{"_id":"abc"}`},
		{"createdAt ISO string", `{"createdAt":{"$gte":"2024-01-01T00:00:00.000Z"}}`,
			`{"_created_at":{"$gte":{"$date":"2024-01-01T00:00:00Z"}}}`},
		{"updatedAt Date object", `{"updatedAt":{"$lt":{"__type":"Date","iso":"2024-02-01T10:00:00Z"}}}`,
			`{"_updated_at":{"$lt":{"$date":"2024-02-01T10:00:00Z"}}}`},

		// Dates.
		{"date equality ISO", `{"releasedAt":"2020-05-06T07:08:09.123Z"}`, `{"releasedAt":{"$date":"2020-05-06T07:08:09.123Z"}}`},
		{"date bare day is UTC midnight", `{"releasedAt":{"$gt":"2020-05-06"}}`, `{"releasedAt":{"$gt":{"$date":"2020-05-06T00:00:00Z"}}}`},
		{"date with offset", `{"releasedAt":{"$lte":"2020-05-06T02:00:00+02:00"}}`, `{"releasedAt":{"$lte":{"$date":"2020-05-06T00:00:00Z"}}}`},
		{"date all comparisons", `{"releasedAt":{"$gt":"2020-01-01","$lt":{"__type":"Date","iso":"2021-01-01T00:00:00Z"},"$ne":null}}`,
			`{"releasedAt":{"$gt":{"$date":"2020-01-01T00:00:00Z"},"$lt":{"$date":"2021-01-01T00:00:00Z"},"$ne":null}}`},
		{"date $in", `{"releasedAt":{"$in":["2020-01-01",{"__type":"Date","iso":"2021-01-01T00:00:00Z"}]}}`,
			`{"releasedAt":{"$in":[{"$date":"2020-01-01T00:00:00Z"},{"$date":"2021-01-01T00:00:00Z"}]}}`},
		{"Date object on unknown field", `{"when":{"__type":"Date","iso":"2020-01-01T00:00:00Z"}}`, `{"when":{"$date":"2020-01-01T00:00:00Z"}}`},
		{"ISO string on String field stays a string", `{"title":"2020-01-01"}`, `{"title":"2020-01-01"}`},

		// Compact row values taken back as shown (docs/reading.md "Row shapes").
		{"compact nested date equality matches a date or the same string", `{"meta.at":"2020-05-06T07:08:09.123Z"}`,
			`{"meta.at":{"$in":["2020-05-06T07:08:09.123Z",{"$date":"2020-05-06T07:08:09.123Z"}]}}`},
		{"compact nested date range compares dates", `{"meta.at":{"$gte":"2020-05-06T07:08:09.123Z","$ne":"2021-01-01T00:00:00.000Z"}}`,
			`{"meta.at":{"$gte":{"$date":"2020-05-06T07:08:09.123Z"},"$nin":["2021-01-01T00:00:00.000Z",{"$date":"2021-01-01T00:00:00Z"}]}}`},
		{"compact date on a field missing from the schema", `{"when":{"$in":["2020-05-06T07:08:09.123Z"]}}`,
			`{"when":{"$in":["2020-05-06T07:08:09.123Z",{"$date":"2020-05-06T07:08:09.123Z"}]}}`},
		{"other strings on untyped paths stay strings", `{"meta.at":"2020-05-06"}`, `{"meta.at":"2020-05-06"}`},
		{"compact GeoPoint [lat, lng] equality", `{"loc":[48.85,2.35]}`, `{"loc":[2.35,48.85]}`},
		{"compact file by name", `{"cover":"f1_cover.png"}`, `{"cover":"f1_cover.png"}`},

		// Pointers.
		{"pointer bare id", `{"artist":"a1"}`, `{"_p_artist":"Artist$a1"}`},
		{"pointer object", `{"artist":{"__type":"Pointer","className":"Artist","objectId":"a1"}}`, `{"_p_artist":"Artist$a1"}`},
		{"pointer null", `{"artist":null}`, `{"_p_artist":null}`},
		{"pointer $eq $ne", `{"artist":{"$eq":"a1","$ne":{"__type":"Pointer","className":"Artist","objectId":"a2"}}}`,
			`{"_p_artist":{"$eq":"Artist$a1","$ne":"Artist$a2"}}`},
		{"pointer $in $nin", `{"artist":{"$in":["a1",{"__type":"Pointer","className":"Artist","objectId":"a2"},null],"$nin":["a3"]}}`,
			`{"_p_artist":{"$in":["Artist$a1","Artist$a2",null],"$nin":["Artist$a3"]}}`},
		{"pointer $exists", `{"artist":{"$exists":true}}`, `{"_p_artist":{"$exists":true}}`},
		{"pointer inside Object stays embedded", `{"meta.by":{"__type":"Pointer","className":"Artist","objectId":"a1"}}`,
			`{"meta.by":{"__type":"Pointer","className":"Artist","objectId":"a1"}}`},
		{"pointer inside Array membership", `{"tags":{"__type":"Pointer","className":"Tag","objectId":"t1"}}`,
			`{"tags":{"$all":[{"__type":"Pointer","className":"Tag","objectId":"t1"}]}}`},

		// Arrays.
		{"scalar equality on Array field is membership", `{"tags":"rock"}`, `{"tags":"rock"}`},
		{"array literal equality", `{"tags":["rock","pop"]}`, `{"tags":["rock","pop"]}`},
		{"$all", `{"tags":{"$all":["rock","pop"]}}`, `{"tags":{"$all":["rock","pop"]}}`},
		{"$containedBy", `{"tags":{"$containedBy":["rock","pop"]}}`,
			`{"$nor":[{"tags":{"$elemMatch":{"$nin":["rock","pop"]}}}]}`},
		{"$containedBy with other ops and a user $nor", `{"$nor":[{"title":"x"}],"tags":{"$containedBy":["a"],"$exists":true}}`,
			`{"$nor":[{"title":"x"},{"tags":{"$elemMatch":{"$nin":["a"]}}}],"tags":{"$exists":true}}`},

		// Objects and dotted paths.
		{"dotted path into Object", `{"meta.genre.name":"rock"}`, `{"meta.genre.name":"rock"}`},
		{"dotted path into Array", `{"tags.0":"rock"}`, `{"tags.0":"rock"}`},
		{"dotted path on unknown field", `{"extra.x":{"$gt":1}}`, `{"extra.x":{"$gt":1.0}}`},
		{"object literal keys sorted", `{"meta":{"b":1,"a":{"d":2,"c":"x"}}}`,
			`{"meta":{"a":{"c":"x","d":2.0},"b":1.0}}`},
		{"empty object literal", `{"meta":{}}`, `{"meta":{}}`},
		{"Date inside object literal", `{"meta":{"at":{"__type":"Date","iso":"2020-01-01T00:00:00Z"}}}`,
			`{"meta":{"at":{"$date":"2020-01-01T00:00:00Z"}}}`},
		{"Bytes inside object literal", `{"meta":{"b":{"__type":"Bytes","base64":"AQI="}}}`,
			`{"meta":{"b":{"$binary":{"base64":"AQI=","subType":"00"}}}}`},

		// Typed fields.
		{"GeoPoint equality", `{"loc":{"__type":"GeoPoint","latitude":40,"longitude":-30}}`,
			`{"loc":[-30.0,40.0]}`},
		{"File equality by object", `{"cover":{"__type":"File","name":"abc_cover.png"}}`, `{"cover":"abc_cover.png"}`},
		{"File equality by name", `{"cover":"abc_cover.png"}`, `{"cover":"abc_cover.png"}`},

		// Comparisons and $exists.
		{"numeric ranges", `{"plays":{"$gt":1,"$gte":2,"$lt":10,"$lte":9}}`,
			`{"plays":{"$gt":1.0,"$gte":2.0,"$lt":10.0,"$lte":9.0}}`},
		{"$exists false", `{"title":{"$exists":false}}`, `{"title":{"$exists":false}}`},
		{"$in $nin", `{"title":{"$in":["a","b"],"$nin":[]}}`, `{"title":{"$in":["a","b"],"$nin":[]}}`},
		{"$eq array", `{"tags":{"$eq":["a"]}}`, `{"tags":{"$eq":["a"]}}`},

		// Regex.
		{"$regex", `{"title":{"$regex":"^Hey"}}`, `{"title":{"$regex":"^Hey"}}`},
		{"$regex $options ordered after pattern", `{"title":{"$regex":"hey","$options":"im"}}`,
			`{"title":{"$regex":"hey","$options":"im"}}`},
		{"$options x and duplicates folded", `{"title":{"$regex":"a b","$options":"xix"}}`, `{"title":{"$regex":"a b","$options":"xi"}}`},
		{"$options empty", `{"title":{"$regex":"a","$options":""}}`, `{"title":{"$regex":"a"}}`},
		{"safe repeated alternation", `{"title":{"$regex":"^(red|blue)+$"}}`, `{"title":{"$regex":"^(red|blue)+$"}}`},
		{"quantified group without inner quantifier", `{"title":{"$regex":"(ab)+c*"}}`, `{"title":{"$regex":"(ab)+c*"}}`},
		{"escaped parens are literals", `{"title":{"$regex":"\\(a+\\)+"}}`, `{"title":{"$regex":"\\(a+\\)+"}}`},
		{"optional group with quantifier", `{"title":{"$regex":"(a+)?b"}}`, `{"title":{"$regex":"(a+)?b"}}`},
		{"exact repeat of one", `{"title":{"$regex":"(a+){1}"}}`, `{"title":{"$regex":"(a+){1}"}}`},
		{"literal brace", `{"title":{"$regex":"(a+){x}"}}`, `{"title":{"$regex":"(a+){x}"}}`},
		{"class with parens", `{"title":{"$regex":"[(a+)]+"}}`, `{"title":{"$regex":"[(a+)]+"}}`},

		// $text.
		{"$text field-level", `{"title":{"$text":{"$search":{"$term":"love"}}}}`, `{"$text":{"$search":"love"}}`},
		{"$text all options", `{"title":{"$text":{"$search":{"$term":"amour","$language":"fr","$caseSensitive":true,"$diacriticSensitive":false}}}}`,
			`{"$text":{"$search":"amour","$caseSensitive":true,"$diacriticSensitive":false,"$language":"fr"}}`},
		{"$text top-level", `{"$text":{"$search":{"$term":"love"}},"plays":1}`,
			`{"$text":{"$search":"love"},"plays":1.0}`},
		{"$text inside $and", `{"$and":[{"title":{"$text":{"$search":{"$term":"x"}}}}]}`, `{"$and":[{"$text":{"$search":"x"}}]}`},
		{"$text with another op on the field", `{"title":{"$text":{"$search":{"$term":"x"}},"$exists":true}}`,
			`{"title":{"$exists":true},"$text":{"$search":"x"}}`},

		// Geo.
		{"$nearSphere", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":10,"longitude":20}}}`,
			`{"loc":{"$nearSphere":[20.0,10.0]}}`},
		{"$nearSphere $maxDistance radians", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":10,"longitude":20},"$maxDistance":0.5}}`,
			`{"loc":{"$nearSphere":[20.0,10.0],"$maxDistance":0.5}}`},
		{"$nearSphere $maxDistanceInRadians", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":0,"longitude":0},"$maxDistanceInRadians":0.25}}`,
			`{"loc":{"$nearSphere":[0.0,0.0],"$maxDistance":0.25}}`},
		{"$nearSphere $maxDistanceInMiles", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":0,"longitude":0},"$maxDistanceInMiles":3958.8}}`,
			`{"loc":{"$nearSphere":[0.0,0.0],"$maxDistance":1.0}}`},
		{"$nearSphere $maxDistanceInKilometers", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":0,"longitude":0},"$maxDistanceInKilometers":3185.5}}`,
			`{"loc":{"$nearSphere":[0.0,0.0],"$maxDistance":0.5}}`},
		{"$within $box", `{"loc":{"$within":{"$box":[{"__type":"GeoPoint","latitude":1,"longitude":2},{"__type":"GeoPoint","latitude":3,"longitude":4}]}}}`,
			`{"loc":{"$geoWithin":{"$box":[[2.0,1.0],[4.0,3.0]]}}}`},
		{"$geoWithin $box", `{"loc":{"$geoWithin":{"$box":[{"__type":"GeoPoint","latitude":1,"longitude":2},{"__type":"GeoPoint","latitude":3,"longitude":4}]}}}`,
			`{"loc":{"$geoWithin":{"$box":[[2.0,1.0],[4.0,3.0]]}}}`},
		{"$geoWithin $polygon of GeoPoints", `{"loc":{"$geoWithin":{"$polygon":[{"__type":"GeoPoint","latitude":0,"longitude":0},{"__type":"GeoPoint","latitude":0,"longitude":1},{"__type":"GeoPoint","latitude":1,"longitude":1}]}}}`,
			`{"loc":{"$geoWithin":{"$polygon":[[0.0,0.0],[1.0,0.0],[1.0,1.0]]}}}`},
		{"$geoWithin $polygon of [lng,lat] pairs", `{"loc":{"$geoWithin":{"$polygon":[[0,0],[1,0],[1,1]]}}}`,
			`{"loc":{"$geoWithin":{"$polygon":[[0.0,0.0],[1.0,0.0],[1.0,1.0]]}}}`},
		{"$geoWithin $polygon Polygon object [lat,lng]", `{"loc":{"$geoWithin":{"$polygon":{"__type":"Polygon","coordinates":[[10,20],[11,20],[11,21]]}}}}`,
			`{"loc":{"$geoWithin":{"$polygon":[[20.0,10.0],[20.0,11.0],[21.0,11.0]]}}}`},
		{"$geoWithin $centerSphere GeoPoint", `{"loc":{"$geoWithin":{"$centerSphere":[{"__type":"GeoPoint","latitude":10,"longitude":20},0.1]}}}`,
			`{"loc":{"$geoWithin":{"$centerSphere":[[20.0,10.0],0.1]}}}`},
		{"$geoWithin $centerSphere pair", `{"loc":{"$geoWithin":{"$centerSphere":[[20,10],0.1]}}}`,
			`{"loc":{"$geoWithin":{"$centerSphere":[[20.0,10.0],0.1]}}}`},
		{"$within and $geoWithin both apply", `{"loc":{"$within":{"$box":[{"__type":"GeoPoint","latitude":1,"longitude":2},{"__type":"GeoPoint","latitude":3,"longitude":4}]},"$geoWithin":{"$centerSphere":[[20,10],0.1]}}}`,
			`{"loc":{"$geoWithin":{"$centerSphere":[[20.0,10.0],0.1]}},"$and":[{"loc":{"$geoWithin":{"$box":[[2.0,1.0],[4.0,3.0]]}}}]}`},
		{"$geoIntersects $point", `{"area":{"$geoIntersects":{"$point":{"__type":"GeoPoint","latitude":10,"longitude":20}}}}`,
			`{"area":{"$geoIntersects":{"$geometry":{"type":"Point","coordinates":[20.0,10.0]}}}}`},

		// Logical operators.
		{"$or", `{"$or":[{"title":"a"},{"plays":{"$gt":5}}]}`, `{"$or":[{"title":"a"},{"plays":{"$gt":5.0}}]}`},
		{"$and", `{"$and":[{"title":"a"},{"artist":"a1"}]}`, `{"$and":[{"title":"a"},{"_p_artist":"Artist$a1"}]}`},
		{"$nor", `{"$nor":[{"title":"a"}]}`, `{"$nor":[{"title":"a"}]}`},
		{"depth 8 is allowed", `{"meta":{"a":{"b":{"c":{"d":{"e":{"f":{"g":1}}}}}}}}`, `{"meta":{"a":{"b":{"c":{"d":{"e":{"f":{"g":1.0}}}}}}}}`},
		{"nested logical", `{"$or":[{"$and":[{"title":"a"},{"$nor":[{"plays":1}]}]},{}]}`,
			`{"$or":[{"$and":[{"title":"a"},{"$nor":[{"plays":1.0}]}]},{}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := newWhereFakeSub()
			got, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, tc.where), WhereOptions{Schema: whereSchema(), Sub: sub})
			if err != nil {
				t.Fatalf("WhereToFilter(%s): unexpected error %v", tc.where, err)
			}
			if g := extJSON(t, got); g != tc.want {
				t.Errorf("WhereToFilter(%s)\n got: %s\nwant: %s", tc.where, g, tc.want)
			}
			if len(sub.calls) != 0 {
				t.Errorf("unexpected sub-query calls %v", sub.calls)
			}
		})
	}
}

func TestWhereToFilterNilAndEmpty(t *testing.T) {
	for _, w := range []map[string]any{nil, {}} {
		got, err := WhereToFilter(context.Background(), whereSong(), w, WhereOptions{})
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("WhereToFilter(%v) = %v, %v; want empty bson.D", w, got, err)
		}
	}
}

func TestWhereToFilterSubQueries(t *testing.T) {
	cases := []struct {
		name, where, want string
		calls             []whereSubCall
	}{
		{"$inQuery", `{"artist":{"$inQuery":{"className":"Artist","where":{"name":"Beatles"}}}}`,
			`{"_p_artist":{"$in":["Artist$a1","Artist$a2"]}}`,
			[]whereSubCall{{"MatchingIDs", []any{"Artist", map[string]any{"name": "Beatles"}}}}},
		{"$notInQuery with an empty where", `{"artist":{"$notInQuery":{"className":"Artist","where":{}}}}`,
			`{"_p_artist":{"$nin":["Artist$a1","Artist$a2"]}}`,
			[]whereSubCall{{"MatchingIDs", []any{"Artist", map[string]any{}}}}},
		{"$inQuery with empty answer", `{"artist":{"$inQuery":{"className":"Artist","where":{}}},"title":"x"}`,
			`{"_p_artist":{"$in":["Artist$a1","Artist$a2"]},"title":"x"}`,
			[]whereSubCall{{"MatchingIDs", []any{"Artist", map[string]any{}}}}},
		{"$inQuery and $in on the same field both apply", `{"artist":{"$in":["a9"],"$inQuery":{"className":"Artist","where":{}}}}`,
			`{"_p_artist":{"$in":["Artist$a9"]},"$and":[{"_p_artist":{"$in":["Artist$a1","Artist$a2"]}}]}`,
			[]whereSubCall{{"MatchingIDs", []any{"Artist", map[string]any{}}}}},
		{"$select", `{"title":{"$select":{"query":{"className":"Artist","where":{"name":"x"}},"key":"name"}}}`,
			`{"title":{"$in":["rock",3.0]}}`,
			[]whereSubCall{{"SelectValues", []any{"Artist", map[string]any{"name": "x"}, "name"}}}},
		{"$dontSelect", `{"title":{"$dontSelect":{"query":{"className":"Artist"},"key":"name"}}}`,
			`{"title":{"$nin":["rock",3.0]}}`,
			[]whereSubCall{{"SelectValues", []any{"Artist", map[string]any{}, "name"}}}},
		{"$relatedTo", `{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"songs"}}`,
			`{"_id":{"$in":["s1","s2"]}}`,
			[]whereSubCall{{"RelatedIDs", []any{"Playlist", "p1", "songs"}}}},
		{"$relatedTo and objectId both apply", `{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"songs"},"objectId":{"$ne":"s1"}}`,
			`{"_id":{"$in":["s1","s2"]},"$and":[{"_id":{"$ne":"s1"}}]}`,
			[]whereSubCall{{"RelatedIDs", []any{"Playlist", "p1", "songs"}}}},
		{"$relatedTo inside $or", `{"$or":[{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"songs"}},{"title":"x"}]}`,
			`{"$or":[{"_id":{"$in":["s1","s2"]}},{"title":"x"}]}`,
			[]whereSubCall{{"RelatedIDs", []any{"Playlist", "p1", "songs"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := newWhereFakeSub()
			got, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, tc.where), WhereOptions{Schema: whereSchema(), Sub: sub})
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if g := extJSON(t, got); g != tc.want {
				t.Errorf("WhereToFilter(%s)\n got: %s\nwant: %s", tc.where, g, tc.want)
			}
			if !reflect.DeepEqual(sub.calls, tc.calls) {
				t.Errorf("calls\n got: %#v\nwant: %#v", sub.calls, tc.calls)
			}
		})
	}
}

func TestWhereToFilterSelectValueShapes(t *testing.T) {
	sub := newWhereFakeSub()
	sub.values = []any{"Artist$a1", "a2", map[string]any{"__type": "Pointer", "className": "Artist", "objectId": "a3"}}
	got, err := WhereToFilter(context.Background(), whereSong(),
		decodeWhere(t, `{"artist":{"$select":{"query":{"className":"Playlist"},"key":"artist"}}}`), WhereOptions{Sub: sub})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := extJSON(t, got), `{"_p_artist":{"$in":["Artist$a1","Artist$a2","Artist$a3"]}}`; g != want {
		t.Errorf("got %s want %s", g, want)
	}
	sub.values = []any{"2020-01-01T00:00:00Z", map[string]any{"__type": "Date", "iso": "2021-01-01T00:00:00Z"}}
	got, err = WhereToFilter(context.Background(), whereSong(),
		decodeWhere(t, `{"releasedAt":{"$dontSelect":{"query":{"className":"Playlist"},"key":"when"}}}`), WhereOptions{Sub: sub})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := extJSON(t, got), `{"releasedAt":{"$nin":[{"$date":"2020-01-01T00:00:00Z"},{"$date":"2021-01-01T00:00:00Z"}]}}`; g != want {
		t.Errorf("got %s want %s", g, want)
	}
}

// The implementation of SubQueries translates the inner where by calling
// WhereToFilter again; errors it returns surface unchanged.
func TestWhereToFilterRecursiveSubQuery(t *testing.T) {
	schema := whereSchema()
	sub := newWhereFakeSub()
	var inner []string
	sub.selfTest = func(className string, where map[string]any) error {
		d, err := WhereToFilter(context.Background(), schema.Class(className), where, WhereOptions{Schema: schema, Sub: sub})
		if err != nil {
			return err
		}
		inner = append(inner, extJSON(t, d))
		return nil
	}
	_, err := WhereToFilter(context.Background(), whereSong(),
		decodeWhere(t, `{"artist":{"$inQuery":{"className":"Artist","where":{"name":{"$regex":"^B"}}}}}`), WhereOptions{Schema: schema, Sub: sub})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"name":{"$regex":"^B"}}`}; !reflect.DeepEqual(inner, want) {
		t.Errorf("inner filters %v, want %v", inner, want)
	}
	_, err = WhereToFilter(context.Background(), whereSong(),
		decodeWhere(t, `{"artist":{"$inQuery":{"className":"Artist","where":{"name":{"$size":1}}}}}`), WhereOptions{Schema: schema, Sub: sub})
	if e, ok := toolerror.As(err); !ok || e.Code != toolerror.InvalidQuery || !strings.Contains(e.Message, "unknown operator $size on field name") {
		t.Errorf("inner error: %v", err)
	}
}

func TestWhereToFilterSubQueryError(t *testing.T) {
	sub := newWhereFakeSub()
	sentinel := toolerror.Denied("hidden_class", "Class not found: Secret")
	sub.err = sentinel
	for _, w := range []string{
		`{"artist":{"$inQuery":{"className":"Artist","where":{}}}}`,
		`{"title":{"$select":{"query":{"className":"Artist"},"key":"name"}}}`,
		`{"$relatedTo":{"object":{"__type":"Pointer","className":"Secret","objectId":"p1"},"key":"songs"}}`,
	} {
		_, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, w), WhereOptions{Sub: sub})
		if !errors.Is(err, sentinel) {
			t.Errorf("%s: got %v, want the sub-query's error", w, err)
		}
	}
}

func TestWhereToFilterRelationField(t *testing.T) {
	owners := &whereFakeOwners{whereFakeSub: *newWhereFakeSub(), owners: []string{"s7"}}
	cases := []struct{ where, want string }{
		{`{"likes":{"__type":"Pointer","className":"_User","objectId":"u1"}}`, `{"_id":{"$in":["s7"]}}`},
		{`{"likes":"u1"}`, `{"_id":{"$in":["s7"]}}`},
		{`{"likes":{"$eq":{"__type":"Pointer","className":"_User","objectId":"u1"}}}`, `{"_id":{"$in":["s7"]}}`},
		{`{"likes":{"$in":["u1",{"__type":"Pointer","className":"_User","objectId":"u2"}]}}`, `{"_id":{"$in":["s7"]}}`},
	}
	for _, tc := range cases {
		owners.calls = nil
		got, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, tc.where), WhereOptions{Sub: owners})
		if err != nil {
			t.Fatalf("%s: %v", tc.where, err)
		}
		if g := extJSON(t, got); g != tc.want {
			t.Errorf("%s: got %s want %s", tc.where, g, tc.want)
		}
		if len(owners.calls) != 1 || owners.calls[0].Method != "OwningIDs" || owners.calls[0].Args[0] != "Song" || owners.calls[0].Args[1] != "likes" {
			t.Errorf("%s: calls %v", tc.where, owners.calls)
		}
	}
	// Without RelationOwners: a clear invalid_query pointing at $relatedTo.
	_, err := WhereToFilter(context.Background(), whereSong(),
		decodeWhere(t, `{"likes":{"__type":"Pointer","className":"_User","objectId":"u1"}}`), WhereOptions{Sub: newWhereFakeSub()})
	if e, ok := toolerror.As(err); !ok || e.Code != toolerror.InvalidQuery || !strings.Contains(e.Message, "$relatedTo") {
		t.Errorf("without RelationOwners: %v", err)
	}
	// Wrong class in the pointer.
	_, err = WhereToFilter(context.Background(), whereSong(),
		decodeWhere(t, `{"likes":{"__type":"Pointer","className":"Artist","objectId":"u1"}}`), WhereOptions{Sub: owners})
	if e, ok := toolerror.As(err); !ok || e.Code != toolerror.PointerShapeMismatch {
		t.Errorf("wrong class: %v", err)
	}
}

type whereErrKind int

const (
	wantViolation whereErrKind = iota
	wantInvalid
	wantPointer
)

func TestWhereToFilterErrors(t *testing.T) {
	long := strings.Repeat("a", 257)
	cases := []struct {
		name, where string
		kind        whereErrKind
		msg         string // substring of the message (invalid_query / pointer_shape_mismatch)
	}{
		// Forbidden operators at any depth.
		{"$where top", `{"$where":"sleep(1000)"}`, wantViolation, ""},
		{"$expr top", `{"$expr":{"$eq":["$a","$b"]}}`, wantViolation, ""},
		{"$function field-level", `{"title":{"$function":{}}}`, wantViolation, ""},
		{"$accumulator field-level", `{"title":{"$accumulator":{}}}`, wantViolation, ""},
		{"$expr in $or", `{"$or":[{"$expr":{"$gt":[1,0]}}]}`, wantViolation, ""},
		{"$where in $and", `{"$and":[{"a":1},{"$where":"x"}]}`, wantViolation, ""},
		{"$where in $nor", `{"$nor":[{"$where":"x"}]}`, wantViolation, ""},
		{"$expr in $elemMatch", `{"tags":{"$elemMatch":{"$expr":{}}}}`, wantViolation, ""},
		{"$where in inQuery where", `{"artist":{"$inQuery":{"className":"Artist","where":{"$where":"1"}}}}`, wantViolation, ""},
		{"$where inside a literal value", `{"meta":{"x":{"$where":"1"}}}`, wantViolation, ""},
		{"$where inside $in element", `{"tags":{"$in":[{"$where":"1"}]}}`, wantViolation, ""},
		{"$where as dotted segment", `{"meta.$where":1}`, wantViolation, ""},

		// Internal fields.
		{"_hashed_password", `{"_hashed_password":"x"}`, wantViolation, ""},
		{"_rperm", `{"_rperm":{"$in":["*"]}}`, wantViolation, ""},
		{"_wperm in $or", `{"$or":[{"_wperm":"x"}]}`, wantViolation, ""},
		{"sessionToken", `{"sessionToken":"r:abc"}`, wantViolation, ""},
		{"authData dotted", `{"authData.facebook.id":"1"}`, wantViolation, ""},
		{"_auth_data_ prefix", `{"_auth_data_github":{"$exists":true}}`, wantViolation, ""},
		{"internal as nested segment", `{"meta._session_token":"x"}`, wantViolation, ""},
		{"internal inside literal", `{"meta":{"_acl":1}}`, wantViolation, ""},
		{"internal in inQuery", `{"artist":{"$inQuery":{"className":"_User","where":{"_email_verify_token":"t"}}}}`, wantViolation, ""},
		{"internal $select key", `{"title":{"$select":{"query":{"className":"_User"},"key":"_hashed_password"}}}`, wantViolation, ""},
		{"internal $select key dotted", `{"title":{"$select":{"query":{"className":"_User"},"key":"authData.x"}}}`, wantViolation, ""},
		{"internal $relatedTo key", `{"$relatedTo":{"object":{"__type":"Pointer","className":"_User","objectId":"u"},"key":"_rperm"}}`, wantViolation, ""},
		{"ACL", `{"ACL":{"$exists":true}}`, wantViolation, ""},
		{"ACL dotted", `{"ACL.*.read":true}`, wantViolation, ""},

		// Nesting.
		{"depth 9", `{"meta":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":1}}}}}}}}}`, wantViolation, ""},
		{"depth 9 through $inQuery", `{"artist":{"$inQuery":{"className":"Artist","where":{"x":{"$inQuery":{"className":"Y","where":{"z":{"$exists":{"a":1}}}}}}}}}`, wantViolation, ""},
		{"deep $or", `{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"$or":[{"a":1}]}]}]}]}]}]}]}]}]}`, wantViolation, ""},
		{"deep arrays", `{"tags":[[[[[[[[[1]]]]]]]]]}`, wantViolation, ""},

		// Regex.
		{"$regex too long", `{"title":{"$regex":"` + long + `"}}`, wantViolation, ""},
		{"(a+)+", `{"title":{"$regex":"(a+)+"}}`, wantViolation, ""},
		{"(a*)*", `{"title":{"$regex":"^(a*)*$"}}`, wantViolation, ""},
		{"(a|aa)+", `{"title":{"$regex":"(a|aa)+"}}`, wantViolation, ""},
		{"(\\w+)*", `{"title":{"$regex":"(\\w+)*x"}}`, wantViolation, ""},
		{"non-capturing", `{"title":{"$regex":"(?:a+)+"}}`, wantViolation, ""},
		{"counted outer", `{"title":{"$regex":"(a+){2,}"}}`, wantViolation, ""},
		{"nested groups", `{"title":{"$regex":"((ab)*c)+"}}`, wantViolation, ""},
		{"lazy inner", `{"title":{"$regex":"(.*?,)+"}}`, wantViolation, ""},
		{"alternation with class", `{"title":{"$regex":"([a-z]|x)+"}}`, wantViolation, ""},
		{"$options s", `{"title":{"$regex":"a","$options":"s"}}`, wantViolation, ""},
		{"$options u", `{"title":{"$regex":"a","$options":"iu"}}`, wantViolation, ""},
		{"$options not a string", `{"title":{"$regex":"a","$options":1}}`, wantViolation, ""},
		{"$inQuery without where", `{"artist":{"$inQuery":{"className":"Artist"}}}`, wantInvalid, "improper usage of $inQuery"},
		{"$notInQuery without where", `{"artist":{"$notInQuery":{"className":"Artist"}}}`, wantInvalid, "improper usage of $notInQuery"},
		{"$options alone", `{"title":{"$options":"i"}}`, wantInvalid, "$options is only allowed together with $regex"},
		{"$regex not a string", `{"title":{"$regex":1}}`, wantInvalid, "$regex needs a string"},

		// Unknown operators.
		{"$elemMatch", `{"tags":{"$elemMatch":{"$eq":"a"}}}`, wantInvalid, "unknown operator $elemMatch on field tags"},
		{"$not", `{"title":{"$not":{"$regex":"a"}}}`, wantInvalid, "unknown operator $not on field title"},
		{"$size", `{"tags":{"$size":2}}`, wantInvalid, "unknown operator $size on field tags"},
		{"$type", `{"title":{"$type":"string"}}`, wantInvalid, "unknown operator $type on field title"},
		{"$mod", `{"plays":{"$mod":[2,0]}}`, wantInvalid, "unknown operator $mod on field plays"},
		{"$foo", `{"title":{"$foo":1}}`, wantInvalid, "unknown operator $foo on field title"},
		{"top-level $comment", `{"$comment":"x"}`, wantInvalid, "unknown operator $comment at the top level"},
		{"field-level $or", `{"title":{"$or":[{"a":1}]}}`, wantInvalid, "unknown operator $or on field title"},
		{"$geoWithin $center", `{"loc":{"$geoWithin":{"$center":[[0,0],1]}}}`, wantInvalid, "unknown operator $center in $geoWithin"},
		{"$text unknown $search key", `{"title":{"$text":{"$search":{"$term":"a","$x":1}}}}`, wantInvalid, "unknown key $x in $search"},
		{"$search at field level", `{"title":{"$search":"x"}}`, wantInvalid, "unknown operator $search on field title"},
		{"$box at field level", `{"loc":{"$box":[]}}`, wantInvalid, "unknown operator $box on field loc"},

		// Storage names.
		{"_p_ key", `{"_p_artist":"Artist$a1"}`, wantInvalid, "use artist, not _p_artist"},
		{"_created_at key", `{"_created_at":{"$gt":1}}`, wantInvalid, "use createdAt, not _created_at"},
		{"_updated_at key", `{"_updated_at":1}`, wantInvalid, "use updatedAt, not _updated_at"},
		{"_id key", `{"_id":"x"}`, wantInvalid, "use objectId, not _id"},
		{"other _ key", `{"_foo":1}`, wantInvalid, "_foo is not a queryable field"},
		{"_ key in $or", `{"$or":[{"_p_artist":"x"}]}`, wantInvalid, "use artist, not _p_artist"},
		{"invalid field name", `{"9lives":1}`, wantInvalid, "invalid field name"},
		{"empty field name", `{"":1}`, wantInvalid, "empty field name"},
		{"empty path segment", `{"meta..a":1}`, wantInvalid, "invalid field path"},
		{"dotted into pointer", `{"artist.name":"x"}`, wantInvalid, `"$inQuery"`},
		{"dotted into relation", `{"likes.x":"x"}`, wantInvalid, "Relation"},
		{"dotted into string", `{"title.x":"x"}`, wantInvalid, "dotted paths only apply to Object and Array fields"},

		// Value shapes.
		{"mixed operator and plain keys", `{"meta":{"$exists":true,"a":1}}`, wantInvalid, "mixes operators"},
		{"operator inside literal", `{"tags":{"$in":[{"$gt":1}]}}`, wantInvalid, "operator $gt is not allowed inside a value"},
		{"dotted key inside literal", `{"meta":{"a.b":1}}`, wantInvalid, `invalid key "a.b"`},
		{"$in not array", `{"title":{"$in":"a"}}`, wantInvalid, "$in needs an array"},
		{"$nin not array", `{"title":{"$nin":{}}}`, wantInvalid, "$nin needs an array"},
		{"$all not array", `{"tags":{"$all":"a"}}`, wantInvalid, "$all needs an array"},
		{"$gt array", `{"plays":{"$gt":[1]}}`, wantInvalid, "needs a single value"},
		{"$exists not bool", `{"title":{"$exists":1}}`, wantInvalid, "$exists needs true or false"},
		{"$containedBy not array", `{"tags":{"$containedBy":"a"}}`, wantInvalid, "$containedBy needs an array"},
		{"$containedBy on String", `{"title":{"$containedBy":["a"]}}`, wantInvalid, "$containedBy needs an Array field"},
		{"$or not array", `{"$or":{"a":1}}`, wantInvalid, "$or must be an array"},
		{"$or empty", `{"$or":[]}`, wantInvalid, "$or must not be empty"},
		{"$and element not object", `{"$and":[1]}`, wantInvalid, "$and[0] must be a where object"},
		{"bad date string", `{"releasedAt":"yesterday"}`, wantInvalid, "is not an ISO-8601 date"},
		{"bad date in $gt", `{"createdAt":{"$gt":"2020-13-45"}}`, wantInvalid, "is not an ISO-8601 date"},
		{"number on date field", `{"releasedAt":{"$gt":1}}`, wantInvalid, "releasedAt is a Date field"},
		{"bad Date object", `{"releasedAt":{"__type":"Date","iso":"nope"}}`, wantInvalid, "is not an ISO-8601 date"},
		{"Date object without iso", `{"when":{"__type":"Date"}}`, wantInvalid, "a Date value is"},
		{"unsupported __type", `{"meta":{"__type":"Relation","className":"X"}}`, wantInvalid, "unsupported __type"},
		{"bad Bytes", `{"meta":{"__type":"Bytes","base64":"!!"}}`, wantInvalid, "a Bytes value is"},
		{"$text not object", `{"$text":"x"}`, wantInvalid, "$text must be"},
		{"$text without term", `{"title":{"$text":{"$search":{"$language":"en"}}}}`, wantInvalid, "$term must be a non-empty string"},
		{"$text bad language", `{"title":{"$text":{"$search":{"$term":"a","$language":1}}}}`, wantInvalid, "$language must be a string"},
		{"$text bad caseSensitive", `{"title":{"$text":{"$search":{"$term":"a","$caseSensitive":"yes"}}}}`, wantInvalid, "$caseSensitive must be true or false"},
		{"two $text", `{"$text":{"$search":{"$term":"a"}},"title":{"$text":{"$search":{"$term":"b"}}}}`, wantInvalid, "only one $text"},
		{"$text in $or", `{"$or":[{"title":{"$text":{"$search":{"$term":"a"}}}}]}`, wantInvalid, "cannot be used inside $or or $nor"},

		// Geo shapes.
		{"$nearSphere not GeoPoint", `{"loc":{"$nearSphere":[1,2]}}`, wantInvalid, "needs a GeoPoint"},
		{"$nearSphere latitude out of range", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":91,"longitude":0}}}`, wantInvalid, "latitude must be within"},
		{"$nearSphere on non-geo field", `{"title":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":0}}}`, wantInvalid, "needs a GeoPoint field"},
		{"$nearSphere in $or", `{"$or":[{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":0}}}]}`, wantInvalid, "cannot be used inside $or"},
		{"two $nearSphere", `{"$and":[{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":0}}},{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":2,"longitude":0}}}]}`, wantInvalid, "only one $nearSphere"},
		{"two $maxDistance", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":0},"$maxDistance":1,"$maxDistanceInMiles":2}}`, wantInvalid, "use only one of"},
		{"negative $maxDistance", `{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":0},"$maxDistanceInKilometers":-1}}`, wantInvalid, "non-negative"},
		{"$maxDistance alone", `{"loc":{"$maxDistance":1}}`, wantInvalid, "only allowed together with $nearSphere"},
		{"$within without $box", `{"loc":{"$within":{"$polygon":[]}}}`, wantInvalid, "$within needs"},
		{"$box with one point", `{"loc":{"$geoWithin":{"$box":[{"__type":"GeoPoint","latitude":1,"longitude":0}]}}}`, wantInvalid, "$box needs"},
		{"$geoWithin two shapes", `{"loc":{"$geoWithin":{"$box":[],"$polygon":[]}}}`, wantInvalid, "exactly one of"},
		{"$polygon two points", `{"loc":{"$geoWithin":{"$polygon":[[0,0],[1,1]]}}}`, wantInvalid, "at least 3 points"},
		{"$polygon bad point", `{"loc":{"$geoWithin":{"$polygon":[[0,0],[1,1],"x"]}}}`, wantInvalid, "needs a GeoPoint"},
		{"$centerSphere bad radius", `{"loc":{"$geoWithin":{"$centerSphere":[[0,0],-1]}}}`, wantInvalid, "radius must be"},
		{"$centerSphere bad shape", `{"loc":{"$geoWithin":{"$centerSphere":[0,0,1]}}}`, wantInvalid, "$centerSphere needs"},
		{"$geoIntersects without $point", `{"area":{"$geoIntersects":{"$box":[]}}}`, wantInvalid, "$geoIntersects needs"},
		{"$geoIntersects on GeoPoint", `{"loc":{"$geoIntersects":{"$point":{"__type":"GeoPoint","latitude":1,"longitude":0}}}}`, wantInvalid, "needs a Polygon field"},
		{"GeoPoint extra key", `{"loc":{"__type":"GeoPoint","latitude":1,"longitude":0,"x":1}}`, wantInvalid, "needs a GeoPoint"},

		// Pointers.
		{"pointer wrong class", `{"artist":{"__type":"Pointer","className":"Album","objectId":"x"}}`, wantPointer, "artist points to Artist, not Album"},
		{"pointer wrong class in $in", `{"artist":{"$in":[{"__type":"Pointer","className":"Album","objectId":"x"}]}}`, wantPointer, "points to Artist"},
		{"pointer storage form", `{"artist":"Artist$a1"}`, wantPointer, `bare objectId "a1"`},
		{"pointer number", `{"artist":5}`, wantPointer, "a pointer must be"},
		{"pointer empty id", `{"artist":""}`, wantPointer, "empty objectId"},
		{"pointer object missing objectId", `{"artist":{"__type":"Pointer","className":"Artist"}}`, wantPointer, "needs string className and objectId"},
		{"pointer object extra key", `{"artist":{"__type":"Pointer","className":"Artist","objectId":"a","name":"x"}}`, wantPointer, `unexpected key "name"`},
		{"non-pointer object on pointer field", `{"artist":{"name":"x"}}`, wantPointer, `without "__type":"Pointer"`},
		{"embedded pointer missing className", `{"meta":{"__type":"Pointer","objectId":"a"}}`, wantPointer, "needs string className"},

		// Cross-class shapes.
		{"$inQuery on non-pointer", `{"title":{"$inQuery":{"className":"Artist","where":{}}}}`, wantInvalid, "needs a Pointer field; title is a String field"},
		{"$inQuery on unknown field", `{"nope":{"$inQuery":{"className":"Artist","where":{}}}}`, wantInvalid, "nope is not a field of this class"},
		{"$inQuery wrong class", `{"artist":{"$inQuery":{"className":"Album","where":{}}}}`, wantInvalid, "is not the class artist points to"},
		{"$inQuery missing className", `{"artist":{"$inQuery":{"where":{}}}}`, wantInvalid, "needs a className"},
		{"$inQuery extra key", `{"artist":{"$inQuery":{"className":"Artist","where":{},"limit":1}}}`, wantInvalid, `unexpected key "limit"`},
		{"$inQuery where not object", `{"artist":{"$inQuery":{"className":"Artist","where":[]}}}`, wantInvalid, "where must be an object"},
		{"$select without key", `{"title":{"$select":{"query":{"className":"Artist"}}}}`, wantInvalid, "$select needs"},
		{"$select _ key", `{"title":{"$select":{"query":{"className":"Artist"},"key":"_p_owner"}}}`, wantInvalid, "use owner, not _p_owner"},
		{"$select bad query", `{"title":{"$select":{"query":"Artist","key":"name"}}}`, wantInvalid, "$select.query needs"},
		{"$relatedTo bad shape", `{"$relatedTo":{"object":"p1","key":"songs"}}`, wantInvalid, "$relatedTo must be"},
		{"$relatedTo bad pointer", `{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist"},"key":"songs"}}`, wantPointer, "needs string className and objectId"},
		{"$relatedTo not a relation", `{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"name"}}`, wantInvalid, "Playlist.name is not a Relation field"},
		{"$relatedTo relation to another class", `{"$relatedTo":{"object":{"__type":"Pointer","className":"_Role","objectId":"r"},"key":"users"}}`, wantInvalid, ""},
		{"relation $exists", `{"likes":{"$exists":true}}`, wantInvalid, "operator $exists is not supported on a relation field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := newWhereFakeSub()
			schema := whereSchema()
			schema.Classes["_Role"] = ClassFromSchemaDoc(bson.M{"_id": "_Role", "name": "string", "users": "relation<_User>"})
			got, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, tc.where), WhereOptions{Schema: schema, Sub: sub})
			if err == nil {
				t.Fatalf("WhereToFilter(%s) = %s, want an error", tc.where, extJSON(t, got))
			}
			if got != nil {
				t.Errorf("a filter was returned along with the error")
			}
			switch tc.kind {
			case wantViolation:
				if _, ok := toolerror.AsViolation(err); !ok {
					t.Fatalf("got %T %v, want *toolerror.Violation", err, err)
				}
				if _, ok := toolerror.As(err); ok {
					t.Fatalf("a violation must not also be an *Error")
				}
			case wantInvalid, wantPointer:
				code := toolerror.InvalidQuery
				if tc.kind == wantPointer {
					code = toolerror.PointerShapeMismatch
				}
				e, ok := toolerror.As(err)
				if !ok || e.Code != code {
					t.Fatalf("got %T %v, want *toolerror.Error code %s", err, err, code)
				}
				if !strings.Contains(e.Message, tc.msg) {
					t.Errorf("message %q does not contain %q", e.Message, tc.msg)
				}
			}
		})
	}
}

func TestWhereToFilterNoSub(t *testing.T) {
	for _, w := range []string{
		`{"artist":{"$inQuery":{"className":"Artist","where":{}}}}`,
		`{"artist":{"$notInQuery":{"className":"Artist","where":{}}}}`,
		`{"title":{"$select":{"query":{"className":"Artist"},"key":"name"}}}`,
		`{"title":{"$dontSelect":{"query":{"className":"Artist"},"key":"name"}}}`,
		`{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"songs"}}`,
		`{"likes":"u1"}`,
	} {
		_, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, w), WhereOptions{})
		e, ok := toolerror.As(err)
		if !ok || e.Code != toolerror.InvalidQuery || !strings.Contains(e.Message, "not available") {
			t.Errorf("%s: got %v, want invalid_query not available", w, err)
		}
	}
}

// Built-in classes without a _SCHEMA document still know the implicit fields.
func TestWhereToFilterBuiltInClassWithoutSchema(t *testing.T) {
	user := &Class{Name: "_User", Fields: map[string]*Field{"username": {Type: TypeString}, "email": {Type: TypeString}}}
	got, err := WhereToFilter(context.Background(), user,
		decodeWhere(t, `{"createdAt":{"$gt":"2024-01-01"},"objectId":"u1","username":"bob"}`), WhereOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := extJSON(t, got), `{"_created_at":{"$gt":{"$date":"2024-01-01T00:00:00Z"}},"_id":"u1","username":"bob"}`; g != want {
		t.Errorf("got %s want %s", g, want)
	}
	// A nil class: everything passes through except the implicit renames.
	got, err = WhereToFilter(context.Background(), nil, decodeWhere(t, `{"updatedAt":"2024-01-01","x":1}`), WhereOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := extJSON(t, got), `{"_updated_at":{"$date":"2024-01-01T00:00:00Z"},"x":1.0}`; g != want {
		t.Errorf("nil class: got %s want %s", g, want)
	}
}

// Wheres built in Go (policy files, canonical filters) use other map and
// number types.
func TestWhereToFilterGoTypes(t *testing.T) {
	w := map[string]any{
		"plays": bson.M{"$gte": 3, "$lt": json.Number("10")},
		"$or":   []map[string]any{{"title": "a"}, {"tags": bson.A{"x"}}},
	}
	got, err := WhereToFilter(context.Background(), whereSong(), w, WhereOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := extJSON(t, got), `{"$or":[{"title":"a"},{"tags":["x"]}],"plays":{"$gte":3,"$lt":10}}`; g != want {
		t.Errorf("got %s want %s", g, want)
	}
}

func TestStorageFieldName(t *testing.T) {
	song := whereSong()
	for in, want := range map[string]string{
		"objectId": "_id", "createdAt": "_created_at", "updatedAt": "_updated_at", "artist": "_p_artist",
		"title": "title", "likes": "likes", "artist.name": "artist.name", "createdAt.x": "createdAt.x",
		"unknown": "unknown", "sessionToken": "_session_token",
	} {
		if got := StorageFieldName(song, in); got != want {
			t.Errorf("StorageFieldName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := StorageFieldName(nil, "artist"); got != "artist" {
		t.Errorf("nil class: %q", got)
	}
}

func TestPointerStorageValue(t *testing.T) {
	f := &Field{Name: "artist", Type: TypePointer, TargetClass: "Artist"}
	ok := []struct {
		in   any
		want string
	}{
		{"a1", "Artist$a1"},
		{map[string]any{"__type": "Pointer", "className": "Artist", "objectId": "a1"}, "Artist$a1"},
		{bson.M{"__type": "Pointer", "className": "Artist", "objectId": "a1"}, "Artist$a1"},
	}
	for _, tc := range ok {
		got, err := PointerStorageValue(f, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("PointerStorageValue(%v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// No target class known: only Pointer objects work.
	untyped := &Field{Name: "p"}
	if got, err := PointerStorageValue(untyped, map[string]any{"__type": "Pointer", "className": "X", "objectId": "1"}); err != nil || got != "X$1" {
		t.Errorf("untyped pointer object: %q %v", got, err)
	}
	bad := []any{"", "Artist$a1", 3, nil, []any{"a"}, map[string]any{"__type": "Pointer", "className": "Album", "objectId": "a"},
		map[string]any{"className": "Artist", "objectId": "a"}, map[string]any{"__type": "Pointer", "className": "Artist", "objectId": "a$b"}}
	for _, in := range bad {
		_, err := PointerStorageValue(f, in)
		if e, ok := toolerror.As(err); !ok || e.Code != toolerror.PointerShapeMismatch {
			t.Errorf("PointerStorageValue(%v): got %v, want pointer_shape_mismatch", in, err)
		}
	}
	if _, err := PointerStorageValue(untyped, "a1"); err == nil {
		t.Errorf("bare id without a target class must fail")
	}
}

func TestIsInternalField(t *testing.T) {
	for _, n := range []string{"_hashed_password", "_password_history", "_session_token", "sessionToken",
		"_email_verify_token", "_email_verify_token_expires_at", "_perishable_token", "_perishable_token_expires_at",
		"_failed_login_count", "_account_lockout_expires_at", "_rperm", "_wperm", "_acl", "_tombstone", "authData",
		"_auth_data", "_auth_data_facebook"} {
		if !IsInternalField(n) {
			t.Errorf("IsInternalField(%q) = false", n)
		}
	}
	for _, n := range []string{"", "username", "email", "_id", "_p_user", "_created_at", "ACL", "auth", "AuthData", "session_token", "x_auth_data"} {
		if IsInternalField(n) {
			t.Errorf("IsInternalField(%q) = true", n)
		}
	}
	if !IsInternalPath("meta.authData.x") || IsInternalPath("meta.a.b") {
		t.Errorf("IsInternalPath")
	}
	if len(InternalFieldNames()) != 16 {
		t.Errorf("InternalFieldNames: %v", InternalFieldNames())
	}
}

func TestHasNestedQuantifier(t *testing.T) {
	bad := []string{`(a+)+`, `(a*)*`, `(a|aa)+`, `(\w+)*`, `(a+)*b`, `((a+))+`, `(a?){3}`, `(?:x+y)+`, `(?<n>a+)+`,
		`(a|a)*`, `(|a)+`, `(x|.)+`, `(A|a)+`, `(\d+\.)+`, `([a-z]+)+`, `(a{2,})+`, `((ab)?c){2,5}`}
	for _, p := range bad {
		if !hasNestedQuantifier(p) {
			t.Errorf("hasNestedQuantifier(%q) = false", p)
		}
	}
	good := []string{``, `abc`, `^a+b*$`, `(ab)+`, `(red|blue)+`, `(a+)?`, `(a+){1}`, `(a+){0,1}`, `\(a+\)+`, `[(a+)]+`,
		`(a+)`, `a{2,3}`, `(?i)hello`, `(a+)b+`, `((a)(b))+`, `(a){x}`, `[\]]+(x)+`, `(`, `)`, `a)+`, `\`, `[abc`}
	for _, p := range good {
		if hasNestedQuantifier(p) {
			t.Errorf("hasNestedQuantifier(%q) = true", p)
		}
	}
}

func TestWhereToFilterDeterministic(t *testing.T) {
	w := `{"title":{"$in":["b","a"],"$exists":true},"plays":{"$gt":1},"$or":[{"z":1,"a":2}],"tags":{"$containedBy":["x"]},"meta.k":{"c":1,"b":2}}`
	first := ""
	for i := range 20 {
		got, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, w), WhereOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := extJSON(t, got)
		if i == 0 {
			first = s
		} else if s != first {
			t.Fatalf("non-deterministic output:\n%s\n%s", first, s)
		}
	}
}

func ExampleWhereToFilter() {
	var where map[string]any
	_ = json.Unmarshal([]byte(`{"artist":"a1","releasedAt":{"$gte":"2020-01-01"},"title":{"$regex":"^love","$options":"i"}}`), &where)
	song := &Class{Name: "Song", Fields: map[string]*Field{
		"artist":     {Name: "artist", Type: TypePointer, TargetClass: "Artist"},
		"releasedAt": {Name: "releasedAt", Type: TypeDate},
		"title":      {Name: "title", Type: TypeString},
	}}
	filter, err := WhereToFilter(context.Background(), song, where, WhereOptions{})
	if err != nil {
		panic(err)
	}
	b, _ := bson.MarshalExtJSON(filter, false, false)
	fmt.Println(string(b))
	// Output: {"_p_artist":"Artist$a1","releasedAt":{"$gte":{"$date":"2020-01-01T00:00:00Z"}},"title":{"$regex":"^love","$options":"i"}}
}
