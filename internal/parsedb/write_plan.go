package parsedb

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Plan encodes a write. now stamps _created_at/_updated_at. It touches
// nothing: delete_class's emptiness check and the write itself happen in
// Apply.
func Plan(req *WriteRequest, now time.Time) (*WritePlan, error) {
	switch req.Op {
	case WriteCreateObject:
		return planCreate(req, now)
	case WriteUpdateObject:
		return planUpdate(req, now)
	case WriteDeleteObject:
		return planDelete(req)
	case WriteCreateClass:
		return planCreateClass(req)
	case WriteDeleteClass:
		return planDeleteClass(req)
	}
	return nil, fmt.Errorf("unknown write %q", req.Op)
}

// checkFieldName refuses names Parse refuses as field names of a write.
func checkFieldName(name string) error {
	if implicitField(name) {
		return ParseErr(ParseInvalidKeyName, "%s is an invalid field name.", name)
	}
	if !ValidFieldName(name) {
		return ParseErr(ParseInvalidKeyName, "Invalid field name: %s.", truncateMsg(name, 60))
	}
	return nil
}

// fieldState accumulates one object write.
type fieldState struct {
	cls   *Class
	ord   KeyOrder
	adds  bson.D
	added map[string]valueType
	joins []JoinChange
}

// oneGeoPoint is Parse's validateObject rule: one write sets at most one
// GeoPoint value (111).
func oneGeoPoint(cls *Class, fields map[string]any) error {
	n := 0
	for name, v := range fields {
		if v == nil || strings.Contains(name, ".") {
			continue
		}
		m, typed := v.(map[string]any)
		if typed && m["__type"] == "GeoPoint" {
			n++
		} else if f := cls.Field(name); f != nil && f.Type == TypeGeoPoint && !typed {
			n++ // the compact [lat, lng] on a GeoPoint field
		}
	}
	if n > 1 {
		return ParseErr(ParseIncorrectType, "there can only be one geopoint field in a class")
	}
	return nil
}

// geoPointField is the class's GeoPoint field, if any.
func geoPointField(cls *Class) string {
	for _, n := range cls.FieldNames() {
		if cls.Fields[n].Type == TypeGeoPoint {
			return n
		}
	}
	return ""
}

// typed checks name's value against the schema and records a new field.
func (s *fieldState) typed(name string, v any) (*valueType, error) {
	nt, err := checkType(s.cls, name, v)
	if err != nil {
		return nil, err
	}
	if nt != nil && nt.Type == TypeGeoPoint && geoPointField(s.cls) != "" {
		// Parse's Mongo adapter (addFieldIfNotExists): a class has at most
		// one GeoPoint field.
		return nil, ParseErr(ParseIncorrectType, "MongoDB only supports one GeoPoint field in a class.")
	}
	if nt != nil {
		if s.added == nil {
			s.added = map[string]valueType{}
		}
		s.added[name] = *nt
		s.adds = append(s.adds, bson.E{Key: name, Value: nt.schemaString()})
	}
	return nt, nil
}

func (s *fieldState) relationOp(name, op string, v map[string]any, nt *valueType, ownerID string) error {
	target := ""
	if f := s.cls.Field(name); f != nil {
		target = f.TargetClass
	} else if nt != nil {
		target = nt.Target
	}
	objs, _ := v["objects"].([]any)
	jc := JoinChange{Field: name, Target: target, ownerID: ownerID}
	for _, o := range objs {
		cn, id, err := pointerParts(o)
		if err != nil {
			return err
		}
		if cn != target {
			return ParseErr(ParseIncorrectType, "schema mismatch for %s.%s; expected Relation<%s> but got Relation<%s>", s.cls.Name, name, target, cn)
		}
		if op == "AddRelation" {
			jc.Add = append(jc.Add, id)
		} else {
			jc.Remove = append(jc.Remove, id)
		}
	}
	s.joins = append(s.joins, jc)
	return nil
}

