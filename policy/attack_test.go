package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// The attack suite: every case is an attempt that must be refused (or
// redacted), with the exact outcome the client sees.

func TestAttackWhere(t *testing.T) {
	tenant := []secOpt{withTenant("t1")}
	cases := []struct {
		name  string
		class string
		where string
		opts  []secOpt
		want  string
	}{
		// Forbidden operators, anywhere.
		{"$where top", "Artist", `{"$where":"sleep(1000)"}`, nil, "violation"},
		{"$where nested in $or", "Artist", `{"$or":[{"name":"a"},{"$where":"1"}]}`, nil, "violation"},
		{"$function in field", "Artist", `{"name":{"$function":{"body":"x"}}}`, nil, "violation"},
		{"$accumulator", "Artist", `{"name":{"$accumulator":{}}}`, nil, "violation"},
		{"$expr", "Artist", `{"$expr":{"$eq":["$name","x"]}}`, nil, "violation"},
		{"$expr deep", "Artist", `{"$and":[{"$or":[{"$nor":[{"$expr":1}]}]}]}`, nil, "violation"},
		{"$where as dotted segment", "Artist", `{"name.$where":1}`, nil, "violation"},
		// Internal fields as keys at any depth.
		{"_hashed_password", "_User", `{"_hashed_password":{"$exists":true}}`, nil, "violation"},
		{"_hashed_password in $or", "_User", `{"$or":[{"_hashed_password":"x"}]}`, nil, "violation"},
		{"password", "_User", `{"password":"x"}`, nil, "violation"},
		{"sessionToken", "_Session", `{"sessionToken":"r:abc"}`, nil, "violation"},
		{"_session_token", "_Session", `{"_session_token":"r:abc"}`, nil, "violation"},
		{"authData path", "_User", `{"authData.github.id":"1"}`, nil, "violation"},
		{"_auth_data_x", "_User", `{"_auth_data_facebook":{"$exists":true}}`, nil, "violation"},
		{"_rperm", "Artist", `{"_rperm":{"$in":["*"]}}`, nil, "violation"},
		{"_wperm in $and", "Artist", `{"$and":[{"_wperm":"x"}]}`, nil, "violation"},
		{"ACL", "Artist", `{"ACL":{"$exists":true}}`, nil, "violation"},
		{"internal inside an object value", "Song", `{"meta":{"_hashed_password":1}}`, tenant, "violation"},
		{"nesting > 8", "Artist", `{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}`, nil, "violation"},
		// Regex guards.
		{"regex bomb ^(a+)+$", "Artist", `{"name":{"$regex":"^(a+)+$"}}`, nil, "violation"},
		{"regex bomb (x*)*", "Artist", `{"name":{"$regex":"(x*)*y"}}`, nil, "violation"},
		{"regex too long", "Artist", `{"name":{"$regex":"` + strings.Repeat("a", 300) + `"}}`, nil, "violation"},
		{"regex options s", "Artist", `{"name":{"$regex":"a","$options":"s"}}`, nil, "violation"},
		{"plain regex ok", "Artist", `{"name":{"$regex":"^Ab","$options":"i"}}`, nil, "ok"},
		// Allowlist (agent_fields).
		{"allowlisted where ssn", "Patient", `{"ssn":"123"}`, nil, "access_denied/field_not_allowed"},
		{"allowlisted where ssn in $or", "Patient", `{"$or":[{"name":"a"},{"ssn":{"$exists":true}}]}`, nil, "access_denied/field_not_allowed"},
		{"allowlisted dotted ssn", "Patient", `{"ssn.x":1}`, nil, "access_denied/field_not_allowed"},
		{"allowlisted allowed field", "Patient", `{"name":"a","objectId":"x"}`, nil, "ok"},
		// Storage-form names.
		{"_p_ pointer key", "Song", `{"_p_artist":"Artist$a"}`, tenant, "invalid_query"},
		// Tenant spoofing.
		{"tenant other value", "Song", `{"orgId":"evil"}`, tenant, "access_denied/tenant_scope"},
		{"tenant $ne", "Song", `{"orgId":{"$ne":"t1"}}`, tenant, "access_denied/tenant_scope"},
		{"tenant $in", "Song", `{"orgId":{"$in":["t1","evil"]}}`, tenant, "access_denied/tenant_scope"},
		{"tenant $exists", "Song", `{"orgId":{"$exists":false}}`, tenant, "access_denied/tenant_scope"},
		{"tenant $regex", "Song", `{"orgId":{"$regex":".*"}}`, tenant, "access_denied/tenant_scope"},
		{"tenant snake case", "Song", `{"org_id":"t1"}`, tenant, "access_denied/tenant_scope"},
		{"tenant camel/pascal", "Song", `{"OrgId":"evil"}`, tenant, "access_denied/tenant_scope"},
		{"tenant upper", "Song", `{"ORG_ID":"t1"}`, tenant, "access_denied/tenant_scope"},
		{"tenant in $or", "Song", `{"$or":[{"orgId":"evil"},{"genre":"rock"}]}`, tenant, "access_denied/tenant_scope"},
		{"tenant in $nor", "Song", `{"$nor":[{"orgId":"t1"}]}`, tenant, "ok"}, // can only narrow: the tenant filter is AND-ed
		{"tenant dotted", "Song", `{"orgId.x":"t1"}`, tenant, "access_denied/tenant_scope"},
		{"tenant same value", "Song", `{"orgId":"t1"}`, tenant, "ok"},
		{"tenant $eq same", "Song", `{"orgId":{"$eq":"t1"}}`, tenant, "ok"},
		{"tenant-less agent", "Song", `{}`, nil, "access_denied/tenant_required"},
		{"tenant-less agent with value", "Song", `{"orgId":"t1"}`, nil, "access_denied/tenant_required"},
		// Classes.
		{"hidden class", "VaultSecret", `{}`, nil, "invalid_argument"},
		{"internal _SCHEMA", "_SCHEMA", `{}`, nil, "invalid_argument"},
		{"internal _Hooks", "_Hooks", `{}`, nil, "invalid_argument"},
		{"default hidden _JobStatus", "_JobStatus", `{}`, nil, "invalid_argument"},
		{"_Session scoped", "_Session", `{}`, []secOpt{withACLUser(secUserID)}, "invalid_argument"},
		{"_Session master", "_Session", `{}`, nil, "ok"},
		{"_Join", "_Join:users:_Role", `{}`, nil, "invalid_argument"},
		{"sql injection name", "_User'; DROP", `{}`, nil, "invalid_argument"},
		{"path traversal name", "../etc/passwd", `{}`, nil, "invalid_argument"},
		{"200 chars name", strings.Repeat("A", 200), `{}`, nil, "invalid_argument"},
		{"unknown class", "Sogn", `{}`, nil, "invalid_argument"},
		// CLP for scoped identities.
		{"CLP empty perms", "Locked", `{}`, []secOpt{withACLUser(secUserID)}, "access_denied/clp_denied"},
		{"CLP role not held", "AdminOnly", `{}`, []secOpt{withACLRole("Moderator")}, "access_denied/clp_denied"},
		{"CLP role held", "AdminOnly", `{}`, []secOpt{withACLRole("Admin")}, "ok"},
		{"CLP master bypass", "Locked", `{}`, nil, "ok"},
		{"CLP requiresAuthentication user", "Invoice", `{}`, []secOpt{withACLUser(secUserID)}, "ok"},
		{"protected field where", "Song", `{"lyrics":{"$exists":true}}`, []secOpt{withTenant("t1"), withACLRole("Moderator")}, "access_denied/protected_field"},
		{"protected field un-protected for Admin", "Song", `{"lyrics":{"$exists":true}}`, []secOpt{withTenant("t1"), withACLRole("Admin")}, "ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := secEngine(t, "", c.opts...)
			var where map[string]any
			if err := json.Unmarshal([]byte(c.where), &where); err != nil {
				t.Fatal(err)
			}
			_, _, err := secRead(e, callCtx(e, "query_class", c.class), c.class, where)
			if got := outcome(err); got != c.want {
				t.Fatalf("got %s (%v), want %s", got, err, c.want)
			}
		})
	}
}

