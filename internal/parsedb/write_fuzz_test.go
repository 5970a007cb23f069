package parsedb

import (
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FuzzPlanWrite feeds arbitrary field values to the encoder: it must never
// panic, and whatever it accepts must store no top-level key Parse does not
// write (only _id, _p_<field>, _rperm, _wperm, _acl, _created_at,
// _updated_at start with _) and no nested key with $ or a dot.
func FuzzPlanWrite(f *testing.F) {
	for _, s := range []string{
		`{"title":"a"}`, `{"n":{"__op":"Increment","amount":1e308}}`, `{"author":"x"}`,
		`{"m":{"a":{"__type":"Date","iso":"2020-01-01T00:00:00Z"}}}`, `{"loc":[1,2]}`,
		`{"tags":{"__op":"AddUnique","objects":[1,"a",{"k":[]}]}}`, `{"x":{"$gt":1}}`, `{"x":{"a.b":1}}`,
		`{"readers":{"__op":"AddRelation","objects":[{"__type":"Pointer","className":"_User","objectId":"u"}]}}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, fields string, update bool) {
		var m map[string]any
		if json.Unmarshal([]byte(fields), &m) != nil {
			return
		}
		existing, _ := bson.Marshal(bson.D{{Key: "_id", Value: "ID"}, {Key: "tags", Value: bson.A{"x"}}})
		op := WriteCreateObject
		if update {
			op = WriteUpdateObject
		}
		p, err := Plan(&WriteRequest{Op: op, ClassName: "Note", Class: noteClass(), ObjectID: "ID", Existing: existing, Fields: m}, writeNow)
		if err != nil {
			return
		}
		check := func(d bson.D) {
			for _, e := range d {
				switch {
				case e.Key == "_id", e.Key == "_rperm", e.Key == "_wperm", e.Key == "_acl", e.Key == "_created_at", e.Key == "_updated_at":
				case strings.HasPrefix(e.Key, "_p_") && ValidFieldName(e.Key[3:]):
				case strings.HasPrefix(e.Key, "_") || !ValidFieldName(e.Key):
					t.Fatalf("stored key %q from %s", e.Key, fields)
				}
				nested(t, e.Value, fields)
			}
		}
		if p.Document != nil {
			check(p.Document)
		}
		for _, part := range p.Update {
			check(part.Value.(bson.D))
		}
	})
}

func nested(t *testing.T, v any, input string) {
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if strings.ContainsAny(e.Key, "$.") && e.Key != "$each" {
				t.Fatalf("nested key %q from %s", e.Key, input)
			}
			nested(t, e.Value, input)
		}
	case bson.A:
		for _, e := range x {
			nested(t, e, input)
		}
	}
}