// relationOps applies a relation operation, or each of a Batch's.
func (s *fieldState) relationOps(name, op string, v map[string]any, nt *valueType, ownerID string) error {
	if op != "Batch" {
		return s.relationOp(name, op, v, nt, ownerID)
	}
	ops, err := batchOps(name, v)
	if err != nil {
		return err
	}
	for _, m := range ops {
		if _, _, err := opType(name, m["__op"], m); err != nil {
			return err
		}
		if err := s.relationOp(name, m["__op"].(string), m, nt, ownerID); err != nil {
			return err
		}
	}
	return nil
}

func opObjects(name string, v map[string]any, ord KeyOrder) (bson.A, error) {
	objs, ok := v["objects"].([]any)
	if !ok {
		return nil, ParseErr(ParseInvalidJSON, "%s of %s needs objects: an array", v["__op"], name)
	}
	iv, err := interiorAt(name, name+".objects", objs, 0, ord)
	if err != nil {
		return nil, err
	}
	return iv.(bson.A), nil
}

func incrementAmount(name string, v map[string]any) (any, error) {
	n, ok := storageNumber(v["amount"])
	if !ok {
		return nil, ParseErr(ParseInvalidJSON, "Increment of %s needs amount: a number", name)
	}
	return n, nil
}

func planCreate(req *WriteRequest, now time.Time) (*WritePlan, error) {
	cls := req.Class
	id := req.ObjectID
	if id == "" {
		id = NewObjectID()
	}
	s := &fieldState{cls: cls, ord: req.KeyOrder}
	fields := map[string]any{}
	maps.Copy(fields, req.Fields)
	// defaultValue of _SCHEMA applies to fields not given (or deleted).
	var withheld []string
	for _, name := range cls.fieldNamesWhere(func(f *Field) bool { return f.DefaultValue != nil }) {
		f := cls.Fields[name]
		if v, given := fields[name]; !given || isDeleteOp(v) {
			fields[name] = restValue(f.DefaultValue)
			if req.DefaultShown != nil && !req.DefaultShown(name) {
				withheld = append(withheld, name)
			}
		}
	}
	if err := oneGeoPoint(cls, fields); err != nil {
		return nil, err
	}
	doc := bson.D{{Key: "_id", Value: id}}
	names := sortedFieldNames(fields)
	for _, name := range names {
		elems, err := s.createField(name, fields[name], id)
		if err != nil {
			return nil, err
		}
		doc = append(doc, elems...)
	}
	for _, name := range cls.fieldNamesWhere(func(f *Field) bool { return f.Required }) {
		if v, given := fields[name]; !given || v == nil || isDeleteOp(v) {
			return nil, ParseErr(ParseValidationError, "%s is required", name)
		}
	}
	if req.ACL != nil {
		r, w, legacy, err := ACLStorage(req.ACL)
		if err != nil {
			return nil, err
		}
		doc = append(doc, bson.E{Key: "_rperm", Value: r}, bson.E{Key: "_wperm", Value: w}, bson.E{Key: "_acl", Value: legacy})
	}
	ts := bson.NewDateTimeFromTime(now)
	doc = append(doc, bson.E{Key: "_created_at", Value: ts}, bson.E{Key: "_updated_at", Value: ts})
	raw, err := bson.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return &WritePlan{Op: req.Op, ClassName: cls.Name, ObjectID: id, SchemaAdds: s.adds, Document: doc,
		Joins: s.joins, Result: raw, Fields: sortedFieldNames(req.Fields), WithheldDefaults: withheld}, nil
}

// createField is the stored form of one field of a created object (none
// for a Delete or a relation operation).
func (s *fieldState) createField(name string, v any, id string) ([]bson.E, error) {
	if err := checkFieldName(name); err != nil {
		return nil, err
	}
	nt, err := s.typed(name, v)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		if op, has := m["__op"].(string); has {
			switch op {
			case "Increment":
				amt, err := incrementAmount(name, m)
				if err != nil {
					return nil, err
				}
				return []bson.E{{Key: name, Value: amt}}, nil
			case "Add", "AddUnique", "Remove":
				objs, err := opObjects(name, m, s.ord)
				if err != nil {
					return nil, err
				}
				if op == "Remove" {
					objs = bson.A{} // Parse's flattenUpdateOperatorsForCreate; AddUnique keeps duplicates there too
				}
				return []bson.E{{Key: name, Value: objs}}, nil
			case "AddRelation", "RemoveRelation", "Batch":
				return nil, s.relationOps(name, op, m, nt, id)
			}
			return nil, nil // Delete: nothing is stored
		}
	}
	if v == nil {
		// Parse stores null under the REST name (no _p_ prefix: its
		// create transform types a pointer key only for a non-null
		// value).
		return []bson.E{{Key: name, Value: nil}}, nil
	}
	key, sv, err := topLevel(s.cls, name, v, nt, s.ord)
	if err != nil {
		return nil, err
	}
	return []bson.E{{Key: key, Value: sv}}, nil
}

