package parsedb

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Direct writes in Parse Server's storage format (see docs/writes.md, "Writes").
// The encoder turns a Parse REST-level write (fields with REST values and
// __op operations, a Parse ACL) into exactly what Parse Server's Mongo
// storage adapter would store: _p_ pointers, BSON dates, [lng,lat]
// GeoPoints, file names, _rperm/_wperm/_acl, relation pairs in
// _Join:<field>:<Class>, and the _SCHEMA additions for new fields with
// Parse's type strings. It refuses what Parse Server refuses, with Parse's
// wording and error code.

// WriteOp names a write.
type WriteOp string

// The writes of the direct write surface.
const (
	WriteCreateObject WriteOp = "create_object"
	WriteUpdateObject WriteOp = "update_object"
	WriteDeleteObject WriteOp = "delete_object"
	WriteCreateClass  WriteOp = "create_class"
	WriteDeleteClass  WriteOp = "delete_class"
)

// Destructive reports whether the write removes data (deletes and class
// operations), which settings.confirm_writes: destructive confirms.
func (op WriteOp) Destructive() bool {
	return op == WriteDeleteObject || op == WriteCreateClass || op == WriteDeleteClass
}

// WriteRequest is a validated Parse REST-level write. The policy has
// already checked every key and value of it; the backend only encodes and
// performs it.
type WriteRequest struct {
	Op        WriteOp
	ClassName string
	// Class is the class as in _SCHEMA (nil for create_class).
	Class *Class
	// ObjectID names the object of update_object and delete_object.
	ObjectID string
	// Fields are REST values (with __op operations) for object writes; for
	// create_class, field definitions {type, targetClass?, required?,
	// defaultValue?} by name.
	Fields map[string]any
	// ACL is a Parse ACL object ({"*":{"read":true}, "role:X":{…}}); nil
	// when none was given (create: the class default or public; update:
	// unchanged).
	ACL map[string]any
	// CLP is create_class's class-level permissions (nil: none, i.e. public).
	CLP map[string]any
	// KeyOrder is the client's key order of the objects in Fields (nil:
	// unknown, keys sorted).
	KeyOrder KeyOrder
	// Existing is the stored object an update or delete applies to, read
	// through the session's scope.
	Existing bson.Raw
	// Scope is AND-ed to the _id filter of an update or delete (the
	// identity's _wperm, CLP pointer permissions, the tenant): an object
	// that changed out of scope since it was read is not touched.
	Scope bson.D
	// DefaultShown reports whether the app-set default of a field may be
	// shown to this session (the session's read rule for the field; nil:
	// every one). A default is data: one the session may not read is
	// stored but withheld from the plan's Change (dry run, confirmation).
	DefaultShown func(field string) bool
}

// JoinChange adds or removes relation pairs in _Join:<Field>:<Owner>.
type JoinChange struct {
	Field   string   `json:"field"`
	Target  string   `json:"target_class"`
	Add     []string `json:"add,omitempty"`
	Remove  []string `json:"remove,omitempty"`
	ownerID string
}

// WritePlan is an encoded write: exactly what will be sent to the database,
// in order, and the object it leaves behind.
type WritePlan struct {
	Op        WriteOp
	ClassName string
	ObjectID  string
	// SchemaAdds are new fields with their _SCHEMA type strings, added
	// before the object is written.
	SchemaAdds bson.D
	// SchemaDoc is create_class's _SCHEMA document.
	SchemaDoc bson.D
	// Document is create_object's stored document.
	Document bson.D
	// Filter and Update are update_object's (Filter alone: delete_object).
	Filter bson.D
	Update bson.D
	// Joins are relation pairs added/removed after the object is written.
	Joins []JoinChange
	// WithheldDefaults are the fields of Document filled from an app-set
	// default the session may not read (WriteRequest.DefaultShown): Change
	// leaves them out.
	WithheldDefaults []string
	// Result is the object as stored after the write (nil for deletes).
	Result bson.Raw
	// Fields are the REST field names the write sets (audit: names only).
	Fields []string
	// JoinCollections are the _Join collections delete_class drops.
	JoinCollections []string
	// REST is the Parse Server request of a write through the bridge
	// (internal/parseserver); nil for a direct write.
	REST *RESTWrite
}

