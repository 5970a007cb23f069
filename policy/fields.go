package policy

import (
	"context"
	"strings"
	"sync"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Fields (SECURITY.md "Fields"): the internal-field floor always; agent_fields allowlists;
// protectedFields for scoped identities; storage-form names (_p_x) refused
// with a suggested rewrite.

// alwaysVisible are shown on every class, whatever the allowlist says.
func alwaysVisible(name string) bool {
	switch name {
	case "objectId", "createdAt", "updatedAt":
		return true
	}
	return false
}

// allowlist returns the class's agent_fields as a set (nil = no allowlist).
func (e *Engine) allowlist(class string) map[string]bool {
	cp := e.Class(class)
	if cp == nil || len(cp.AgentFields) == 0 {
		return nil
	}
	allow := make(map[string]bool, len(cp.AgentFields)+3)
	for _, f := range cp.AgentFields {
		allow[f] = true
	}
	return allow
}

// VisibleFields are the class's fields this session may see: never the
// internal-field floor, never ACL or password, only allowlisted ones when the
// class has agent_fields (objectId/createdAt/updatedAt always), never
// protectedFields for a scoped identity.
func (e *Engine) VisibleFields(cls *parsedb.Class) []*parsedb.Field {
	allow := e.allowlist(cls.Name)
	protected := e.ProtectedFields(cls)
	var out []*parsedb.Field
	for _, name := range cls.FieldNames() {
		if name == "ACL" || name == "password" || parsedb.IsInternalField(name) {
			continue
		}
		if allow != nil && !allow[name] && !alwaysVisible(name) {
			continue
		}
		if protected[name] {
			continue
		}
		f := cls.Fields[name]
		if f.Name == "" {
			ff := *f
			ff.Name = name
			f = &ff
		}
		out = append(out, f)
	}
	return out
}

// FieldVisible reports whether one top-level field of a class may be shown.
func (e *Engine) FieldVisible(cls *parsedb.Class, name string) bool {
	return e.CheckReadField(cls, name) == nil
}

// DisplayType is a field's type as shown in get_all_schemas: Pointer<X>,
// Relation<X>, with invisible (hidden or missing) targets masked.
func (e *Engine) DisplayType(schema *parsedb.Schema, f *parsedb.Field) string {
	if f.Type != parsedb.TypePointer && f.Type != parsedb.TypeRelation {
		return f.Type
	}
	return f.Type + "<" + e.TargetLabel(schema, f.TargetClass) + ">"
}

// TargetInvisible reports whether a Pointer or Relation target is hidden
// or missing from schema: every surface that names or acts on a target
// treats both alike (SECURITY.md "Hidden equals missing").
func (e *Engine) TargetInvisible(schema *parsedb.Schema, class string) bool {
	return parsedb.TargetInvisible(schema, e.Hidden, class)
}

// TargetLabel is a target class as client-visible text may name it: the
// class, or "<targetClass>" when it is invisible.
func (e *Engine) TargetLabel(schema *parsedb.Schema, class string) string {
	return parsedb.TargetLabel(schema, e.Hidden, class)
}

// DisplayPermissions is the class's CLP as shown to the model (nil = public).
// A scoped identity sees what it may do rather than the raw CLP (which can
// name users and roles).
func (e *Engine) DisplayPermissions(cls *parsedb.Class) bson.M {
	if e.MasterPosture() {
		return e.readablePermissionFields(cls, cls.Permissions)
	}
	out := bson.M{}
	for k, v := range e.CLPSummary(cls) {
		out[k] = v
	}
	return out
}

// readablePermissionFields is the class's CLP with every field name it
// lists — readUserFields, writeUserFields, pointerFields, protectedFields —
// kept only when the session may read that field: metadata never names a
// field the session cannot see (SECURITY.md "Outputs").
func (e *Engine) readablePermissionFields(cls *parsedb.Class, perms bson.M) bson.M {
	if perms == nil {
		return nil
	}
	readable := func(v any) []string {
		out := []string{}
		for _, f := range asStrings(v) {
			if e.CheckReadField(cls, f) == nil && !parsedb.NameHoldsReference(f) {
				out = append(out, f)
			}
		}
		return out
	}
	var walk func(m map[string]any) bson.M
	walk = func(m map[string]any) bson.M {
		out := bson.M{}
		for k, v := range m {
			if parsedb.NameHoldsReference(k) {
				continue // an entry's name is data (SECURITY.md "Names as data")
			}
			switch k {
			case "readUserFields", "writeUserFields", "pointerFields":
				out[k] = readable(v)
			case "protectedFields":
				pf := bson.M{}
				for aud, list := range asMap(v) {
					if parsedb.NameHoldsReference(aud) {
						continue
					}
					pf[aud] = readable(list)
				}
				out[k] = pf
			default:
				if sub := asMap(v); sub != nil {
					out[k] = walk(sub)
				} else {
					out[k] = v
				}
			}
		}
		return out
	}
	return walk(perms)
}

// CleanText makes operator-written text safe to show the model: control
// characters removed (newlines and tabs become spaces), at most 200
// characters.
func CleanText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r) {
			if r == '\n' || r == '\t' || r == '\r' || r == '\u2028' || r == '\u2029' {
				return ' '
			}
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200])
	}
	return s
}

