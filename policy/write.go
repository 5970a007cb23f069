package policy

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Writes (docs/writes.md "Writes", SECURITY.md "Writes"): the same checkpoint
// as reads. The tier and env gates run in the middleware; the class gate
// (hidden, agent.classes, CLP create/update/delete, tenant binding) in
// ResolveClass; this file adds what only a write has: system classes, the
// internal-field floor at every key and depth of the values (inside __op
// payloads and ACLs too), references to hidden classes, the writable field
// set, the tenant field (forced on create, immutable on update), CLP
// addField, and the _wperm / pointer-permission scope of updates and
// deletes. A refused write touches nothing: every check runs before the
// backend encodes anything.

// ObjectWrite is an object write as the policy sees it.
type ObjectWrite struct {
	// Op is the CLP operation: create, update or delete.
	Op string
	// Fields are the REST values (with __op operations) to write.
	Fields map[string]any
	// ACL is the Parse ACL given (nil: none).
	ACL map[string]any
	// Writable narrows the writable set further (a declared action's
	// permitted keys); nil means the class's writable set.
	Writable []string
}

// IsSystemClass reports whether a class is one of Parse's own (_User,
// _Role, _Session, _Installation, …): Parse Server maintains invariants
// for them (password hashing, session tokens, role names) that a direct
// write cannot, so raw CRUD and class operations refuse them.
func IsSystemClass(name string) bool { return strings.HasPrefix(name, "_") }

// WritableFields are the fields of a class a write may set: the policy's
// writable_fields, else agent_fields, else nil (every field).
func (e *Engine) WritableFields(class string) []string {
	cp := e.Class(class)
	if cp == nil {
		return nil
	}
	if len(cp.WritableFields) > 0 {
		return cp.WritableFields
	}
	return cp.AgentFields
}

// DefaultACL is the class's default_acl from the policy file (nil: none,
// which Parse stores as public).
func (e *Engine) DefaultACL(class string) map[string]any {
	if cp := e.Class(class); cp != nil && cp.DefaultACL != nil {
		out := make(map[string]any, len(cp.DefaultACL))
		maps.Copy(out, cp.DefaultACL)
		return out
	}
	return nil
}

// systemClassRefusal says what can write a system class: raw CRUD, class
// operations and class actions cannot on either write path, so the way
// out is a Cloud Code function action, which needs the bridge — said only
// when the bridge is not configured.
func (e *Engine) systemClassRefusal(class string) *toolerror.Error {
	how := "a Cloud Code function declared as an action can (it needs the Parse Server bridge)"
	if e.cfg.Bridge() {
		how = "a Cloud Code function declared as an action can"
	}
	return toolerror.Denied("system_class", "%s is a Parse system class: parse-mcp's object and class writes do not change it (Parse Server maintains its invariants: password hashes, session tokens, role names); %s", class, how)
}