func isDeleteOp(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["__op"] == "Delete"
}

// restValue turns a stored defaultValue (decoded BSON) into a REST value.
func restValue(v any) any {
	switch t := deepM(v).(type) {
	case bson.M:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = restValue(x)
		}
		return m
	case bson.A:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = restValue(x)
		}
		return a
	case int32:
		return float64(t)
	case int64:
		return float64(t)
	default:
		return t
	}
}

func planUpdate(req *WriteRequest, now time.Time) (*WritePlan, error) {
	cls := req.Class
	if req.Existing == nil {
		return nil, ParseErr(ParseObjectNotFound, "Object not found.")
	}
	if err := oneGeoPoint(cls, req.Fields); err != nil {
		return nil, err
	}
	s := &fieldState{cls: cls, ord: req.KeyOrder}
	ops := updateOps{}
	for _, name := range sortedFieldNames(req.Fields) {
		if err := ops.addField(s, req, name, req.Fields[name]); err != nil {
			return nil, err
		}
	}
	set := ops["$set"]
	if req.ACL != nil {
		r, w, legacy, err := ACLStorage(req.ACL)
		if err != nil {
			return nil, err
		}
		set = append(set, bson.E{Key: "_rperm", Value: r}, bson.E{Key: "_wperm", Value: w}, bson.E{Key: "_acl", Value: legacy})
	}
	set = append(set, bson.E{Key: "_updated_at", Value: bson.NewDateTimeFromTime(now)})
	update := bson.D{{Key: "$set", Value: set}}
	for _, op := range updateOpOrder {
		if d := ops[op]; len(d) > 0 {
			update = append(update, bson.E{Key: op, Value: d})
		}
	}
	if err := checkConflicts(update); err != nil {
		return nil, err
	}
	filter := writeFilter(req)
	result, err := simulateUpdate(req.Existing, update)
	if err != nil {
		return nil, err
	}
	return &WritePlan{Op: req.Op, ClassName: cls.Name, ObjectID: req.ObjectID, SchemaAdds: s.adds, Filter: filter,
		Update: update, Joins: s.joins, Result: result, Fields: sortedFieldNames(req.Fields)}, nil
}

// updateOps are an update's operator documents, by operator.
type updateOps map[string]bson.D

// updateOpOrder is the order of the update's operators after $set.
var updateOpOrder = []string{"$unset", "$inc", "$push", "$addToSet", "$pullAll"}

// addField adds the update of one written field.
func (ops updateOps) addField(s *fieldState, req *WriteRequest, name string, v any) error {
	cls := req.Class
	if strings.Contains(name, ".") {
		c, err := s.dotted(name, v)
		if err != nil {
			return err
		}
		if c.op == "$set" || slices.Contains(updateOpOrder, c.op) {
			ops[c.op] = append(ops[c.op], bson.E{Key: c.path, Value: c.value})
		}
		return nil
	}
	if err := checkFieldName(name); err != nil {
		return err
	}
	nt, err := s.typed(name, v)
	if err != nil {
		return err
	}
	storageKey := name
	if f := cls.Field(name); f != nil && f.Type == TypePointer || nt != nil && nt.Type == TypePointer {
		storageKey = "_p_" + name
	}
	if m, ok := v.(map[string]any); ok {
		if op, has := m["__op"].(string); has {
			return ops.addOperation(s, req, name, storageKey, op, m, nt)
		}
	}
	if v == nil {
		if f := cls.Field(name); f != nil && f.Required {
			return ParseErr(ParseValidationError, "%s is required", name)
		}
	}
	key, sv, err := topLevel(cls, name, v, nt, s.ord)
	if err != nil {
		return err
	}
	ops["$set"] = append(ops["$set"], bson.E{Key: key, Value: sv})
	return nil
}

