package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// Start-up validation: every problem fails with its exact path.

func TestParseErrorsHaveExactPaths(t *testing.T) {
	cases := []struct {
		doc  string
		want string
	}{
		{"clases: {}", "clases: unknown key (did you mean classes?)"},
		{"classes: {Song: {agent_feilds: [a]}}", "classes.Song.agent_feilds: unknown key (did you mean agent_fields?)"},
		{"classes: {Song: {fields: {genre: {descripton: x}}}}", "classes.Song.fields.genre.descripton: unknown key (did you mean description?)"},
		{"classes: {Song: {allow_collscan: yes}}", "classes.Song.allow_collscan: must be true or false, got a string"},
		{"classes: {Song: {hidden: maybe}}", `classes.Song.hidden: must be true, false or "except_master", got "maybe"`},
		{"classes: {Song: {agent_fields: []}}", "classes.Song.agent_fields: must not be empty (omit it to allow every field)"},
		{"classes: {Song: {agent_fields: [title, title]}}", "classes.Song.agent_fields[1]: title is listed twice"},
		{"classes: {Song: {agent_fields: [title, 3]}}", "classes.Song.agent_fields[1]: must be a string, got a number"},
		{"classes: {Song: {agent_fields: [\"a b\"]}}", `classes.Song.agent_fields[0]: "a b" is not a valid field name`},
		{"classes: {Song: {canonical_filter: [1]}}", "classes.Song.canonical_filter: must be a where object, got a list"},
		{"classes: {Song: {tenant_scope: {}}}", "classes.Song.tenant_scope: needs field: the name of the field holding the tenant id"},
		{"classes: {Song: {tenant_scope: {field: orgId, fld: x}}}", "classes.Song.tenant_scope.fld: unknown key (did you mean field?)"},
		{"classes: {Song: {tenant_scope: {field: orgId, from_user: \"a b\"}}}", `classes.Song.tenant_scope.from_user: "a b" is not a valid field name`},
		{"classes: {\"../etc\": {}}", "classes.../etc: not a valid Parse class name"},
		{"agent: {tools: {only: []}}", "agent.tools.only: must not be empty (an empty allowlist allows nothing; omit it instead)"},
		{"agent: {tools: {ony: [x]}}", "agent.tools.ony: unknown key (did you mean only?)"},
		{"agent: {tools: {only: [a], except: [a]}}", "agent.tools.except[0]: a is in both only and except"},
		{"agent: {filters: {Song: 1}}", "agent.filters.Song: must be a where object, got a number"},
		{"settings: {rate_limt: {}}", "settings.rate_limt: unknown key (did you mean rate_limit?)"},
		{"settings: {rate_limit: {window: soon}}", `settings.rate_limit.window: must be a duration between 1s and 24h like 60s or 5m, got "soon"`},
		{"settings: {rate_limit: {window: 1ms}}", `settings.rate_limit.window: must be a duration between 1s and 24h like 60s or 5m, got "1ms"`},
		{"settings: {rate_limit: {window: 25h}}", `settings.rate_limit.window: must be a duration between 1s and 24h like 60s or 5m, got "25h"`},
		{"settings: {rate_limit: {requests: -1}}", "settings.rate_limit.requests: must be between 0 and 1000000, got -1"},
		{"settings: {rate_limit: {requests: 1000000000}}", "settings.rate_limit.requests: must be between 0 and 1000000, got 1000000000"},
		{"settings: {rate_limit: {requests: 1.5}}", "settings.rate_limit.requests: must be a whole number, got 1.5"},
		{"settings: {rate_limit: {requests: many}}", "settings.rate_limit.requests: must be a whole number, got a string"},
		{"settings: {max_response_bytes: 10}", "settings.max_response_bytes: must be between 1024 and 4194304, got 10"},
		{"prompts: [{name: x}]", "prompts[0].template: is required"},
		{"prompts: [{name: x, template: y, arguments: [{nme: a}]}]", "prompts[0].arguments[0].nme: unknown key (did you mean name?)"},
		{"[1, 2]", "the policy file must be a mapping (object), got a list"},
		{"classes: {Song: {description: x}\n", "not valid YAML"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc), false)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s\n got: %v\nwant: %s", c.doc, err, c.want)
		}
	}
	// A JSON syntax error says where it is, counted in the file as written.
	for _, c := range []struct{ doc, want string }{
		{"\n\n{\"classes\": {\"Song\": {\"hidden\": true,}}}", "not valid JSON: line 3, column 38: invalid character '}' looking for beginning of object key string"},
		{`{"classes": {"Song": {}`, "not valid JSON: the document ends early (an unclosed { or [ or string?)"},
	} {
		if _, err := Parse([]byte(c.doc), true); err == nil || err.Error() != c.want {
			t.Errorf("%q\n got: %v\nwant: %s", c.doc, err, c.want)
		}
	}
	// JSON, same paths.
	_, err := Parse([]byte(`{"classes":{"Song":{"agent_feilds":[]}}}`), true)
	if err == nil || err.Error() != "classes.Song.agent_feilds: unknown key (did you mean agent_fields?)" {
		t.Errorf("json: %v", err)
	}
	// The demo policy parses.
	if _, err := Parse([]byte(secPolicyYAML), false); err != nil {
		t.Fatal(err)
	}
}

