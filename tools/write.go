package tools

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// The write tools: create_object, update_object, delete_object,
// create_class, delete_class (call_action is in action.go). The tool layer
// runs the policy checkpoint, dry_run, confirmation and the audit note; the
// write itself goes through Deps.Writes, a WriteBackend (the direct MongoDB
// writer, or the Parse Server bridge's REST writer).

// WriteBackend performs validated writes. Plan encodes a request and
// touches nothing (dry_run shows its Change and Result); Apply performs a
// plan and returns the stored object afterwards (nil for deletes and class
// operations).
type WriteBackend interface {
	Kind() string
	Plan(ctx context.Context, req *parsedb.WriteRequest) (*parsedb.WritePlan, error)
	Apply(ctx context.Context, plan *parsedb.WritePlan) (bson.Raw, error)
}

// writes returns the configured write backend (the direct writer unless
// another was installed).
func (d *Deps) writes() WriteBackend {
	if d.Writes != nil {
		return d.Writes
	}
	return &parsedb.DirectWriter{Store: d.Store}
}

// noTriggers ends the description of every tool that saves or deletes
// objects (create/update/delete_object, call_action). It is true of the
// direct MongoDB writer; when the Parse Server bridge performs the writes,
// Tool.DescriptionFor replaces it with viaParseServer, so the description
// is true for the configuration.
const noTriggers = " Direct writes skip Cloud Code triggers."

// viaParseServer replaces noTriggers when writes go through Parse Server.
const viaParseServer = " Writes go through Parse Server: Cloud Code triggers and validation run."

// writesRunTriggers reports whether the configured write backend is the
// Parse Server bridge (whose REST writes run Cloud Code triggers).
func (d *Deps) writesRunTriggers() bool {
	if d == nil {
		return false
	}
	_, ok := d.Writes.(*parseserver.Writer)
	return ok
}

// WriteTools are the raw CRUD and class tools.
func WriteTools() []*Tool {
	def := func(name, tier, op string, gates ...string) policy.ToolInfo {
		return policy.ToolInfo{Name: name, Category: policy.CategoryMutation, Tier: tier, Operation: op, Gates: gates,
			Timeout: 30 * time.Second, UntrustedOutput: true}
	}
	crud := []string{policy.GateWriteTools, policy.GateRawCRUD}
	schemaGates := []string{policy.GateSchemaOps, policy.GateRawSchema}
	createClass := def("create_class", config.TierAdmin, policy.OpNone, schemaGates...)
	createClass.CreatesClass = true
	return []*Tool{
		{
			ToolInfo:     def("create_object", config.TierWrite, policy.OpCreate, crud...),
			Description:  "Create an object. fields: REST values (pointers as ids or Pointer objects, dates ISO or {__type:Date}); new fields are added to the schema." + noTriggers,
			OutputSchema: createObjectOutSchema,
			Handler:      Typed(createObject),
		},
		{
			ToolInfo:     def("update_object", config.TierWrite, policy.OpUpdate, crud...),
			Description:  "Update an object: REST values or __op Increment, Add, AddUnique, Remove, Delete, AddRelation, RemoveRelation; \"obj.key\" sets a sub-key." + noTriggers,
			OutputSchema: updateObjectOutSchema,
			Handler:      Typed(updateObject),
		},
		{
			ToolInfo:     def("delete_object", config.TierAdmin, policy.OpDelete, crud...),
			Description:  "Delete an object (may ask the user to confirm)." + noTriggers,
			Destructive:  true,
			OutputSchema: deleteObjectOutSchema,
			Handler:      Typed(deleteObject),
		},
		{
			ToolInfo:     createClass,
			Description:  "Create a class. fields: {name:{type,targetClass?,required?,defaultValue?}}; permissions: CLP.",
			OutputSchema: createClassOutSchema,
			Handler:      Typed(createClassTool),
		},
		{
			ToolInfo:     def("delete_class", config.TierAdmin, policy.OpNone, schemaGates...),
			Description:  "Delete an empty class and its relation tables.",
			Destructive:  true,
			OutputSchema: deleteClassOutSchema,
			Handler:      Typed(deleteClassTool),
		},
	}
}