// ChangesSchema reports whether the plan changes _SCHEMA: a new field, or
// a class created or deleted.
func (p *WritePlan) ChangesSchema() bool {
	return len(p.SchemaAdds) > 0 || p.Op == WriteCreateClass || p.Op == WriteDeleteClass
}

// RESTWrite is one Parse Server REST request: Method, Path and Body are
// sent; Preview is the whole request as shown to the model, secrets masked.
type RESTWrite struct {
	Method  string
	Path    string
	Body    map[string]any
	Preview map[string]any
}

// Change is the plan as shown to the model and the person confirming it:
// the exact storage document or update, the _SCHEMA additions and the
// relation pairs, in Extended JSON-like plain values.
func (p *WritePlan) Change() map[string]any {
	out := map[string]any{"operation": string(p.Op), "class_name": p.ClassName}
	if p.ObjectID != "" {
		out["object_id"] = p.ObjectID
	}
	if len(p.SchemaAdds) > 0 {
		out["schema_add_fields"] = displayValue(p.SchemaAdds)
	}
	if p.SchemaDoc != nil {
		out["schema_document"] = displayValue(p.SchemaDoc)
	}
	if p.Document != nil {
		out["insert_document"] = displayValue(p.shownDocument())
		if len(p.WithheldDefaults) > 0 {
			out["withheld"] = "the app's default values of fields this session may not read are stored too"
		}
	}
	if p.Filter != nil {
		out["filter"] = displayValue(p.Filter)
	}
	if p.Update != nil {
		out["update"] = displayValue(p.Update)
	}
	if len(p.Joins) > 0 {
		out["relations"] = p.Joins
	}
	if len(p.JoinCollections) > 0 {
		out["drop_collections"] = p.JoinCollections
	}
	if p.REST != nil {
		out["rest_request"] = p.REST.Preview
	}
	return out
}

