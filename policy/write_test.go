package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// Table-driven tests of the write checkpoint (the e2e attack suite drives
// the same refusals through the binary).

func jsonMap(t *testing.T, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCheckObjectWrite(t *testing.T) {
	master := secEngine(t, "", withTenant("org1"))
	scoped := secEngine(t, "", withTenant("org1"), withACLUser(secUserID))
	schema := secSchema()
	for _, tc := range []struct {
		name         string
		e            *Engine
		class, op    string
		fields, acl  string
		want         string
		wantTenantOK bool
	}{
		{"plain create", master, "Artist", OpCreate, `{"name":"a"}`, ``, "ok", false},
		{"floor top level", master, "Artist", OpCreate, `{"_rperm":["*"]}`, ``, "violation", false},
		{"storage form", master, "Song", OpCreate, `{"_p_artist":"Artist$x"}`, ``, "violation", false},
		{"session token", master, "Artist", OpCreate, `{"sessionToken":"r:x"}`, ``, "violation", false},
		{"floor nested", master, "Song", OpUpdate, `{"meta":{"a":[{"_hashed_password":"x"}]}}`, ``, "violation", false},
		{"floor in op", master, "Song", OpUpdate, `{"meta":{"__op":"Add","objects":[{"authData":{}}]}}`, ``, "violation", false},
		{"floor in acl", master, "Artist", OpCreate, `{"name":"a"}`, `{"_wperm":{"write":true}}`, "violation", false},
		{"acl shape", master, "Artist", OpCreate, `{"name":"a"}`, `{"*":{"read":"yes"}}`, "invalid_argument", false},
		{"implicit field", master, "Artist", OpCreate, `{"createdAt":"x"}`, ``, "invalid_argument", false},
		{"system class", master, "_User", OpCreate, `{"username":"x"}`, ``, "access_denied/system_class", false},
		{"hidden pointer field", master, "Song", OpUpdate, `{"secretRef":"v1"}`, ``, "invalid_argument", false},
		{"hidden pointer value", master, "Song", OpUpdate, `{"meta":{"p":{"__type":"Pointer","className":"VaultSecret","objectId":"v"}}}`, ``, "invalid_argument", false},
		{"hidden id string", master, "Song", OpUpdate, `{"title":"VaultSecret$v1v1v1v1v1"}`, ``, "invalid_argument", false},
		{"allowlist", master, "Patient", OpUpdate, `{"ssn":"1"}`, ``, "access_denied/field_not_writable", false},
		{"allowlist acl", master, "Patient", OpUpdate, `{"name":"n"}`, `{"*":{"read":true}}`, "access_denied/field_not_writable", false},
		{"tenant spoof", master, "Song", OpCreate, `{"orgId":"org2"}`, ``, "access_denied/tenant_scope", false},
		{"tenant op", master, "Song", OpUpdate, `{"orgId":{"__op":"Delete"}}`, ``, "access_denied/tenant_scope", false},
		{"tenant forced", master, "Song", OpCreate, `{"title":"t"}`, ``, "ok", true},
		{"tenant same value", master, "Song", OpCreate, `{"title":"t","orgId":"org1"}`, ``, "ok", true},
		{"addField denied", scoped, "Song", OpUpdate, `{"brandNew":1}`, ``, "access_denied/clp_denied", false},
		{"existing field ok", scoped, "Song", OpUpdate, `{"title":"x"}`, ``, "ok", false},
		{"dotted key", master, "Song", OpUpdate, `{"meta.k":{"__op":"Increment","amount":1}}`, ``, "ok", false},
		{"dotted floor segment", master, "Song", OpUpdate, `{"meta._rperm":["*"]}`, ``, "violation", false},
		{"dotted $ segment", master, "Song", OpUpdate, `{"meta.$where":1}`, ``, "violation", false},
		{"dotted storage top", master, "Song", OpUpdate, `{"_p_artist.x":1}`, ``, "violation", false},
		{"dotted on create", master, "Song", OpCreate, `{"meta.k":1}`, ``, "invalid_argument", false},
		{"dotted tenant", master, "Song", OpUpdate, `{"orgId.x":"org1"}`, ``, "access_denied/tenant_scope", false},
		{"dotted allowlist", master, "Patient", OpUpdate, `{"ssn.x":1}`, ``, "access_denied/field_not_writable", false},
		{"dotted hidden pointer value", master, "Song", OpUpdate, `{"meta.p":{"__type":"Pointer","className":"VaultSecret","objectId":"v"}}`, ``, "invalid_argument", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, acl, err := tc.e.CheckObjectWrite(context.Background(), schema, schema.Class(tc.class), ObjectWrite{Op: tc.op, Fields: jsonMap(t, tc.fields), ACL: jsonMap(t, tc.acl)})
			if got := outcome(err); got != tc.want {
				t.Fatalf("got %s, want %s (%v)", got, tc.want, err)
			}
			if tc.wantTenantOK && fields["orgId"] != "org1" {
				t.Errorf("tenant not forced: %v", fields)
			}
			_ = acl
		})
	}
}