// addOperation adds the update of a field written with a Parse __op.
func (ops updateOps) addOperation(s *fieldState, req *WriteRequest, name, storageKey, op string, m map[string]any, nt *valueType) error {
	cls := req.Class
	switch op {
	case "Delete":
		if f := cls.Field(name); f != nil && f.Required {
			return ParseErr(ParseValidationError, "%s is required", name)
		}
		if f := cls.Field(name); f != nil && f.Type == TypeRelation {
			return ParseErr(ParseIncorrectType, "%s is a Relation: remove objects with RemoveRelation", name)
		}
		ops["$unset"] = append(ops["$unset"], bson.E{Key: storageKey, Value: ""})
	case "Increment":
		amt, err := incrementAmount(name, m)
		if err != nil {
			return err
		}
		ops["$inc"] = append(ops["$inc"], bson.E{Key: name, Value: amt})
	case "Add", "AddUnique", "Remove":
		objs, err := opObjects(name, m, s.ord)
		if err != nil {
			return err
		}
		switch op {
		case "Add":
			ops["$push"] = append(ops["$push"], bson.E{Key: name, Value: bson.D{{Key: "$each", Value: objs}}})
		case "AddUnique":
			ops["$addToSet"] = append(ops["$addToSet"], bson.E{Key: name, Value: bson.D{{Key: "$each", Value: objs}}})
		case "Remove":
			ops["$pullAll"] = append(ops["$pullAll"], bson.E{Key: name, Value: objs})
		}
	case "AddRelation", "RemoveRelation", "Batch":
		return s.relationOps(name, op, m, nt, req.ObjectID)
	}
	return nil
}

// checkConflicts refuses an update touching one storage key twice (a
// pointer and its bare name, say), which MongoDB would reject.
func checkConflicts(update bson.D) error {
	var seen []string
	for _, part := range update {
		for _, e := range part.Value.(bson.D) {
			for _, k := range seen {
				if pathConflict(k, e.Key) {
					if k == e.Key {
						return ParseErr(ParseInvalidJSON, "%s is changed twice in one update", e.Key)
					}
					return ParseErr(ParseInvalidJSON, "%s and %s are changed in one update: change the whole field or its sub-keys, not both", k, e.Key)
				}
			}
			seen = append(seen, e.Key)
		}
	}
	return nil
}

func planDelete(req *WriteRequest) (*WritePlan, error) {
	if req.Existing == nil {
		return nil, ParseErr(ParseObjectNotFound, "Object not found.")
	}
	filter := writeFilter(req)
	return &WritePlan{Op: req.Op, ClassName: req.ClassName, ObjectID: req.ObjectID, Filter: filter, Result: req.Existing}, nil
}

// writeFilter is the filter of an update or delete: the objectId, AND-ed
// with the scope the object was read through.
// A scope that is the objectId itself (master posture, no filter on the
// class) adds nothing: the filter stays a lone _id, which every engine
// serves from the _id index (FerretDB 1.24 only that shape; under an $and
// it reads the whole collection).
func writeFilter(req *WriteRequest) bson.D {
	filter := bson.D{{Key: "_id", Value: req.ObjectID}}
	if len(req.Scope) == 1 && req.Scope[0].Key == "_id" && req.Scope[0].Value == any(req.ObjectID) {
		return filter
	}
	if len(req.Scope) > 0 {
		filter = bson.D{{Key: "$and", Value: bson.A{filter, req.Scope}}}
	}
	return filter
}

var classNameWriteRe = NewNamePattern("", "A-Za-z", "A-Za-z0-9_", 128)

// schemaTypes are the REST types create_class accepts.
var schemaTypes = map[string]bool{TypeString: true, TypeNumber: true, TypeBoolean: true, TypeDate: true, TypeObject: true,
	TypeArray: true, TypeGeoPoint: true, TypeFile: true, TypeBytes: true, TypePolygon: true, TypePointer: true, TypeRelation: true}

