package parsedb

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// whereFuzzSeeds cover every operator and the refusal paths, so the fuzzer
// starts from inputs that reach deep into the translator.
var whereFuzzSeeds = []string{
	`{}`,
	`{"title":"Hey Jude","plays":{"$gt":1,"$lte":10}}`,
	`{"objectId":{"$in":["a","b"]},"createdAt":{"$gte":"2024-01-01T00:00:00Z"}}`,
	`{"updatedAt":{"$lt":{"__type":"Date","iso":"2024-02-01T00:00:00.000Z"}}}`,
	`{"releasedAt":{"$ne":null,"$gt":"2020-01-01"}}`,
	`{"artist":"a1"}`,
	`{"artist":{"__type":"Pointer","className":"Artist","objectId":"a1"}}`,
	`{"artist":{"$in":["a1",{"__type":"Pointer","className":"Artist","objectId":"a2"}],"$nin":["a3"],"$eq":"a4","$ne":null}}`,
	`{"tags":"rock","meta.genre":{"$exists":true}}`,
	`{"tags":{"$all":["a","b"]},"$nor":[{"title":"x"}]}`,
	`{"tags":{"$containedBy":["a","b"]}}`,
	`{"title":{"$regex":"^a(b|c)+$","$options":"im"}}`,
	`{"title":{"$regex":"(a+)+"}}`,
	`{"title":{"$regex":"a","$options":"s"}}`,
	`{"title":{"$text":{"$search":{"$term":"love","$language":"en","$caseSensitive":false,"$diacriticSensitive":true}}}}`,
	`{"$text":{"$search":{"$term":"x"}}}`,
	`{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":2},"$maxDistanceInKilometers":10}}`,
	`{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":2},"$maxDistanceInMiles":10}}`,
	`{"loc":{"$within":{"$box":[{"__type":"GeoPoint","latitude":1,"longitude":2},{"__type":"GeoPoint","latitude":3,"longitude":4}]}}}`,
	`{"loc":{"$geoWithin":{"$polygon":[[0,0],[1,0],[1,1]]}}}`,
	`{"loc":{"$geoWithin":{"$polygon":{"__type":"Polygon","coordinates":[[0,0],[1,0],[1,1]]}}}}`,
	`{"loc":{"$geoWithin":{"$centerSphere":[[1,2],0.1]}}}`,
	`{"area":{"$geoIntersects":{"$point":{"__type":"GeoPoint","latitude":1,"longitude":2}}}}`,
	`{"$or":[{"title":"a"},{"$and":[{"plays":1},{"$nor":[{"tags":"x"}]}]}]}`,
	`{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"songs"}}`,
	`{"artist":{"$inQuery":{"className":"Artist","where":{"name":"x"}}}}`,
	`{"artist":{"$notInQuery":{"className":"Artist","where":{"name":{"$in":["x"]}}}}}`,
	`{"title":{"$select":{"query":{"className":"Artist","where":{}},"key":"name"}}}`,
	`{"title":{"$dontSelect":{"query":{"className":"Artist"},"key":"name"}}}`,
	`{"likes":{"__type":"Pointer","className":"_User","objectId":"u1"}}`,
	`{"likes":{"$in":["u1","u2"]}}`,
	`{"meta":{"a":{"__type":"Date","iso":"2020-01-01T00:00:00Z"},"b":{"__type":"Bytes","base64":"AQI="}}}`,
	`{"cover":{"__type":"File","name":"x.png"},"loc":{"__type":"GeoPoint","latitude":0,"longitude":0}}`,
	`{"$where":"sleep(1)"}`,
	`{"title":{"$expr":{}}}`,
	`{"$or":[{"$function":{}}]}`,
	`{"_hashed_password":"x"}`,
	`{"meta.authData":1}`,
	`{"_p_artist":"Artist$a1"}`,
	`{"ACL":{"$exists":true}}`,
	`{"meta":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":1}}}}}}}}}`,
	`{"tags":{"$elemMatch":{"$eq":1}}}`,
	`{"meta":{"$exists":true,"a":1}}`,
}