// CheckReadField refuses a field a read may not reference (where keys, keys,
// order, group/distinct fields, export columns, pipeline references): the
// internal floor always (a security violation, -32602); storage-form names
// (_p_author) with kind storage_form_field_ref and the REST name as
// suggested_rewrite; fields outside agent_fields (field_not_allowed); and
// protectedFields for a scoped identity (protected_field). field may be a
// dotted path; its first segment decides.
func (e *Engine) CheckReadField(cls *parsedb.Class, field string) error {
	root := field
	if before, _, ok := strings.Cut(field, "."); ok {
		root = before
	}
	if parsedb.IsInternalPath(field) || root == "ACL" || root == "password" && cls.Name == "_User" {
		return toolerror.Violationf("internal field %q referenced on %s", field, cls.Name)
	}
	if strings.HasPrefix(root, "_p_") && len(root) > 3 {
		rest := field[3:]
		return &toolerror.Error{Code: toolerror.AccessDenied,
			Message: "use REST field names: " + rest + ", not the storage name " + root,
			Details: &toolerror.Details{Kind: "storage_form_field_ref", DeniedField: root, SuggestedRewrite: rest}}
	}
	if alwaysVisible(root) {
		return nil
	}
	if allow := e.allowlist(cls.Name); allow != nil && !allow[root] {
		allowed := append([]string{}, e.Class(cls.Name).AgentFields...)
		if len(allowed) > 20 {
			allowed = allowed[:20]
		}
		return &toolerror.Error{Code: toolerror.AccessDenied, Message: "field " + root + " of " + cls.Name + " is not available to this agent",
			Details: &toolerror.Details{Kind: "field_not_allowed", DeniedField: root, AllowedFields: allowed}}
	}
	if e.ProtectedFields(cls)[root] {
		return &toolerror.Error{Code: toolerror.AccessDenied, Message: "field " + root + " of " + cls.Name + " is protected for this identity (protectedFields)",
			Details: &toolerror.Details{Kind: "protected_field", DeniedField: root}}
	}
	return nil
}

// CheckReadFields runs CheckReadField over a list (keys, order fields…); a
// leading "-" (descending order) is ignored.
func (e *Engine) CheckReadFields(cls *parsedb.Class, fields []string) error {
	for _, f := range fields {
		if err := e.CheckReadField(cls, strings.TrimPrefix(f, "-")); err != nil {
			return err
		}
	}
	return nil
}

// RowEncoder returns the codec for rows of cls as this session may see them:
// only keys (when given; objectId/createdAt/updatedAt always), never the
// internal floor, ACL or _User.password, only agent_fields when the class
// has an allowlist, never protectedFields for a scoped identity, and every
// reference to a hidden class redacted at any depth ("Hidden$id" strings,
// embedded pointers and objects), references by type to a class missing
// from schema likewise — SECURITY.md "Fields" and "Hidden references".
func (e *Engine) RowEncoder(schema *parsedb.Schema, cls *parsedb.Class, keys []string) *parsedb.RowEncoder {
	enc := &parsedb.RowEncoder{Class: cls, HiddenClass: e.Hidden, MissingClass: MissingIn(schema)}
	enc.SelectKeys(keys)
	var allow, protected map[string]bool
	if cls != nil {
		allow = e.allowlist(cls.Name)
		protected = e.ProtectedFields(cls)
	}
	isUser := cls != nil && cls.Name == "_User"
	// A search vector field is left out of rows unless keys name it: a
	// vector is hundreds of numbers that say nothing to the model.
	vector := ""
	if sp := e.searchOf(cls); sp != nil && len(keys) == 0 {
		vector = sp.VectorField
	}
	enc.Drop = func(f string) bool {
		if allow != nil && !allow[f] {
			return true
		}
		return f == "password" && isUser || f == "ACL" || vector != "" && f == vector
	}
	if len(protected) > 0 {
		enc.Protected = func(f string) bool { return protected[f] }
		if isUser && e.identity != nil {
			enc.Owner = e.identity.UserID
		}
		if rules := e.userFieldRules(cls); len(rules) > 0 {
			enc.UserFieldRules, enc.UserID = rules, e.identity.UserID
		}
	}
	return enc
}