// shownDocument is Document without the withheld defaults.
func (p *WritePlan) shownDocument() bson.D {
	if len(p.WithheldDefaults) == 0 {
		return p.Document
	}
	withheld := map[string]bool{}
	for _, f := range p.WithheldDefaults {
		withheld[f] = true
	}
	out := make(bson.D, 0, len(p.Document))
	for _, e := range p.Document {
		if withheld[e.Key] || strings.HasPrefix(e.Key, "_p_") && withheld[e.Key[len("_p_"):]] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// StableChange is Change with the write's timestamps and a new object's id
// shown symbolically: the same write yields the same text (the
// confirmation question must not change between asking and the retry).
func (p *WritePlan) StableChange() map[string]any {
	c := p.Change()
	if p.Op == WriteCreateObject {
		c["object_id"] = "(new objectId)"
	}
	for _, k := range []string{"insert_document", "update"} {
		if v, ok := c[k]; ok {
			c[k] = stableValue(v)
		}
	}
	return c
}

func stableValue(v any) any {
	o, ok := v.(orderedJSON)
	if !ok {
		return v
	}
	out := make(orderedJSON, len(o))
	for i, f := range o {
		switch f.key {
		case "_created_at", "_updated_at":
			f.value = "(time of the write)"
		case "_id":
			f.value = "(new objectId)"
		default:
			f.value = stableValue(f.value)
		}
		out[i] = f
	}
	return out
}

// displayValue turns storage values into plain JSON values, in order:
// dates as {"$date": iso}, binary as {"$binary": base64}.
func displayValue(v any) any {
	switch t := v.(type) {
	case bson.D:
		out := make(orderedJSON, 0, len(t))
		for _, e := range t {
			out = append(out, orderedField{e.Key, displayValue(e.Value)})
		}
		return out
	case bson.A:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = displayValue(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = displayValue(x)
		}
		return out
	case bson.DateTime:
		return map[string]any{"$date": t.Time().UTC().Format(isoMillis)}
	case time.Time:
		return map[string]any{"$date": t.UTC().Format(isoMillis)}
	case bson.Binary:
		return map[string]any{"$binary": base64.StdEncoding.EncodeToString(t.Data)}
	case bson.ObjectID:
		return t.Hex()
	}
	return v
}

const isoMillis = "2006-01-02T15:04:05.000Z"

type orderedField struct {
	key   string
	value any
}

// orderedJSON is a JSON object that keeps its key order.
type orderedJSON []orderedField

// MarshalJSON writes the fields in order.
func (o orderedJSON) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := jsonenc.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := jsonenc.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// Parse Server error codes the write surface answers with.
const (
	ParseObjectNotFound   = 101
	ParseInvalidKeyName   = 105
	ParseIncorrectType    = 111
	ParseInvalidNestedKey = 121
	ParseInvalidACL       = 123
	ParseValidationError  = 142
	ParseInvalidClassName = 103
	ParseClassNotEmpty    = 255
	ParseInvalidJSON      = 107
	ParseDuplicateValue   = 137
	ParseOperationForbid  = 119
)

// ParseErr is a refusal worded as Parse Server words it, with its code.
func ParseErr(code int, format string, args ...any) *toolerror.Error {
	e := toolerror.New(toolerror.ParseError, "%s (Parse error %d)", fmt.Sprintf(format, args...), code)
	e.ParseCode = code
	return e
}

var fieldNameRe = NewNamePattern("", "A-Za-z", "A-Za-z0-9_", 0)

// ValidFieldName reports whether name is a field name Parse accepts for a
// custom field.
func ValidFieldName(name string) bool { return len(name) <= 128 && fieldNameRe.MatchString(name) }

// TopField is the top-level field a write key names: "meta.x" (a dotted
// key into an Object field) names meta.
func TopField(key string) string {
	top, _, _ := strings.Cut(key, ".")
	return top
}

// implicit are fields every class has that a write never sets directly.
func implicitField(name string) bool {
	switch name {
	case "objectId", "createdAt", "updatedAt", "ACL":
		return true
	}
	return false
}

// objectIDAlphabet is Parse's randomString alphabet.
const objectIDAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewObjectID returns a Parse objectId: 10 characters of A-Za-z0-9.
func NewObjectID() string {
	// Uniform over the alphabet: a random byte is used only below the
	// largest multiple of 62 (248), as rand.Int would; one read of
	// random bytes usually covers all ten characters.
	const limit = 256 - 256%len(objectIDAlphabet)
	var id [10]byte
	var random [16]byte
	n := 0
	for n < len(id) {
		_, _ = rand.Read(random[:]) // crypto/rand.Read never returns an error (Go 1.24)
		for _, r := range random {
			if int(r) < limit && n < len(id) {
				id[n] = objectIDAlphabet[int(r)%len(objectIDAlphabet)]
				n++
			}
		}
	}
	return string(id[:])
}

// valueType is a REST type inferred from a value (Parse's getType).
type valueType struct {
	Type   string
	Target string
}

func (t valueType) String() string {
	if t.Target != "" {
		return t.Type + "<" + t.Target + ">"
	}
	return t.Type
}

func (t valueType) schemaString() string {
	return SchemaTypeString(&Field{Type: t.Type, TargetClass: t.Target})
}

func fieldType(f *Field) valueType { return valueType{Type: f.Type, Target: f.TargetClass} }

// typeOf infers the REST type of a REST value as Parse Server does; ok is
// false for values that carry no type (null, __op Delete).
func typeOf(field string, v any) (t valueType, ok bool, err error) {
	switch x := v.(type) {
	case nil:
		return t, false, nil
	case string:
		return valueType{Type: TypeString}, true, nil
	case bool:
		return valueType{Type: TypeBoolean}, true, nil
	case float64, int, int32, int64:
		return valueType{Type: TypeNumber}, true, nil
	case []any:
		return valueType{Type: TypeArray}, true, nil
	case map[string]any:
		if op, has := x["__op"]; has {
			return opType(field, op, x)
		}
		if tt, has := x["__type"]; has {
			s, _ := tt.(string)
			switch s {
			case "Pointer":
				cn, _ := x["className"].(string)
				if cn == "" {
					return t, false, ParseErr(ParseIncorrectType, "This is not a valid Pointer")
				}
				return valueType{Type: TypePointer, Target: cn}, true, nil
			case "Relation":
				cn, _ := x["className"].(string)
				if cn == "" {
					return t, false, ParseErr(ParseIncorrectType, "This is not a valid Relation")
				}
				return valueType{Type: TypeRelation, Target: cn}, true, nil
			case "Date", "File", "GeoPoint", "Bytes", "Polygon":
				return valueType{Type: s}, true, nil
			}
			return t, false, ParseErr(ParseIncorrectType, "This is not a valid %s", truncateMsg(fmt.Sprint(tt), 40))
		}
		return valueType{Type: TypeObject}, true, nil
	}
	return t, false, ParseErr(ParseIncorrectType, "bad obj. can not get type")
}

func opType(field string, op any, x map[string]any) (valueType, bool, error) {
	s, _ := op.(string)
	switch s {
	case "Increment":
		return valueType{Type: TypeNumber}, true, nil
	case "Delete":
		return valueType{}, false, nil
	case "Add", "AddUnique", "Remove":
		return valueType{Type: TypeArray}, true, nil
	case "AddRelation", "RemoveRelation":
		objs, _ := x["objects"].([]any)
		if len(objs) == 0 {
			return valueType{}, false, ParseErr(ParseInvalidJSON, "%s of %s needs objects: a non-empty array of pointers", s, field)
		}
		p, _ := objs[0].(map[string]any)
		cn, _ := p["className"].(string)
		if cn == "" {
			return valueType{}, false, ParseErr(ParseInvalidJSON, "%s of %s needs objects: a non-empty array of pointers", s, field)
		}
		return valueType{Type: TypeRelation, Target: cn}, true, nil
	case "Batch":
		// Parse's SDK sends AddRelation and RemoveRelation of one field
		// together as a Batch; Parse types it by its first operation.
		first, err := batchOps(field, x)
		if err != nil {
			return valueType{}, false, err
		}
		return opType(field, first[0]["__op"], first[0])
	}
	return valueType{}, false, ParseErr(ParseInvalidJSON, "The %s operator is not supported (use Increment, Add, AddUnique, Remove, Delete, AddRelation, RemoveRelation or a Batch of relation operations)", truncateMsg(fmt.Sprint(op), 40))
}

// ParseCommandUnavailable is Parse's code for an operation it does not
// apply ("The Batch operator is not supported yet.").
const ParseCommandUnavailable = 108

// batchOps returns a Batch's operations: Parse applies a Batch of
// AddRelation/RemoveRelation operations (its relation handling takes them
// one by one) and refuses any other.
func batchOps(field string, x map[string]any) ([]map[string]any, error) {
	raw, _ := x["ops"].([]any)
	if len(raw) == 0 {
		return nil, ParseErr(ParseInvalidJSON, "Batch of %s needs ops: a non-empty array of AddRelation/RemoveRelation operations", field)
	}
	ops := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		m, _ := r.(map[string]any)
		if op := m["__op"]; op != "AddRelation" && op != "RemoveRelation" {
			return nil, ParseErr(ParseCommandUnavailable, "The Batch operator is not supported yet.")
		}
		ops = append(ops, m)
	}
	return ops, nil
}

// typesMatch is Parse's dbTypeMatchesObjectType.
func typesMatch(want *Field, got valueType) bool {
	if want.Type != got.Type {
		return false
	}
	return want.TargetClass == got.Target
}

// checkType checks a value against the class's field, returning the field
// to add to _SCHEMA when it is new (nil when it exists or carries no type).
func checkType(cls *Class, name string, v any) (*valueType, error) {
	t, ok, err := typeOf(name, v)
	if err != nil {
		return nil, err
	}
	f := cls.Field(name)
	if f != nil && f.Type == TypeDate && !ok {
		return nil, nil
	}
	if f != nil && ok {
		// The compact row shape's values are accepted back on fields of
		// the matching type (docs/writes.md, "Writes"): a bare id on a Pointer,
		// an ISO string on a Date, a file name on a File, [lat, lng] on a
		// GeoPoint.
		if s, isStr := v.(string); isStr {
			switch f.Type {
			case TypePointer, TypeFile:
				return nil, nil
			case TypeDate:
				if _, err := parseISO(s); err == nil {
					return nil, nil
				}
			}
		}
		if a, isArr := v.([]any); isArr && f.Type == TypeGeoPoint && len(a) == 2 {
			return nil, nil
		}
		if !typesMatch(f, t) {
			return nil, ParseErr(ParseIncorrectType, "schema mismatch for %s.%s; expected %s but got %s", cls.Name, name, fieldType(f), t)
		}
		return nil, nil
	}
	if f == nil && ok {
		return &t, nil
	}
	return nil, nil
}

func parseISO(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z", "2006-01-02T15:04:05Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not an ISO 8601 date")
}

// storageNumber is Parse's number storage: int32 when a safe int32, else a
// double.
func storageNumber(v any) (any, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		f = float64(n)
	case int32:
		return n, true
	case int64:
		f = float64(n)
	default:
		return nil, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 {
		return int32(f), true
	}
	return f, true
}

// topLevel encodes a top-level value of field name for storage; key is the
// storage key (_p_name for pointers).
func topLevel(cls *Class, name string, v any, newType *valueType, ord KeyOrder) (key string, out any, err error) {
	ftype := ""
	target := ""
	if f := cls.Field(name); f != nil {
		ftype, target = f.Type, f.TargetClass
	} else if newType != nil {
		ftype, target = newType.Type, newType.Target
	}
	switch ftype {
	case TypePointer:
		return pointerStorage(name, v, target)
	case TypeRelation:
		return "", nil, ParseErr(ParseIncorrectType, "%s is a Relation: change it with {\"__op\":\"AddRelation\"|\"RemoveRelation\",\"objects\":[pointers]}", name)
	}
	if store := typedStorage[ftype]; store != nil {
		if v == nil {
			return name, nil, nil
		}
		return store(name, v)
	}
	iv, err := interiorAt(name, name, v, 0, ord)
	return name, iv, err
}

// typedStorage stores a non-null value of a typed field (topLevel): the
// storage key and value.
var typedStorage = map[string]func(name string, v any) (string, any, error){
	TypeDate:     dateStorage,
	TypeGeoPoint: geoPointStorage,
	TypeFile:     fileStorage,
	TypeBytes:    bytesStorage,
	TypePolygon:  polygonStorage,
}

// pointerStorage stores a pointer under _p_name as "Class$id".
func pointerStorage(name string, v any, target string) (string, any, error) {
	if v == nil {
		return "_p_" + name, nil, nil
	}
	if s, ok := v.(string); ok {
		if !validObjectID(s) {
			return "", nil, ParseErr(ParseIncorrectType, "%q is not a valid objectId for the pointer %s", truncateMsg(s, 40), name)
		}
		return "_p_" + name, target + "$" + s, nil
	}
	cn, id, err := pointerParts(v)
	if err != nil {
		return "", nil, err
	}
	return "_p_" + name, cn + "$" + id, nil
}

func dateStorage(name string, v any) (string, any, error) {
	if s, ok := v.(string); ok {
		t, err := parseISO(s)
		if err != nil {
			return "", nil, ParseErr(ParseIncorrectType, "%s needs a date: an ISO 8601 string or {\"__type\":\"Date\",\"iso\":…}", name)
		}
		return name, bson.NewDateTimeFromTime(t), nil
	}
	d, err := restDate(v)
	return name, d, err
}

func geoPointStorage(name string, v any) (string, any, error) {
	if a, ok := v.([]any); ok && len(a) == 2 {
		v = map[string]any{"__type": "GeoPoint", "latitude": a[0], "longitude": a[1]}
	}
	lat, lng, err := restGeoPoint(v)
	if err != nil {
		return "", nil, err
	}
	lngV, _ := storageNumber(lng)
	latV, _ := storageNumber(lat)
	return name, bson.A{lngV, latV}, nil
}

func fileStorage(name string, v any) (string, any, error) {
	fn, _ := v.(string)
	if m, ok := v.(map[string]any); ok && m["__type"] == "File" {
		fn, _ = m["name"].(string)
	}
	if fn == "" {
		return "", nil, ParseErr(ParseIncorrectType, "%s needs a File: {\"__type\":\"File\",\"name\":…}", name)
	}
	return name, fn, nil
}

func bytesStorage(name string, v any) (string, any, error) {
	m, _ := v.(map[string]any)
	s, _ := m["base64"].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", nil, ParseErr(ParseIncorrectType, "%s needs Bytes: {\"__type\":\"Bytes\",\"base64\":…}", name)
	}
	return name, bson.Binary{Subtype: 0, Data: b}, nil
}