// writeFields is the fields argument of an object write: a JSON object of
// field names to REST values.
type writeFields map[string]any

func (w *writeFields) decodeArg(_ context.Context, args Args, name string, f *argField) error {
	m, err := args.Object(name)
	if err != nil {
		return err
	}
	if m == nil && f.required {
		return invalid("%s is required (an object of field names to REST values)", name)
	}
	*w = m
	return nil
}

func (*writeFields) schema() string { return `"type":"object"` }

// The object writes' arguments, in the order they are checked.
type (
	createObjectIn struct {
		ClassName string         `json:"class_name" arg:"class"`
		Fields    writeFields    `json:"fields" arg:"required"`
		ACL       map[string]any `json:"acl" jsonschema:"Parse ACL; default public or the class default"`
		DryRun    bool           `json:"dry_run"`
	}
	updateObjectIn struct {
		ClassName string         `json:"class_name" arg:"class"`
		ObjectID  string         `json:"object_id" arg:"objectid,required"`
		Fields    writeFields    `json:"fields"`
		ACL       map[string]any `json:"acl"`
		DryRun    bool           `json:"dry_run"`
	}
	deleteObjectIn struct {
		ClassName string `json:"class_name" arg:"class"`
		ObjectID  string `json:"object_id" arg:"objectid,required"`
		DryRun    bool   `json:"dry_run"`
	}
)

// The write tools' results are Dynamic: a dry run (the change it would
// send), the written object, or a declined confirmation (written:false).
// The write tools' result schemas: object writes show the stored object as
// this session may see it (a delete's dry run the object it would delete),
// create_class the fields it adds.
var (
	createObjectOutSchema = writeOut(osObjectID + `,"created":{"type":"boolean"}` + osObject + osSchemaReload)
	updateObjectOutSchema = writeOut(osObjectID + `,"updated":{"type":"boolean"}` + osObject + osSchemaReload)
	deleteObjectOutSchema = writeOut(osObjectID + `,"deleted":{"type":"boolean"},"deleted_object":{"type":"object"}`)
	createClassOutSchema  = writeOut(`,"created":{"type":"boolean"},"fields":{"type":"array","items":{"type":"string"}}` + osSchemaReload)
	deleteClassOutSchema  = writeOut(`,"deleted":{"type":"boolean"}` + osSchemaReload)
)

// writeACL takes an "ACL" entry in fields as the acl, as Parse's REST API
// takes it.
func writeACL(fields, acl map[string]any) (map[string]any, error) {
	if a, ok := fields["ACL"]; ok {
		m, isMap := a.(map[string]any)
		if !isMap || acl != nil {
			return nil, invalid("give the ACL once, as acl: {\"*\":{\"read\":true},\"<userId>\":{\"read\":true,\"write\":true}}")
		}
		acl = m
		delete(fields, "ACL")
	}
	return acl, nil
}

// writeCall is one write going through the checkpoint, dry run,
// confirmation and backend.
type writeCall struct {
	tool   string
	dryRun bool
	req    *parsedb.WriteRequest
	action string
	// confirm: the declared action asks the person every time.
	confirm bool
}

func createObject(ctx context.Context, d *Deps, in createObjectIn) (Dynamic, error) {
	return objectWrite(ctx, d, parsedb.WriteCreateObject, in.ClassName, "", in.Fields, in.ACL, in.DryRun)
}

func updateObject(ctx context.Context, d *Deps, in updateObjectIn) (Dynamic, error) {
	return objectWrite(ctx, d, parsedb.WriteUpdateObject, in.ClassName, in.ObjectID, in.Fields, in.ACL, in.DryRun)
}