// MissingIn reports the classes absent from schema (nil schema: none), for
// RowEncoder.MissingClass: a reference to one is redacted like a reference
// to a hidden class.
func MissingIn(schema *parsedb.Schema) func(string) bool {
	if schema == nil {
		return nil
	}
	return func(class string) bool { return schema.Class(class) == nil }
}

// CheckInclude checks an include path ("album.artist") from cls: every
// segment must be a readable pointer field whose target class passes the
// class gate (hidden, agent.classes, CLP) and no tenant scope may govern
// either end (CheckJoin). It returns the class the path ends in.
func (e *Engine) CheckInclude(ctx context.Context, schema *parsedb.Schema, cls *parsedb.Class, path string) (*parsedb.Class, error) {
	e = e.For(ctx)
	cur := cls
	for seg := range strings.SplitSeq(path, ".") {
		if err := e.CheckReadField(cur, seg); err != nil {
			return nil, err
		}
		f := cur.Field(seg)
		if f == nil || f.Type != parsedb.TypePointer {
			return nil, toolerror.New(toolerror.InvalidArgument, "include %q: %s is not a Pointer field of %s", truncateText(path, 80), seg, cur.Name)
		}
		if e.TargetInvisible(schema, f.TargetClass) {
			return nil, e.TargetUnavailable(ctx, "include %q: %s", truncateText(path, 80), seg)
		}
		target, err := e.ResolveClass(ctx, schema, f.TargetClass)
		if err != nil {
			return nil, err
		}
		if err := e.CheckJoin(cur.Name, target.Name); err != nil {
			return nil, err
		}
		cur = target
	}
	return cur, nil
}

// HiddenRefs describes this session's hidden classes to the data layer, so
// that references to them stay inert as operator inputs (where constraints,
// sort keys, group/distinct fields): see parsedb/hiddenrefs.go and
// SECURITY.md, "Hidden references".
func (e *Engine) HiddenRefs(schema *parsedb.Schema) *parsedb.HiddenRefs {
	if e.refsCache == nil {
		return e.hiddenRefs(schema)
	}
	return e.refsCache.get(schema, e.master, e.hiddenRefs)
}

// hiddenRefsCache keeps the last HiddenRefs of each posture. They depend
// only on the policy, the posture and the schema, and a schema that changed
// is a new *parsedb.Schema (SchemaCache never edits a loaded one), so the
// pointer is the key and a reload invalidates the entry: every read would
// otherwise collect, check and sort the hidden class names again.
type hiddenRefsCache struct {
	mu     sync.Mutex
	schema [2]*parsedb.Schema
	refs   [2]*parsedb.HiddenRefs
}

func (c *hiddenRefsCache) get(schema *parsedb.Schema, master bool, build func(*parsedb.Schema) *parsedb.HiddenRefs) *parsedb.HiddenRefs {
	i := 0
	if master {
		i = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs[i] == nil || c.schema[i] != schema {
		c.schema[i], c.refs[i] = schema, build(schema)
	}
	return c.refs[i]
}

func (e *Engine) hiddenRefs(schema *parsedb.Schema) *parsedb.HiddenRefs {
	var names []string
	for n := range e.hidden {
		names = append(names, n)
	}
	names = append(names, DefaultHiddenClasses...)
	names = append(names, "_Session")
	for n := range e.exceptMaster {
		if e.Hidden(n) {
			names = append(names, n)
		}
	}
	if schema != nil {
		for _, n := range schema.Names() {
			if e.Hidden(n) {
				names = append(names, n)
			}
		}
	}
	var hidden []string
	for _, n := range names {
		if e.Hidden(n) {
			hidden = append(hidden, n)
		}
	}
	refs := parsedb.NewHiddenRefs(hidden, e.Hidden)
	if schema != nil {
		refs.Known = append([]string{}, schema.Names()...)
		if refs.Known == nil {
			refs.Known = []string{}
		}
	}
	return refs
}