func TestAttackReadFields(t *testing.T) {
	e := secEngine(t, "", withTenant("t1"), withACLRole("Moderator"))
	schema := secSchema()
	cases := []struct {
		class, field, want string
	}{
		{"Patient", "ssn", "access_denied/field_not_allowed"},
		{"Patient", "ssn.last4", "access_denied/field_not_allowed"},
		{"Patient", "name", "ok"},
		{"Patient", "objectId", "ok"},
		{"_User", "_hashed_password", "violation"},
		{"_User", "authData", "violation"},
		{"_User", "authData.github", "violation"},
		{"_User", "_auth_data_github", "violation"},
		{"_User", "password", "violation"},
		{"_Session", "sessionToken", "violation"},
		{"Artist", "meta._rperm", "violation"},
		{"Song", "_p_artist", "access_denied/storage_form_field_ref"},
		{"Song", "lyrics", "access_denied/protected_field"},
		{"Song", "-plays", "ok"},
	}
	for _, c := range cases {
		err := e.CheckReadFields(schema.Class(c.class), []string{c.field})
		if got := outcome(err); got != c.want {
			t.Errorf("%s.%s: got %s (%v), want %s", c.class, c.field, got, err, c.want)
		}
	}
	err := e.CheckReadField(schema.Class("Song"), "_p_artist")
	if te := asToolError(err); te == nil || te.Details.SuggestedRewrite != "artist" {
		t.Fatalf("storage form: %+v", err)
	}
	err = e.CheckReadField(schema.Class("Patient"), "ssn")
	if te := asToolError(err); te == nil || te.Details.DeniedField != "ssn" || len(te.Details.AllowedFields) != 3 {
		t.Fatalf("allowlist details: %+v", err)
	}
}

