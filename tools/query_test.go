package tools

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

const testPolicy = `
classes:
  Song:
    canonical_filter: {archived: {$ne: true}}
    large_fields: [lyrics]
  Artist:
    join_fields: [name]
  Invoice:
    agent_fields: [amount, status]
  VaultSecret: {hidden: true}
`

func testSchema() *parsedb.Schema {
	s := &parsedb.Schema{Classes: map[string]*parsedb.Class{}}
	for _, doc := range []bson.M{
		{"_id": "Song", "title": "string", "artist": "*Artist", "album": "*Album", "genre": "string", "plays": "number",
			"lyrics": "string", "archived": "boolean", "meta": "object", "leak": "*VaultSecret", "tags": "array"},
		{"_id": "Album", "title": "string", "artist": "*Artist"},
		{"_id": "Artist", "name": "string", "country": "string"},
		{"_id": "Invoice", "amount": "number", "status": "string", "secretNote": "string"},
		{"_id": "VaultSecret", "apiKey": "string"},
	} {
		c := parsedb.ClassFromSchemaDoc(doc)
		s.Classes[c.Name] = c
	}
	return s
}

func testDeps(t *testing.T, yaml string) *Deps {
	t.Helper()
	f, err := policy.Parse([]byte(yaml), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	return &Deps{Store: &parsedb.Store{}, Policy: policy.New(cfg, f, zerolog.Nop()), Config: cfg, Log: zerolog.Nop()}
}

func extJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(v, false, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPlanFindCommandGolden pins the exact find command query_class sends
// for each option.
func TestPlanFindCommandGolden(t *testing.T) {
	d := testDeps(t, testPolicy)
	ctx := context.Background()
	order := func(s string) []parsedb.OrderKey {
		k, err := parsedb.ParseOrder([]string{s})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	cases := []struct {
		name        string
		in          planInput
		skip, limit int
		want        string
	}{
		{"defaults: canonical filter, _id order, limit+1", planInput{applyCanonical: true}, 0, 100,
			`{"find":"Song","filter":{"archived":{"$ne":true}},"sort":{"_id":1},"limit":101,"batchSize":101}`},
		{"canonical filter off", planInput{}, 0, 100,
			`{"find":"Song","filter":{},"sort":{"_id":1},"limit":101,"batchSize":101}`},
		{"where AND canonical filter", planInput{applyCanonical: true, where: map[string]any{"genre": "rock", "artist": "a1"}}, 0, 10,
			`{"find":"Song","filter":{"$and":[{"_p_artist":"Artist$a1","genre":"rock","$and":[{"genre":{"$not":{"$regularExpression":{"pattern":"^(?:VaultSecret|_Audience|_GlobalConfig|_GraphQLConfig|_Hooks|_Idempotency|_JobSchedule|_JobStatus|_Product|_PushStatus|_SCHEMA)\\$[A-Za-z0-9_-]{10,32}\\z","options":""}}}}]},{"archived":{"$ne":true}}]},"sort":{"_id":1},"limit":11,"batchSize":11}`},
		{"keys", planInput{keys: []string{"title", "artist", "meta.importedAt"}}, 0, 5,
			`{"find":"Song","filter":{},"projection":{"_created_at":1,"_updated_at":1,"title":1,"_p_artist":1,"meta":1},"sort":{"_id":1},"limit":6,"batchSize":6}`},
		{"keys + include: included pointer projected, sub-keys routed, an include outside keys not followed", planInput{keys: []string{"title", "artist.name"}, include: []string{"artist", "album"}}, 0, 5,
			`{"find":"Song","filter":{},"projection":{"_created_at":1,"_updated_at":1,"title":1,"_p_artist":1},"sort":{"_id":1},"limit":6,"batchSize":6}`},
		{"order", planInput{order: order("-plays,title")}, 0, 5,
			`{"find":"Song","filter":{"$and":[{"plays":{"$not":{"$regularExpression":{"pattern":"^(?:VaultSecret|_Audience|_GlobalConfig|_GraphQLConfig|_Hooks|_Idempotency|_JobSchedule|_JobStatus|_Product|_PushStatus|_SCHEMA)\\$[A-Za-z0-9_-]{10,32}\\z","options":""}}}},{"title":{"$not":{"$regularExpression":{"pattern":"^(?:VaultSecret|_Audience|_GlobalConfig|_GraphQLConfig|_Hooks|_Idempotency|_JobSchedule|_JobStatus|_Product|_PushStatus|_SCHEMA)\\$[A-Za-z0-9_-]{10,32}\\z","options":""}}}}]},"sort":{"plays":-1,"title":1,"_id":1},"limit":6,"batchSize":6}`},
		{"skip", planInput{}, 300, 100,
			`{"find":"Song","filter":{},"sort":{"_id":1},"skip":300,"limit":101,"batchSize":101}`},
		{"samples: newest first, large fields excluded", planInput{applyCanonical: true, order: order("-createdAt"), dropLarge: true}, 0, 5,
			`{"find":"Song","filter":{"$and":[{"archived":{"$ne":true}},{"$and":[{"_created_at":{"$not":{"$regularExpression":{"pattern":"^(?:VaultSecret|_Audience|_GlobalConfig|_GraphQLConfig|_Hooks|_Idempotency|_JobSchedule|_JobStatus|_Product|_PushStatus|_SCHEMA)\\$[A-Za-z0-9_-]{10,32}\\z","options":""}}}}]}]},"projection":{"lyrics":0},"sort":{"_created_at":-1,"_id":1},"limit":6,"batchSize":6}`},
		{"lookup by id: no sort", planInput{where: map[string]any{"objectId": "abc"}, noSort: true}, 0, 1,
			`{"find":"Song","filter":{"_id":"abc"},"limit":2,"batchSize":2}`},
	}
	for _, c := range cases {
		p, err := planFor(ctx, d, testSchema(), "Song", c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := extJSON(t, d.Store.FindCommand(ctx, "Song", p.findSpec(c.skip, c.limit+1)))
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestPlanWithout(t *testing.T) {
	d := testDeps(t, testPolicy)
	ctx := context.Background()
	p, err := planFor(ctx, d, testSchema(), "Song", planInput{})
	if err != nil {
		t.Fatal(err)
	}
	q := p.without("lyrics")
	if got := extJSON(t, q.projection); got != `{"lyrics":0}` {
		t.Errorf("no keys: projection %s", got)
	}
	if q.enc.Drop == nil || !q.enc.Drop("lyrics") || q.enc.Drop("title") {
		t.Error("no keys: the encoder must drop lyrics only")
	}
	if p.projection != nil {
		t.Error("without must not modify the original plan")
	}
	p, _ = planFor(ctx, d, testSchema(), "Song", planInput{keys: []string{"title", "lyrics", "artist"}, include: []string{"artist"}})
	q = p.without("artist")
	if len(q.includes) != 0 || len(p.includes) != 1 {
		t.Error("dropping an included pointer drops its include")
	}
	if got := extJSON(t, q.projection); got != `{"_created_at":1,"_updated_at":1,"title":1,"lyrics":1}` {
		t.Errorf("keys: projection %s", got)
	}
	q = p.without("title").without("lyrics").without("artist")
	if got := extJSON(t, q.projection); got != `{"_created_at":1,"_updated_at":1}` {
		t.Errorf("every key dropped: projection %s (identity only)", got)
	}
}

func TestPlanIncludes(t *testing.T) {
	d := testDeps(t, testPolicy)
	ctx := context.Background()
	schema := testSchema()

	// join_fields: the bare pointer named in keys and include.
	p, err := planFor(ctx, d, schema, "Song", planInput{keys: []string{"title", "artist"}, include: []string{"artist"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.truncatedIncludes["artist"]; len(got) != 1 || got[0] != "name" {
		t.Errorf("truncated_include_fields = %v", p.truncatedIncludes)
	}
	if n := p.includes[0]; strings.Join(n.Keys, ",") != "name" || !p.incEnc[n].Keys["name"] || p.incEnc[n].Keys["country"] {
		t.Errorf("join_fields projection: %v", n.Keys)
	}
	// Explicit sub-keys win over join_fields.
	p, _ = planFor(ctx, d, schema, "Song", planInput{keys: []string{"artist", "artist.country"}, include: []string{"artist"}})
	if len(p.truncatedIncludes) != 0 || strings.Join(p.includes[0].Keys, ",") != "country" {
		t.Errorf("explicit sub-keys: %v %v", p.truncatedIncludes, p.includes[0].Keys)
	}
	// No keys: whole objects, no truncation.
	p, _ = planFor(ctx, d, schema, "Song", planInput{include: []string{"artist"}})
	if len(p.truncatedIncludes) != 0 || len(p.includes[0].Keys) != 0 {
		t.Error("no keys: included objects are whole")
	}
	// Nested: an ancestor with keys keeps the child's pointer.
	p, _ = planFor(ctx, d, schema, "Song", planInput{keys: []string{"album.title", "album.artist.name"}, include: []string{"album.artist"}})
	album := p.includes[0]
	if strings.Join(album.Keys, ",") != "title,artist" || strings.Join(album.Children[0].Keys, ",") != "name" {
		t.Errorf("nested keys: album %v artist %v", album.Keys, album.Children[0].Keys)
	}
	if strings.Join(p.keys, ",") != "album" {
		t.Errorf("main keys = %v", p.keys)
	}

	// Hidden target.
	_, err = planFor(ctx, d, schema, "Song", planInput{include: []string{"leak"}})
	if te, ok := toolerror.As(err); !ok || te.Code != toolerror.InvalidQuery || te.Details != nil || !strings.Contains(te.Message, "does not exist or is not accessible") {
		t.Errorf("include of a hidden class (answered like a missing one): %v", err)
	}
	// Not a pointer.
	if _, err = planFor(ctx, d, schema, "Song", planInput{include: []string{"title"}}); err == nil {
		t.Error("include of a non-pointer must fail")
	}
}

func TestPlanFieldPolicy(t *testing.T) {
	d := testDeps(t, testPolicy)
	ctx := context.Background()
	schema := testSchema()
	denied := func(in planInput) {
		t.Helper()
		_, err := planFor(ctx, d, schema, "Invoice", in)
		te, ok := toolerror.As(err)
		if !ok || te.Code != toolerror.AccessDenied {
			t.Errorf("%+v: want access_denied, got %v", in, err)
		}
	}
	denied(planInput{keys: []string{"secretNote"}})
	denied(planInput{order: []parsedb.OrderKey{{Field: "secretNote"}}})
	denied(planInput{where: map[string]any{"$or": []any{map[string]any{"status": "paid"}, map[string]any{"secretNote": "x"}}}})
	if _, err := planFor(ctx, d, schema, "Invoice", planInput{keys: []string{"amount", "objectId"}, where: map[string]any{"status": "paid"}}); err != nil {
		t.Errorf("allowlisted fields: %v", err)
	}
	// Internal fields are security violations.
	_, err := planFor(ctx, d, schema, "Song", planInput{keys: []string{"_rperm"}})
	if _, ok := toolerror.AsViolation(err); !ok {
		t.Errorf("internal key: want a violation, got %v", err)
	}
	// Hidden class.
	_, err = planFor(ctx, d, schema, "VaultSecret", planInput{})
	if te, ok := toolerror.As(err); !ok || te.Code != toolerror.InvalidArgument || te.Details != nil {
		t.Errorf("hidden class (answered like a missing one): %v", err)
	}
}

func TestWhereFieldNames(t *testing.T) {
	got := map[string]bool{}
	whereFieldNames(map[string]any{
		"a": 1, "$or": []any{map[string]any{"b": 1}, map[string]any{"$and": []any{map[string]any{"c": 1}}}},
		"$nor": []any{map[string]any{"d": 1}}, "$relatedTo": map[string]any{"key": "x"},
		"e": map[string]any{"$inQuery": map[string]any{"where": map[string]any{"inner": 1}}},
	}, got)
	if strings.Join(slices.Sorted(maps.Keys(got)), ",") != "a,b,c,d,e" {
		t.Errorf("got %v", slices.Sorted(maps.Keys(got)))
	}
}

func TestTruncationEnvelope(t *testing.T) {
	d := testDeps(t, "settings: {max_response_bytes: 100000}\n")
	p := &readPlan{d: d}
	tr := p.truncation("lyrics", 7, 50, 100, true)
	b, _ := json.Marshal(tr)
	want := `{"dropped_fields":["lyrics"],"hint":"The rows exceed the 100000-byte response cap. lyrics was left out; read it with keys on fewer rows (e.g. get_object). Continue with skip 107.","kept_count":7,"next_skip":107,"original_count":50,"reason":"response_exceeded_max_bytes"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	tr = p.truncation("", 0, 3, 0, true)
	if _, ok := tr["next_skip"]; ok {
		t.Error("no next_skip when not even one row fits")
	}
	if dl := tr["dropped_fields"].([]string); len(dl) != 0 {
		t.Error("dropped_fields must be an empty list")
	}
	if heaviestDroppable(map[string]int{"objectId": 900, "lyrics": 500, "title": 20}) != "lyrics" {
		t.Error("identity fields are never dropped")
	}
	if heaviestDroppable(map[string]int{"objectId": 900}) != "" {
		t.Error("nothing droppable")
	}
}

func TestTooLargeMessage(t *testing.T) {
	d := testDeps(t, "settings: {max_response_bytes: 100000}\n")
	err := tooLarge(d, "get_objects", "keys", map[string]int{"objectId": 500, "createdAt": 600, "lyrics": 90000, "meta": 3000, "title": 400, "genre": 100}, "")
	te, ok := toolerror.As(err)
	if !ok || te.Code != toolerror.InvalidArgument {
		t.Fatalf("err = %v", err)
	}
	want := `get_objects: the result exceeds the 100000-byte response cap. Heaviest fields: lyrics (87.9 KB), meta (2.9 KB), createdAt (600 B). Retry with keys: ["genre","meta","title"]`
	if te.Message != want {
		t.Errorf("got  %s\nwant %s", te.Message, want)
	}
}

func TestNextCallCopiesArgs(t *testing.T) {
	args := Args{"class_name": "Song", "where": map[string]any{"genre": "rock"}, "limit": 10.0, "skip": 20.0, "extra": true}
	nc := nextCall(args, 30)
	a := nc["arguments"].(map[string]any)
	if nc["tool"] != "query_class" || a["skip"] != 30 || a["limit"] != 10.0 || a["extra"] != true || a["where"] == nil {
		t.Errorf("next_call = %v", nc)
	}
	if args["skip"] != 20.0 {
		t.Error("nextCall must not modify the original args")
	}
}

func TestJSONObject(t *testing.T) {
	o := newJSONObject()
	o.str("a", `q"<`)
	o.val("b", []int{1})
	o.raw("c", nil)
	if got := string(o.done()); got != `{"a":"q\"<","b":[1],"c":null}` {
		t.Errorf("got %s", got)
	}
}

// idsArg decodes get_objects' ids as its contract does.
func idsArg(args Args) ([]string, error) {
	var in getObjectsIn
	fields := mustArgFields(reflect.TypeFor[getObjectsIn]())
	for _, f := range fields {
		if f.name == "ids" {
			err := (&in.IDs).decodeArg(context.Background(), args, "ids", &f)
			return in.IDs, err
		}
	}
	return nil, nil
}

func TestEnumAndIDArgs(t *testing.T) {
	if f, err := enumArg(Args{"format": "CSV"}, "format", "json", "json", "csv"); err != nil || f != "csv" {
		t.Errorf("enum: %q %v", f, err)
	}
	if _, err := enumArg(Args{"format": "xml"}, "format", "json", "json", "csv"); err == nil {
		t.Error("unknown enum value accepted")
	}
	ids, err := idsArg(Args{"ids": []any{"a", "b", "a"}})
	if err != nil || strings.Join(ids, ",") != "a,b" {
		t.Errorf("dedup: %v %v", ids, err)
	}
	if _, err := idsArg(Args{}); err == nil {
		t.Error("ids is required")
	}
	if _, err := idsArg(Args{"ids": []any{"bad id"}}); err == nil {
		t.Error("invalid objectId accepted")
	}
	var fifty, fiftyOne []any
	for i := range 51 {
		id := "id" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		if i < 50 {
			fifty = append(fifty, id)
		}
		fiftyOne = append(fiftyOne, id)
	}
	if _, err := idsArg(Args{"ids": fifty}); err != nil {
		t.Errorf("50 ids: %v", err)
	}
	if _, err := idsArg(Args{"ids": fiftyOne}); err == nil {
		t.Error("51 ids accepted")
	}
}