func TestWriteScopeGolden(t *testing.T) {
	schema := secSchema()
	e := secEngine(t, "", withACLUser(secUserID))
	scope, err := e.WriteScope(context.Background(), schema.Class("Artist"), OpUpdate)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := bson.MarshalExtJSON(scope, false, false)
	if got := string(b); got != `{"_wperm":{"$in":[null,"*","uAlice0001","role:Admin","role:Moderator"]}}` {
		t.Errorf("update scope %s", got)
	}
	if _, err := e.WriteScope(context.Background(), schema.Class("Locked"), OpDelete); outcome(err) != "access_denied/clp_denied" {
		t.Errorf("CLP delete on Locked: %v", err)
	}
	if scope, _ := secEngine(t, "").WriteScope(context.Background(), schema.Class("Artist"), OpDelete); scope != nil {
		t.Errorf("master posture scope %v", scope)
	}
}

// TestDirectSchemaChanges: without the bridge, a write that would change
// _SCHEMA (a new field, create_class, delete_class) is refused unless
// settings.direct_schema_changes allows it; through the bridge Parse
// Server changes its own schema. Values that add no field (null, Delete)
// and existing fields are not schema changes.
func TestDirectSchemaChanges(t *testing.T) {
	schema := secSchema()
	off := secEngine(t, "classes: {Song: {description: x}}\n")
	on := secEngine(t, "settings: {direct_schema_changes: true}\n")
	bridge := secEngine(t, "classes: {Song: {description: x}}\n", func(c *config.Config) { c.ServerURL = "http://127.0.0.1:1/parse" })
	ctx := context.Background()
	for _, tc := range []struct {
		fields string
		off    string
	}{
		{`{"brandNew":1}`, "access_denied/direct_schema_change"},
		{`{"brandNew":{"__op":"Increment","amount":1}}`, "access_denied/direct_schema_change"},
		{`{"brandNew":null}`, "ok"},
		{`{"brandNew":{"__op":"Delete"}}`, "ok"},
		{`{"title":"x"}`, "ok"},
	} {
		for _, e := range []struct {
			name string
			e    *Engine
			want string
		}{{"off", off, tc.off}, {"on", on, "ok"}, {"bridge", bridge, "ok"}} {
			_, _, err := e.e.CheckObjectWrite(ctx, schema, schema.Class("Song"), ObjectWrite{Op: OpUpdate, Fields: jsonMap(t, tc.fields)})
			if got := outcome(err); got != e.want {
				t.Errorf("%s %s: %s, want %s (%v)", e.name, tc.fields, got, e.want, err)
			}
		}
	}
	for _, c := range []struct {
		class  string
		create bool
	}{{"NewClass", true}, {"Artist", false}} {
		if got := outcome(off.CheckClassWrite(ctx, schema, c.class, c.create)); got != "access_denied/direct_schema_change" {
			t.Errorf("class %s create=%v without the setting: %s", c.class, c.create, got)
		}
		for _, e := range []*Engine{on, bridge} {
			if got := outcome(e.CheckClassWrite(ctx, schema, c.class, c.create)); got != "ok" {
				t.Errorf("class %s create=%v: %s", c.class, c.create, got)
			}
		}
	}
}