func FuzzWhereToFilter(f *testing.F) {
	for _, s := range whereFuzzSeeds {
		f.Add(s)
	}
	song := whereSong()
	schema := whereSchema()
	f.Fuzz(func(t *testing.T, s string) {
		var where map[string]any
		if err := json.Unmarshal([]byte(s), &where); err != nil {
			return
		}
		checkWhereInvariants(t, song, schema, where, s)
	})
}

// checkWhereInvariants translates where and asserts the translator's
// security and robustness properties.
func checkWhereInvariants(t *testing.T, song *Class, schema *Schema, where map[string]any, label string) {
	t.Helper()
	sub := &whereFakeOwners{whereFakeSub: *newWhereFakeSub(), owners: []string{"o1"}}
	sub.values = []any{"v", 1.5, nil, map[string]any{"k": "v"}}
	// Like the real implementation, translate inner wheres recursively.
	sub.selfTest = func(className string, inner map[string]any) error {
		_, err := WhereToFilter(context.Background(), schema.Class(className), inner, WhereOptions{Schema: schema, Sub: sub})
		return err
	}
	filter, err := WhereToFilter(context.Background(), song, where, WhereOptions{Schema: schema, Sub: sub})
	if err != nil {
		if filter != nil {
			t.Fatalf("%s: filter returned with error %v", label, err)
		}
		_, isErr := toolerror.As(err)
		_, isViolation := toolerror.AsViolation(err)
		if isErr == isViolation {
			t.Fatalf("%s: error is neither a *toolerror.Error nor a *toolerror.Violation (or both): %T %v", label, err, err)
		}
		return
	}
	if filter == nil {
		t.Fatalf("%s: nil filter without error", label)
	}
	raw, err := bson.Marshal(filter)
	if err != nil {
		t.Fatalf("%s: filter does not marshal: %v", label, err)
	}
	if msg := walkFilterKeys(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: raw}, 0); msg != "" {
		t.Fatalf("input %s produced %s: %s", label, bson.Raw(raw).String(), msg)
	}
	// The sub-queries only ever see wheres that pass the same floor.
	for _, c := range sub.calls {
		for _, a := range c.Args {
			if m, ok := a.(map[string]any); ok {
				if err := checkWhereSafety(m, 0, 0); err != nil {
					t.Fatalf("%s: sub-query received an unsafe where: %v", label, err)
				}
			}
		}
		if c.Method == "SelectValues" {
			if k := c.Args[2].(string); IsInternalPath(k) || strings.HasPrefix(k, "_") {
				t.Fatalf("%s: SelectValues received key %q", label, k)
			}
		}
	}
	// Deterministic: the same input yields the same bytes.
	again, err := WhereToFilter(context.Background(), song, where, WhereOptions{Schema: schema, Sub: sub})
	if err != nil {
		t.Fatalf("%s: second run failed: %v", label, err)
	}
	raw2, _ := bson.Marshal(again)
	if string(raw) != string(raw2) {
		t.Fatalf("%s: non-deterministic output", label)
	}
}

// The byte-level fuzzer mostly produces invalid JSON; this generator builds
// random where trees from the translator's own vocabulary so every branch is
// reached with hostile combinations. WHERE_RANDOM_N raises the count.
func TestWhereToFilterRandomTrees(t *testing.T) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("WHERE_RANDOM_N")); err == nil && v > 0 {
		n = v
	}
	song, schema := whereSong(), whereSchema()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		where := randomWhere(rng, 0)
		b, err := json.Marshal(where)
		if err != nil {
			t.Fatal(err)
		}
		// Round-trip through JSON so the input has exactly the decoded types.
		var decoded map[string]any
		if err := json.Unmarshal(b, &decoded); err != nil {
			t.Fatal(err)
		}
		checkWhereInvariants(t, song, schema, decoded, string(b))
	}
}

