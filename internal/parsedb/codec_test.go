package parsedb

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func mustRaw(t testing.TB, doc any) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(doc)
	if err != nil {
		t.Fatalf("bson.Marshal: %v", err)
	}
	return b
}

func songClass() *Class {
	return ClassFromSchemaDoc(bson.M{
		"_id": "Song", "title": "string", "artist": "*Artist", "album": "*Album", "genre": "string",
		"plays": "number", "releasedAt": "date", "tags": "array", "explicit": "boolean", "orgId": "string",
		"meta": "object", "cover": "file", "loc": "geopoint", "area": "polygon", "blob": "bytes",
		"fans": "relation<_User>", "secret": "*StudentSSN",
	})
}

var (
	tCreated  = time.Date(2024, 3, 5, 7, 8, 9, 123_000_000, time.UTC)
	tUpdated  = time.Date(2024, 3, 6, 10, 11, 12, 0, time.UTC)
	tReleased = time.Date(1999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
)

const (
	isoCreated  = "2024-03-05T07:08:09.123Z"
	isoUpdated  = "2024-03-06T10:11:12.000Z"
	isoReleased = "1999-12-31T23:59:59.999Z"
)

func hideSSN(c string) bool { return c == "StudentSSN" || c == "_Session" }

func TestAppendRow(t *testing.T) {
	song := songClass()
	oid, _ := bson.ObjectIDFromHex("65f0c1a2b3c4d5e6f7a8b9c0")
	cases := []struct {
		name string
		enc  RowEncoder
		doc  bson.D
		want string
	}{
		{
			name: "typical row, identity first, stored order, ACL and internals removed",
			enc:  RowEncoder{Class: song},
			doc: bson.D{
				{Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{}},
				{Key: "_acl", Value: bson.M{"*": bson.M{"r": true}}},
				{Key: "title", Value: "Blue"}, {Key: "_p_artist", Value: "Artist$a1"},
				{Key: "plays", Value: int32(42)}, {Key: "releasedAt", Value: tReleased},
				{Key: "_updated_at", Value: tUpdated}, {Key: "_id", Value: "xYz0123456"},
				{Key: "tags", Value: bson.A{"a", "b"}}, {Key: "explicit", Value: false},
				{Key: "_created_at", Value: tCreated},
			},
			want: `{"objectId":"xYz0123456","createdAt":"` + isoCreated + `","updatedAt":"` + isoUpdated +
				`","title":"Blue","artist":{"__type":"Pointer","className":"Artist","objectId":"a1"},"plays":42,` +
				`"releasedAt":{"__type":"Date","iso":"` + isoReleased + `"},"tags":["a","b"],"explicit":false}`,
		},
		{
			name: "ObjectId _id rendered as hex",
			doc:  bson.D{{Key: "_id", Value: oid}, {Key: "owningId", Value: "r1"}},
			want: `{"objectId":"65f0c1a2b3c4d5e6f7a8b9c0","owningId":"r1"}`,
		},
		{
			name: "numeric _id rendered as a string",
			doc:  bson.D{{Key: "_id", Value: int32(1)}, {Key: "params", Value: bson.D{{Key: "a", Value: int32(1)}}}},
			want: `{"objectId":"1","params":{"a":1}}`,
		},
		{
			name: "legacy createdAt/updatedAt date keys",
			doc:  bson.D{{Key: "updatedAt", Value: tUpdated}, {Key: "createdAt", Value: tCreated}, {Key: "_id", Value: "a"}},
			want: `{"objectId":"a","createdAt":"` + isoCreated + `","updatedAt":"` + isoUpdated + `"}`,
		},
		{
			name: "legacy string createdAt passed through",
			doc:  bson.D{{Key: "_id", Value: "a"}, {Key: "createdAt", Value: "2015-01-01T00:00:00.000Z"}},
			want: `{"objectId":"a","createdAt":"2015-01-01T00:00:00.000Z"}`,
		},
		{
			name: "_created_at wins over legacy createdAt, no duplicate",
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "createdAt", Value: "old"},
				{Key: "_created_at", Value: tCreated}, {Key: "x", Value: int32(1)}},
			want: `{"objectId":"a","createdAt":"` + isoCreated + `","x":1}`,
		},
		{
			name: "null pointer omitted, malformed pointer shown as its value",
			enc:  RowEncoder{Class: song},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "_p_artist", Value: nil},
				{Key: "_p_album", Value: "noDollar"}, {Key: "_p_other", Value: "Other$o1"}},
			want: `{"objectId":"a","album":"noDollar","other":{"__type":"Pointer","className":"Other","objectId":"o1"}}`,
		},
		{
			name: "relation fields are not added per row",
			enc:  RowEncoder{Class: song},
			doc:  bson.D{{Key: "_id", Value: "a"}, {Key: "title", Value: "t"}},
			want: `{"objectId":"a","title":"t"}`,
		},
		{
			name: "every internal field removed at the top level",
			enc:  RowEncoder{Class: song},
			doc: bson.D{
				{Key: "_id", Value: "u1"}, {Key: "username", Value: "bob"},
				{Key: "_hashed_password", Value: "$2b$10$x"}, {Key: "_password_history", Value: bson.A{"h"}},
				{Key: "_session_token", Value: "r:abc"}, {Key: "sessionToken", Value: "r:abc"},
				{Key: "_email_verify_token", Value: "e"}, {Key: "_email_verify_token_expires_at", Value: tCreated},
				{Key: "_perishable_token", Value: "p"}, {Key: "_perishable_token_expires_at", Value: tCreated},
				{Key: "_failed_login_count", Value: int32(2)}, {Key: "_account_lockout_expires_at", Value: tCreated},
				{Key: "_tombstone", Value: true}, {Key: "authData", Value: bson.M{"x": 1}},
				{Key: "_auth_data_facebook", Value: bson.M{"id": "f"}}, {Key: "_password_changed_at", Value: tCreated},
				{Key: "_rperm", Value: bson.A{"u1"}}, {Key: "_wperm", Value: bson.A{"u1"}}, {Key: "_acl", Value: bson.M{}},
				{Key: "ACL", Value: bson.M{"*": bson.M{"read": true}}}, {Key: "_metadata", Value: "m"},
				{Key: "_whatever", Value: "w"}, {Key: "email", Value: "b@x.io"},
			},
			want: `{"objectId":"u1","username":"bob","email":"b@x.io"}`,
		},
		{
			name: "internal-floor keys removed at any depth, other nested keys kept",
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "meta", Value: bson.D{
				{Key: "sessionToken", Value: "r:1"}, {Key: "keep", Value: int32(1)},
				{Key: "deep", Value: bson.A{bson.D{{Key: "_hashed_password", Value: "h"}, {Key: "authData", Value: "x"},
					{Key: "_auth_data_github", Value: "g"}, {Key: "_rperm", Value: bson.A{}}, {Key: "ok", Value: true}}}},
				{Key: "_private", Value: "stays"}, {Key: "ACL", Value: "user data"},
			}}},
			want: `{"objectId":"a","meta":{"keep":1,"deep":[{"ok":true}],"_private":"stays","ACL":"user data"}}`,
		},
		{
			name: "redaction: top-level pointer to hidden class",
			enc:  RowEncoder{Class: song, HiddenClass: hideSSN},
			doc:  bson.D{{Key: "_id", Value: "a"}, {Key: "_p_secret", Value: "StudentSSN$s1s1s1s1s1"}, {Key: "_p_artist", Value: "Artist$a1"}},
			want: `{"objectId":"a","secret":{"__redacted":true},"artist":{"__type":"Pointer","className":"Artist","objectId":"a1"}}`,
		},
		{
			name: "redaction: Hidden$id strings under any key at any depth",
			enc:  RowEncoder{Class: song, HiddenClass: hideSSN},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "title", Value: "StudentSSN$abc_-9abc_"},
				{Key: "tags", Value: bson.A{"x", "_Session$r1r1r1r1r1", bson.A{"StudentSSN$zzzzzzzzzz"}}},
				{Key: "meta", Value: bson.D{{Key: "ref", Value: "StudentSSN$qqqqqqqqqq"}, {Key: "n", Value: "Artist$q"}}},
				{Key: "cover", Value: "StudentSSN$f1f1f1f1f1"}},
			want: `{"objectId":"a","title":{"__redacted":true},` +
				`"tags":["x",{"__redacted":true},[{"__redacted":true}]],` +
				`"meta":{"ref":{"__redacted":true},"n":"Artist$q"},` +
				`"cover":{"__redacted":true}}`,
		},
		{
			name: "redaction: near-miss strings are left alone",
			enc:  RowEncoder{HiddenClass: hideSSN},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "a", Value: "StudentSSN$"}, {Key: "b", Value: "StudentSSN$aaaaaaaaaa b"},
				{Key: "c", Value: "xStudentSSN$a"}, {Key: "d", Value: "StudentSSN$" + strings.Repeat("a", 33)},
				{Key: "e", Value: "costs $5"}},
			want: `{"objectId":"a","a":"StudentSSN$","b":"StudentSSN$aaaaaaaaaa b","c":"xStudentSSN$a","d":"StudentSSN$` +
				strings.Repeat("a", 33) + `","e":"costs $5"}`,
		},
		{
			name: "redaction: embedded objects of hidden classes, visible embedded pointers as-is",
			enc:  RowEncoder{HiddenClass: hideSSN},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "meta", Value: bson.D{
				{Key: "p", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "StudentSSN"}, {Key: "objectId", Value: "s1"}}},
				{Key: "q", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Artist"}, {Key: "objectId", Value: "a1"}}},
				{Key: "list", Value: bson.A{bson.D{{Key: "__type", Value: "Object"}, {Key: "className", Value: "_Session"}, {Key: "objectId", Value: "x"}, {Key: "sessionToken", Value: "r:1"}}}},
			}}},
			want: `{"objectId":"a","meta":{"p":{"__redacted":true},` +
				`"q":{"__type":"Pointer","className":"Artist","objectId":"a1"},` +
				`"list":[{"__redacted":true}]}}`,
		},
		{
			name: "no HiddenClass: nothing redacted",
			doc:  bson.D{{Key: "_id", Value: "a"}, {Key: "_p_secret", Value: "StudentSSN$s1s1s1s1s1"}, {Key: "s", Value: "StudentSSN$s1s1s1s1s1"}},
			want: `{"objectId":"a","secret":{"__type":"Pointer","className":"StudentSSN","objectId":"s1s1s1s1s1"},"s":"StudentSSN$s1s1s1s1s1"}`,
		},
		{
			name: "File, GeoPoint, Polygon by schema type",
			enc:  RowEncoder{Class: song},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "cover", Value: "abc_cover.png"},
				{Key: "loc", Value: bson.A{-122.5, int32(37)}},
				{Key: "area", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{
					bson.A{1.5, 2.5}, bson.A{int32(3), int32(4)}, bson.A{5.0, 6.0}, bson.A{1.5, 2.5}}}}}}},
			want: `{"objectId":"a","cover":{"__type":"File","name":"abc_cover.png"},` +
				`"loc":{"__type":"GeoPoint","latitude":37,"longitude":-122.5},` +
				`"area":{"__type":"Polygon","coordinates":[[2.5,1.5],[4,3],[6,5],[2.5,1.5]]}}`,
		},
		{
			name: "typed fields with unexpected shapes fall back to plain values",
			enc:  RowEncoder{Class: song},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "cover", Value: bson.D{{Key: "__type", Value: "File"}, {Key: "name", Value: "n"}}},
				{Key: "loc", Value: bson.A{1.0, 2.0, 3.0}}, {Key: "area", Value: bson.D{{Key: "type", Value: "Point"}}},
				{Key: "pts", Value: bson.A{-122.5, 37.0}}},
			want: `{"objectId":"a","cover":{"__type":"File","name":"n"},"loc":[1,2,3],"area":{"type":"Point"},"pts":[-122.5,37]}`,
		},
		{
			name: "Bytes: short, truncated (MaxBytesLen), any depth",
			enc:  RowEncoder{Class: song, MaxBytesLen: 4},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "small", Value: bson.Binary{Data: []byte("abc")}},
				{Key: "blob", Value: bson.Binary{Data: []byte("0123456789")}},
				{Key: "meta", Value: bson.D{{Key: "b", Value: bson.Binary{Subtype: 4, Data: []byte("abcdef")}}}}},
			want: `{"objectId":"a","small":{"__type":"Bytes","base64":"YWJj"},` +
				`"blob":{"__type":"Bytes","base64":"MDEyMw==…","truncated":true,"size":10},` +
				`"meta":{"b":{"__type":"Bytes","base64":"YWJjZA==…","truncated":true,"size":6}}}`,
		},
		{
			name: "Bytes: default limit 64",
			doc:  bson.D{{Key: "b", Value: bson.Binary{Data: bytes.Repeat([]byte{0xff}, 65)}}, {Key: "c", Value: bson.Binary{Data: bytes.Repeat([]byte{0xff}, 64)}}},
			want: `{"b":{"__type":"Bytes","base64":"` + strings.Repeat("////", 21) + `/w==…","truncated":true,"size":65},` +
				`"c":{"__type":"Bytes","base64":"` + strings.Repeat("////", 21) + `/w=="}}`,
		},
		{
			name: "numbers: int32, int64 beyond 2^53, doubles like encoding/json, NaN/Inf as null, Decimal128 as string",
			doc: bson.D{{Key: "i", Value: int32(-7)}, {Key: "big", Value: int64(9007199254740993)},
				{Key: "min", Value: int64(math.MinInt64)}, {Key: "whole", Value: 3.0}, {Key: "frac", Value: 0.1},
				{Key: "huge", Value: 1e21}, {Key: "e20", Value: 1e20}, {Key: "tiny", Value: 1e-7}, {Key: "small", Value: 0.000001},
				{Key: "negz", Value: math.Copysign(0, -1)}, {Key: "nan", Value: math.NaN()},
				{Key: "inf", Value: math.Inf(1)}, {Key: "ninf", Value: math.Inf(-1)},
				{Key: "dec", Value: bson.NewDecimal128(0x3040000000000000, 12345)}},
			want: `{"i":-7,"big":9007199254740993,"min":-9223372036854775808,"whole":3,"frac":0.1,` +
				`"huge":1e+21,"e20":100000000000000000000,"tiny":1e-7,"small":0.000001,"negz":-0,` +
				`"nan":null,"inf":null,"ninf":null,"dec":"12345"}`,
		},
		{
			name: "strings: escapes, invalid UTF-8, no HTML escaping, U+2028",
			doc: bson.D{{Key: "s", Value: "a\"b\\c\n\r\t\x01\x1f<>&é😀\u2028\u2029\x7f"},
				{Key: "bad", Value: "ok\xffmid\xc3"}, {Key: "k\"ey", Value: ""}},
			want: `{"s":"a\"b\\c\n\r\t\u0001\u001f<>&é😀\u2028\u2029` + "\x7f" + `","bad":"ok\ufffdmid\ufffd","k\"ey":""}`,
		},
		{
			name: "nested arrays and embedded dates/pointers",
			doc: bson.D{{Key: "m", Value: bson.A{bson.A{int32(1), int32(2)}, bson.A{int32(3), bson.A{int32(4)}}, bson.A{}}},
				{Key: "o", Value: bson.D{{Key: "when", Value: tCreated}, {Key: "list", Value: bson.A{tUpdated, nil, true}},
					{Key: "ptr", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "C"}, {Key: "objectId", Value: "c1"}}},
					{Key: "empty", Value: bson.D{}}}}},
			want: `{"m":[[1,2],[3,[4]],[]],"o":{"when":{"__type":"Date","iso":"` + isoCreated + `"},` +
				`"list":[{"__type":"Date","iso":"` + isoUpdated + `"},null,true],` +
				`"ptr":{"__type":"Pointer","className":"C","objectId":"c1"},"empty":{}}}`,
		},
		{
			name: "Keys restricts REST names, identity always kept",
			enc:  RowEncoder{Class: song, Keys: map[string]bool{"artist": true, "plays": true}},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "_created_at", Value: tCreated}, {Key: "title", Value: "t"},
				{Key: "_p_artist", Value: "Artist$a1"}, {Key: "plays", Value: int32(1)}, {Key: "_p_album", Value: "Album$b"}},
			want: `{"objectId":"a","createdAt":"` + isoCreated + `","artist":{"__type":"Pointer","className":"Artist","objectId":"a1"},"plays":1}`,
		},
		{
			name: "Drop omits fields by REST name, identity not consulted",
			enc: RowEncoder{Class: song, Drop: func(f string) bool {
				return f == "album" || f == "genre" || f == "objectId" || f == "updatedAt" || f == "unknownField"
			}},
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "_updated_at", Value: tUpdated}, {Key: "genre", Value: "rock"},
				{Key: "_p_album", Value: "Album$b"}, {Key: "unknownField", Value: int32(1)}, {Key: "plays", Value: int32(2)}},
			want: `{"objectId":"a","updatedAt":"` + isoUpdated + `","plays":2}`,
		},
		{
			name: "floor applies even when Keys asks for it",
			enc:  RowEncoder{Keys: map[string]bool{"sessionToken": true, "ACL": true, "authData": true}},
			doc:  bson.D{{Key: "_id", Value: "a"}, {Key: "sessionToken", Value: "r:1"}, {Key: "ACL", Value: bson.M{}}, {Key: "authData", Value: "x"}},
			want: `{"objectId":"a"}`,
		},
		{
			name: "legacy _Session keys _expiresAt and _last_used",
			doc:  bson.D{{Key: "_id", Value: "s"}, {Key: "_expiresAt", Value: tReleased}, {Key: "_last_used", Value: tUpdated}},
			want: `{"objectId":"s","expiresAt":{"__type":"Date","iso":"` + isoReleased + `"},"lastUsed":"` + isoUpdated + `"}`,
		},
		{
			name: "rare BSON types",
			doc: bson.D{{Key: "re", Value: bson.Regex{Pattern: "^a/b", Options: "i"}},
				{Key: "ts", Value: bson.Timestamp{T: 1700000000, I: 3}}, {Key: "min", Value: bson.MinKey{}},
				{Key: "max", Value: bson.MaxKey{}}, {Key: "u", Value: bson.Undefined{}}, {Key: "sym", Value: bson.Symbol("s")},
				{Key: "js", Value: bson.JavaScript("f()")}, {Key: "oid", Value: oid},
				{Key: "cws", Value: bson.CodeWithScope{Code: "g()", Scope: bson.D{{Key: "x", Value: int32(1)}}}},
				{Key: "dbp", Value: bson.DBPointer{DB: "db.c", Pointer: oid}}},
			want: `{"re":"/^a/b/i","ts":{"t":1700000000,"i":3},"min":"MinKey","max":"MaxKey","u":null,"sym":"s",` +
				`"js":"f()","oid":"65f0c1a2b3c4d5e6f7a8b9c0","cws":"g()","dbp":"65f0c1a2b3c4d5e6f7a8b9c0"}`,
		},
		{
			name: "legacy nested {__type:Date, iso:<date>}; stray objectId key",
			doc: bson.D{{Key: "_id", Value: "a"}, {Key: "objectId", Value: "zzz"}, {Key: "o", Value: bson.D{
				{Key: "d", Value: bson.D{{Key: "__type", Value: "Date"}, {Key: "iso", Value: tCreated}}},
				{Key: "e", Value: bson.D{{Key: "iso", Value: tCreated}}}}}},
			want: `{"objectId":"a","o":{"d":{"__type":"Date","iso":"` + isoCreated + `"},"e":{"iso":{"__type":"Date","iso":"` + isoCreated + `"}}}}`,
		},
		{
			name: "no _id: a stored objectId key is shown",
			doc:  bson.D{{Key: "objectId", Value: "zzz"}, {Key: "n", Value: int32(1)}},
			want: `{"objectId":"zzz","n":1}`,
		},
		{
			name: "empty document",
			doc:  bson.D{},
			want: `{}`,
		},
		{
			name: "dates before the epoch and far away",
			doc: bson.D{{Key: "a", Value: bson.DateTime(-1)}, {Key: "b", Value: bson.DateTime(-62135596800000)},
				{Key: "c", Value: bson.DateTime(253402300800000)}},
			want: `{"a":{"__type":"Date","iso":"1969-12-31T23:59:59.999Z"},"b":{"__type":"Date","iso":"0001-01-01T00:00:00.000Z"},` +
				`"c":{"__type":"Date","iso":"10000-01-01T00:00:00.000Z"}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustRaw(t, tc.doc)
			prefix := []byte("PREFIX")
			got, err := tc.enc.AppendRow(prefix, raw)
			if err != nil {
				t.Fatalf("AppendRow: %v", err)
			}
			if !bytes.HasPrefix(got, []byte("PREFIX")) {
				t.Fatalf("dst prefix lost: %q", got)
			}
			got = got[len("PREFIX"):]
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if !json.Valid(got) || !utf8.Valid(got) {
				t.Errorf("output is not valid JSON/UTF-8: %s", got)
			}
			// DecodeRow follows the same path.
			m, err := tc.enc.DecodeRow(raw)
			if err != nil {
				t.Fatalf("DecodeRow: %v", err)
			}
			var want map[string]any
			dec := json.NewDecoder(strings.NewReader(tc.want))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			convertNumbers(want)
			a, _ := json.Marshal(m)
			b, _ := json.Marshal(want)
			if !bytes.Equal(a, b) {
				t.Errorf("DecodeRow mismatch:\n%s\n%s", a, b)
			}
		})
	}
}

func TestDecodeRowTypes(t *testing.T) {
	enc := RowEncoder{Class: songClass()}
	raw := mustRaw(t, bson.D{{Key: "_id", Value: "a"}, {Key: "big", Value: int64(9007199254740993)},
		{Key: "f", Value: 1.5}, {Key: "w", Value: 2.0}, {Key: "_p_artist", Value: "Artist$a1"},
		{Key: "arr", Value: bson.A{int32(1), "x"}}})
	m, err := enc.DecodeRow(raw)
	if err != nil {
		t.Fatal(err)
	}
	if m["big"] != int64(9007199254740993) {
		t.Errorf("big = %#v", m["big"])
	}
	if m["f"] != 1.5 || m["w"] != int64(2) {
		t.Errorf("f = %#v, w = %#v", m["f"], m["w"])
	}
	p, ok := m["artist"].(map[string]any)
	if !ok || p["className"] != "Artist" || p["objectId"] != "a1" || p["__type"] != "Pointer" {
		t.Errorf("artist = %#v", m["artist"])
	}
	if arr, ok := m["arr"].([]any); !ok || arr[0] != int64(1) || arr[1] != "x" {
		t.Errorf("arr = %#v", m["arr"])
	}
	if m["objectId"] != "a" {
		t.Errorf("objectId = %#v", m["objectId"])
	}
}

func TestAppendRowMalformed(t *testing.T) {
	good := mustRaw(t, bson.D{{Key: "_id", Value: "a"}, {Key: "o", Value: bson.D{{Key: "s", Value: "x"}}}})
	bad := [][]byte{
		nil,
		{1, 2},
		good[:len(good)-1],
		append(append([]byte{}, good[:len(good)-1]...), 1),                                   // no trailing NUL
		{12, 0, 0, 0, 0x02, 'a', 0, 0xff, 0xff, 0, 0, 0},                                     // bad string length
		{9, 0, 0, 0, 0x42, 'a', 0, 0, 0},                                                     // unknown type
		{13, 0, 0, 0, 0x03, 'a', 0, 0x40, 0, 0, 0, 0, 0},                                     // embedded doc too long
		{17, 0, 0, 0, 0x03, 'a', 0, 9, 0, 0, 0, 0x10, 'b', 0, 1, 0, 0},                       // embedded doc overruns
		{16, 0, 0, 0, 0x03, 'a', 0, 8, 0, 0, 0, 0x0A, 'b', 0, 0x01, 0},                       // embedded doc without NUL
		{15, 0, 0, 0, 0x04, 'a', 0, 7, 0, 0, 0, 0x0A, 'b', 0, 0},                             // array framing
		{16, 0, 0, 0, 0x05, 'a', 0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0},                   // binary overrun
		{19, 0, 0, 0, 0x02, 'a', 0, 4, 0, 0, 0, 'a', 'b', 'c', 'd', 0, 0, 0, 0},              // string NUL misplaced
		{20, 0, 0, 0, 0x0F, 'a', 0, 12, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0},               // code w/ scope
		{14, 0, 0, 0, 0x0B, 'a', 0, 'x', 0, 'i', 'y', 'z', 'w', 0},                           // regex unterminated
		{18, 0, 0, 0, 0x03, 'a', 0, 10, 0, 0, 0, 0x42, 'b', 0, 0, 0, 0, 0},                   // nested unknown type
		{22, 0, 0, 0, 0x04, 'a', 0, 14, 0, 0, 0, 0x02, '0', 0, 9, 0, 0, 0, 'x', 0, 0, 0},     // nested bad string
		{21, 0, 0, 0, 0x03, 'a', 0, 13, 0, 0, 0, 0x03, 'b', 0, 5, 0, 0, 0, 0x01, 0, 0},       // nested doc no NUL
		{20, 0, 0, 0, 0x03, 'a', 0, 12, 0, 0, 0, 0x01, 'b', 0, 1, 2, 3, 4, 0, 0},             // nested truncated double
		{18, 0, 0, 0, 0x03, 'a', 0, 10, 0, 0, 0, 0x02, 'b', 0, 0, 0, 0, 0},                   // nested zero-length string
		{21, 0, 0, 0, 0x03, 'a', 0, 13, 0, 0, 0, 0x0C, 'b', 0, 1, 0, 0, 0, 'x', 0, 0},        // nested DBPointer overrun
		{23, 0, 0, 0, 0x03, 'a', 0, 15, 0, 0, 0, 0x05, 'b', 0, 9, 0, 0, 0, 0, 1, 2, 0, 0, 0}, // nested binary overrun
	}
	for i, doc := range bad {
		enc := RowEncoder{HiddenClass: hideSSN}
		got, err := enc.AppendRow([]byte("x"), doc)
		if err == nil {
			t.Errorf("case %d: no error, got %s", i, got)
			continue
		}
		if !errors.Is(err, ErrMalformedBSON) {
			t.Errorf("case %d: error %v does not wrap ErrMalformedBSON", i, err)
		}
		if string(got) != "x" {
			t.Errorf("case %d: dst modified on error: %q", i, got)
		}
		if _, err := enc.DecodeRow(doc); err == nil {
			t.Errorf("case %d: DecodeRow: no error", i)
		}
	}
	// Deep nesting is refused rather than recursing without bound.
	nest := func(levels int) bson.Raw {
		var v any = int32(1)
		for range levels {
			v = bson.D{{Key: "x", Value: v}}
		}
		return mustRaw(t, bson.D{{Key: "d", Value: v}})
	}
	if _, err := (&RowEncoder{}).AppendRow(nil, nest(150)); err != nil {
		t.Errorf("150 levels: %v", err)
	}
	if _, err := (&RowEncoder{}).AppendRow(nil, nest(maxDepth+5)); !errors.Is(err, ErrMalformedBSON) {
		t.Errorf("%d levels: err = %v, want ErrMalformedBSON", maxDepth+5, err)
	}
}

// Documents with more top-level fields than the pass-1 cache holds.
func TestAppendRowManyFields(t *testing.T) {
	for _, n := range []int{31, 32, 33, 100} {
		doc := bson.D{}
		want := `{"objectId":"a","updatedAt":"` + isoUpdated + `"`
		for i := range n {
			k := "f" + strconv.Itoa(i)
			doc = append(doc, bson.E{Key: k, Value: int32(i)})
			want += `,"` + k + `":` + strconv.Itoa(i)
			if i == n/2 {
				doc = append(doc, bson.E{Key: "_rperm", Value: bson.A{"*"}})
			}
		}
		// identity fields last, beyond the cache for large n
		doc = append(doc, bson.E{Key: "_updated_at", Value: tUpdated}, bson.E{Key: "_id", Value: "a"})
		want += "}"
		got, err := (&RowEncoder{}).AppendRow(nil, mustRaw(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("n=%d:\ngot  %s\nwant %s", n, got, want)
		}
	}
}

// Fuzz-style check: random bytes never panic.
func TestAppendRowGarbageNoPanic(t *testing.T) {
	good := mustRaw(t, typicalSongDoc(0))
	rng := rand.New(rand.NewSource(1))
	enc := RowEncoder{Class: songClass(), HiddenClass: hideSSN}
	for range 20000 {
		b := append([]byte{}, good...)
		for range 1 + rng.Intn(4) {
			b[4+rng.Intn(len(b)-4)] = byte(rng.Intn(256))
		}
		out, err := enc.AppendRow(nil, b)
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid JSON for mutated doc: %s", out)
		}
	}
}

// Floats render exactly like encoding/json.
func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	vals := []float64{0, 1, -1, 0.1, 1e-6, 1e-7, 9.999999e-7, 1e20, 1e21, 123456789012345678, 1e15, 1e15 + 0.5,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 2.5e-300, -3.75, 1 << 53, 1<<53 + 2, 4.2e15, 1e16}
	for range 100000 {
		switch rng.Intn(3) {
		case 0:
			vals = append(vals, math.Float64frombits(rng.Uint64()))
		case 1:
			vals = append(vals, float64(rng.Int63n(1<<62))*math.Pow(10, float64(rng.Intn(40)-20)))
		default:
			vals = append(vals, rng.NormFloat64()*1000)
		}
	}
	for _, f := range vals {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f); !bytes.Equal(got, want) {
			t.Fatalf("appendFloat(%v) = %s, encoding/json %s", f, got, want)
		}
	}
}

// The hand-rolled ISO formatter agrees with package time.
func TestAppendISOMatchesTime(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	vals := []int64{0, -1, 1, 999, -999, -1000, 86400000 - 1, -86400000, 951782400000, 253402300799999, -62135596800000, -62135596800001}
	for range 100000 {
		vals = append(vals, rng.Int63n(2*253402300799999)-253402300799999)
	}
	for _, ms := range vals {
		want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
		if got := string(appendISO(nil, ms)); got != want {
			t.Fatalf("appendISO(%d) = %s, want %s", ms, got, want)
		}
	}
}

func TestAppendRowNoAllocs(t *testing.T) {
	enc := RowEncoder{Class: songClass(), HiddenClass: hideSSN,
		Keys: map[string]bool{"title": true, "artist": true, "album": true, "genre": true, "plays": true,
			"releasedAt": true, "tags": true, "explicit": true, "orgId": true, "meta": true},
		Drop: func(f string) bool { return f == "secret" }}
	raw := mustRaw(t, typicalSongDoc(1))
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if _, err = enc.AppendRow(buf[:0], raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendRow allocates %.1f times per row, want 0", allocs)
	}
}

// TestRowEncoderUserFieldRule: a protectedFields "userField:owner"
// audience un-protects a field on the rows whose owner is the user
// (a Pointer or an Array of pointers), and only there.
func TestRowEncoderUserFieldRule(t *testing.T) {
	cls := ClassFromSchemaDoc(bson.M{"_id": "Memo", "owner": "*_User", "owners": "array", "secret": "string", "pin": "string"})
	enc := &RowEncoder{Class: cls, Protected: func(f string) bool { return f == "secret" || f == "pin" },
		UserFieldRules: []UserFieldRule{{Field: "owner", Keep: map[string]bool{"pin": true}}, {Field: "owners", Keep: map[string]bool{}}}, UserID: "u1"}
	for _, tc := range []struct {
		doc  bson.D
		want string
	}{
		{bson.D{{Key: "_id", Value: "a"}, {Key: "_p_owner", Value: "_User$u1"}, {Key: "secret", Value: "s"}, {Key: "pin", Value: "p"}}, `"secret":"s"`},
		{bson.D{{Key: "_id", Value: "b"}, {Key: "_p_owner", Value: "_User$u2"}, {Key: "secret", Value: "s"}, {Key: "pin", Value: "p"}}, ``},
		{bson.D{{Key: "_id", Value: "c"}, {Key: "owners", Value: bson.A{bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "_User"}, {Key: "objectId", Value: "u1"}}}}, {Key: "secret", Value: "s"}, {Key: "pin", Value: "p"}}, `"secret":"s","pin":"p"`},
	} {
		raw, _ := bson.Marshal(tc.doc)
		out, err := enc.AppendRow(nil, raw)
		if err != nil {
			t.Fatal(err)
		}
		got := string(out)
		if tc.want == "" && (strings.Contains(got, "secret") || strings.Contains(got, "pin")) || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s (want %q)", tc.doc[0].Value, got, tc.want)
		}
		if tc.doc[0].Value == "a" && strings.Contains(got, `"pin"`) {
			t.Errorf("pin is in the owner rule's list and must stay hidden: %s", got)
		}
	}
}