// CheckObjectWrite checks an object write and returns the fields and ACL to
// write: the tenant field forced on create, the class's default_acl when
// no ACL was given on create.
func (e *Engine) CheckObjectWrite(ctx context.Context, schema *parsedb.Schema, cls *parsedb.Class, w ObjectWrite) (map[string]any, map[string]any, error) {
	e = e.For(ctx)
	if IsSystemClass(cls.Name) {
		return nil, nil, e.systemClassRefusal(cls.Name)
	}
	if err := e.checkSession(); err != nil {
		return nil, nil, err
	}
	if err := e.checkTenantBound(cls.Name); err != nil {
		return nil, nil, err
	}
	if w.Op == OpDelete {
		return nil, nil, nil
	}
	c := fieldWriteCheck{schema: schema, cls: cls, op: w.Op, allow: e.WritableFields(cls.Name), tenantField: e.TenantField(cls.Name)}
	if w.Writable != nil {
		c.allow = w.Writable
	}
	if c.allow != nil {
		c.allowSet = set(c.allow)
		if c.allowSet == nil {
			c.allowSet = map[string]bool{}
		}
	}
	var added []string
	for _, key := range sortedMapKeys(w.Fields) {
		name, err := e.checkWriteField(c, key, w.Fields[key])
		if err != nil {
			return nil, nil, err
		}
		if name != "" && !slices.Contains(added, name) {
			added = append(added, name)
		}
	}
	if len(added) > 0 {
		if err := e.checkDirectSchemaChange("this write would add the field(s) %s to the schema of %s", strings.Join(added, ", "), cls.Name); err != nil {
			return nil, nil, err
		}
	}
	if w.ACL != nil {
		if err := e.checkWriteACL(c, w.ACL); err != nil {
			return nil, nil, err
		}
	}
	if len(added) > 0 && !e.MasterPosture() {
		if v := e.clp(cls, "addField"); !v.allowed || v.pointer != nil {
			return nil, nil, toolerror.Denied("clp_denied", "the class-level permissions of %s do not allow addField for this identity (new fields: %s)", cls.Name, strings.Join(added, ", "))
		}
	}
	fields := make(map[string]any, len(w.Fields)+1)
	maps.Copy(fields, w.Fields)
	if w.Op != OpCreate {
		return fields, w.ACL, nil
	}
	acl, err := e.createDefaults(schema, cls, w, c.tenantField, fields)
	if err != nil {
		return nil, nil, err
	}
	return fields, acl, nil
}

// checkWriteACL checks a written ACL.
func (e *Engine) checkWriteACL(c fieldWriteCheck, acl map[string]any) error {
	if err := e.checkACLValue(acl); err != nil {
		return err
	}
	// The ACL is writable only when the class's writable_fields lists
	// it (docs/writes.md "Writes", SECURITY.md "Writes"): with no writable
	// set at all, or agent_fields as the writable set, it is not.
	if cp := e.Class(c.cls.Name); cp == nil || !slices.Contains(cp.WritableFields, "ACL") || c.allowSet != nil && !c.allowSet["ACL"] {
		return &toolerror.Error{Code: toolerror.AccessDenied, Message: "the ACL of " + c.cls.Name + " objects is not writable by this agent (add ACL to writable_fields)",
			Details: &toolerror.Details{Kind: "field_not_writable", DeniedField: "ACL"}}
	}
	return nil
}

// fieldWriteCheck is what checkWriteField needs of the write.
type fieldWriteCheck struct {
	schema      *parsedb.Schema
	cls         *parsedb.Class
	op          string
	allow       []string        // the writable fields (nil: any)
	allowSet    map[string]bool // allow as a set (nil: any)
	tenantField string
}