func TestAttackInclude(t *testing.T) {
	schema := secSchema()
	e := secEngine(t, "", withTenant("t1"))
	ctx := callCtx(e, "query_class", "Album")
	if _, err := e.CheckInclude(ctx, schema, schema.Class("Album"), "artist"); err != nil {
		t.Fatalf("include artist: %v", err)
	}
	cases := []struct {
		class, path, want string
	}{
		{"Song", "secretRef", "invalid_query"},                         // into a hidden class: as into a missing one
		{"Song", "album.artist", "access_denied/tenant_join_denied"},   // from a tenant-scoped class
		{"Patient", "doctor", "ok"},                                    // allowlisted pointer
		{"Album", "title", "invalid_argument"},                         // not a pointer
		{"Album", "artist.name", "invalid_argument"},                   // walks into a non-pointer
		{"Album", "_p_artist", "access_denied/storage_form_field_ref"}, // storage form
		{"Patient", "ssn", "access_denied/field_not_allowed"},          // outside the allowlist
		{"Album", "nosuch", "invalid_argument"},                        // unknown field
		{"_Session", "user", "ok"},                                     // master posture: _Session visible
	}
	for _, c := range cases {
		_, err := e.CheckInclude(ctx, schema, schema.Class(c.class), c.path)
		if got := outcome(err); got != c.want {
			t.Errorf("%s include %s: got %s (%v), want %s", c.class, c.path, got, err, c.want)
		}
	}
	// A hidden class is refused whatever the path leading to it.
	e2 := secEngine(t, `
classes:
  Artist: {hidden: true}
`)
	if _, err := e2.CheckInclude(ctx, schema, schema.Class("Album"), "artist"); outcome(err) != "invalid_query" {
		t.Fatalf("include into hidden Artist: %v", err)
	}
}

func TestAttackJoins(t *testing.T) {
	e := secEngine(t, "", withTenant("t1"))
	if got := outcome(e.CheckJoin("Song", "Artist")); got != "access_denied/tenant_join_denied" {
		t.Fatalf("join from tenant class: %s", got)
	}
	if got := outcome(e.CheckJoin("Artist", "Song")); got != "access_denied/tenant_join_denied" {
		t.Fatalf("join into tenant class: %s", got)
	}
	if got := outcome(e.CheckJoin("Album", "Artist")); got != "ok" {
		t.Fatalf("join between unscoped classes: %s", got)
	}
	if !e.TenantActive("Song") || e.TenantActive("Artist") {
		t.Fatal("TenantActive")
	}
}

