package policy

import (
	"context"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// The security tests' world: a small Parse app with a hidden class, an
// allowlisted class, a tenant-scoped class and classes with every CLP shape.

const secUserID = "uAlice0001"

func secSchemaDocs() []bson.M {
	public := bson.M{"*": true}
	return []bson.M{
		{"_id": "_User", "username": "string", "email": "string", "orgId": "string",
			"_metadata": bson.M{"class_permissions": bson.M{"find": public, "count": public, "get": public}}},
		{"_id": "_Role", "name": "string"},
		{"_id": "_Session", "user": "*_User", "sessionToken": "string", "expiresAt": "date"},
		{"_id": "Artist", "name": "string", "verified": "boolean", "deleted": "boolean"},
		{"_id": "Album", "title": "string", "artist": "*Artist", "deleted": "boolean"},
		{"_id": "Song", "title": "string", "genre": "string", "plays": "number", "orgId": "string",
			"archived": "boolean", "artist": "*Artist", "album": "*Album", "leak": "string", "lyrics": "string",
			"secretRef": "*VaultSecret", "meta": "object", "releasedAt": "date",
			"_metadata": bson.M{"class_permissions": bson.M{"find": public, "count": public, "get": public,
				"protectedFields": bson.M{"*": bson.A{"lyrics"}, "role:Admin": bson.A{}}}}},
		{"_id": "Patient", "name": "string", "age": "number", "ssn": "string", "doctor": "*_User"},
		{"_id": "VaultSecret", "apiKey": "string", "service": "string"},
		{"_id": "Invoice", "amount": "number", "customer": "*_User",
			"_metadata": bson.M{"class_permissions": bson.M{"find": bson.M{"requiresAuthentication": true},
				"count": bson.M{"requiresAuthentication": true}, "get": bson.M{"requiresAuthentication": true}}}},
		{"_id": "Playlist", "name": "string", "owner": "*_User", "editors": "array",
			"_metadata": bson.M{"class_permissions": bson.M{"find": bson.M{"pointerFields": bson.A{"owner"}},
				"count": bson.M{"role:Admin": true}, "get": bson.M{"pointerFields": bson.A{"owner"}}, "readUserFields": bson.A{"editors"}}}},
		{"_id": "Locked", "x": "string", "_metadata": bson.M{"class_permissions": bson.M{}}},
		{"_id": "AdminOnly", "x": "string", "_metadata": bson.M{"class_permissions": bson.M{"find": bson.M{"role:Admin": true}}}},
	}
}

func secSchema() *parsedb.Schema {
	s := &parsedb.Schema{Classes: map[string]*parsedb.Class{}}
	for _, d := range secSchemaDocs() {
		c := parsedb.ClassFromSchemaDoc(d)
		s.Classes[c.Name] = c
	}
	return s
}

const secPolicyYAML = `
classes:
  Song:
    description: "A track"
    fields:
      genre: {description: "Primary genre", enum: {rock: "Rock"}}
    large_fields: [lyrics]
    canonical_filter: {archived: {$ne: true}}
    tenant_scope: {field: orgId}
  Patient:
    description: "Allowlisted"
    agent_fields: [name, age, doctor]
    join_fields: [name]
  VaultSecret: {hidden: true}
agent:
  filters:
    Artist: {verified: true}
    default: {deleted: {$ne: true}}
settings: {rate_limit: {requests: 5, window: 10s}, direct_schema_changes: true}
`

type secOpt func(*config.Config)

func withTenant(t string) secOpt        { return func(c *config.Config) { c.TenantID = t } }
func withPerms(p string) secOpt         { return func(c *config.Config) { c.Permissions = p } }
func withGates(g config.Gates) secOpt   { return func(c *config.Config) { c.Gates = g } }
func withACLUser(u string) secOpt       { return func(c *config.Config) { c.ACLUser = u } }
func withACLRole(r string) secOpt       { return func(c *config.Config) { c.ACLRole = r } }
func withSessionToken(tk string) secOpt { return func(c *config.Config) { c.SessionToken = tk } }

// secEngine builds an engine over secPolicyYAML (or yml when non-empty);
// identity options also install a resolved identity: ACL user → alice with
// role Admin, ACL role → that role, session → alice.
func secEngine(t testing.TB, yml string, opts ...secOpt) *Engine {
	t.Helper()
	if yml == "" {
		yml = secPolicyYAML
	}
	f, err := Parse([]byte(yml), false)
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	for _, o := range opts {
		o(cfg)
	}
	e := New(cfg, f, zerolog.New(io.Discard))
	switch cfg.Identity() {
	case parsedb.IdentityUser, parsedb.IdentitySession:
		e.SetIdentity(&parsedb.Identity{Kind: cfg.Identity(), UserID: secUserID, Roles: []string{"Admin", "Moderator"}})
	case parsedb.IdentityRole:
		e.SetIdentity(&parsedb.Identity{Kind: parsedb.IdentityRole, Roles: []string{cfg.ACLRole}})
	}
	if problems := e.Validate(context.Background(), secSchema()); len(problems) > 0 {
		t.Fatalf("policy problems: %v", problems)
	}
	return e
}

// secRead runs the read path every query tool runs: class gate, where
// composition, translation, storage scope.
func secRead(e *Engine, ctx context.Context, class string, where map[string]any) (bson.D, map[string]any, error) {
	schema := secSchema()
	cls, err := e.ResolveClass(ctx, schema, class)
	if err != nil {
		return nil, nil, err
	}
	shown, err := e.ComposeWhere(ctx, cls, where, true)
	if err != nil {
		return nil, nil, err
	}
	f, err := parsedb.WhereToFilter(ctx, cls, shown, parsedb.WhereOptions{Schema: schema})
	if err != nil {
		return nil, nil, err
	}
	scope, err := e.StorageScope(ctx, cls)
	if err != nil {
		return nil, nil, err
	}
	if len(scope) > 0 {
		f = bson.D{{Key: "$and", Value: bson.A{f, scope}}}
	}
	return f, shown, nil
}

// outcome classifies an error: "ok", "violation", or "<code>/<kind>".
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if _, ok := toolerror.AsViolation(err); ok {
		return "violation"
	}
	if te, ok := toolerror.As(err); ok {
		if te.Refused {
			return "refused"
		}
		if te.Details != nil {
			return string(te.Code) + "/" + te.Details.Kind
		}
		return string(te.Code)
	}
	return "internal: " + err.Error()
}

