package tools

import (
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// Parts of the not-a-hidden-reference conjunct the demo policy gives a
// grouped field (SECURITY.md "Hidden references").
const (
	// The conjunct as dry runs show it: the hidden names are not echoed.
	groupHiddenRe  = `{"$not":"<hidden classes>"}`
	hiddenRefNames = `{"$nin":"<hidden classes>"}`
)

// missingRef is the conjunct's clause keeping a typed reference to a
// missing class at storage path p from matching.
func missingRef(p string) string {
	return `{"$nor":[{"` + p + `.__type":{"$in":["Pointer","Object","Relation"]},"` + p + `.className":{"$exists":true,"$nin":"<hidden classes>"}}]}`
}

// notHiddenRef is the conjunct over storage paths; a path ending in "+"
// may hold an embedded object, so its className is checked too.
func notHiddenRef(paths ...string) string {
	var parts []string
	for _, p := range paths {
		obj := strings.HasSuffix(p, "+")
		p = strings.TrimSuffix(p, "+")
		parts = append(parts, `{"`+p+`":`+groupHiddenRe+`}`)
		if obj {
			parts = append(parts, `{"`+p+`.className":`+hiddenRefNames+`}`, missingRef(p))
		}
	}
	return `{"$and":[` + strings.Join(parts, ",") + `]}`
}

// matchAnd is a $match stage ANDing a filter with a conjunct.
func matchAnd(filter, conj string) string {
	return `{"$match":{"$and":[` + filter + `,` + conj + `]}}`
}

const archivedFilter = `{"archived":{"$ne":true}}`

func TestGroupByPipelineGolden(t *testing.T) {
	d := aggDeps(t, nil)
	cases := []struct{ name, args, want string }{
		{"count (defaults)", `{"field":"genre"}`,
			`[` + matchAnd(archivedFilter, notHiddenRef("genre")) + `,{"$group":{"_id":"$genre","value":{"$sum":1}}},{"$sort":{"value":-1,"_id":1}},{"$limit":201}]`},
		{"sum with where, value_asc, limit", `{"field":"genre","operation":"sum","value_field":"plays","where":{"plays":{"$gt":10}},"sort":"value_asc","limit":5}`,
			`[` + matchAnd(`{"$and":[{"plays":{"$gt":10.0}},{"archived":{"$ne":true}}]}`, notHiddenRef("genre", "plays")) + `,{"$group":{"_id":"$genre","value":{"$sum":"$plays"}}},{"$sort":{"value":1,"_id":1}},{"$limit":6}]`},
		{"average alias, key_desc", `{"field":"genre","operation":"average","value_field":"plays","sort":"key_desc"}`,
			`[` + matchAnd(archivedFilter, notHiddenRef("genre", "plays")) + `,{"$group":{"_id":"$genre","value":{"$avg":"$plays"}}},{"$sort":{"_id":-1}},{"$limit":201}]`},
		{"min / max, key_asc", `{"field":"genre","operation":"max","value_field":"releasedAt","sort":"key_asc"}`,
			`[` + matchAnd(archivedFilter, notHiddenRef("genre", "releasedAt")) + `,{"$group":{"_id":"$genre","value":{"$max":"$releasedAt"}}},{"$sort":{"_id":1}},{"$limit":201}]`},
		{"min", `{"field":"genre","operation":"min","value_field":"plays"}`,
			`[` + matchAnd(archivedFilter, notHiddenRef("genre", "plays")) + `,{"$group":{"_id":"$genre","value":{"$min":"$plays"}}},{"$sort":{"value":-1,"_id":1}},{"$limit":201}]`},
		{"pointer field groups on its storage column", `{"field":"artist","where":{"artist":"a1"}}`,
			`[` + matchAnd(`{"$and":[{"_p_artist":"Artist$a1"},{"archived":{"$ne":true}}]}`, notHiddenRef("_p_artist")) + `,{"$group":{"_id":"$_p_artist","value":{"$sum":1}}},{"$sort":{"value":-1,"_id":1}},{"$limit":201}]`},
		{"flatten_arrays", `{"field":"tags","flatten_arrays":true,"limit":1000}`,
			`[` + matchAnd(archivedFilter, notHiddenRef("tags+")) + `,{"$unwind":"$tags"},{"$group":{"_id":"$tags","value":{"$sum":1}}},{"$sort":{"value":-1,"_id":1}},{"$limit":1001}]`},
		{"dotted path into an Object field, createdAt", `{"field":"meta.source","operation":"max","value_field":"createdAt"}`,
			`[` + matchAnd(archivedFilter, notHiddenRef("meta+", "meta.source+", "_created_at")) + `,{"$group":{"_id":"$meta.source","value":{"$max":"$_created_at"}}},{"$sort":{"value":-1,"_id":1}},{"$limit":201}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := `{"class_name":"Song","dry_run":true,` + c.args[1:]
			if got := dryPipeline(t, d, handlerOf("group_by"), args); got != c.want {
				t.Fatalf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestGroupByDatePipelineGolden(t *testing.T) {
	d := aggDeps(t, nil)
	key := func(format, tz string) string {
		s := `{"$dateToString":{"format":"` + format + `","date":"$releasedAt"`
		if tz != "" {
			s += `,"timezone":"` + tz + `"`
		}
		return s + `}}`
	}
	pipe := func(k, sort string) string {
		if sort == "" {
			sort = `{"_id":1}`
		}
		return `[` + matchAnd(archivedFilter, notHiddenRef("releasedAt")) + `,{"$group":{"_id":` + k + `,"value":{"$sum":1}}},{"$sort":` + sort + `},{"$limit":201}]`
	}
	cases := []struct{ args, want string }{
		{`{"interval":"year"}`, pipe(key("%Y", ""), "")},
		{`{"interval":"month","timezone":"+09:00"}`, pipe(key("%Y-%m", "+09:00"), "")},
		{`{"interval":"week","timezone":"Europe/Paris"}`, pipe(key("%G-W%V", "Europe/Paris"), "")},
		{`{"interval":"day","sort":"value_desc"}`, pipe(key("%Y-%m-%d", ""), `{"value":-1,"_id":1}`)},
		{`{"interval":"hour","timezone":"UTC"}`, pipe(key("%Y-%m-%d %H:00", "UTC"), "")},
		{`{"interval":"minute"}`, pipe(key("%Y-%m-%d %H:%M", ""), "")},
		{`{"interval":"second","timezone":"-05:30"}`, pipe(key("%Y-%m-%d %H:%M:%S", "-05:30"), "")},
		{`{"interval":"quarter","timezone":"America/New_York"}`,
			pipe(`{"$concat":[`+key("%Y", "America/New_York")+`,"-Q",{"$toString":{"$toInt":{"$ceil":{"$divide":[{"$month":{"date":"$releasedAt","timezone":"America/New_York"}},3]}}}}]}`, "")},
	}
	for _, c := range cases {
		args := `{"class_name":"Song","field":"releasedAt","dry_run":true,` + c.args[1:]
		if got := dryPipeline(t, d, handlerOf("group_by_date"), args); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.args, got, c.want)
		}
	}
	// createdAt is the storage column _created_at; sum works as in group_by.
	got := dryPipeline(t, d, handlerOf("group_by_date"), `{"class_name":"Song","field":"createdAt","interval":"year","operation":"sum","value_field":"plays","dry_run":true}`)
	want := `[` + matchAnd(archivedFilter, notHiddenRef("_created_at", "plays")) + `,{"$group":{"_id":{"$dateToString":{"format":"%Y","date":"$_created_at"}},"value":{"$sum":"$plays"}}},{"$sort":{"_id":1}},{"$limit":201}]`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestGroupDryRunEnvelope(t *testing.T) {
	d := aggDeps(t, nil)
	m, err := aggCall(t, d, handlerOf("group_by"), `{"class_name":"Song","field":"genre","dry_run":true}`)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := m["parameters"].(map[string]any)
	if m["class_name"] != "Song" || params["field"] != "genre" || params["operation"] != "count" || m["hint"] == nil || m["pipeline"] == nil {
		t.Fatalf("dry run envelope: %v", m)
	}
}

func TestGroupGates(t *testing.T) {
	d := aggDeps(t, nil)
	cases := []struct {
		h          Handler
		args, want string
	}{
		// Security gates run before a dry run answers.
		{handlerOf("group_by"), `{"class_name":"_User","field":"_hashed_password","dry_run":true}`, "violation"},
		{handlerOf("group_by"), `{"class_name":"_User","field":"authData.github","dry_run":true}`, "violation"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"genre","operation":"sum","value_field":"_rperm","dry_run":true}`, "violation"},
		{handlerOf("distinct"), `{"class_name":"_User","field":"sessionToken","dry_run":true}`, "violation"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"_p_artist","dry_run":true}`, "access_denied:storage_form_field_ref"},
		{handlerOf("group_by"), `{"class_name":"Patient","field":"ssn","dry_run":true}`, "access_denied:field_not_allowed"},
		{handlerOf("distinct"), `{"class_name":"Patient","field":"ssn","dry_run":true}`, "access_denied:field_not_allowed"},
		{handlerOf("group_by"), `{"class_name":"Patient","field":"name","operation":"sum","value_field":"ssn","dry_run":true}`, "access_denied:field_not_allowed"},
		{handlerOf("group_by"), `{"class_name":"VaultSecret","field":"apiKey","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Patient","field":"name","where":{"ssn":"1"},"dry_run":true}`, "access_denied:field_not_allowed"},
		// Argument errors.
		{handlerOf("group_by"), `{"class_name":"Song","field":"genre","operation":"sum","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"genre","operation":"sum","value_field":"artist","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"genre","operation":"median","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"likes","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"artist.name","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"_id","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"genre","limit":0,"dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by"), `{"class_name":"Song","field":"genre","limit":1001,"dry_run":true}`, "invalid_argument"},
		{handlerOf("distinct"), `{"class_name":"Song","field":"genre","limit":5001,"dry_run":true}`, "invalid_argument"},
		{handlerOf("distinct"), `{"class_name":"Song","field":"genre","sort":"random","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"artist","interval":"day","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"tags","interval":"day","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"likes","interval":"day","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"genre","interval":"day","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"nope","interval":"day","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"releasedAt","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"releasedAt","interval":"fortnight","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"releasedAt","interval":"day","timezone":"Mars/Olympus","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"releasedAt","interval":"day","timezone":"Local","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"releasedAt","interval":"day","timezone":"+25:00","dry_run":true}`, "invalid_argument"},
		{handlerOf("group_by_date"), `{"class_name":"Song","field":"releasedAt","interval":"day","timezone":"9","dry_run":true}`, "invalid_argument"},
	}
	for _, c := range cases {
		_, err := aggCall(t, d, c.h, c.args)
		if got := parsetest.Outcome(err); got != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.args, got, err, c.want)
		}
	}
}