var (
	randFieldKeys = []string{"title", "plays", "releasedAt", "tags", "artist", "likes", "loc", "meta", "area", "cover", "blob",
		"objectId", "createdAt", "updatedAt", "unknown", "meta.a", "tags.0"}
	randHostileKeys = []string{"artist.name", "_p_artist", "_id", "_rperm", "authData", "ACL", "sessionToken", "_auth_data_x",
		"meta._acl", "meta.$where", "", "9x", "a..b"}
	randFieldOps = []string{"$eq", "$ne", "$lt", "$lte", "$gt", "$gte", "$in", "$nin", "$all", "$exists", "$regex", "$options",
		"$text", "$nearSphere", "$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers",
		"$within", "$geoWithin", "$geoIntersects", "$inQuery", "$notInQuery", "$select", "$dontSelect", "$containedBy"}
	randHostileOps = []string{"$elemMatch", "$not", "$size", "$where", "$expr", "$function", "$accumulator", "$or", "$box", "$search"}
	randTopOps     = []string{"$or", "$and", "$nor", "$relatedTo", "$text"}
	randStrings    = []string{"", "a1", "rock", "Artist$a1", "2020-01-01", "2020-01-01T00:00:00Z", "not a date", "(a+)+", "^a(b|c)*$",
		"(a|aa)+", "imx", "s", "i", "Artist", "_User", "Playlist", "_SCHEMA", "name", "songs", "_hashed_password", "authData.x",
		"u1"}
	randClasses = []string{"Artist", "_User", "Playlist", "Song", "_SCHEMA", "_Join:x:y", "Nope", ""}
)

// hostile decides, rarely, to plant something the translator must refuse.
func hostile(rng *rand.Rand) bool { return rng.IntN(40) == 0 }

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func randomWhere(rng *rand.Rand, depth int) map[string]any {
	w := map[string]any{}
	for n := rng.IntN(3) + 1; n > 0; n-- {
		if depth > 5 {
			w[pick(rng, randFieldKeys)] = pick(rng, randStrings)
			continue
		}
		if rng.IntN(5) == 0 {
			op := pick(rng, randTopOps)
			if hostile(rng) {
				op = pick(rng, []string{"$where", "$expr", "$comment"})
			}
			switch op {
			case "$or", "$and", "$nor":
				arr := []any{}
				for k := rng.IntN(3); k >= 0; k-- {
					arr = append(arr, randomWhere(rng, depth+2))
				}
				w[op] = arr
			case "$relatedTo":
				w[op] = map[string]any{"object": randomTyped(rng, "Pointer"), "key": pick(rng, randStrings)}
			default:
				w[op] = randomValue(rng, depth+1)
			}
			continue
		}
		key := pick(rng, randFieldKeys)
		if hostile(rng) {
			key = pick(rng, randHostileKeys)
		}
		if rng.IntN(2) == 0 {
			w[key] = randomValue(rng, depth+1)
			continue
		}
		ops := map[string]any{}
		for k := rng.IntN(3) + 1; k > 0; k-- {
			op := pick(rng, randFieldOps)
			if hostile(rng) {
				op = pick(rng, randHostileOps)
			}
			ops[op] = randomOperand(rng, depth+2)
		}
		w[key] = ops
	}
	return w
}

func randomOperand(rng *rand.Rand, depth int) any {
	switch rng.IntN(10) {
	case 0:
		return map[string]any{"className": pick(rng, randClasses), "where": randomWhere(rng, depth+1)}
	case 1:
		return map[string]any{"query": map[string]any{"className": pick(rng, randClasses), "where": randomWhere(rng, depth+2)}, "key": pick(rng, randStrings)}
	case 2:
		return map[string]any{"$search": map[string]any{"$term": pick(rng, randStrings), "$language": "en", "$caseSensitive": rng.IntN(2) == 0}}
	case 3:
		shape := pick(rng, []string{"$box", "$polygon", "$centerSphere", "$point", "$center"})
		return map[string]any{shape: []any{randomTyped(rng, "GeoPoint"), randomTyped(rng, "GeoPoint"), randomValue(rng, depth+1)}}
	case 4:
		return map[string]any{"$point": randomTyped(rng, "GeoPoint")}
	case 5:
		return map[string]any{"$centerSphere": []any{[]any{rng.Float64()*360 - 180, rng.Float64()*180 - 90}, rng.Float64()}}
	}
	return randomValue(rng, depth)
}