func polygonStorage(name string, v any) (string, any, error) {
	p, err := polygon(v)
	return name, p, err
}

func validObjectID(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func pointerParts(v any) (string, string, error) {
	m, _ := v.(map[string]any)
	t, _ := m["__type"].(string)
	cn, _ := m["className"].(string)
	id, _ := m["objectId"].(string)
	if t != "Pointer" || cn == "" || !validObjectID(id) {
		return "", "", ParseErr(ParseIncorrectType, "This is not a valid Pointer: use {\"__type\":\"Pointer\",\"className\":…,\"objectId\":…}")
	}
	return cn, id, nil
}

func restDate(v any) (bson.DateTime, error) {
	m, _ := v.(map[string]any)
	iso, _ := m["iso"].(string)
	t, err := parseISO(iso)
	if err != nil || m["__type"] != "Date" {
		return 0, ParseErr(ParseIncorrectType, "This is not a valid Date: use {\"__type\":\"Date\",\"iso\":\"2024-01-31T12:00:00.000Z\"}")
	}
	return bson.NewDateTimeFromTime(t), nil
}

func restGeoPoint(v any) (lat, lng float64, err error) {
	m, _ := v.(map[string]any)
	la, ok1 := m["latitude"].(float64)
	lo, ok2 := m["longitude"].(float64)
	if m["__type"] != "GeoPoint" || !ok1 || !ok2 {
		return 0, 0, ParseErr(ParseIncorrectType, "This is not a valid GeoPoint: use {\"__type\":\"GeoPoint\",\"latitude\":…,\"longitude\":…}")
	}
	// Parse's GeoPoint._validate wording, quoting the value and the bound
	// it crosses.
	switch {
	case la < -90:
		return 0, 0, ParseErr(ParseInvalidJSON, "GeoPoint latitude out of bounds: %v < -90.0.", la)
	case la > 90:
		return 0, 0, ParseErr(ParseInvalidJSON, "GeoPoint latitude out of bounds: %v > 90.0.", la)
	case lo < -180:
		return 0, 0, ParseErr(ParseInvalidJSON, "GeoPoint longitude out of bounds: %v < -180.0.", lo)
	case lo > 180:
		return 0, 0, ParseErr(ParseInvalidJSON, "GeoPoint longitude out of bounds: %v > 180.0.", lo)
	}
	return la, lo, nil
}

// polygon is Parse's PolygonCoder: REST [[lat,lng],…] → GeoJSON
// {type:"Polygon", coordinates:[[[lng,lat],…closed]]}.
func polygon(v any) (bson.D, error) {
	m, _ := v.(map[string]any)
	coords, _ := m["coordinates"].([]any)
	if m["__type"] != "Polygon" || len(coords) < 3 {
		return nil, ParseErr(ParseInvalidJSON, "Polygon must have at least 3 values")
	}
	ring := bson.A{}
	for _, c := range coords {
		p, _ := c.([]any)
		if len(p) != 2 {
			return nil, ParseErr(ParseInvalidJSON, "bad $geoWithin value; $polygon should contain at least 3 GeoPoints")
		}
		la, ok1 := p[0].(float64)
		lo, ok2 := p[1].(float64)
		if !ok1 || !ok2 {
			return nil, ParseErr(ParseInvalidJSON, "Polygon coordinates must be numbers [latitude, longitude]")
		}
		lngV, _ := storageNumber(lo)
		latV, _ := storageNumber(la)
		ring = append(ring, bson.A{lngV, latV})
	}
	first, last := ring[0].(bson.A), ring[len(ring)-1].(bson.A)
	if first[0] != last[0] || first[1] != last[1] {
		ring = append(ring, first)
	}
	return bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}, nil
}

