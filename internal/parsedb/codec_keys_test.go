package parsedb

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A hidden reference used as an object KEY ({"StudentSSN$x9x9x9x9x9": true}, a map
// keyed by object) is redacted like one used as a value: the member becomes
// "__redacted_<n>": marker (SECURITY.md "Hidden references").

func TestHiddenReferenceKeysAreRedacted(t *testing.T) {
	song := songClass()
	cases := []struct {
		name string
		doc  bson.D
		keys []string
		want string
	}{
		{"key in an Object field",
			bson.D{{Key: "_id", Value: "s1"}, {Key: "meta", Value: bson.D{{Key: "seen", Value: bson.D{{Key: "StudentSSN$x9x9x9x9x9", Value: true}, {Key: "Artist$a1", Value: false}}}}}},
			nil, `{"objectId":"s1","meta":{"seen":{"__redacted_1":{"__redacted":true},"Artist$a1":false}}}`},
		{"two keys numbered per object, value replaced whatever it holds",
			bson.D{{Key: "_id", Value: "s1"}, {Key: "meta", Value: bson.D{
				{Key: "StudentSSN$x9x9x9x9x9", Value: bson.D{{Key: "apiKey", Value: "k-1"}}},
				{Key: "n", Value: 1},
				{Key: "StudentSSN$y8y8y8y8y8", Value: bson.A{"k-2"}},
			}}},
			nil, `{"objectId":"s1","meta":{"__redacted_1":{"__redacted":true},"n":1,"__redacted_2":{"__redacted":true}}}`},
		{"key inside an array element, deep",
			bson.D{{Key: "_id", Value: "s1"}, {Key: "tags", Value: bson.A{bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: bson.D{{Key: "StudentSSN$x9x9x9x9x9", Value: 3}}}}}}}}},
			nil, `{"objectId":"s1","tags":[{"a":{"b":{"__redacted_1":{"__redacted":true}}}}]}`},
		{"top-level key (not a Parse field name, but storable)",
			bson.D{{Key: "_id", Value: "s1"}, {Key: "StudentSSN$x9x9x9x9x9", Value: "v"}, {Key: "title", Value: "t"}},
			nil, `{"objectId":"s1","__redacted_1":{"__redacted":true},"title":"t"}`},
		{"selected by a key path",
			bson.D{{Key: "_id", Value: "s1"}, {Key: "meta", Value: bson.D{{Key: "seen", Value: bson.D{{Key: "StudentSSN$x9x9x9x9x9", Value: true}}}}}},
			[]string{"meta.seen"}, `{"objectId":"s1","meta":{"seen":{"__redacted_1":{"__redacted":true}}}}`},
		{"visible class and non-reference keys stay",
			bson.D{{Key: "_id", Value: "s1"}, {Key: "meta", Value: bson.D{{Key: "Ke$ha", Value: 1}, {Key: "Artist$a1", Value: 2}}}},
			nil, `{"objectId":"s1","meta":{"Ke$ha":1,"Artist$a1":2}}`},
	}
	for _, c := range cases {
		for _, compact := range []bool{false, true} {
			enc := RowEncoder{Class: song, HiddenClass: hideSSN}
			if compact {
				enc.Compact, enc.Legend = true, &Legend{}
			}
			if c.keys != nil {
				enc.SelectKeys(c.keys)
			}
			out, err := enc.AppendRow(nil, mustRaw(t, c.doc))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if string(out) != c.want {
				t.Errorf("%s (compact %v):\n got %s\nwant %s", c.name, compact, out, c.want)
			}
		}
	}
}

// FuzzHiddenReferenceRedaction: random documents holding hidden references
// in keys, values and array elements at depth 1–8 never show the hidden
// class name or an id, and encode to valid JSON.
func FuzzHiddenReferenceRedaction(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1000} {
		f.Add(seed, uint8(4))
	}
	song := songClass()
	f.Fuzz(func(t *testing.T, seed uint64, depth uint8) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		maxDepth := 1 + int(depth)%8
		var gen func(d int) any
		ref := func() string { return "StudentSSN$secsecsecs" + string(rune('A'+r.IntN(26))) + "id" }
		gen = func(d int) any {
			if d >= maxDepth {
				switch r.IntN(3) {
				case 0:
					return ref()
				case 1:
					return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "StudentSSN"}, {Key: "objectId", Value: "secXid"}}
				default:
					return "plain"
				}
			}
			switch r.IntN(3) {
			case 0:
				a := bson.A{}
				for range 1 + r.IntN(3) {
					a = append(a, gen(d+1))
				}
				return a
			default:
				doc := bson.D{}
				for i := range 1 + r.IntN(3) {
					key := "k" + string(rune('a'+i))
					if r.IntN(2) == 0 {
						key = ref() + string(rune('a'+i))
					}
					doc = append(doc, bson.E{Key: key, Value: gen(d + 1)})
				}
				return doc
			}
		}
		doc := bson.D{{Key: "_id", Value: "s1"}, {Key: "meta", Value: gen(1)}, {Key: "tags", Value: bson.A{gen(1)}}}
		for _, compact := range []bool{false, true} {
			enc := RowEncoder{Class: song, HiddenClass: hideSSN}
			if compact {
				enc.Compact, enc.Legend = true, &Legend{}
			}
			out, err := enc.AppendRow(nil, mustRaw(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(out) {
				t.Fatalf("invalid JSON %s", out)
			}
			if strings.Contains(string(out), "StudentSSN") || strings.Contains(string(out), "sec") {
				t.Fatalf("hidden reference shown: %s", out)
			}
		}
	})
}

// TestFreeTextIsNotAReference pins the decision of SECURITY.md "Free text
// is not a reference": a "Hidden$id" inside a longer string is user text
// and is shown as stored; only whole values and keys are references.
func TestFreeTextIsNotAReference(t *testing.T) {
	enc := RowEncoder{Class: songClass(), HiddenClass: hideSSN}
	doc := bson.D{{Key: "_id", Value: "s1"}, {Key: "title", Value: "rotated StudentSSN$x9x9x9x9x9 ok"},
		{Key: "tags", Value: bson.A{"x StudentSSN$x9x9x9x9x9", "StudentSSN$x9x9x9x9x9"}}}
	out, err := enc.AppendRow(nil, mustRaw(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"objectId":"s1","title":"rotated StudentSSN$x9x9x9x9x9 ok","tags":["x StudentSSN$x9x9x9x9x9",{"__redacted":true}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