func planCreateClass(req *WriteRequest) (*WritePlan, error) {
	name := req.ClassName
	if !classNameWriteRe.MatchString(name) {
		return nil, ParseErr(ParseInvalidClassName, "Invalid classname: %s, classnames can only have alphanumeric characters and _, and must start with an alpha character ", truncateMsg(name, 60))
	}
	doc := bson.D{{Key: "_id", Value: name}, {Key: "objectId", Value: "string"}, {Key: "updatedAt", Value: "date"}, {Key: "createdAt", Value: "date"}}
	var options bson.D
	for _, fname := range sortedFieldNames(req.Fields) {
		typ, opt, err := schemaFieldDef(name, fname, req.Fields[fname])
		if err != nil {
			return nil, err
		}
		doc = append(doc, bson.E{Key: fname, Value: typ})
		if len(opt) > 0 {
			options = append(options, bson.E{Key: fname, Value: opt})
		}
	}
	var geo []string
	for _, fname := range sortedFieldNames(req.Fields) {
		if def, _ := req.Fields[fname].(map[string]any); def["type"] == TypeGeoPoint {
			geo = append(geo, fname)
		}
	}
	if len(geo) > 1 {
		return nil, ParseErr(ParseIncorrectType, "currently, only one GeoPoint field may exist in an object. Adding %s when %s already exists.", geo[1], geo[0])
	}
	var md bson.D
	if len(options) > 0 {
		md = append(md, bson.E{Key: "fields_options", Value: options})
	}
	if req.CLP != nil {
		clp, err := validCLP(req.CLP, req.Fields)
		if err != nil {
			return nil, err
		}
		md = append(md, bson.E{Key: "class_permissions", Value: clp})
	}
	if md != nil {
		doc = append(doc, bson.E{Key: "_metadata", Value: md})
	}
	return &WritePlan{Op: req.Op, ClassName: name, SchemaDoc: doc, Fields: sortedFieldNames(req.Fields)}, nil
}

// schemaFieldDef checks one field definition of a new class: its _SCHEMA
// type string and its fields_options (required, defaultValue).
func schemaFieldDef(name, fname string, v any) (string, bson.D, error) {
	if err := checkFieldName(fname); err != nil {
		return "", nil, err
	}
	def, ok := v.(map[string]any)
	if !ok {
		return "", nil, ParseErr(ParseInvalidJSON, "field %s needs a definition like {\"type\":\"String\"}", fname)
	}
	t, _ := def["type"].(string)
	if !schemaTypes[t] {
		return "", nil, ParseErr(ParseIncorrectType, "invalid field type: %s", truncateMsg(fmt.Sprint(def["type"]), 40))
	}
	target, _ := def["targetClass"].(string)
	if t == TypePointer || t == TypeRelation {
		if target == "" {
			return "", nil, ParseErr(135, "type %s needs a class name", t)
		}
		if !classNameWriteRe.MatchString(target) && target != "_User" && target != "_Role" && target != "_Installation" && target != "_Session" {
			return "", nil, ParseErr(ParseInvalidClassName, "Invalid classname: %s", truncateMsg(target, 60))
		}
	} else if target != "" {
		return "", nil, ParseErr(ParseInvalidJSON, "targetClass is only for Pointer and Relation fields (%s)", fname)
	}
	for k := range def {
		switch k {
		case "type", "targetClass", "required", "defaultValue":
		default:
			return "", nil, ParseErr(ParseInvalidJSON, "field %s: unknown key %s (type, targetClass, required, defaultValue)", fname, truncateMsg(k, 40))
		}
	}
	f := &Field{Name: fname, Type: t, TargetClass: target}
	opt, err := schemaFieldOptions(name, f, def)
	return SchemaTypeString(f), opt, err
}

// schemaFieldOptions are a new field's fields_options.
func schemaFieldOptions(name string, f *Field, def map[string]any) (bson.D, error) {
	fname := f.Name
	var opt bson.D
	if r, has := def["required"]; has {
		b, isBool := r.(bool)
		if !isBool {
			return nil, ParseErr(ParseInvalidJSON, "field %s: required must be true or false", fname)
		}
		opt = append(opt, bson.E{Key: "required", Value: b})
	}
	if dv, has := def["defaultValue"]; has && dv != nil {
		vt, ok, err := typeOf(fname, dv)
		if err != nil {
			return nil, err
		}
		if !ok || !typesMatch(f, vt) {
			return nil, ParseErr(ParseIncorrectType, "schema mismatch for %s.%s default value; expected %s but got %s", name, fname, fieldType(f), vt)
		}
		// The value every create without the field will write: it
		// passes create_object's encoder now (a key holding "$" or
		// "." is Parse's 121), not on every later create.
		if err := CheckDefaultValue(f, dv); err != nil {
			return nil, err
		}
		opt = append(opt, bson.E{Key: "defaultValue", Value: plainBSON(dv)})
	}
	return opt, nil
}