// checkWriteField checks one written key and its value; it returns the
// field's name when the write would add it to the schema.
func (e *Engine) checkWriteField(c fieldWriteCheck, key string, v any) (string, error) {
	cls := c.cls
	// A dotted key ("meta.x") changes a sub-key of the Object field
	// meta: every rule of the field applies to its top-level name.
	name, dotted := key, strings.Contains(key, ".")
	if dotted {
		if err := e.checkDottedKey(cls, key, c.op); err != nil {
			return "", err
		}
		name = parsedb.TopField(key)
	}
	if err := e.checkWriteKey(cls, name); err != nil {
		return "", err
	}
	if c.tenantField != "" && name != c.tenantField && normalizeFieldName(name) == normalizeFieldName(c.tenantField) {
		// OrgId, orgid, org_id beside the forced orgId: reads refuse
		// these spellings, so writes do too (SECURITY.md "Filters and
		// tenant scope").
		return "", toolerror.Denied("tenant_scope", "%s is a spelling of %s, the tenant field of %s: it cannot be written (the tenant field is set to the bound tenant on create)", name, c.tenantField, cls.Name)
	}
	if name == c.tenantField {
		if dotted || !e.tenantValueOK(cls, v) {
			return "", toolerror.Denied("tenant_scope", "%s is the tenant field of %s: it is set to the bound tenant on create and cannot be changed", name, cls.Name)
		}
		return "", nil // forced on create
	}
	if c.allowSet != nil && !c.allowSet[name] {
		list := append([]string{}, c.allow...)
		sort.Strings(list)
		if len(list) > 20 {
			list = list[:20]
		}
		return "", &toolerror.Error{Code: toolerror.AccessDenied, Message: "field " + name + " of " + cls.Name + " is not writable by this agent",
			Details: &toolerror.Details{Kind: "field_not_writable", DeniedField: name, AllowedFields: list}}
	}
	if f := cls.Field(name); f != nil && (f.Type == parsedb.TypePointer || f.Type == parsedb.TypeRelation) && e.TargetInvisible(c.schema, f.TargetClass) {
		// The caller named the field, not the class: the refusal must
		// not name the target (SECURITY.md "Hidden references").
		return "", toolerror.New(toolerror.InvalidArgument, "%s points to a class that does not exist or is not accessible", name)
	}
	checked := v
	if dotted {
		// The value lands inside the stored object at the path: a
		// sub-key named className makes the object there one that
		// names a class ({"meta.k.className": "Hidden"}), which the
		// reader redacts for a hidden class only. Check it as the
		// nested value it becomes (SECURITY.md "Writes").
		checked = nestUnder(strings.Split(key, ".")[1:], v)
	}
	if err := e.checkWriteValue(c.schema, cls, name, checked, 0); err != nil {
		return "", err
	}
	if cls.Field(name) == nil && !isDeleteValue(v) && v != nil {
		return name, nil
	}
	return "", nil
}

// createDefaults checks a create's required fields and defaults, forces
// the tenant field into fields, and returns the ACL to write (the class's
// default_acl when none was given).
func (e *Engine) createDefaults(schema *parsedb.Schema, cls *parsedb.Class, w ObjectWrite, tenantField string, fields map[string]any) (map[string]any, error) {
	acl := w.ACL
	if err := e.checkDefaults(schema, cls, w.Fields); err != nil {
		return nil, err
	}
	if tenantField != "" {
		fields[tenantField] = e.tenant
	}
	if acl == nil {
		acl = e.DefaultACL(cls.Name)
	}
	if !e.MasterPosture() {
		if v := e.clp(cls, OpCreate); v.pointer != nil {
			return nil, toolerror.Denied("clp_denied", "the class-level permissions of %s allow create only through pointer permissions, which do not apply to new objects", cls.Name)
		}
	}
	return acl, nil
}

// nestUnder is v as the object the path segs builds around it:
// ["k", "className"], "X" → {"k": {"className": "X"}}.
func nestUnder(segs []string, v any) any {
	for _, seg := range slices.Backward(segs) {
		v = map[string]any{seg: v}
	}
	return v
}

func isDeleteValue(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["__op"] == "Delete"
}

func sortedMapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkWriteKey refuses a top-level key no write may set: the internal
// floor and every other _ key or storage-form name (a security violation),
// the implicit fields, and names Parse does not accept.
func (e *Engine) checkWriteKey(cls *parsedb.Class, name string) error {
	if strings.HasPrefix(name, "_") || parsedb.IsInternalField(name) || name == "password" && cls.Name == "_User" || strings.ContainsAny(name, ".$") {
		return toolerror.Violationf("write of internal or storage-form field %q on %s", name, cls.Name)
	}
	switch name {
	case "objectId", "createdAt", "updatedAt", "ACL":
		return toolerror.New(toolerror.InvalidArgument, "%s cannot be set in fields (objectId, createdAt and updatedAt are set by the server; give the ACL as acl)", name)
	}
	// Parse answers an invalid name with INVALID_KEY_NAME (105): the code
	// goes in _meta as for Parse-worded refusals.
	if !parsedb.ValidFieldName(name) {
		e := toolerror.New(toolerror.InvalidArgument, "%q is not a valid Parse field name (a letter, then letters, digits and _)", truncateText(name, 60))
		e.ParseCode = parsedb.ParseInvalidKeyName
		return e
	}
	return nil
}