func deleteObject(ctx context.Context, d *Deps, in deleteObjectIn) (Dynamic, error) {
	return objectWrite(ctx, d, parsedb.WriteDeleteObject, in.ClassName, in.ObjectID, nil, nil, in.DryRun)
}

var clpOp = map[parsedb.WriteOp]string{
	parsedb.WriteCreateObject: policy.OpCreate,
	parsedb.WriteUpdateObject: policy.OpUpdate,
	parsedb.WriteDeleteObject: policy.OpDelete,
}

func objectWrite(ctx context.Context, d *Deps, op parsedb.WriteOp, name, id string, fields, acl map[string]any, dryRun bool) (Dynamic, error) {
	if op != parsedb.WriteDeleteObject {
		var err error
		if acl, err = writeACL(fields, acl); err != nil {
			return nil, err
		}
		if op == parsedb.WriteUpdateObject && len(fields) == 0 && acl == nil {
			return nil, invalid("fields (or acl) is required: what to change")
		}
	}
	req, err := d.objectRequest(ctx, op, name, id, policy.ObjectWrite{Op: clpOp[op], Fields: fields, ACL: acl})
	if err != nil {
		return nil, err
	}
	// Objects keep the client's key order, as Parse stores them.
	if ordered, found, err := OrderedArgument(ctx, "fields"); err == nil && found {
		if doc, ok := ordered.(bson.D); ok {
			req.KeyOrder = parsedb.KeyOrderOf(doc)
		}
	}
	return d.runWrite(ctx, &writeCall{tool: string(op), dryRun: dryRun, req: req})
}