func TestCheckClassWrite(t *testing.T) {
	schema := secSchema()
	master := secEngine(t, "")
	for name, want := range map[string]string{
		"NewClass":    "ok",
		"_Audience":   "access_denied/system_class",
		"VaultSecret": "access_denied/class_filter",
		"bad-name":    "invalid_argument",
	} {
		if got := outcome(master.CheckClassWrite(context.Background(), schema, name, true)); got != want {
			t.Errorf("create %s: %s, want %s", name, got, want)
		}
	}
	if got := outcome(master.CheckClassWrite(context.Background(), schema, "Nope", false)); got != "invalid_argument" {
		t.Errorf("delete of a missing class: %s", got)
	}
	hiddenDel := master.CheckClassWrite(context.Background(), schema, "VaultSecret", false)
	missingDel := master.CheckClassWrite(context.Background(), schema, "VaultSecrex", false)
	if outcome(hiddenDel) != outcome(missingDel) {
		t.Errorf("hidden %v vs missing %v", hiddenDel, missingDel)
	}
	scoped := secEngine(t, "", withACLUser(secUserID))
	if got := outcome(scoped.CheckClassWrite(context.Background(), schema, "NewClass", true)); got != "access_denied/master_required" {
		t.Errorf("scoped create_class: %s", got)
	}
}