// plainBSON converts a JSON value to BSON keeping REST typed objects as
// they are (sorted keys), as Parse stores fields_options.defaultValue.
func plainBSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		keys := sortedFieldNames(t)
		d := make(bson.D, 0, len(keys))
		for _, k := range keys {
			d = append(d, bson.E{Key: k, Value: plainBSON(t[k])})
		}
		return d
	case []any:
		a := make(bson.A, len(t))
		for i, x := range t {
			a[i] = plainBSON(x)
		}
		return a
	case float64:
		n, _ := storageNumber(t)
		return n
	}
	return v
}

var clpOperations = []string{"find", "count", "get", "create", "update", "delete", "addField", "protectedFields", "readUserFields", "writeUserFields"}

// validCLP checks class-level permissions as Parse's validateCLP does:
// known operations, entries "*", a user id, "role:Name",
// requiresAuthentication or pointerFields; the field names of
// readUserFields, writeUserFields and pointerFields must be Pointer<_User>
// or Array fields of the new class, those of protectedFields fields of it
// (never objectId, createdAt, updatedAt, ACL) — so an internal name
// (_hashed_password, _rperm) is refused with Parse's 107.
func validCLP(clp map[string]any, fields map[string]any) (bson.D, error) {
	var out bson.D
	for _, op := range sortedFieldNames(clp) {
		known := false
		for _, k := range clpOperations {
			known = known || k == op
		}
		if !known {
			return nil, ParseErr(ParseInvalidJSON, "%s is not a valid operation for class level permissions", truncateMsg(op, 40))
		}
		v := clp[op]
		switch op {
		case "readUserFields", "writeUserFields":
			list, ok := v.([]any)
			if !ok {
				return nil, ParseErr(ParseInvalidJSON, "this perms[%s] is not a valid value for class level permissions %s", op, op)
			}
			for _, name := range list {
				if err := clpUserField(fields, name, op); err != nil {
					return nil, err
				}
			}
			out = append(out, bson.E{Key: op, Value: plainBSON(v)})
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, ParseErr(ParseInvalidJSON, "%s must be an object like {\"*\":true}", op)
		}
		for en, ev := range m {
			if err := clpEntry(fields, op, en, ev); err != nil {
				return nil, err
			}
		}
		out = append(out, bson.E{Key: op, Value: plainBSON(m)})
	}
	return out, nil
}

// clpUserField checks a field a pointer permission names: a pointer to
// _User or an array.
func clpUserField(fields map[string]any, name any, op string) error {
	s, _ := name.(string)
	if def, _ := fields[s].(map[string]any); def != nil && (def["type"] == TypePointer && def["targetClass"] == "_User" || def["type"] == TypeArray) {
		return nil
	}
	return ParseErr(ParseInvalidJSON, "'%s' is not a valid column for class level pointer permissions %s", truncateMsg(fmt.Sprint(name), 40), op)
}

