package parsedb

import (
	"bytes"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The command registry writes the bytes the driver's default registry
// writes, for every shape of value this package puts in a command.
func TestCommandRegistryEncodesAsDefault(t *testing.T) {
	when := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		doc  any
	}{
		{"filter with $and and a regex", bson.D{{Key: "$and", Value: bson.A{
			bson.D{{Key: "genre", Value: "rock"}, {Key: "$and", Value: bson.A{bson.D{{Key: "genre", Value: bson.D{{Key: "$not", Value: bson.Regex{Pattern: `^(?:A|B)\$[A-Za-z0-9_-]{10,32}\z`}}}}}}}},
			bson.D{{Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}}},
		}}}},
		{"pipeline as []bson.D", bson.D{{Key: "aggregate", Value: "Song"}, {Key: "pipeline", Value: []bson.D{
			{{Key: "$match", Value: bson.D{{Key: "n", Value: int64(3)}}}},
			{{Key: "$group", Value: bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		}}, {Key: "cursor", Value: bson.D{}}}},
		{"[]any with nil, numbers, dates, nested slices", bson.D{{Key: "v", Value: []any{nil, 1, int32(2), int64(3), 4.5, "x", true, when, bson.DateTime(7), bson.A{"a", nil}, []string{"b", "c"}, bson.D{{Key: "k", Value: []any{}}}, bson.M{"m": 1}, []byte("bin"), bson.Binary{Subtype: 4, Data: []byte{1}}}}}},
		{"$in of strings", bson.D{{Key: "_rperm", Value: bson.D{{Key: "$in", Value: []string{"*", "role:admin", "u1"}}}}}},
		{"nil and empty slices", bson.D{{Key: "a", Value: bson.A(nil)}, {Key: "b", Value: []any(nil)}, {Key: "c", Value: []string(nil)}, {Key: "d", Value: bson.A{}}, {Key: "e", Value: []string{}}, {Key: "f", Value: []bson.D(nil)}}},
		{"slices the registry leaves to the default codec, inside registered ones", bson.D{{Key: "a", Value: []any{[]int{1}, []float64{1.5}, [][]string{{"x"}, nil}, []bson.E{{Key: "k", Value: 1}}, []bson.M{{"m": []any{nil}}, nil}, []*bson.D{nil, {{Key: "q", Value: 1}}}, mongo.Pipeline{{{Key: "$match", Value: bson.D{}}}}}}}},
		{"nil typed values inside []any", bson.D{{Key: "a", Value: bson.A{[]bson.D(nil), bson.A(nil), []string(nil), []byte(nil), (*bson.D)(nil), map[string]any(nil)}}}},
		{"structs with slices", bson.D{{Key: "a", Value: []any{struct {
			A []string `bson:"a,omitempty"`
			B bson.A
		}{B: bson.A{[]string{}}}}}}},
		{"a bson.D inside a bson.A inside a bson.D", bson.D{{Key: "x", Value: bson.A{bson.D{{Key: "y", Value: bson.A{bson.D{{Key: "z", Value: bson.A{1}}}}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := bson.Marshal(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			enc := bson.NewEncoder(bson.NewDocumentWriter(&buf))
			enc.SetRegistry(commandRegistry)
			if err := enc.Encode(tt.doc); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("bytes differ:\n got %s\nwant %s", bson.Raw(buf.Bytes()), bson.Raw(want))
			}
		})
	}
}

// NewObjectID draws each of its ten characters uniformly from A-Za-z0-9.
func TestNewObjectIDUniform(t *testing.T) {
	counts := map[rune]int{}
	const ids = 20000
	for range ids {
		id := NewObjectID()
		if len(id) != 10 {
			t.Fatalf("id %q: want 10 characters", id)
		}
		for _, r := range id {
			counts[r]++
		}
	}
	want := ids * 10 / len(objectIDAlphabet)
	for _, r := range objectIDAlphabet {
		if c := counts[r]; c < want*85/100 || c > want*115/100 {
			t.Errorf("%q drawn %d times, want about %d", r, c, want)
		}
	}
	if len(counts) != len(objectIDAlphabet) {
		t.Errorf("%d distinct characters, want %d", len(counts), len(objectIDAlphabet))
	}
}