func TestAttackRedaction(t *testing.T) {
	schema := secSchema()
	e := secEngine(t, "", withTenant("t1"), withACLRole("Moderator"))
	doc, _ := bson.Marshal(bson.D{
		{Key: "_id", Value: "s1"},
		{Key: "title", Value: "ok"},
		{Key: "leak", Value: "VaultSecret$abc123abc1"},
		{Key: "_p_secretRef", Value: "VaultSecret$abc123abc1"},
		{Key: "meta", Value: bson.D{
			{Key: "credential", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "VaultSecret"}, {Key: "objectId", Value: "zz"}}},
			{Key: "list", Value: bson.A{"VaultSecret$q1q1q1q1q1", "Song$fine"}},
			{Key: "_hashed_password", Value: "bcrypt"},
			{Key: "sessionToken", Value: "r:deadbeef"},
		}},
		{Key: "lyrics", Value: "protected for Moderator"},
		{Key: "_hashed_password", Value: "bcrypt"},
		{Key: "_rperm", Value: bson.A{"*"}},
		{Key: "_acl", Value: bson.D{{Key: "*", Value: bson.D{{Key: "r", Value: true}}}}},
		{Key: "authData", Value: bson.D{{Key: "github", Value: "x"}}},
	})
	row, err := e.RowEncoder(schema, schema.Class("Song"), nil).AppendRow(nil, doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(row)
	for _, bad := range []string{"abc123", "zz", "q1", "bcrypt", "deadbeef", "protected for Moderator", "_rperm", "_acl", "authData", "ACL"} {
		if strings.Contains(s, bad) {
			t.Errorf("row leaks %q: %s", bad, s)
		}
	}
	if strings.Count(s, `"__redacted":true`) != 4 || !strings.Contains(s, `"Song$fine"`) {
		t.Errorf("redaction: %s", s)
	}
	// Allowlisted class: ssn never shown, even when asked for by keys.
	pdoc, _ := bson.Marshal(bson.D{{Key: "_id", Value: "p1"}, {Key: "name", Value: "n"}, {Key: "ssn", Value: "123-45-6789"}})
	for _, keys := range [][]string{nil, {"ssn"}, {"name", "ssn"}} {
		row, err := e.RowEncoder(schema, schema.Class("Patient"), keys).AppendRow(nil, pdoc)
		if err != nil || strings.Contains(string(row), "123-45") {
			t.Errorf("keys %v: %s %v", keys, row, err)
		}
	}
	// _User.password never shown.
	udoc, _ := bson.Marshal(bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "a"}, {Key: "password", Value: "plain"}})
	if row, _ := e.RowEncoder(schema, schema.Class("_User"), nil).AppendRow(nil, udoc); strings.Contains(string(row), "plain") {
		t.Errorf("_User.password shown: %s", row)
	}
	// Master posture sees protected fields.
	m := secEngine(t, "", withTenant("t1"))
	if row, _ := m.RowEncoder(schema, schema.Class("Song"), nil).AppendRow(nil, doc); !strings.Contains(string(row), "protected for Moderator") {
		t.Errorf("master should see protectedFields: %s", row)
	}
}