// clpEntry checks the entry en: ev of the class-level permission op.
func clpEntry(fields map[string]any, op, en string, ev any) error {
	switch {
	case op == "protectedFields":
		list, ok := ev.([]any)
		if !ok {
			return ParseErr(ParseInvalidJSON, "protectedFields.%s must be an array of field names", truncateMsg(en, 40))
		}
		for _, name := range list {
			fn := fmt.Sprint(name)
			if defaultFields[fn] != nil {
				return ParseErr(ParseInvalidJSON, "Default field '%s' can not be protected", fn)
			}
			if _, ok := fields[fn]; !ok {
				return ParseErr(ParseInvalidJSON, "Field '%s' in protectedFields:%s does not exist", truncateMsg(fn, 40), truncateMsg(en, 40))
			}
		}
	case en == "pointerFields":
		list, ok := ev.([]any)
		if !ok {
			return ParseErr(ParseInvalidJSON, "%s.pointerFields must be an array of field names", op)
		}
		for _, name := range list {
			if err := clpUserField(fields, name, op); err != nil {
				return err
			}
		}
	case en == "requiresAuthentication" || en == "*" || validObjectID(en) || aclRoleRe.MatchString(en):
		if b, ok := ev.(bool); !ok || !b {
			return ParseErr(ParseInvalidJSON, "'%v' is not a valid value for class level permissions %s:%s:%v", ev, op, truncateMsg(en, 40), ev)
		}
	default:
		return ParseErr(ParseInvalidJSON, "'%s' is not a valid key for class level permissions", truncateMsg(en, 40))
	}
	return nil
}

func planDeleteClass(req *WriteRequest) (*WritePlan, error) {
	cls := req.Class
	var joins []string
	for _, name := range cls.FieldNames() {
		if f := cls.Fields[name]; f.Type == TypeRelation {
			joins = append(joins, "_Join:"+name+":"+cls.Name)
		}
	}
	sort.Strings(joins)
	return &WritePlan{Op: req.Op, ClassName: cls.Name, JoinCollections: joins}, nil
}