func TestValidateAgainstSchema(t *testing.T) {
	cases := []struct {
		doc  string
		want string
	}{
		{"classes: {Song: {canonical_filter: {archived: {$nee: true}}}}", "classes.Song.canonical_filter: unknown operator $nee"},
		{"classes: {Song: {canonical_filter: {$where: x}}}", "classes.Song.canonical_filter: not allowed: forbidden operator $where"},
		{"classes: {Song: {canonical_filter: {artist: {$inQuery: {className: Artist, where: {}}}}}}", "classes.Song.canonical_filter: artist: $inQuery is not available here"},
		{"classes: {Patient: {agent_fields: [name, sn]}}", "classes.Patient.agent_fields[1]: no field sn in Patient's _SCHEMA (did you mean ssn?)"},
		{"classes: {Patient: {agent_fields: [name, authData]}}", "classes.Patient.agent_fields[1]: authData is an internal field"},
		{"classes: {Patient: {agent_fields: [name], join_fields: [name, age]}}", "classes.Patient.join_fields[1]: age is not in agent_fields"},
		{"classes: {Patient: {join_fields: [nam]}}", "classes.Patient.join_fields[0]: no field nam in Patient's _SCHEMA"},
		{"classes: {Patient: {large_fields: [notes]}}", "classes.Patient.large_fields[0]: no field notes"},
		{"classes: {Patient: {fields: {sssn: {description: x}}}}", "classes.Patient.fields.sssn: no field sssn in Patient's _SCHEMA (did you mean ssn?)"},
		{"classes: {Sogn: {description: x}}", "classes.Sogn: no class Sogn in _SCHEMA (did you mean Song?)"},
		{"classes: {Song: {tenant_scope: {field: plays}}}", "classes.Song.tenant_scope.field: plays is a Number field"},
		{"classes: {Song: {tenant_scope: {field: org}}}", "classes.Song.tenant_scope.field: no field org in Song's _SCHEMA"},
		{"classes: {Song: {tenant_scope: {field: orgId, from_user: orgz}}}", "classes.Song.tenant_scope.from_user: _User has no field orgz"},
		{"classes: {Song: {tenant_scope: {field: orgId, from_user: orgId}}, Patient: {tenant_scope: {field: name, from_user: username}}}", "classes.Song.tenant_scope.from_user: every tenant_scope.from_user must name the same _User field"},
		{"agent: {classes: {only: [Sogn]}}", "agent.classes.only[0]: no class Sogn in _SCHEMA (did you mean Song?)"},
		{"agent: {classes: {only: [_SCHEMA]}}", "agent.classes.only[0]: _SCHEMA is hidden"},
		{"agent: {tools: {except: [qurey_class]}}", "agent.tools.except[0]: no tool qurey_class (did you mean query_class?)"},
		{"agent: {filters: {Artist: {verified: {$exist: true}}}}", "agent.filters.Artist: unknown operator $exist"},
		{"agent: {filters: {Nope: {a: 1}}}", "agent.filters.Nope: no class Nope in _SCHEMA"},
		{"agent: {filters: {default: {nosuchfield: 1}}}", "agent.filters.default: applies to no class"},
	}
	for _, c := range cases {
		f, err := Parse([]byte(c.doc), false)
		if err != nil {
			t.Errorf("%s: parse: %v", c.doc, err)
			continue
		}
		e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
		e.Register(testTool("query_class"))
		problems := e.Validate(context.Background(), secSchema())
		if len(problems) == 0 || !strings.HasPrefix(problems[0].Error(), c.want) {
			t.Errorf("%s\n got: %v\nwant: %s", c.doc, problems, c.want)
		}
	}
	// Hiding a class that does not exist is fine; agent.tools may name any
	// registered tool, also one the tier does not permit.
	f, _ := Parse([]byte("classes: {Ghost: {hidden: true}, _Product: {hidden: true}}\nagent: {tools: {except: [create_object]}}"), false)
	e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
	e.Register(testTool("query_class"), testTool("create_object"))
	if p := e.Validate(context.Background(), secSchema()); len(p) != 0 {
		t.Fatalf("unexpected problems: %v", p)
	}
}