func TestAttackHiddenEverywhere(t *testing.T) {
	schema := secSchema()
	e := secEngine(t, "", withACLUser(secUserID))
	for _, n := range e.VisibleClassNames(schema) {
		if n == "VaultSecret" || n == "_Session" || strings.HasPrefix(n, "_Join") {
			t.Fatalf("%s listed as visible", n)
		}
	}
	for _, probe := range []string{"VaultSecre", "vaultsecret", "Secret", "_Sesion"} {
		_, err := e.ResolveClass(callCtx(e, "query_class", probe), schema, probe)
		if err == nil || strings.Contains(err.Error(), "VaultSecret") || strings.Contains(err.Error(), "_Session") {
			t.Errorf("probe %q suggests a hidden class: %v", probe, err)
		}
	}
	// Hidden pointer targets are masked in schema display.
	if got := e.DisplayType(schema, schema.Class("Song").Field("secretRef")); got != "Pointer<<targetClass>>" {
		t.Errorf("display type: %s", got)
	}
	// A missing target is masked alike.
	if got := e.DisplayType(schema, &parsedb.Field{Name: "ghost", Type: parsedb.TypeRelation, TargetClass: "NoSuchClass"}); got != "Relation<<targetClass>>" {
		t.Errorf("display type of a missing target: %s", got)
	}
	// agent.classes can never re-enable a hidden class.
	f, _ := Parse([]byte("classes: {VaultSecret: {hidden: true}}\nagent: {classes: {only: [VaultSecret, Artist]}}"), false)
	e2 := New(&config.Config{Permissions: "readonly"}, f, e.log)
	problems := e2.Validate(context.Background(), schema)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "agent.classes.only[0]: VaultSecret is hidden") {
		t.Fatalf("problems: %v", problems)
	}
	if _, err := e2.ResolveClass(context.Background(), schema, "VaultSecret"); outcome(err) != "invalid_argument" {
		t.Fatalf("re-enabled: %v", err)
	}
	if _, err := e2.ResolveClass(context.Background(), schema, "Album"); outcome(err) != "access_denied/class_filter" {
		t.Fatalf("class filter: %v", err)
	}
	for _, n := range e2.VisibleClassNames(schema) {
		if n != "Artist" {
			t.Fatalf("visible under only: %s", n)
		}
	}
}

func TestAttackWriteToolsUnderTiers(t *testing.T) {
	all := config.Gates{WriteTools: true, RawCRUD: true, SchemaOps: true, RawSchema: true}
	cases := []struct {
		tool  string
		perms string
		gates config.Gates
		want  string
		names []string // env variables the message must name
	}{
		{"create_object", "readonly", all, "permission_denied", nil},
		{"delete_object", "write", all, "permission_denied", nil},
		{"create_class", "write", all, "permission_denied", nil},
		{"create_object", "write", config.Gates{}, "access_denied/env_gate", []string{GateWriteTools, GateRawCRUD}},
		{"create_object", "write", config.Gates{WriteTools: true}, "access_denied/env_gate", []string{GateRawCRUD}},
		{"update_object", "write", config.Gates{RawCRUD: true}, "access_denied/env_gate", []string{GateWriteTools}},
		{"create_object", "write", config.Gates{WriteTools: true, RawCRUD: true}, "ok", nil},
		{"delete_object", "admin", config.Gates{WriteTools: true, RawCRUD: true}, "ok", nil},
		{"create_class", "admin", config.Gates{WriteTools: true, RawCRUD: true}, "access_denied/env_gate", []string{GateSchemaOps, GateRawSchema}},
		{"delete_class", "admin", config.Gates{SchemaOps: true}, "access_denied/env_gate", []string{GateRawSchema}},
		{"create_class", "admin", config.Gates{SchemaOps: true, RawSchema: true}, "ok", nil},
		{"call_action", "write", config.Gates{}, "access_denied/env_gate", []string{GateWriteTools}},
		{"call_action", "write", config.Gates{WriteTools: true}, "ok", nil},
		{"call_action", "readonly", all, "permission_denied", nil},
	}
	for _, c := range cases {
		e := secEngine(t, "", withPerms(c.perms), withGates(c.gates))
		info := testTool(c.tool)
		e.Register(info, testTool("query_class"))
		err := e.Permit(info)
		var got string
		if err == nil {
			got = "ok"
		} else {
			got = outcome(err)
		}
		if got != c.want {
			t.Errorf("%s under %s %+v: got %s (%v), want %s", c.tool, c.perms, c.gates, got, err, c.want)
			continue
		}
		for _, n := range c.names {
			if !strings.Contains(err.Message, n) {
				t.Errorf("%s: message %q does not name %s", c.tool, err.Message, n)
			}
		}
		// tools/list agrees with Permit; a marked tools/call passes the
		// filter so that the middleware can answer with the precise code.
		listed := e.ToolFilter(context.Background(), mcpTools(info.Name, "query_class"))
		if (len(listed) == 2) != (c.want == "ok") {
			t.Errorf("%s: tools/list has %d tools", c.tool, len(listed))
		}
		toolCall := callinfo.With(context.Background(), callinfo.Info{Method: string(mcp.MethodToolsCall)})
		if n := len(e.ToolFilter(toolCall, mcpTools(info.Name))); n != 1 {
			t.Errorf("%s: call-time filter dropped the tool", c.tool)
		}
		// would-permit names the gate.
		v := e.WouldPermit(context.Background(), secSchema(), c.tool, "")
		if v.Allowed != (c.want == "ok") {
			t.Errorf("%s: would-permit %+v", c.tool, v)
		}
	}
	// agent.tools narrows before the tier.
	e := secEngine(t, "agent: {tools: {except: [query_class]}}")
	e.Register(testTool("query_class"))
	if err := e.Permit(e.tools["query_class"]); outcome(err) != "tool_filtered" {
		t.Fatalf("agent.tools.except: %v", err)
	}
	e = secEngine(t, "agent: {tools: {only: [count_objects]}}", withPerms("admin"))
	e.Register(testTool("query_class"), testTool("count_objects"))
	if err := e.Permit(e.tools["query_class"]); outcome(err) != "tool_filtered" {
		t.Fatalf("agent.tools.only: %v", err)
	}
	if err := e.Permit(e.tools["count_objects"]); err != nil {
		t.Fatalf("agent.tools.only: %v", err)
	}
	// An unknown tier is never permitted, whatever the server's tier.
	if err := e.Permit(ToolInfo{Name: "count_objects", Tier: "root"}); outcome(err) != "permission_denied" {
		t.Fatalf("unknown tier: %v", err)
	}
}

