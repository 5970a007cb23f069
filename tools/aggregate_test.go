package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// The aggregate tools' world (names prefixed agg to stay clear of the
// query tools' helpers).

const aggPolicy = `
classes:
  Song:
    canonical_filter: {archived: {$ne: true}}
  Patient:
    agent_fields: [name, age, doctor]
  Scoped:
    tenant_scope: {field: orgId}
  VaultSecret: {hidden: true}
`

func aggSchema() *parsedb.Schema {
	s := &parsedb.Schema{Classes: map[string]*parsedb.Class{}}
	for _, doc := range []bson.M{
		{"_id": "_User", "username": "string", "email": "string"},
		{"_id": "Song", "title": "string", "artist": "*Artist", "genre": "string", "plays": "number",
			"archived": "boolean", "releasedAt": "date", "tags": "array", "meta": "object", "likes": "relation<_User>"},
		{"_id": "Artist", "name": "string"},
		{"_id": "AuditLog", "action": "string", "secret": "*VaultSecret", "ghost": "*NoSuchClass"},
		{"_id": "VaultSecret", "apiKey": "string"},
		{"_id": "Patient", "name": "string", "age": "number", "ssn": "string", "doctor": "*_User"},
		{"_id": "Scoped", "orgId": "string", "name": "string", "amount": "number"},
	} {
		c := parsedb.ClassFromSchemaDoc(doc)
		s.Classes[c.Name] = c
	}
	return s
}

func aggDeps(t testing.TB, mod func(*config.Config)) *Deps {
	t.Helper()
	f, err := policy.Parse([]byte(aggPolicy), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	if mod != nil {
		mod(cfg)
	}
	e := policy.New(cfg, f, zerolog.Nop())
	store := &parsedb.Store{Schema: parsedb.StaticSchemaCache(aggSchema())}
	return &Deps{Store: store, Policy: e, Config: cfg, Log: zerolog.Nop()}
}

// aggCall runs a handler the way Tool.Handle does: raw arguments in the
// context (key order of the pipeline kept).
func aggCall(t testing.TB, d *Deps, h Handler, argsJSON string) (map[string]any, error) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		t.Fatalf("bad args %s: %v", argsJSON, err)
	}
	ctx := withRawArguments(context.Background(), json.RawMessage(argsJSON))
	out, err := h.Call(ctx, d, Args(args))
	if err != nil {
		return nil, err
	}
	b, err := jsonenc.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["_raw"] = string(b)
	return m, nil
}

// dryPipeline returns the pipeline a dry run reports, as compact JSON with
// its key order.
func dryPipeline(t testing.TB, d *Deps, h Handler, argsJSON string) string {
	t.Helper()
	m, err := aggCall(t, d, h, argsJSON)
	if err != nil {
		t.Fatalf("%s: %v", argsJSON, err)
	}
	if m["dry_run"] != true {
		t.Fatalf("not a dry run: %v", m)
	}
	raw := m["_raw"].(string)
	_, after, _ := strings.Cut(raw, `"pipeline":`)
	dec := json.NewDecoder(strings.NewReader(after))
	var p json.RawMessage
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return string(p)
}

const songProjection = `{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"archived":1,"_p_artist":1,"genre":1,"meta":1,"plays":1,"releasedAt":1,"tags":1,"title":1}}`