func randomTyped(rng *rand.Rand, ty string) map[string]any {
	switch ty {
	case "Pointer":
		m := map[string]any{"__type": "Pointer", "className": pick(rng, randClasses), "objectId": pick(rng, randStrings)}
		if rng.IntN(8) == 0 {
			delete(m, "objectId")
		}
		return m
	case "Date":
		return map[string]any{"__type": "Date", "iso": pick(rng, randStrings)}
	case "GeoPoint":
		return map[string]any{"__type": "GeoPoint", "latitude": rng.Float64()*200 - 100, "longitude": rng.Float64()*400 - 200}
	case "Polygon":
		return map[string]any{"__type": "Polygon", "coordinates": []any{[]any{1.0, 2.0}, []any{3.0, 4.0}, []any{5.0, 6.0}}}
	case "File":
		return map[string]any{"__type": "File", "name": pick(rng, randStrings)}
	case "Bytes":
		return map[string]any{"__type": "Bytes", "base64": pick(rng, []string{"AQI=", "!!"})}
	}
	return map[string]any{"__type": ty}
}

func randomValue(rng *rand.Rand, depth int) any {
	if depth > 12 {
		return nil
	}
	switch rng.IntN(12) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return rng.Float64() * 1000
	case 3, 4:
		return pick(rng, randStrings)
	case 5:
		arr := []any{}
		for k := rng.IntN(4); k > 0; k-- {
			arr = append(arr, randomValue(rng, depth+1))
		}
		return arr
	case 6:
		return randomTyped(rng, pick(rng, []string{"Pointer", "Date", "GeoPoint", "Polygon", "File", "Bytes", "Relation"}))
	case 7:
		m := map[string]any{}
		for k := rng.IntN(3); k > 0; k-- {
			key := pick(rng, []string{"a", "b", "c", "d"})
			if hostile(rng) {
				key = pick(rng, []string{"a.b", "_acl", "$gt", ""})
			}
			m[key] = randomValue(rng, depth+1)
		}
		return m
	case 8:
		if depth < 4 {
			return randomWhere(rng, depth+1)
		}
	}
	return float64(rng.IntN(5))
}

// walkFilterKeys checks every key of a marshaled filter at any depth.
func walkFilterKeys(v bson.RawValue, depth int) string {
	if depth > 64 {
		return "absurd depth"
	}
	var vals []bson.RawValue
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		elems, err := v.Document().Elements()
		if err != nil {
			return err.Error()
		}
		for _, e := range elems {
			k := e.Key()
			for seg := range strings.SplitSeq(k, ".") {
				if isForbiddenWhereOp(seg) {
					return "forbidden operator key " + k
				}
				if IsInternalField(seg) {
					return "internal field key " + k
				}
			}
			if k == "$options" {
				if o, ok := e.Value().StringValueOK(); !ok || strings.Trim(o, "imx") != "" {
					return "bad $options"
				}
			}
			if k == "$regex" {
				if p, ok := e.Value().StringValueOK(); !ok || len([]rune(p)) > MaxRegexLength || UnsafeRegex(p) {
					return "bad $regex"
				}
			}
			vals = append(vals, e.Value())
		}
	case bson.TypeArray:
		elems, err := v.Array().Values()
		if err != nil {
			return err.Error()
		}
		vals = elems
	}
	for _, c := range vals {
		if msg := walkFilterKeys(c, depth+1); msg != "" {
			return msg
		}
	}
	return ""
}