func TestGroupTenantScope(t *testing.T) {
	d := aggDeps(t, func(c *config.Config) { c.TenantID = "org_north" })
	got := dryPipeline(t, d, handlerOf("group_by"), `{"class_name":"Scoped","field":"name","dry_run":true}`)
	if !strings.HasPrefix(got, `[`+matchAnd(`{"orgId":"org_north"}`, notHiddenRef("name"))) {
		t.Fatalf("tenant filter missing: %s", got)
	}
	_, err := aggCall(t, d, handlerOf("group_by"), `{"class_name":"Scoped","field":"name","where":{"orgId":"org_south"},"dry_run":true}`)
	if got := parsetest.Outcome(err); !strings.HasPrefix(got, "access_denied") {
		t.Fatalf("other tenant in where: %s (%v)", got, err)
	}
}

func TestPointerKeys(t *testing.T) {
	items := []keyed{{key: "Artist$a1"}, {key: nil}, {key: "Artist$a2"}}
	if c := pointerKeys(items); c != "Artist" || items[0].key != "a1" || items[1].key != nil || items[2].key != "a2" {
		t.Fatalf("one class: %q %v", c, items)
	}
	items = []keyed{{key: "Artist$a1"}, {key: "Album$b1"}}
	if c := pointerKeys(items); c != "" || items[0].key != "Artist$a1" {
		t.Fatalf("mixed classes: %q %v", c, items)
	}
	items = []keyed{{key: nil, hidden: true}, {key: nil, hidden: true}}
	if c := pointerKeys(items); c != "" {
		t.Fatalf("hidden: %q", c)
	}
}