// maxInteriorDepth bounds nested Object/Array values.
const maxInteriorDepth = 32

// interiorAt encodes a value inside an Object or Array (or a plain top-level
// value): dates become BSON dates, pointers stay embedded {__type:"Pointer",
// className, objectId} in that key order, other typed values keep their
// REST JSON; keys with $ or . are refused as Parse refuses them.
//
// Objects keep the client's key order (ord, by the value's path in the
// write's fields; Parse stores objects in the order the client sent their
// keys).
func interiorAt(field, path string, v any, depth int, ord KeyOrder) (any, error) {
	if depth > maxInteriorDepth {
		return nil, ParseErr(ParseInvalidNestedKey, "%s is nested too deeply", field)
	}
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64, int, int32, int64:
		n, ok := storageNumber(x)
		if !ok {
			return nil, ParseErr(ParseIncorrectType, "%s is not a finite number", field)
		}
		return n, nil
	case []any:
		out := make(bson.A, len(x))
		for i, e := range x {
			ev, err := interiorAt(field, path+"."+strconv.Itoa(i), e, depth+1, ord)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case map[string]any:
		if _, has := x["__op"]; has {
			return nil, ParseErr(ParseInvalidNestedKey, "Nested keys should not contain the '$' or '.' characters")
		}
		switch x["__type"] {
		case "Date":
			return restDate(x)
		case "Pointer":
			cn, id, err := pointerParts(x)
			if err != nil {
				return nil, err
			}
			return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: cn}, {Key: "objectId", Value: id}}, nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if strings.ContainsAny(k, "$.") {
				return nil, ParseErr(ParseInvalidNestedKey, "Nested keys should not contain the '$' or '.' characters")
			}
			keys = append(keys, k)
		}
		keys = ord.keysOf(path, keys)
		out := make(bson.D, 0, len(x))
		for _, k := range keys {
			ev, err := interiorAt(field, path+"."+k, x[k], depth+1, ord)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: k, Value: ev})
		}
		return out, nil
	}
	return nil, ParseErr(ParseIncorrectType, "%s has a value of an unsupported type", field)
}