func TestAggregatePipelineGolden(t *testing.T) {
	d := aggDeps(t, nil)
	cases := []struct{ name, class, args, want string }{
		{"filters, caller stages with key order, projection, auto limit", "Song",
			`{"pipeline":[{"$match":{"genre":"rock"}},{"$group":{"_id":"$artist","n":{"$sum":1}}},{"$sort":{"n":-1,"_id":1}}]}`,
			`[{"$match":{"archived":{"$ne":true}}},{"$match":{"$and":[{"genre":{"$not":"<hidden classes>"}},{"_p_artist":{"$not":"<hidden classes>"}}]}},{"$match":{"genre":"rock"}},` + songProjection + `,{"$group":{"_id":"$_p_artist","n":{"$sum":1}}},{"$sort":{"n":-1,"_id":1}},{"$limit":200}]`},
		{"apply_canonical_filter false", "Song",
			`{"apply_canonical_filter":false,"pipeline":[{"$group":{"_id":"$genre","plays":{"$sum":"$plays"}}}]}`,
			`[{"$match":{"$and":[{"genre":{"$not":"<hidden classes>"}},{"plays":{"$not":"<hidden classes>"}}]}},` + songProjection + `,{"$group":{"_id":"$genre","plays":{"$sum":"$plays"}}},{"$limit":200}]`},
		{"ends with $limit: nothing appended; leading $sort/$limit stay before the projection", "Song",
			`{"pipeline":[{"$sort":{"plays":-1}},{"$limit":5}]}`,
			`[{"$match":{"archived":{"$ne":true}}},{"$match":{"$and":[{"plays":{"$not":"<hidden classes>"}}]}},{"$sort":{"plays":-1}},{"$limit":5},` + songProjection + `]`},
		{"ends with $count", "Song",
			`{"pipeline":[{"$match":{"releasedAt":{"$gte":"2020-01-01"}}},{"$count":"n"}]}`,
			`[{"$match":{"archived":{"$ne":true}}},{"$match":{"$and":[{"releasedAt":{"$not":"<hidden classes>"}}]}},{"$match":{"releasedAt":{"$gte":{"$date":"2020-01-01T00:00:00Z"}}}},` + songProjection + `,{"$count":"n"}]`},
		{"a leading $match with $expr comes after the projection", "Song",
			`{"apply_canonical_filter":false,"pipeline":[{"$match":{"genre":"rock"}},{"$match":{"$expr":{"$gt":[{"$size":"$tags"},3]}}},{"$limit":1}]}`,
			`[{"$match":{"$and":[{"genre":{"$not":"<hidden classes>"}},{"tags":{"$not":"<hidden classes>"}},{"tags.className":{"$nin":"<hidden classes>"}},` + missingRef("tags") + `]}},{"$match":{"genre":"rock"}},` + songProjection + `,{"$match":{"$expr":{"$gt":[{"$size":"$tags"},3]}}},{"$limit":1}]`},
		{"$graphLookup last: the caller's last stage decides the auto limit", "Song",
			`{"apply_canonical_filter":false,"pipeline":[{"$limit":2},{"$graphLookup":{"from":"Artist","startWith":"$artist","connectFromField":"name","connectToField":"name","as":"g"}}]}`,
			`[{"$match":{"$and":[{"_p_artist":{"$not":"<hidden classes>"}}]}},{"$limit":2},` + songProjection + `,{"$graphLookup":{"from":"Artist","startWith":"$_p_artist","connectFromField":"name","connectToField":"name","as":"g","restrictSearchWithMatch":{"$and":[{"name":{"$not":"<hidden classes>"}}]}}},{"$set":{"g":{"$map":{"input":"$g","as":"parsemcpdoc","in":{"_id":"$$parsemcpdoc._id","_created_at":"$$parsemcpdoc._created_at","_updated_at":"$$parsemcpdoc._updated_at","name":"$$parsemcpdoc.name"}}}}},{"$limit":200}]`},
		{"allowlisted class: projection of agent_fields only", "Patient",
			`{"pipeline":[{"$group":{"_id":"$doctor","n":{"$sum":1}}}]}`,
			`[{"$match":{"$and":[{"_p_doctor":{"$not":"<hidden classes>"}}]}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"age":1,"_p_doctor":1,"name":1}},{"$group":{"_id":"$_p_doctor","n":{"$sum":1}}},{"$limit":200}]`},
		{"$lookup scoped with the joined class's projection", "Song",
			`{"apply_canonical_filter":false,"pipeline":[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},{"$limit":1}]}`,
			`[{"$match":{"$and":[{"_p_artist":{"$not":"<hidden classes>"}}]}},` + songProjection + `,{"$lookup":{"from":"Artist","let":{"parsemcpjoinkey":{"$arrayElemAt":[{"$split":[{"$ifNull":["$_p_artist",""]},{"$literal":"$"}]},1]}},"pipeline":[{"$match":{"$expr":{"$eq":["$_id","$$parsemcpjoinkey"]}}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"name":1}}],"as":"a"}},{"$limit":1}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := `{"class_name":"` + c.class + `","dry_run":true,` + c.args[1:]
			if got := dryPipeline(t, d, handlerOf("aggregate"), args); got != c.want {
				t.Fatalf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestAggregateScopedIdentityAndTenant(t *testing.T) {
	d := aggDeps(t, func(c *config.Config) { c.ACLRole = "Moderator"; c.TenantID = "org_north" })
	d.Policy.SetIdentity(&parsedb.Identity{Kind: parsedb.IdentityRole, Roles: []string{"Moderator"}})
	got := dryPipeline(t, d, handlerOf("aggregate"), `{"class_name":"Scoped","dry_run":true,"pipeline":[{"$group":{"_id":null,"total":{"$sum":"$amount"}}}]}`)
	want := `[{"$match":{"orgId":"org_north"}},{"$match":{"_rperm":{"$in":[null,"*","role:Moderator"]}}},{"$match":{"$and":[{"amount":{"$not":"<hidden classes>"}}]}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"amount":1,"name":1,"orgId":1}},{"$group":{"_id":null,"total":{"$sum":"$amount"}}},{"$limit":200}]`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	// The joined class carries the identity's ACL too (tenant: joins from an
	// unscoped class into an unscoped class are allowed).
	got = dryPipeline(t, d, handlerOf("aggregate"), `{"class_name":"Song","dry_run":true,"apply_canonical_filter":false,"pipeline":[{"$lookup":{"from":"Artist","pipeline":[{"$match":{"name":"x"}}],"as":"a"}}]}`)
	if !strings.Contains(got, `"pipeline":[{"$match":{"$and":[{"_rperm":{"$in":[null,"*","role:Moderator"]}},{"name":{"$not":"<hidden classes>"}}]}},{"$project":{"_id":1,"_created_at":1,"_updated_at":1,"name":1}},{"$match":{"name":"x"}}]`) {
		t.Fatalf("join not scoped: %s", got)
	}
	// Joins touching the tenant-scoped class are refused.
	_, err := aggCall(t, d, handlerOf("aggregate"), `{"class_name":"Scoped","pipeline":[{"$lookup":{"from":"Artist","pipeline":[],"as":"a"}}]}`)
	if parsetest.Outcome(err) != "access_denied:tenant_join_denied" {
		t.Fatalf("tenant join: %v", err)
	}
}

func TestAggregateCommandCarriesMaxTime(t *testing.T) {
	d := aggDeps(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plan, err := planPipeline(ctx, d, "Song", []any{bson.D{{Key: "$count", Value: "n"}}}, true, AggregateAutoLimit)
	if err != nil {
		t.Fatal(err)
	}
	cmd := d.Store.AggregateCommand(ctx, "Song", plan.pipeline)
	if cmd[0].Key != "aggregate" || cmd[len(cmd)-1].Key != "maxTimeMS" {
		t.Fatalf("command: %v", cmd)
	}
	if ms := cmd[len(cmd)-1].Value.(int64); ms < 59000 || ms > 60000 {
		t.Fatalf("maxTimeMS %d", ms)
	}
}

func TestAggregateGates(t *testing.T) {
	d := aggDeps(t, nil)
	cases := []struct{ args, want string }{
		{`{"class_name":"Song","pipeline":[{"$out":"x"}],"dry_run":true}`, "violation"},
		{`{"class_name":"_User","pipeline":[{"$project":{"h":"$_hashed_password"}}],"dry_run":true}`, "violation"},
		{`{"class_name":"Song","pipeline":[{"$lookup":{"from":"VaultSecret","pipeline":[],"as":"s"}}],"dry_run":true}`, "invalid_argument"},
		{`{"class_name":"VaultSecret","pipeline":[{"$match":{}}],"dry_run":true}`, "invalid_argument"},
		{`{"class_name":"Patient","pipeline":[{"$project":{"ssn":1}}],"dry_run":true}`, "access_denied:field_not_allowed"},
		{`{"class_name":"Song","pipeline":[{"$group":{"_id":"$_p_artist"}}]}`, "access_denied:storage_form_field_ref"},
		{`{"class_name":"Song","pipeline":{"$match":{}}}`, "invalid_argument"},
		{`{"class_name":"Song"}`, "invalid_argument"},
		{`{"class_name":"Song","pipeline":[]}`, "invalid_query"},
		{`{"class_name":"Song","pipeline":[{"$match":{"artist":"Artist$x"}}],"dry_run":true}`, "pointer_shape_mismatch"},
		{`{"class_name":"Song","pipeline":[{"$sort":{"a":1,"a":-1}}]}`, "invalid_argument"},
	}
	for _, c := range cases {
		_, err := aggCall(t, d, handlerOf("aggregate"), c.args)
		if got := parsetest.Outcome(err); got != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.args, got, err, c.want)
		}
	}
}

func TestOrderedArgument(t *testing.T) {
	ctx := withRawArguments(context.Background(), json.RawMessage(`{"a":1,"pipeline":[{"$sort":{"z":1,"a":-1}},{"$limit":2.5}],"b":{"x":[1,2]}}`))
	v, found, err := OrderedArgument(ctx, "pipeline")
	if err != nil || !found {
		t.Fatal(found, err)
	}
	p := v.([]any)
	sort := p[0].(bson.D)[0].Value.(bson.D)
	if sort[0].Key != "z" || sort[1].Key != "a" || sort[0].Value != json.Number("1") {
		t.Fatalf("order lost: %v", sort)
	}
	if _, found, _ := OrderedArgument(ctx, "missing"); found {
		t.Fatal("missing argument found")
	}
	if _, found, _ := OrderedArgument(context.Background(), "pipeline"); found {
		t.Fatal("found without raw arguments")
	}
	deep := `{"p":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
	if _, _, err := OrderedArgument(withRawArguments(context.Background(), json.RawMessage(deep)), "p"); parsetest.Outcome(err) != "violation" {
		t.Fatalf("deep nesting: %v", err)
	}
	// A pipeline sent as a JSON string is decoded with its order.
	sp, err := PipelineArg(context.Background(), Args{"pipeline": `[{"$sort":{"z":1,"a":-1}}]`}, "pipeline")
	if err != nil || sp[0].(bson.D)[0].Value.(bson.D)[0].Key != "z" {
		t.Fatalf("string pipeline: %v %v", sp, err)
	}
	// A pipeline sent as one object (the ordered decoder makes it a bson.D)
	// is refused in JSON words, not with a Go type name.
	for _, raw := range []string{`{"pipeline":{"$match":{}}}`, `{"pipeline":[{"$limit":1}]}`} {
		_, err := PipelineArg(withRawArguments(context.Background(), json.RawMessage(raw)), Args{}, "pipeline")
		if strings.Contains(raw, "[") {
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			continue
		}
		if err == nil || err.Error() != "pipeline must be an array of stages, got an object" {
			t.Fatalf("%s: %v", raw, err)
		}
	}
	// Without raw arguments PipelineArg falls back to the decoded map.
	got, err := PipelineArg(context.Background(), Args{"pipeline": []any{map[string]any{"$limit": 1.0}}}, "pipeline")
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
}

// aggRaw builds a raw document.
func aggRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rowsJSON(t *testing.T, rows []*outRow) string {
	t.Helper()
	b, err := jsonenc.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAggregateRowConversionAndCompaction(t *testing.T) {
	d := aggDeps(t, nil)
	s := aggSchema()
	when := bson.NewDateTimeFromTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
	conv := newRowConverter(context.Background(), d, s.Class("Song"))
	convert := func(docs ...bson.D) []*outRow {
		var rows []*outRow
		for _, doc := range docs {
			r, err := conv.convert(aggRaw(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
		}
		return rows
	}

	// One class per column: compacted; the order of stored keys is kept.
	rows := convert(
		bson.D{{Key: "_id", Value: "s1"}, {Key: "_created_at", Value: when}, {Key: "_p_artist", Value: "Artist$a1"}, {Key: "title", Value: "x"}, {Key: "_rperm", Value: bson.A{"*"}}, {Key: "releasedAt", Value: when}},
		bson.D{{Key: "_id", Value: "s2"}, {Key: "_p_artist", Value: "Artist$a2"}, {Key: "title", Value: "y"}},
		bson.D{{Key: "_id", Value: "s3"}, {Key: "_p_artist", Value: nil}},
	)
	pc := compactPointers(rows)
	want := `[{"objectId":"s1","createdAt":"2020-01-02T03:04:05.000Z","artist":"a1","title":"x","releasedAt":{"__type":"Date","iso":"2020-01-02T03:04:05.000Z"}},{"objectId":"s2","artist":"a2","title":"y"},{"objectId":"s3"}]`
	if got := rowsJSON(t, rows); got != want || pc["artist"] != "Artist" || len(pc) != 1 {
		t.Fatalf("\n got %s %v\nwant %s", got, pc, want)
	}

	// Classes vary → REST pointers; a hidden class → redacted, column raw.
	rows = convert(
		bson.D{{Key: "_id", Value: "a"}, {Key: "_p_ref", Value: "Artist$a1"}, {Key: "_p_secret", Value: "VaultSecret$v1v1v1v1v1"}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "_p_ref", Value: "Song$s1"}, {Key: "_p_secret", Value: "VaultSecret$v2v2v2v2v2"}},
	)
	if pc := compactPointers(rows); pc != nil {
		t.Fatalf("compacted mixed/hidden columns: %v", pc)
	}
	want = `[{"objectId":"a","ref":{"__type":"Pointer","className":"Artist","objectId":"a1"},"secret":{"__redacted":true}},{"objectId":"b","ref":{"__type":"Pointer","className":"Song","objectId":"s1"},"secret":{"__redacted":true}}]`
	if got := rowsJSON(t, rows); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}

	// The bare name collides: the storage column stays, raw.
	rows = convert(bson.D{{Key: "_id", Value: "c"}, {Key: "artist", Value: "Someone"}, {Key: "_p_artist", Value: "Artist$a9"}, {Key: "_p_x", Value: "VaultSecret$vvvvvvvvvv"}, {Key: "x", Value: 1}})
	compactPointers(rows)
	want = `[{"objectId":"c","artist":"Someone","_p_artist":"Artist$a9","_p_x":{"__redacted":true},"x":1}]`
	if got := rowsJSON(t, rows); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}

	// $group output: null _id is objectId null; hidden refs at any depth
	// redacted; nested internal fields dropped.
	conv = newRowConverter(context.Background(), d, nil)
	rows = convert(bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: int32(3)}, {Key: "docs", Value: bson.A{bson.D{{Key: "_hashed_password", Value: "h"}, {Key: "k", Value: "VaultSecret$v3v3v3v3v3"}}}}})
	want = `[{"objectId":null,"n":3,"docs":[{"k":{"__redacted":true}}]}]`
	if got := rowsJSON(t, rows); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}

	// Joined objects are shown in REST shape with their own class.
	conv = newRowConverter(context.Background(), d, s.Class("Song"))
	conv.joined = joinedFields([]any{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "Patient"}, {Key: "as", Value: "p"}}}}}, s)
	rows = convert(bson.D{{Key: "_id", Value: "s1"}, {Key: "p", Value: bson.A{
		bson.D{{Key: "_id", Value: "p1"}, {Key: "_created_at", Value: when}, {Key: "name", Value: "Ann"}, {Key: "_p_doctor", Value: "_User$u1"}, {Key: "_rperm", Value: bson.A{"*"}}}}}})
	want = `[{"objectId":"s1","p":[{"objectId":"p1","createdAt":"2020-01-02T03:04:05.000Z","name":"Ann","doctor":{"__type":"Pointer","className":"_User","objectId":"u1"}}]}]`
	if got := rowsJSON(t, rows); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestRowsTooLargeMessage(t *testing.T) {
	d := aggDeps(t, nil)
	err := rowsTooLarge(d, "aggregate", map[string]int{"objectId": 100, "lyrics": 9000, "meta": 3000, "title": 500, "genre": 200})
	te, ok := toolerror.As(err)
	if !ok || te.Code != toolerror.InvalidArgument {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(te.Message, "Heaviest fields: lyrics (8.8 KB), meta (2.9 KB), title (500 B)") ||
		!strings.Contains(te.Message, `Retry with keys: ["genre","meta","objectId","title"]`) || !strings.Contains(te.Message, "$project") {
		t.Fatalf("message: %s", te.Message)
	}
}

// A joined class's paths that the stages read get the not-a-hidden-reference
// conjunct inside the join, as the pipeline class's own do ahead of the
// stages: $lookup (after the join), $unionWith rows, $graphLookup.
func TestAggregateJoinedPathsGetTheConjunct(t *testing.T) {
	d := aggDeps(t, nil)
	conj := func(path string) string {
		return `{"` + path + `":{"$not":"<hidden classes>"}` // the dry run's echo of the conjunct
	}
	for _, c := range []struct{ pipeline, inJoin, notInJoin string }{
		{`[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},{"$project":{"x":{"$split":[{"$arrayElemAt":["$a.name",0]},"-"]}}}]`, conj("name"), ""},
		{`[{"$lookup":{"from":"Song","pipeline":[{"$match":{"meta.source":"x"}}],"as":"s"}}]`, conj("meta.source"), conj("title")},
		{`[{"$unionWith":"Song"},{"$project":{"x":{"$toUpper":"$genre"}}}]`, conj("genre"), conj("title")},
		{`[{"$graphLookup":{"from":"Song","startWith":"$title","connectFromField":"genre","connectToField":"title","as":"g"}}]`, conj("title"), conj("meta")},
	} {
		got := dryPipeline(t, d, handlerOf("aggregate"), `{"class_name":"Song","dry_run":true,"apply_canonical_filter":false,"pipeline":`+c.pipeline+`}`)
		i := strings.Index(got, `"$lookup"`)
		if j := strings.Index(got, `"$unionWith"`); i < 0 || j >= 0 && j < i {
			i = j
		}
		if j := strings.Index(got, `"$graphLookup"`); i < 0 || j >= 0 && j < i {
			i = j
		}
		join := got[i:]
		if !strings.Contains(join, c.inJoin) {
			t.Errorf("%s: the join lacks the conjunct on a path it reads:\n%s", c.pipeline, got)
		}
		if c.notInJoin != "" && strings.Contains(join, c.notInJoin) {
			t.Errorf("%s: the join has a conjunct on a path no stage reads:\n%s", c.pipeline, got)
		}
	}
}

// TestAggregateUnwindGetsTheConjunct: after
// each $unwind of the caller, the unwound path gets the not-a-hidden-
// reference conjunct again — elements of an array nested in the stored
// array were one level below the leading conjunct's reach.
func TestAggregateUnwindGetsTheConjunct(t *testing.T) {
	d := aggDeps(t, nil)
	for _, unwind := range []string{`"$tags"`, `{"path":"$tags","preserveNullAndEmptyArrays":true}`} {
		got := dryPipeline(t, d, handlerOf("aggregate"), `{"class_name":"Song","dry_run":true,"apply_canonical_filter":false,"pipeline":[{"$unwind":`+unwind+`},{"$unwind":"$tags"},{"$group":{"_id":"$tags","n":{"$sum":1}}}]}`)
		guard := `{"$match":{"$and":[{"tags":{"$not":"<hidden classes>"}},{"tags.className":{"$nin":"<hidden classes>"}},` + missingRef("tags") + `]}}`
		for _, u := range []string{`{"$unwind":` + unwind + `},`, `{"$unwind":"$tags"},`} {
			if !strings.Contains(got, u+guard) {
				t.Errorf("%s: want the conjunct right after %s:\n%s", unwind, u, got)
			}
		}
	}
}

// TestAggregateSubPipelineUnwindGetsTheConjunct (finding 6 of the pass over
// writes and sub-pipelines): inside $facet, $lookup and $unionWith
// pipelines two $unwinds lifted a hidden reference out of a nested array
// past the leading $match, and a later $match ($gte, a $regex naming no
// class) with $count bisected its id. After every $unwind, at any depth,
// the unwound path gets the conjunct again.
func TestAggregateSubPipelineUnwindGetsTheConjunct(t *testing.T) {
	d := aggDeps(t, nil)
	guard := `{"$match":{"$and":[{"tags":{"$not":"<hidden classes>"}},{"tags.className":{"$nin":"<hidden classes>"}},` + missingRef("tags") + `]}}`
	unwinds := `{"$unwind":"$tags"},{"$unwind":"$tags"},{"$match":{"tags.objectId":{"$gte":"m"}}},{"$count":"n"}`
	for _, tc := range []struct{ name, pipeline string }{
		{"facet", `[{"$facet":{"a":[` + unwinds + `]}}]`},
		{"lookup", `[{"$lookup":{"from":"Song","as":"j","pipeline":[` + unwinds + `]}}]`},
		{"unionWith", `[{"$unionWith":{"coll":"Song","pipeline":[` + unwinds + `]}}]`},
		{"facet in lookup", `[{"$lookup":{"from":"Song","as":"j","pipeline":[{"$facet":{"a":[` + unwinds + `]}}]}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := dryPipeline(t, d, handlerOf("aggregate"), `{"class_name":"Song","dry_run":true,"apply_canonical_filter":false,"pipeline":`+tc.pipeline+`}`)
			if n := strings.Count(got, `{"$unwind":"$tags"},`+guard); n != 2 {
				t.Errorf("want the conjunct after both $unwinds, found %d:\n%s", n, got)
			}
		})
	}
}

// handlerOf is the catalog tool's handler.
func handlerOf(name string) Handler {
	for _, t := range Catalog() {
		if t.Name == name {
			return t.Handler
		}
	}
	panic("no tool " + name)
}

// withRawArguments is ctx inside a tool call whose raw JSON arguments are
// raw, as Tool.Handle records it.
func withRawArguments(ctx context.Context, raw json.RawMessage) context.Context {
	var req mcp.CallToolRequest
	req.Params.RawArguments = raw
	return withToolCall(ctx, req)
}