// callCtx is the context the middleware gives a tool's handler.
func callCtx(e *Engine, tool, class string) context.Context {
	info, ok := e.tools[tool]
	if !ok {
		info = testTool(tool)
	}
	return context.WithValue(context.Background(), callStateKey{}, &callState{tool: info, op: Operation(info), class: class})
}

type toolErrorView = toolerror.Error

func toolerrorAs(err error) (*toolerror.Error, bool) { return toolerror.As(err) }

func mcpTools(names ...string) []mcp.Tool {
	out := make([]mcp.Tool, len(names))
	for i, n := range names {
		out[i] = mcp.Tool{Name: n}
	}
	return out
}

// testTool is the policy part of a catalog tool's definition, as the tools
// package declares it (the policy package cannot import tools; the tools
// package's snapshot test pins the real definitions).
func testTool(name string) ToolInfo {
	ro := func(cat Category, op string, untrusted bool) ToolInfo {
		return ToolInfo{Name: name, Category: cat, Tier: config.TierReadonly, Operation: op, UntrustedOutput: untrusted}
	}
	switch name {
	case "list_tools":
		return ro(CategoryDiscovery, OpNone, false)
	case "get_schema", "get_all_schemas":
		return ro(CategorySchema, OpNone, false)
	case "count_objects":
		return ro(CategoryQuery, OpCount, false)
	case "explain_query":
		return ro(CategoryQuery, OpFind, false)
	case "get_object", "get_objects":
		return ro(CategoryQuery, OpGet, true)
	case "query_class", "get_sample_objects":
		return ro(CategoryQuery, OpFind, true)
	case "aggregate", "group_by", "group_by_date", "distinct":
		return ro(CategoryAggregate, OpFind, true)
	case "export_data":
		return ro(CategoryExport, OpFind, true)
	}
	write := func(tier, op string, gates ...string) ToolInfo {
		return ToolInfo{Name: name, Category: CategoryMutation, Tier: tier, Operation: op, Gates: gates, UntrustedOutput: true}
	}
	crud, schema := []string{GateWriteTools, GateRawCRUD}, []string{GateSchemaOps, GateRawSchema}
	switch name {
	case "create_object":
		return write(config.TierWrite, OpCreate, crud...)
	case "update_object":
		return write(config.TierWrite, OpUpdate, crud...)
	case "delete_object":
		return write(config.TierAdmin, OpDelete, crud...)
	case "create_class":
		t := write(config.TierAdmin, OpNone, schema...)
		t.CreatesClass = true
		return t
	case "delete_class":
		return write(config.TierAdmin, OpNone, schema...)
	case "call_action":
		t := write(config.TierWrite, OpUpdate)
		t.RunsActions = true
		return t
	}
	panic("testTool: unknown tool " + name)
}