// ACLStorage converts a Parse ACL object to _rperm, _wperm and _acl as
// Parse Server stores them (entries sorted for determinism; _acl lists
// write entries first, as Parse's addLegacyACL does).
func ACLStorage(acl map[string]any) (rperm, wperm bson.A, legacy bson.D, err error) {
	entries := make([]string, 0, len(acl))
	for k := range acl {
		entries = append(entries, k)
	}
	sort.Strings(entries)
	rperm, wperm = bson.A{}, bson.A{}
	perms := map[string]bson.D{}
	var order []string
	for _, en := range entries {
		if !validACLEntry(en) {
			return nil, nil, nil, ParseErr(ParseInvalidACL, "invalid ACL entry %q: use \"*\", a user objectId or \"role:Name\"", truncateMsg(en, 40))
		}
		pm, ok := acl[en].(map[string]any)
		if !ok {
			return nil, nil, nil, ParseErr(ParseInvalidACL, "invalid ACL: the value of %q must be {\"read\":true,\"write\":true}", truncateMsg(en, 40))
		}
		for k, v := range pm {
			b, isBool := v.(bool)
			if (k != "read" && k != "write") || !isBool {
				return nil, nil, nil, ParseErr(ParseInvalidACL, "invalid ACL: the value of %q may only have read and write, true or false", truncateMsg(en, 40))
			}
			_ = b
		}
		if pm["write"] == true {
			wperm = append(wperm, en)
			perms[en] = bson.D{{Key: "w", Value: true}}
			order = append(order, en)
		}
	}
	for _, en := range entries {
		pm := acl[en].(map[string]any)
		if pm["read"] == true {
			rperm = append(rperm, en)
			if p, ok := perms[en]; ok {
				perms[en] = append(p, bson.E{Key: "r", Value: true})
			} else {
				perms[en] = bson.D{{Key: "r", Value: true}}
				order = append(order, en)
			}
		}
	}
	legacy = bson.D{}
	for _, en := range order {
		legacy = append(legacy, bson.E{Key: en, Value: perms[en]})
	}
	return rperm, wperm, legacy, nil
}