// uniqueValues appends the values of add not yet in base (by BSON value).
func uniqueValues(base, add bson.A) bson.A {
	out := append(bson.A{}, base...)
	seen := map[string]bool{}
	for _, x := range out {
		seen[valueKey(x)] = true
	}
	for _, x := range add {
		k := valueKey(x)
		if !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}

func valueKey(v any) string {
	b, err := bson.Marshal(bson.D{{Key: "v", Value: normalizeNumber(v)}})
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// normalizeNumber compares 3 and 3.0 as equal, as MongoDB does.
func normalizeNumber(v any) any {
	switch n := v.(type) {
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	}
	return v
}

// simulateUpdate applies an update to a stored document in memory: the
// object a dry run shows, exactly as MongoDB would leave it (dotted paths
// included).
func simulateUpdate(existing bson.Raw, update bson.D) (bson.Raw, error) {
	var doc bson.D
	if err := bson.Unmarshal(existing, &doc); err != nil {
		return nil, err
	}
	asArray := func(old any) bson.A {
		if a, ok := old.(bson.A); ok {
			return a
		}
		return bson.A{}
	}
	for _, part := range update {
		for _, e := range part.Value.(bson.D) {
			var f func(old any, exists bool) (any, bool)
			onlyExisting := false
			// opErr is MongoDB's refusal of an operation on the stored
			// value's type, worded for the caller (opOnStored).
			var opErr error
			switch part.Key {
			case "$set":
				f = func(any, bool) (any, bool) { return e.Value, false }
			case "$unset":
				onlyExisting = true
				f = func(any, bool) (any, bool) { return nil, true }
			case "$inc":
				f = func(old any, exists bool) (any, bool) {
					opErr = opOnStored("$inc", e.Key, old, exists)
					n, _ := storageNumber(toFloat(old) + toFloat(e.Value))
					return n, false
				}
			case "$push":
				each := e.Value.(bson.D)[0].Value.(bson.A)
				f = func(old any, exists bool) (any, bool) {
					opErr = opOnStored(part.Key, e.Key, old, exists)
					return append(append(bson.A{}, asArray(old)...), each...), false
				}
			case "$addToSet":
				each := e.Value.(bson.D)[0].Value.(bson.A)
				f = func(old any, exists bool) (any, bool) {
					opErr = opOnStored(part.Key, e.Key, old, exists)
					return uniqueValues(asArray(old), each), false
				}
			case "$pullAll":
				drop := map[string]bool{}
				for _, x := range e.Value.(bson.A) {
					drop[valueKey(x)] = true
				}
				f = func(old any, exists bool) (any, bool) {
					opErr = opOnStored(part.Key, e.Key, old, exists)
					kept := bson.A{}
					for _, x := range asArray(old) {
						if !drop[valueKey(x)] {
							kept = append(kept, x)
						}
					}
					return kept, false
				}
			default:
				continue
			}
			var err error
			if doc, err = updatePath(doc, e.Key, onlyExisting, f); err != nil {
				return nil, err
			}
			if opErr != nil {
				return nil, opErr
			}
		}
	}
	return bson.Marshal(doc)
}

// opOnStored is the refusal of an operation MongoDB cannot apply to the
// stored value at path: Increment on anything but a number, Add, AddUnique
// or Remove on anything but an array (a missing value is created, or for
// Remove left alone). MongoDB fails the update; Parse Server passes that on
// as an internal error (code 1), which tells the caller nothing, so both
// write paths answer with Parse's INCORRECT_TYPE (111) (docs/writes.md
// "Writes"). The answer does not describe the stored value: on a field
// that drifted it may be a redacted reference, whose form (string or
// object) the marker hides.
func opOnStored(op, path string, old any, exists bool) error {
	if !exists {
		return nil
	}
	switch op {
	case "$inc":
		switch old.(type) {
		case int32, int64, float64:
			return nil
		}
		return ParseErr(ParseIncorrectType, "Cannot increment %s: the stored value is not a number", truncateMsg(path, 60))
	}
	if _, ok := old.(bson.A); ok {
		return nil
	}
	verb := map[string]string{"$push": "Add to", "$addToSet": "AddUnique to", "$pullAll": "Remove from"}[op]
	return ParseErr(ParseIncorrectType, "Cannot %s %s: the stored value is not an array", verb, truncateMsg(path, 60))
}

// CheckOperations runs, without touching anything, the checks of an
// object write that Parse Server does not answer itself but fails on with
// an internal error (code 1) or answers only when it writes: an unknown
// __op on any key (Parse's 107, as the direct path answers), an object key
// holding "$" or "." anywhere in a value (121, see nestedKeys), and every
// dotted key of an update applied to the stored object (an Increment on an
// object, an Add on a string, a sub-key below a number: 111). The Parse
// Server bridge runs it before sending, so both write paths answer alike,
// dry run or not (docs/bridge.md "Parse Server bridge").
func CheckOperations(req *WriteRequest) error {
	s := &fieldState{cls: req.Class, ord: req.KeyOrder}
	var update bson.D
	for _, name := range sortedFieldNames(req.Fields) {
		v := req.Fields[name]
		if m, ok := v.(map[string]any); ok {
			if op, has := m["__op"]; has {
				if _, _, err := opType(name, op, m); err != nil && !knownOp(op) {
					return err
				}
			}
		}
		if !strings.Contains(name, ".") {
			if err := nestedKeys(req.Class, name, v); err != nil {
				return err
			}
		}
		if req.Op != WriteUpdateObject || !strings.Contains(name, ".") || s.cls == nil {
			continue
		}
		c, err := s.dotted(name, v)
		if err != nil {
			return err
		}
		update = append(update, bson.E{Key: c.op, Value: bson.D{{Key: c.path, Value: c.value}}})
	}
	if len(update) == 0 || req.Existing == nil {
		return nil
	}
	_, err := simulateUpdate(req.Existing, update)
	return err
}

// nestedKeys runs a top-level value (or the objects of its Add, AddUnique
// or Remove) through the encoder the direct path stores it with, and
// returns only that encoder's refusal of a nested key (Parse's 121): Parse
// Server answers the rest itself, but refuses a nested "$" or "." key only
// when it writes, or stores it, or fails with an internal error (a dotted
// key's value is encoded by dotted).
func nestedKeys(cls *Class, name string, v any) error {
	var err error
	if m, ok := v.(map[string]any); ok && m["__op"] != nil {
		switch m["__op"] {
		case "Add", "AddUnique", "Remove":
			_, err = opObjects(name, m, nil)
		}
	} else {
		_, _, err = topLevel(cls, name, v, nil, nil)
	}
	var te *toolerror.Error
	if errors.As(err, &te) && te.ParseCode == ParseInvalidNestedKey {
		return err
	}
	return nil
}

// knownOp reports whether op is an __op Parse Server applies.
func knownOp(op any) bool {
	switch op {
	case "Increment", "Delete", "Add", "AddUnique", "Remove", "AddRelation", "RemoveRelation", "Batch":
		return true
	}
	return false
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}