func TestCheckTimezone(t *testing.T) {
	for _, ok := range []string{"", "UTC", "Europe/Paris", "Asia/Tokyo", "+09:00", "-03:30", "+14:00"} {
		if _, err := checkTimezone(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"Local", "Mars/Base", "+9:00", "0900", "+15:00", "../../etc/passwd", "Europe/Paris "} {
		if _, err := checkTimezone(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestResolveGroupFieldStorage(t *testing.T) {
	d := aggDeps(t, nil)
	cls := aggSchema().Class("Song")
	for name, want := range map[string]string{"artist": "_p_artist", "objectId": "_id", "createdAt": "_created_at", "updatedAt": "_updated_at", "genre": "genre", "meta.x.y": "meta.x.y"} {
		g, err := resolveGroupField(d, cls, "field", name)
		if err != nil || g.storage != want {
			t.Errorf("%s: %v %v", name, g, err)
		}
	}
	if g, _ := resolveGroupField(d, cls, "field", "artist"); !g.isPointer() || g.field.Type != parsedb.TypePointer {
		t.Fatal("artist is a pointer")
	}
}

// TestGroupPointerToInvisibleRefused: group_by, group_by_date and distinct
// on a Pointer field whose target class is hidden, or missing from the
// schema, are refused as a where on it is, with one message for both
// (hidden equals missing); grouping on the stored references would show
// how many hidden objects are referenced and which rows share one. The
// refusal comes before a dry run answers (it depends on the schema only),
// so dry runs prove it without a database.
func TestGroupPointerToInvisibleRefused(t *testing.T) {
	d := aggDeps(t, nil)
	calls := []struct {
		h    Handler
		args string
	}{
		{handlerOf("group_by"), `{"class_name":"AuditLog","field":"F","dry_run":true}`},
		{handlerOf("group_by"), `{"class_name":"AuditLog","field":"F","where":{"action":"x"},"sort":"key_asc","limit":5,"dry_run":true}`},
		{handlerOf("distinct"), `{"class_name":"AuditLog","field":"F","dry_run":true}`},
		{handlerOf("group_by_date"), `{"class_name":"AuditLog","field":"F","interval":"day","dry_run":true}`},
	}
	for _, c := range calls {
		var answers []string
		for _, field := range []string{"secret", "ghost"} {
			_, err := aggCall(t, d, c.h, strings.Replace(c.args, `"F"`, `"`+field+`"`, 1))
			if err == nil {
				t.Errorf("%s on %s: accepted", c.args, field)
				continue
			}
			if got := parsetest.Outcome(err); got != "invalid_query" && got != "invalid_argument" {
				t.Errorf("%s on %s: %s (%v)", c.args, field, got, err)
			}
			answers = append(answers, strings.ReplaceAll(err.Error(), field, "F"))
		}
		if len(answers) == 2 && answers[0] != answers[1] {
			t.Errorf("%s: hidden and missing targets answer differently:\n %s\n %s", c.args, answers[0], answers[1])
		}
	}
	// A pointer to a visible class still groups.
	if _, err := aggCall(t, d, handlerOf("group_by"), `{"class_name":"Song","field":"artist","dry_run":true}`); err != nil {
		t.Errorf("visible pointer: %v", err)
	}
}