func TestSetupReportsFirstProblemAndCount(t *testing.T) {
	f, _ := Parse([]byte("classes: {Patient: {agent_fields: [x, y]}}"), false)
	e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
	p := e.Validate(context.Background(), secSchema())
	if len(p) != 2 || p[0].Path != "classes.Patient.agent_fields[0]" || p[1].Path != "classes.Patient.agent_fields[1]" {
		t.Fatalf("%v", p)
	}
}

// bigPolicy is a policy file of n classes with every kind of entry, and the
// matching schema.
func bigPolicy(n int) ([]byte, *parsedb.Schema) {
	var b strings.Builder
	b.WriteString("classes:\n")
	schema := &parsedb.Schema{Classes: map[string]*parsedb.Class{}}
	for i := range n {
		name := fmt.Sprintf("Class%03d", i)
		fmt.Fprintf(&b, "  %s:\n    description: \"Class number %d\"\n", name, i)
		b.WriteString("    fields:\n")
		for j := range 8 {
			fmt.Fprintf(&b, "      f%d: {description: \"field %d\", enum: {a: \"A\", b: \"B\"}}\n", j, j)
		}
		b.WriteString("    agent_fields: [f0, f1, f2, f3, f4, f5, owner]\n    join_fields: [f0, f1]\n    large_fields: [f5]\n")
		b.WriteString("    canonical_filter: {archived: {$ne: true}, f1: {$in: [a, b]}, createdAt: {$gte: \"2020-01-01T00:00:00Z\"}}\n")
		if i%10 == 0 {
			b.WriteString("    tenant_scope: {field: orgId}\n")
		}
		doc := bson.M{"_id": name, "archived": "boolean", "orgId": "string", "owner": "*_User"}
		for j := range 8 {
			doc[fmt.Sprintf("f%d", j)] = "string"
		}
		schema.Classes[name] = parsedb.ClassFromSchemaDoc(doc)
	}
	b.WriteString("agent:\n  classes: {except: [Class001]}\n  filters: {Class002: {f2: x}, default: {archived: {$ne: true}}}\n")
	b.WriteString("settings: {refuse_collscan: true, rate_limit: {requests: 100, window: 1m}}\n")
	return []byte(b.String()), schema
}

func TestBigPolicyValidates(t *testing.T) {
	doc, schema := bigPolicy(200)
	f, err := Parse(doc, false)
	if err != nil {
		t.Fatal(err)
	}
	e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
	if p := e.Validate(context.Background(), schema); len(p) != 0 {
		t.Fatal(p)
	}
}

// BenchmarkStartupValidation200 is start-up validation of a 200-class
// policy file: parse + structural checks + validation against _SCHEMA
// (target ≤ 50 ms).
func BenchmarkStartupValidation200(b *testing.B) {
	doc, schema := bigPolicy(200)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f, err := Parse(doc, false)
		if err != nil {
			b.Fatal(err)
		}
		e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
		if p := e.Validate(context.Background(), schema); len(p) != 0 {
			b.Fatal(p)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(secPolicyYAML), false)
	f.Add([]byte(`{"classes":{"A":{"hidden":true}},"agent":{"tools":{"only":["x"]}}}`), true)
	f.Add([]byte("settings: {rate_limit: {requests: 1, window: 1s}}"), false)
	f.Fuzz(func(t *testing.T, doc []byte, isJSON bool) {
		file, err := Parse(doc, isJSON)
		if err != nil {
			return
		}
		// Whatever parses must build an engine and validate without panics.
		e := New(&config.Config{Permissions: "readonly"}, file, zerolog.New(io.Discard))
		e.Validate(context.Background(), secSchema())
		for n, cp := range file.Classes {
			if cp.IsHidden() && !e.Hidden(n) {
				t.Fatalf("%s hidden in the file but visible", n)
			}
		}
	})
}

// BenchmarkStartupValidation200JSON is the same policy as JSON.
func BenchmarkStartupValidation200JSON(b *testing.B) {
	doc, schema := bigPolicy(200)
	f, err := Parse(doc, false)
	if err != nil {
		b.Fatal(err)
	}
	js, _ := json.Marshal(f)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := Parse(js, true)
		if err != nil {
			b.Fatal(err)
		}
		e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
		if p := e.Validate(context.Background(), schema); len(p) != 0 {
			b.Fatal(p)
		}
	}
}