var aclRoleRe = NewNamePattern("role:", "A-Za-z0-9_ -", "A-Za-z0-9_ -", 128)

func validACLEntry(en string) bool {
	return en == "*" || validObjectID(en) || aclRoleRe.MatchString(en)
}

// writeSetFields returns the REST field names of a write, sorted.
func sortedFieldNames(fields map[string]any) []string {
	out := make([]string, 0, len(fields))
	for k := range fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckDefaultValue runs a defaultValue through the encoder create_object
// stores a value of the field with, so a default create_object would refuse
// (an object key holding "$" or ".", Parse's 121) is refused when it is set,
// not on every create that applies it (SECURITY.md "Names as data").
func CheckDefaultValue(f *Field, v any) error {
	_, _, err := topLevel(&Class{Fields: map[string]*Field{f.Name: f}}, f.Name, v, nil, nil)
	return err
}

// RESTDefault is a field's _SCHEMA defaultValue as a REST value, exactly
// what create_object writes for the field when none is given (nil: no
// default).
func (f *Field) RESTDefault() any {
	if f == nil || f.DefaultValue == nil {
		return nil
	}
	return restValue(f.DefaultValue)
}

// DefaultsDocument is the stored document the class's defaultValues make,
// encoded exactly as create_object stores them (a Pointer default as its
// _p_ column): schema metadata that holds values is shown by the row
// encoder like any row (SECURITY.md "Outputs"). A default the writer would
// not store is left out.
func DefaultsDocument(cls *Class) (bson.Raw, error) {
	doc := bson.D{{Key: "_id", Value: ""}}
	for _, name := range cls.FieldNames() {
		f := cls.Fields[name]
		if f.DefaultValue == nil {
			continue
		}
		key, v, err := topLevel(cls, name, f.RESTDefault(), nil, nil)
		if err != nil || v == nil {
			continue
		}
		doc = append(doc, bson.E{Key: key, Value: v})
	}
	return bson.Marshal(doc)
}

// KeyOrder is the key order of the objects of a write's fields as the
// client sent them, by path ("meta", "meta.sub", "tags.objects.0", "list.2"):
// JSON decoding into maps loses it, and Parse stores an object's keys in
// the order given.
type KeyOrder map[string][]string

// KeyOrderOf records the key order of an ordered decoding of the fields
// (objects as bson.D, arrays as []any or bson.A).
func KeyOrderOf(fields bson.D) KeyOrder {
	o := KeyOrder{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case bson.D:
			keys := make([]string, len(t))
			for i, e := range t {
				keys[i] = e.Key
				walk(path+"."+e.Key, e.Value)
			}
			o[path] = keys
		case []any:
			for i, x := range t {
				walk(path+"."+strconv.Itoa(i), x)
			}
		case bson.A:
			for i, x := range t {
				walk(path+"."+strconv.Itoa(i), x)
			}
		}
	}
	for _, e := range fields {
		walk(e.Key, e.Value)
	}
	return o
}

// keysOf orders an object's keys as the client sent them when known (the
// recorded keys are exactly these), else sorted.
func (o KeyOrder) keysOf(path string, keys []string) []string {
	if rec, ok := o[path]; ok && len(rec) == len(keys) {
		have := make(map[string]bool, len(keys))
		for _, k := range keys {
			have[k] = true
		}
		all := true
		for _, k := range rec {
			all = all && have[k]
		}
		if all {
			return append([]string(nil), rec...)
		}
	}
	sort.Strings(keys)
	return keys
}

// OrderedREST is a REST value with its objects in the client's key order
// (ord, by path), for a request body sent to Parse Server.
func OrderedREST(path string, v any, ord KeyOrder) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		out := orderedJSON{}
		for _, k := range ord.keysOf(path, keys) {
			out = append(out, orderedField{k, OrderedREST(path+"."+k, t[k], ord)})
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = OrderedREST(path+"."+strconv.Itoa(i), x, ord)
		}
		return out
	}
	return v
}