// objectRequest runs the policy checkpoint of an object write and builds
// the backend request (with the current object for update and delete,
// read through the session's scope).
func (d *Deps) objectRequest(ctx context.Context, op parsedb.WriteOp, name, id string, w policy.ObjectWrite) (*parsedb.WriteRequest, error) {
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil || namesUnknownField(cls, w.Fields) {
		// The cached schema may predate a class or field Parse Server (or
		// another writer) added moments ago: read _SCHEMA again once, so
		// the class is found and the field's values are typed (a compact
		// Date or bare-id Pointer sent in Parse's typed form).
		if _, rerr := d.Store.Schema.Refresh(ctx, 0); rerr != nil {
			return nil, rerr
		}
		schema, cls, err = d.resolveClass(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	fields, acl, err := d.Policy.CheckObjectWrite(ctx, schema, cls, w)
	if err != nil {
		return nil, err
	}
	req := &parsedb.WriteRequest{Op: op, ClassName: cls.Name, Class: cls, ObjectID: id, Fields: fields, ACL: acl,
		DefaultShown: func(f string) bool { return d.Policy.FieldVisible(cls, f) }}
	if op != parsedb.WriteCreateObject {
		if req.Existing, req.Scope, err = d.currentObject(ctx, schema, cls, id, w.Op); err != nil {
			return nil, err
		}
	}
	if op == parsedb.WriteUpdateObject && hasDottedKey(fields) {
		// A dotted key merges into the stored value: the policy judges it
		// against the object as get_object shows it to this session
		// (SECURITY.md "Writes"), on either write path, before anything
		// is planned or sent.
		shown, err := d.readBack(ctx, cls.Name, id)
		if err != nil {
			return nil, err
		}
		if err := d.Policy.CheckDottedWrite(schema, cls, req.Existing, shown != nil, fields); err != nil {
			return nil, err
		}
	}
	return req, nil
}

func hasDottedKey(fields map[string]any) bool {
	for k := range fields {
		if strings.Contains(k, ".") {
			return true
		}
	}
	return false
}

// namesUnknownField reports whether a write names a top-level field the
// class (as cached) lacks.
func namesUnknownField(cls *parsedb.Class, fields map[string]any) bool {
	for k := range fields {
		if cls.Field(parsedb.TopField(k)) == nil {
			return true
		}
	}
	return false
}

// currentObject reads the object an update or delete applies to, with the
// filter the write will carry: the per-agent filters and tenant (as
// get_object: a filtered-out object is "not found"), and for a scoped
// identity _wperm and the CLP pointer permissions of the operation.
func (d *Deps) currentObject(ctx context.Context, schema *parsedb.Schema, cls *parsedb.Class, id, op string) (bson.Raw, bson.D, error) {
	shown, err := d.Policy.ComposeWhere(ctx, cls, map[string]any{"objectId": id}, false)
	if err != nil {
		return nil, nil, err
	}
	filter, err := parsedb.WhereToFilter(ctx, cls, shown, parsedb.WhereOptions{Schema: schema, Sub: &subQueries{d: d, schema: schema}})
	if err != nil {
		return nil, nil, err
	}
	scope, err := d.Policy.WriteScope(ctx, cls, op)
	if err != nil {
		return nil, nil, err
	}
	filter = andFilters(filter, scope)
	raw, err := d.Store.Collection(cls.Name).FindOne(ctx, filter).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil, parsedb.ParseErr(parsedb.ParseObjectNotFound, "Object not found: %s#%s", cls.Name, id)
	}
	if err != nil {
		return nil, nil, err
	}
	return raw, filter, nil
}

type createClassIn struct {
	ClassName   string         `json:"class_name" arg:"class"`
	Fields      map[string]any `json:"fields"`
	Permissions map[string]any `json:"permissions"`
	DryRun      bool           `json:"dry_run"`
}

func createClassTool(ctx context.Context, d *Deps, in createClassIn) (Dynamic, error) {
	name, fields, clp, dryRun := in.ClassName, in.Fields, in.Permissions, in.DryRun
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.Policy.CheckClassWrite(ctx, schema, name, true); err != nil {
		return nil, err
	}
	if err := d.Policy.CheckNewClassFields(schema, name, fields); err != nil {
		return nil, err
	}
	req := &parsedb.WriteRequest{Op: parsedb.WriteCreateClass, ClassName: name, Class: schema.Class(name), Fields: fields, CLP: clp}
	return d.runWrite(ctx, &writeCall{tool: "create_class", dryRun: dryRun, req: req})
}

type deleteClassIn struct {
	ClassName string `json:"class_name" arg:"class"`
	DryRun    bool   `json:"dry_run"`
}

func deleteClassTool(ctx context.Context, d *Deps, in deleteClassIn) (Dynamic, error) {
	name, dryRun := in.ClassName, in.DryRun
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.Policy.CheckClassWrite(ctx, schema, name, false); err != nil {
		return nil, err
	}
	cls, err := d.Policy.ResolveClass(ctx, schema, name)
	if err != nil {
		return nil, err
	}
	req := &parsedb.WriteRequest{Op: parsedb.WriteDeleteClass, ClassName: cls.Name, Class: cls}
	return d.runWrite(ctx, &writeCall{tool: "delete_class", dryRun: dryRun, req: req})
}

// runWrite plans the write, then returns the dry run, asks for
// confirmation, or applies it; every outcome is noted for the audit event.
func (d *Deps) runWrite(ctx context.Context, c *writeCall) (Dynamic, error) {
	backend := d.writes()
	audit := policy.WriteAudit{Class: c.req.ClassName, ObjectID: c.req.ObjectID, Fields: writeFieldNames(c.req), DryRun: c.dryRun,
		Action: c.action, Backend: backend.Kind()}
	policy.NoteWrite(ctx, audit)
	plan, err := backend.Plan(ctx, c.req)
	if err != nil {
		return nil, err
	}
	audit.ObjectID = plan.ObjectID
	policy.NoteWrite(ctx, audit)
	if c.dryRun {
		if err := d.offerViewConfirmation(ctx, c, plan); err != nil {
			return nil, err
		}
		return d.writeResult(ctx, c, plan, nil, true)
	}
	confirmed, res, err := d.confirm(ctx, c, plan)
	if err != nil || res != nil {
		return res, err
	}
	audit.Confirmed = confirmed
	policy.NoteWrite(ctx, audit)
	stored, err := backend.Apply(ctx, plan)
	if err != nil {
		return nil, err
	}
	if backend.Kind() != "direct" {
		stored = nil // the bridge answers with Parse Server's reply, not the stored document
	}
	d.refreshVectorAfterWrite(ctx, c.req, plan.ObjectID)
	return d.writeResult(ctx, c, plan, stored, false)
}

// schemaReloadNote is the result's schema_reload on the direct path when a
// write changed _SCHEMA (settings.direct_schema_changes allowed it): Parse
// Server caches its schema without expiry by default, so a running server
// must be told (docs/writes.md "Writes").
const schemaReloadNote = "this write changed _SCHEMA directly: a running Parse Server does not see the change until it reloads its schema. " +
	"Send GET /schemas with the master key to every Parse Server instance (it clears the schema cache), or restart them; " +
	"a Parse Server with databaseOptions.enableSchemaHooks (MongoDB replica set) or schemaCacheTtl reloads by itself"

func writeFieldNames(req *parsedb.WriteRequest) []string {
	names := make([]string, 0, len(req.Fields)+1)
	for k := range req.Fields {
		names = append(names, k)
	}
	if req.ACL != nil {
		names = append(names, "ACL")
	}
	sort.Strings(names)
	return names
}

// writeResult is a write's result, built under the session's read scope
// (SECURITY.md "Outputs"): the object it shows is what get_object would
// show this session — after a write, the stored object through get_object's
// own read plan (filters, tenant, ACL read scope, CLP get, field rules,
// redaction), evaluated in memory on the document the write stored when the
// plan's scope allows it, else read back (writtenObject); for a dry run, the simulated object only when
// the session can read the row as it is now (update, delete) or, for a
// create, when the new row's ACL and the class's get permission let it.
// A row the session cannot read shows no object: Parse answers such a
// caller with the write's own facts only (objectId/createdAt, updatedAt,
// {}). For a dry run the exact change that would be sent is added; it
// holds only values the caller gave and the write checkpoint passed.
func (d *Deps) writeResult(ctx context.Context, c *writeCall, plan *parsedb.WritePlan, stored bson.Raw, dryRun bool) (Dynamic, error) {
	o := newJSONObject()
	if dryRun {
		o.val("dry_run", true)
	}
	if c.action != "" {
		o.str("action", c.action)
	}
	o.str("class_name", plan.ClassName)
	if plan.ObjectID != "" {
		o.str("object_id", plan.ObjectID)
	}
	switch plan.Op {
	case parsedb.WriteDeleteObject:
		o.val("deleted", !dryRun)
	case parsedb.WriteCreateClass:
		o.val("created", !dryRun)
		o.val("fields", plan.Fields)
	case parsedb.WriteDeleteClass:
		o.val("deleted", !dryRun)
	case parsedb.WriteCreateObject:
		o.val("created", !dryRun)
	case parsedb.WriteUpdateObject:
		o.val("updated", !dryRun)
	}
	o.str("write_path", d.writes().Kind())
	if d.writes().Kind() == "direct" && plan.ChangesSchema() {
		o.str("schema_reload", schemaReloadNote)
	}
	if dryRun {
		o.val("change", plan.Change())
		o.str("note", "dry run: nothing was written; every policy check ran")
	}
	row, err := d.shownObject(ctx, plan, stored, dryRun)
	if err != nil {
		return nil, err
	}
	if row != nil {
		key := "object"
		if plan.Op == parsedb.WriteDeleteObject {
			key = "deleted_object"
		}
		o.raw(key, row)
	}
	return o.done(), nil
}

// shownObject is the object a write result shows, or nil (writeResult).
func (d *Deps) shownObject(ctx context.Context, plan *parsedb.WritePlan, stored bson.Raw, dryRun bool) ([]byte, error) {
	switch plan.Op {
	case parsedb.WriteCreateObject, parsedb.WriteUpdateObject, parsedb.WriteDeleteObject:
	default:
		return nil, nil
	}
	if !dryRun {
		if plan.Op == parsedb.WriteDeleteObject {
			return nil, nil
		}
		return d.writtenObject(ctx, plan, stored)
	}
	switch plan.Op {
	case parsedb.WriteDeleteObject:
		return d.readBack(ctx, plan.ClassName, plan.ObjectID)
	case parsedb.WriteUpdateObject:
		now, err := d.readBack(ctx, plan.ClassName, plan.ObjectID)
		if err != nil || now == nil {
			return nil, err
		}
	case parsedb.WriteCreateObject:
		if !d.Policy.ACLReadable(plan.Result.Lookup("_rperm")) {
			return nil, nil
		}
		schema, err := d.Store.Schema.Get(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := d.Policy.ResolveClass(policy.AsGet(ctx), schema, plan.ClassName); err != nil {
			if isModelError(err) {
				return nil, nil
			}
			return nil, err
		}
	}
	if len(plan.Result) == 0 {
		return nil, nil // the bridge's plan simulates no object
	}
	return d.storedRow(ctx, plan, plan.Result)
}

// readBack is the object get_object would show this session for id now
// (REST shape), nil when get_object would answer "not found" or refuse.
func (d *Deps) readBack(ctx context.Context, class, id string) ([]byte, error) {
	p, err := newReadPlan(policy.AsGet(ctx), d, class, planInput{where: map[string]any{"objectId": id}, noSort: true, shape: shapeREST})
	if err != nil {
		if isModelError(err) {
			return nil, nil
		}
		return nil, err
	}
	if d.Config != nil {
		// Files show their url, as Parse's REST answers do, when it is
		// known (PARSE_MCP_FILES_URL, or the bridge's Parse Server).
		p.enc.FileURLBase = d.Config.FileURLBase()
	}
	var obj []byte
	err = p.rows(ctx, p.findSpec(0, 1), func(int) bool { return true }, func(_ int, _ bson.Raw, row []byte) (bool, error) {
		obj = append([]byte(nil), row...)
		return false, nil
	})
	return obj, err
}

// writtenObject is readBack without the round trip when it can be decided
// in memory: the document the direct write stored (stored) goes through
// get_object's read plan for the id — class gate and CLP get, the policy's
// filters, the storage scope, the row encoder — with the filter evaluated
// here. That is exact only for the filters it can evaluate exactly: no
// per-agent filter or tenant on the class (ComposeWhere empty) and a storage
// scope that is empty (master posture) or the _rperm read scope alone; for
// anything else (CLP pointer permissions, a filter, a field the write added
// to _SCHEMA) the object is read back as before. ARCHITECTURE.md "Round
// trips per tool".
func (d *Deps) writtenObject(ctx context.Context, plan *parsedb.WritePlan, stored bson.Raw) ([]byte, error) {
	if len(stored) == 0 || len(plan.SchemaAdds) > 0 {
		return d.readBack(ctx, plan.ClassName, plan.ObjectID)
	}
	gctx := policy.AsGet(ctx)
	schema, err := d.Store.Schema.Get(gctx)
	if err != nil {
		return nil, err
	}
	cls, err := d.Policy.ResolveClass(gctx, schema, plan.ClassName)
	if err == nil {
		err = checkWhereFields(d, cls, map[string]any{"objectId": plan.ObjectID})
	}
	var where map[string]any
	if err == nil {
		where, err = d.Policy.ComposeWhere(gctx, cls, nil, false)
	}
	var scope bson.D
	if err == nil {
		scope, err = d.Policy.StorageScope(gctx, cls)
	}
	if err != nil {
		if isModelError(err) {
			return nil, nil // as readBack: get_object would refuse
		}
		return nil, err
	}
	if len(where) > 0 {
		return d.readBack(ctx, plan.ClassName, plan.ObjectID)
	}
	visible, decided := rpermScopeAdmits(scope, stored)
	if !decided {
		return d.readBack(ctx, plan.ClassName, plan.ObjectID)
	}
	if !visible {
		return nil, nil
	}
	enc := d.Policy.RowEncoder(schema, cls, nil)
	if d.Config != nil {
		enc.FileURLBase = d.Config.FileURLBase()
	}
	return enc.AppendRow(nil, stored)
}

// rpermScopeAdmits evaluates a storage scope on a document as the database
// would, when the scope is empty or exactly {_rperm: {$in: [entries…]}}:
// a missing or null _rperm matches a null entry, an array matches when one
// of its elements is an entry, a string when it is one. decided is false for
// any other scope or _rperm type: the caller reads the row back instead.
func rpermScopeAdmits(scope bson.D, doc bson.Raw) (admits, decided bool) {
	if len(scope) == 0 {
		return true, true
	}
	if len(scope) != 1 || scope[0].Key != "_rperm" {
		return false, false
	}
	cond, ok := scope[0].Value.(bson.D)
	if !ok || len(cond) != 1 || cond[0].Key != "$in" {
		return false, false
	}
	entries, ok := cond[0].Value.(bson.A)
	if !ok {
		return false, false
	}
	in := func(v any) bool { return slices.Contains(entries, v) }
	rperm, err := doc.LookupErr("_rperm")
	switch {
	case err != nil || rperm.Type == bson.TypeNull:
		return in(nil), true
	case rperm.Type == bson.TypeString:
		return in(rperm.StringValue()), true
	case rperm.Type != bson.TypeArray:
		return false, false
	}
	vals, err := rperm.Array().Values()
	if err != nil {
		return false, false
	}
	for _, v := range vals {
		s, ok := v.StringValueOK()
		if !ok {
			if v.Type == bson.TypeNull && in(nil) {
				return true, true
			}
			return false, false
		}
		if in(s) {
			return true, true
		}
	}
	return false, true
}

// isModelError reports whether err is an answer to the caller (a
// model-fixable error or a violation), not an infrastructure failure.
func isModelError(err error) bool {
	return toolerror.KindOf(err) != toolerror.Infrastructure
}

// storedRow encodes a stored object through the session's row encoder
// (redaction, agent_fields, protectedFields), with the fields the write
// added to _SCHEMA typed as they will be.
func (d *Deps) storedRow(ctx context.Context, plan *parsedb.WritePlan, stored bson.Raw) ([]byte, error) {
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	cls := schema.Class(plan.ClassName)
	if cls == nil {
		return nil, toolerror.New(toolerror.InvalidArgument, "Class %s does not exist or is not accessible.", plan.ClassName)
	}
	if len(plan.SchemaAdds) > 0 {
		c := *cls
		c.Fields = make(map[string]*parsedb.Field, len(cls.Fields)+len(plan.SchemaAdds))
		maps.Copy(c.Fields, cls.Fields)
		for _, e := range plan.SchemaAdds {
			if _, ok := c.Fields[e.Key]; !ok {
				f := parsedb.FieldFromSchemaType(e.Value.(string))
				f.Name = e.Key
				c.Fields[e.Key] = f
			}
		}
		cls = &c
	}
	enc := d.Policy.RowEncoder(schema, cls, nil)
	if d.Config != nil {
		// Files show their url, as Parse's REST answers do, when it is
		// known (PARSE_MCP_FILES_URL, or the bridge's Parse Server).
		enc.FileURLBase = d.Config.FileURLBase()
	}
	return enc.AppendRow(nil, stored)
}