func TestAttackIdentityScope(t *testing.T) {
	schema := secSchema()
	// ACL user: the _rperm constraint lists null, *, the user and its roles.
	e := secEngine(t, "", withACLUser(secUserID))
	ctx := callCtx(e, "count_objects", "Artist")
	scope, err := e.StorageScope(ctx, schema.Class("Artist"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"_rperm":{"$in":[null,"*","uAlice0001","role:Admin","role:Moderator"]}}`
	if got := extJSON(scope); got != want {
		t.Fatalf("scope %s, want %s", got, want)
	}
	// Pointer permissions restrict rows to the user's own.
	ctx = callCtx(e, "query_class", "Playlist")
	scope, err = e.StorageScope(ctx, schema.Class("Playlist"))
	if err != nil {
		t.Fatal(err)
	}
	got := extJSON(scope)
	if !strings.Contains(got, `"_p_owner":"_User$uAlice0001"`) || !strings.Contains(got, `"editors":{"$all":[{"__type":"Pointer","className":"_User","objectId":"uAlice0001"}]}`) {
		t.Fatalf("pointer permissions: %s", got)
	}
	// count on Playlist: role:Admin is enough, no pointer restriction.
	ctx = callCtx(e, "count_objects", "Playlist")
	scope, _ = e.StorageScope(ctx, schema.Class("Playlist"))
	if strings.Contains(extJSON(scope), "_p_owner") {
		t.Fatalf("count should not be pointer-restricted for Admin: %s", extJSON(scope))
	}
	// A role identity has no user: pointer permissions match nothing, and
	// requiresAuthentication accepts it (Parse: aclGroup holds more than *).
	r := secEngine(t, "", withACLRole("Moderator"))
	ctx = callCtx(r, "query_class", "Playlist")
	scope, err = r.StorageScope(ctx, schema.Class("Playlist"))
	if err != nil || !strings.Contains(extJSON(scope), `"_id":{"$in":[]}`) {
		t.Fatalf("role pointer perms: %s %v", extJSON(scope), err)
	}
	if _, err := r.ResolveClass(callCtx(r, "query_class", "Invoice"), schema, "Invoice"); err != nil {
		t.Fatalf("role and requiresAuthentication: %v", err)
	}
	// Unresolved identity: fail closed.
	u := New(&config.Config{Permissions: "readonly", ACLUser: "x"}, nil, e.log)
	if _, err := u.StorageScope(context.Background(), schema.Class("Artist")); outcome(err) != "access_denied/identity_unresolved" {
		t.Fatalf("unresolved identity: %v", err)
	}
	// Expired session while running.
	s := secEngine(t, "", withSessionToken("r:x"))
	s.identity.ExpiresAt = s.now().Add(-1)
	if _, _, err := secRead(s, callCtx(s, "count_objects", "Artist"), "Artist", nil); outcome(err) != "access_denied/session_expired" {
		t.Fatalf("expired session: %v", err)
	}
	// Master posture: no storage scope at all.
	m := secEngine(t, "")
	if scope, err := m.StorageScope(context.Background(), schema.Class("Artist")); err != nil || scope != nil {
		t.Fatalf("master scope: %v %v", scope, err)
	}
}

func TestAttackCompositionOrder(t *testing.T) {
	e := secEngine(t, "", withTenant("t1"))
	_, shown, err := secRead(e, callCtx(e, "query_class", "Song"), "Song", map[string]any{"genre": "rock"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(shown)
	want := `{"$and":[{"genre":"rock"},{"archived":{"$ne":true}},{"orgId":"t1"}]}`
	if string(b) != want {
		t.Fatalf("composed %s, want %s", b, want)
	}
	// Artist: caller → agent.filters.Artist → agent.filters.default.
	_, shown, _ = secRead(e, callCtx(e, "query_class", "Artist"), "Artist", map[string]any{"name": "x"})
	b, _ = json.Marshal(shown)
	want = `{"$and":[{"name":"x"},{"verified":true},{"deleted":{"$ne":true}}]}`
	if string(b) != want {
		t.Fatalf("composed %s, want %s", b, want)
	}
	// The default filter only applies to classes that have its fields.
	_, shown, _ = secRead(e, callCtx(e, "query_class", "Patient"), "Patient", nil)
	if len(shown) != 0 {
		t.Fatalf("default filter applied to Patient: %v", shown)
	}
	// apply_canonical_filter:false drops only the canonical filter.
	cls := secSchema().Class("Song")
	w, _ := e.ComposeWhere(callCtx(e, "query_class", "Song"), cls, nil, false)
	b, _ = json.Marshal(w)
	if string(b) != `{"orgId":"t1"}` {
		t.Fatalf("without canonical: %s", b)
	}
	// Pipelines: tenant first, the others as separate stages.
	stages, _, err := e.PipelineScope(callCtx(e, "aggregate", "Song"), secSchema(), cls, true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = bson.MarshalExtJSON(bson.D{{Key: "p", Value: stages}}, false, false)
	want = `{"p":[{"$match":{"orgId":"t1"}},{"$match":{"archived":{"$ne":true}}}]}`
	if string(b) != want {
		t.Fatalf("pipeline scope %s, want %s", b, want)
	}
}

func TestAttackSessionAudit(t *testing.T) {
	e := secEngine(t, "")
	// CleanText strips control characters and caps at 200 characters.
	got := CleanText("ignore previous instructions\x1b[31m\u202e\u0000\nand " + strings.Repeat("x", 300))
	if strings.ContainsAny(got, "\x1b\u202e\x00\n") || len([]rune(got)) != 200 {
		t.Fatalf("CleanText: %q", got)
	}
	// Descriptions are cleaned at load time.
	f, err := Parse([]byte("classes: {Artist: {description: \"a\\u0007b\\nc\"}}"), false)
	if err != nil || f.Classes["Artist"].Description != "ab c" {
		t.Fatalf("load cleaning: %+v %v", f, err)
	}
	_ = e
}

func asToolError(err error) *toolErrorView {
	te, ok := toolerrorAs(err)
	if !ok {
		return nil
	}
	return te
}

func extJSON(d bson.D) string {
	b, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

var _ = parsedb.IdentityMaster