// checkDottedKey checks a dotted key of an update ("meta.x.y"): only on
// update (Parse applies dotted keys to a stored object), and no segment on
// the internal-field floor or in storage form — a security violation, as
// the same key inside a value is.
func (e *Engine) checkDottedKey(cls *parsedb.Class, key, op string) error {
	segs := strings.Split(key, ".")
	if len(segs) > maxWriteDepth {
		return toolerror.New(toolerror.InvalidArgument, "the key %s is nested too deeply (at most %d levels)", truncateText(key, 60), maxWriteDepth)
	}
	for _, seg := range segs[1:] {
		if parsedb.IsInternalField(seg) || strings.HasPrefix(seg, "$") {
			return toolerror.Violationf("write of internal key %q inside %s on %s", seg, segs[0], cls.Name)
		}
	}
	if op != OpUpdate {
		return toolerror.New(toolerror.InvalidArgument, "%s: a dotted key changes a sub-key of a stored Object field, so it is for update_object; on create give the whole value ({\"%s\":{…}})", truncateText(key, 60), truncateText(segs[0], 40))
	}
	return nil
}

// maxWriteDepth bounds the nesting of a written value.
const maxWriteDepth = 32

// checkWriteValue walks a value at every depth: keys on the internal floor
// are violations (keys with $ or . are Parse's own refusal, in the encoder); references to invisible classes
// — hidden or missing from the schema — (Pointer objects, relation op
// objects, any object with a className, "Class$objectId" strings) are refused
// exactly as an unknown class, so a write (even a dry run) cannot tell a
// hidden class from a missing one (SECURITY.md "Writes").
func (e *Engine) checkWriteValue(schema *parsedb.Schema, cls *parsedb.Class, field string, v any, depth int) error {
	if depth > maxWriteDepth {
		return toolerror.New(toolerror.InvalidArgument, "the value of %s is nested too deeply (at most %d levels)", field, maxWriteDepth)
	}
	switch t := v.(type) {
	case string:
		// The reader's shape (parsedb.ReferenceClass): a string it would
		// redact for a hidden class is refused for a hidden and a missing
		// one alike, so a dry run cannot tell them apart; "A$AP Rocky" or
		// "VaultSecret$ab~" are text ("Ke$ha" is refused unless Ke is a
		// visible class — SECURITY.md "Writes").
		if cn, ok := parsedb.ReferenceClass(t); ok && e.invisibleClass(schema, cn) {
			return e.unknownClass(schema, cn)
		}
	case []any:
		for _, x := range t {
			if err := e.checkWriteValue(schema, cls, field, x, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range sortedMapKeys(t) {
			if parsedb.IsInternalField(k) {
				return toolerror.Violationf("write of internal key %q inside %s on %s", k, field, cls.Name)
			}
			if k == "className" {
				cn, ok := t[k].(string)
				if !ok {
					// The conjunct tests className element by element: an
					// array here would be a class name to it and data to
					// the reader (one value, two readings).
					return toolerror.New(toolerror.InvalidArgument, "className inside %s must be a string (a class name)", field)
				}
				if e.invisibleClass(schema, cn) {
					return e.unknownClass(schema, cn)
				}
			}
			if err := e.checkWriteValue(schema, cls, field, t[k], depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// invisibleClass is the write side's one predicate for a referenced class:
// hidden, or (a valid class name) missing from the schema. Both are refused
// alike; the read side's redaction and where translator treat them alike
// too (SECURITY.md "Hidden references").
func (e *Engine) invisibleClass(schema *parsedb.Schema, name string) bool {
	if e.Hidden(name) {
		return true
	}
	return parsedb.ClassNameRe.MatchString(name) && e.TargetInvisible(schema, name)
}

// checkACLValue checks the entries of a Parse ACL: "*", a user id or
// "role:Name" with {read, write} booleans; nothing else.
func (e *Engine) checkACLValue(acl map[string]any) error {
	for _, k := range sortedMapKeys(acl) {
		if parsedb.IsInternalField(k) || strings.HasPrefix(k, "_") || strings.HasPrefix(k, "$") {
			return toolerror.Violationf("internal key %q in an ACL", k)
		}
		m, ok := acl[k].(map[string]any)
		if !ok {
			return toolerror.New(toolerror.InvalidArgument, "acl[%q] must be {\"read\":true|false,\"write\":true|false}", truncateText(k, 40))
		}
		for pk, pv := range m {
			if _, isBool := pv.(bool); (pk != "read" && pk != "write") || !isBool {
				return toolerror.New(toolerror.InvalidArgument, "acl[%q] may only have read and write, each true or false", truncateText(k, 40))
			}
		}
	}
	return nil
}

// WriteScope is what an update or delete's filter carries besides the
// caller's objectId, for a scoped identity: {_wperm: {$in: [null, "*",
// userId, "role:…"]}} as Parse's addWriteACL, and the CLP pointer
// permissions of the operation (writeUserFields / pointerFields). Empty in
// master posture.
func (e *Engine) WriteScope(ctx context.Context, cls *parsedb.Class, op string) (bson.D, error) {
	e = e.For(ctx)
	if e.MasterPosture() {
		return nil, nil
	}
	if err := e.checkSession(); err != nil {
		return nil, err
	}
	v := e.clp(cls, op)
	if !v.allowed {
		return nil, toolerror.Denied("clp_denied", "the class-level permissions of %s do not allow %s for this identity%s", cls.Name, op, v.why)
	}
	in := bson.A{nil}
	for _, en := range e.identity.Entries() {
		in = append(in, en)
	}
	scope := bson.D{{Key: "_wperm", Value: bson.D{{Key: "$in", Value: in}}}}
	if v.pointer != nil {
		scope = append(scope, v.pointer...)
	}
	return scope, nil
}

// CheckClassWrite checks create_class and delete_class: never a system
// class, only in master posture — Parse Server's schema operations need the
// master key — and never a hidden or filtered name. The checks that do not
// depend on the name's visibility come first, so a hidden name and a
// missing one part only where they must: delete of a hidden name answers
// as an unknown class does; create of a hidden name answers exactly as
// create of a name agent.classes excludes (the class exists, so it cannot
// answer as a new name would; the refusal does not say why) — SECURITY.md
// "Writes".
func (e *Engine) CheckClassWrite(ctx context.Context, schema *parsedb.Schema, name string, create bool) error {
	e = e.For(ctx)
	if !parsedb.ClassNameRe.MatchString(name) {
		return toolerror.New(toolerror.InvalidArgument, "class_name %q is not a valid Parse class name", truncateText(name, 40))
	}
	if IsSystemClass(name) {
		return e.systemClassRefusal(name)
	}
	if !e.MasterPosture() {
		return toolerror.Denied("master_required", "class operations need the master posture, as Parse Server's schema API needs the master key; this server runs with an identity scope")
	}
	if e.Hidden(name) {
		if create {
			if ci := callStateOf(ctx); ci != nil {
				ci.hiddenRefused = true
			}
			return classFilterRefusal(name)
		}
		return e.hiddenClass(ctx, schema, name)
	}
	if e.ClassFiltered(name) {
		return classFilterRefusal(name)
	}
	if !create && schema.Class(name) == nil {
		return e.unknownClass(schema, name)
	}
	verb := "delete_class would remove the class %s from the schema"
	if create {
		verb = "create_class would add the class %s to the schema"
	}
	return e.checkDirectSchemaChange(verb, name)
}

// checkDirectSchemaChange refuses a change of _SCHEMA on the direct write
// path unless settings.direct_schema_changes allows it: a running Parse
// Server caches its schema without expiry by default and would serve the
// objects of a field it does not know wrongly (a Pointer dropped, a File
// as a bare name) until it reloads. Through the bridge Parse Server makes
// the change itself and updates its own cache (docs/writes.md "Writes").
func (e *Engine) checkDirectSchemaChange(format string, args ...any) error {
	if e.cfg.Bridge() || e.DirectSchemaChanges() {
		return nil
	}
	return toolerror.Denied("direct_schema_change", format+"; direct writes do not change the schema unless the operator sets settings.direct_schema_changes: true "+
		"(a running Parse Server keeps its cached schema and serves the objects of such a class or field wrongly until it reloads it). Write existing fields only, or ask the operator to configure the Parse Server bridge (PARSE_MCP_SERVER_URL), through which Parse Server changes its schema itself", args...)
}

func classFilterRefusal(name string) *toolerror.Error {
	return toolerror.Denied("class_filter", "class %s is not available to this agent (agent.classes)", name)
}

// CheckNewClassFields checks create_class's field definitions: names,
// pointer/relation targets (never a hidden class), and every defaultValue
// through the same value check as an object write's fields (the internal
// floor at every depth, references to invisible classes): a default is a
// value written into every object created without the field.
func (e *Engine) CheckNewClassFields(schema *parsedb.Schema, class string, fields map[string]any) error {
	cls := &parsedb.Class{Name: class}
	for _, name := range sortedMapKeys(fields) {
		if strings.HasPrefix(name, "_") || parsedb.IsInternalField(name) {
			return toolerror.Violationf("create_class field %q", name)
		}
		def, _ := fields[name].(map[string]any)
		if tc, ok := def["targetClass"].(string); ok && (e.Hidden(tc) || (schema.Class(tc) == nil && !IsSystemClass(tc))) {
			return e.unknownClass(schema, tc)
		}
		if dv, ok := def["defaultValue"]; ok {
			if err := e.checkWriteValue(schema, cls, name, dv, 0); err != nil {
				return err
			}
			// create_object's encoder refuses an object key holding "$"
			// or "." (Parse's 121): a default holding one would make
			// every later create fail, on either write path (SECURITY.md
			// "Names as data"). Type mismatches stay the schema's own
			// answer.
			t, _ := def["type"].(string)
			tc, _ := def["targetClass"].(string)
			if err := parsedb.CheckDefaultValue(&parsedb.Field{Name: name, Type: t, TargetClass: tc}, dv); err != nil {
				if te, ok := errors.AsType[*toolerror.Error](err); ok && te.ParseCode == parsedb.ParseInvalidNestedKey {
					return err
				}
			}
		}
	}
	return nil
}

// checkDefaults runs the defaultValues a create would write (those of
// fields the caller did not give) through the value check, as if the
// caller had given them. A default set through Parse's schema API that
// refers to an invisible class refuses the create with a sentence naming
// the field only — hidden and missing alike, never the class.
func (e *Engine) checkDefaults(schema *parsedb.Schema, cls *parsedb.Class, given map[string]any) error {
	for _, name := range cls.FieldNames() {
		f := cls.Fields[name]
		if f.DefaultValue == nil {
			continue
		}
		if v, ok := given[name]; ok && !isDeleteValue(v) {
			continue
		}
		err := e.checkWriteValue(schema, cls, name, f.RESTDefault(), 0)
		if err == nil && (f.Type == parsedb.TypePointer || f.Type == parsedb.TypeRelation) && e.TargetInvisible(schema, f.TargetClass) {
			err = toolerror.New(toolerror.InvalidArgument, "")
		}
		if err != nil {
			if _, ok := errors.AsType[*toolerror.Violation](err); ok {
				return err
			}
			return toolerror.New(toolerror.InvalidArgument, "the default value of %s refers to a class that does not exist or is not accessible: give %s explicitly", name, name)
		}
	}
	return nil
}

// WriteAudit is what a write adds to its tool_call audit event: class,
// objectId, field names (never values), dry-run and confirmation flags.
type WriteAudit struct {
	Class     string
	ObjectID  string
	Fields    []string
	DryRun    bool
	Confirmed bool
	Action    string
	Backend   string
}

// NoteWrite records the write of the current call for its audit event.
func NoteWrite(ctx context.Context, w WriteAudit) {
	if ci := callStateOf(ctx); ci != nil {
		ci.write = &w
	}
}

// SetCallOperation sets the CLP operation of the current call (a declared
// action creates or updates, whichever it declares).
func SetCallOperation(ctx context.Context, op string) {
	if ci := callStateOf(ctx); ci != nil {
		ci.op = op
	}
}

// WriteSurface describes the write surface for describe and audit: the
// write path, confirmation, the writable set and default ACL per class, and
// every declared action with whether this configuration allows it.
func (e *Engine) WriteSurface() map[string]any {
	path := "direct (MongoDB in Parse's storage format; Cloud Code triggers do not run)"
	if e.cfg.Bridge() {
		path = "parse_server (REST, triggers run)"
	}
	out := map[string]any{"write_path": path, "confirm_writes": e.ConfirmWrites()}
	writable := map[string][]string{}
	acls := map[string]any{}
	if e.file != nil {
		for n := range e.file.Classes {
			if e.Hidden(n) {
				continue
			}
			if w := e.WritableFields(n); w != nil {
				writable[n] = w
			}
			if a := e.DefaultACL(n); a != nil {
				acls[n] = a
			}
		}
	}
	if len(writable) > 0 {
		out["writable_fields"] = writable
	}
	if len(acls) > 0 {
		out["default_acls"] = acls
	}
	actions := []map[string]any{}
	runner, hasRunner := e.actionRunner()
	for _, a := range e.Actions() {
		entry := map[string]any{"name": a.Name, "tier": a.Tier, "allowed": true, "dry_run": a.SupportsDryRun, "confirm": a.Confirm}
		if a.Class != "" {
			entry["class"], entry["operation"], entry["keys"] = a.Class, a.Operation, a.Keys
			entry["fixed"] = slices.Sorted(maps.Keys(a.Fixed))
		} else {
			entry["cloud_function"] = a.CloudFunction
		}
		// A call passes the tool's own checks, then the action's (as
		// call_action runs them).
		if err := e.PermitAction(a); err != nil {
			entry["allowed"], entry["reason"] = false, err.Message
		} else if !hasRunner {
			entry["allowed"], entry["reason"] = false, "no registered tool runs actions"
		} else if err := e.Permit(runner); err != nil {
			entry["allowed"], entry["reason"] = false, err.Message
		}
		actions = append(actions, entry)
	}
	out["actions"] = actions
	return out
}

// AsGet is ctx for reading back the object a write touched, as get_object
// would read it: the CLP operation is get, on the call's class, and nothing
// recorded on the copy reaches the call's audit event (SECURITY.md
// "Outputs": a write result shows what get_object would show).
func AsGet(ctx context.Context) context.Context {
	ci := callStateOf(ctx)
	if ci == nil {
		return ctx
	}
	cp := &callState{tool: ci.tool, op: OpGet, class: ci.class}
	return context.WithValue(ctx, callStateKey{}, cp)
}

// ACLReadable reports whether a stored _rperm (nil or absent: public)
// lets this identity read the row, as the read scope's {_rperm: {$in:
// [null, "*", userId, "role:…"]}} decides it; always true in master posture.
func (e *Engine) ACLReadable(rperm bson.RawValue) bool {
	if e.MasterPosture() {
		return true
	}
	if rperm.Type == 0 || rperm.Type == bson.TypeNull {
		return true
	}
	arr, ok := rperm.ArrayOK()
	if !ok {
		return false
	}
	vals, err := arr.Values()
	if err != nil {
		return false
	}
	entries := e.identity.Entries()
	for _, v := range vals {
		if s, ok := v.StringValueOK(); ok && slices.Contains(entries, s) {
			return true
		}
	}
	return false
}
