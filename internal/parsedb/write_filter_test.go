package parsedb

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestWriteFilterLoneID: an update's or delete's filter is a lone _id when
// the scope the object was read through is that _id (FerretDB 1.24 serves
// only that shape from the _id index: under an $and it reads the whole
// collection); any other scope is AND-ed.
func TestWriteFilterLoneID(t *testing.T) {
	wperm := bson.D{{Key: "_wperm", Value: bson.D{{Key: "$in", Value: bson.A{nil, "*"}}}}}
	for _, tc := range []struct {
		name  string
		scope bson.D
		want  bson.D
	}{
		{"no scope", nil, bson.D{{Key: "_id", Value: "a1"}}},
		{"the id itself", bson.D{{Key: "_id", Value: "a1"}}, bson.D{{Key: "_id", Value: "a1"}}},
		{"another id", bson.D{{Key: "_id", Value: "b2"}}, bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "_id", Value: "a1"}}, bson.D{{Key: "_id", Value: "b2"}}}}}},
		{"a write scope", wperm, bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "_id", Value: "a1"}}, wperm}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := bson.MarshalExtJSON(writeFilter(&WriteRequest{ObjectID: "a1", Scope: tc.scope}), true, false)
			want, _ := bson.MarshalExtJSON(tc.want, true, false)
			if string(got) != string(want) {
				t.Fatalf("filter %s, want %s", got, want)
			}
		})
	}
}