// Every position of a written value that can refer to a class answers the
// same for a hidden class (VaultSecret) and a missing one (NoSuchClzz):
// the same refusal, with the class name the only difference.
func TestWriteHiddenEqualsMissing(t *testing.T) {
	schema := secSchema()
	master := secEngine(t, "", withTenant("org1"))
	positions := map[string]string{
		"pointer value":        `{"ref":{"__type":"Pointer","className":"%s","objectId":"wu1JlVFHb8"}}`,
		"nested pointer":       `{"meta":{"a":[{"p":{"__type":"Pointer","className":"%s","objectId":"v"}}]}}`,
		"embedded object":      `{"meta":{"o":{"__type":"Object","className":"%s","objectId":"v","k":1}}}`,
		"untyped className":    `{"meta":{"className":"%s"}}`,
		"string":               `{"title":"%s$wu1JlVFHb8"}`,
		"string in array":      `{"tags":["rock","%s$wu1JlVFHb8"]}`,
		"string nested":        `{"meta":{"a":["%s$wu1JlVFHb8"]}}`,
		"add relation":         `{"rel":{"__op":"AddRelation","objects":[{"__type":"Pointer","className":"%s","objectId":"v1"}]}}`,
		"add op":               `{"tags":{"__op":"AddUnique","objects":["%s$wu1JlVFHb8"]}}`,
		"pointer to new field": `{"brandNew":{"__type":"Pointer","className":"%s","objectId":"v1"}}`,
	}
	for name, tmpl := range positions {
		for _, op := range []string{OpCreate, OpUpdate} {
			answer := func(cls string) string {
				_, _, err := master.CheckObjectWrite(context.Background(), schema, schema.Class("Song"), ObjectWrite{Op: op, Fields: jsonMap(t, fmt.Sprintf(tmpl, cls))})
				if err == nil {
					return "ok"
				}
				return strings.ReplaceAll(outcome(err)+": "+err.Error(), cls, "<C>")
			}
			h, m := answer("VaultSecret"), answer("NoSuchClzz")
			if h != m || !strings.Contains(h, "Class <C> does not exist or is not accessible.") {
				t.Errorf("%s (%s): hidden %q, missing %q; want the same refusal", name, op, h, m)
			}
		}
	}
	// Text that is not of the reference shape — a short word after the $
	// ("Ke$ha", "US$100"), a space, a character no id has — is written as
	// given, whatever class the word names: the reader shows it verbatim
	// and the conjunct does not touch it (one definition, parsedb.ReferenceClass).
	for _, v := range []string{"%s$ha", "%s$100", "%s$ab~", "%s$ Rocky", "%s$wu1JlVFHb8wu1JlVFHb8wu1JlVFHb8wu1JlVFHb8"} {
		for _, cls := range []string{"VaultSecret", "NoSuchClzz", "Ke"} {
			fields := jsonMap(t, fmt.Sprintf(`{"title":%q}`, fmt.Sprintf(v, cls)))
			if _, _, err := master.CheckObjectWrite(context.Background(), schema, schema.Class("Song"), ObjectWrite{Op: OpCreate, Fields: fields}); err != nil {
				t.Errorf("text %v refused: %v", fields, err)
			}
		}
	}
	// A pointer field whose schema target is hidden, and one whose target
	// is missing, refuse any value alike.
	song := *schema.Class("Song")
	song.Fields = maps.Clone(song.Fields)
	song.Fields["ghostRef"] = &parsedb.Field{Name: "ghostRef", Type: parsedb.TypePointer, TargetClass: "NoSuchClzz"}
	var fieldAnswers []string
	for _, f := range []string{"secretRef", "ghostRef"} {
		_, _, err := master.CheckObjectWrite(context.Background(), schema, &song, ObjectWrite{Op: OpUpdate, Fields: map[string]any{f: "v1"}})
		if err == nil {
			t.Fatalf("write to %s accepted", f)
		}
		msg := strings.NewReplacer("VaultSecret", "<C>", "NoSuchClzz", "<C>", f, "<F>").Replace(outcome(err) + ": " + err.Error())
		fieldAnswers = append(fieldAnswers, msg)
	}
	if fieldAnswers[0] != fieldAnswers[1] {
		t.Errorf("pointer field targets: hidden %q, missing %q", fieldAnswers[0], fieldAnswers[1])
	}
	// Ordinary values stay writable: an existing class, and strings that do
	// not start with a class-like name followed by "$".
	// Text with a "$" that is not exactly Class$objectId is not a
	// reference, whatever the word before it names.
	for _, ok := range []string{`{"title":"Artist$a1"}`, `{"title":"price: US$ 100"}`, `{"title":"$100"}`, `{"meta":{"className":"Artist"}}`,
		`{"title":"A$AP Rocky"}`, `{"title":"VaultSecret$wu1wu1wu1w~"}`, `{"title":"NoSuchClzz$wu1~"}`, `{"title":"$VaultSecret"}`,
		`{"ref":{"__type":"Pointer","className":"Artist","objectId":"a1"}}`} {
		if _, _, err := master.CheckObjectWrite(context.Background(), schema, schema.Class("Song"), ObjectWrite{Op: OpUpdate, Fields: jsonMap(t, ok)}); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	// create_class: a hidden name answers as a name agent.classes excludes
	// (the class exists, so it cannot answer as a new name); delete_class
	// answers as for a missing class; a new class's pointer target likewise.
	hc := master.CheckClassWrite(context.Background(), schema, "VaultSecret", true)
	if outcome(hc) != "access_denied/class_filter" || strings.Contains(hc.Error(), "polic") || strings.Contains(hc.Error(), "hidden") {
		t.Errorf("create_class of a hidden name: %v", hc)
	}
	hd := master.CheckClassWrite(context.Background(), schema, "VaultSecret", false)
	md := master.CheckClassWrite(context.Background(), schema, "NoSuchClzz", false)
	if strings.ReplaceAll(hd.Error(), "VaultSecret", "<C>") != strings.ReplaceAll(md.Error(), "NoSuchClzz", "<C>") {
		t.Errorf("delete_class: hidden %v, missing %v", hd, md)
	}
	scoped := secEngine(t, "", withACLUser(secUserID))
	for _, create := range []bool{true, false} {
		h := outcome(scoped.CheckClassWrite(context.Background(), schema, "VaultSecret", create))
		m := outcome(scoped.CheckClassWrite(context.Background(), schema, "NoSuchClzz", create))
		if h != m {
			t.Errorf("scoped class write (create %v): hidden %s, missing %s", create, h, m)
		}
	}
	for _, tc := range []string{"VaultSecret", "NoSuchClzz"} {
		err := master.CheckNewClassFields(schema, "Fresh", map[string]any{"s": map[string]any{"type": "Pointer", "targetClass": tc}})
		if outcome(err) != "invalid_argument" {
			t.Errorf("create_class pointer target %s: %v", tc, err)
		}
	}
}
