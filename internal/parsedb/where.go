package parsedb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// This file is the constraint whereTranslator (PRODUCT.md §4.3): it turns a Parse
// REST `where` object into a MongoDB filter against Parse's storage format
// (PARSE_STORAGE.md "Query translation"), refusing everything that is not on
// the operator list. Security refusals (forbidden operators, internal fields,
// excessive nesting, dangerous regexes) are *toolerror.Violation; everything
// the model can fix is a *toolerror.Error (invalid_query or
// pointer_shape_mismatch).
//
// Decisions where the spec is silent:
//   - Accepted operators are exactly the §4.3 list (plus $within and the
//     $maxDistance* family); $elemMatch, $not, $size, $type, $mod, $all with
//     $regex elements, … are invalid_query "unknown operator".
//   - Keys starting with "_" are storage names: invalid_query naming the
//     REST name ("use author, not _p_author"); internal ones are violations
//     (checked first, on the raw input, at any depth, every dotted segment,
//     including keys inside literal values). "ACL" as a where key is a
//     violation too (it is stored as _rperm/_wperm/_acl).
//   - Fields not in the schema pass through unchanged (Parse matches
//     nothing); dotted paths are allowed into Object, Array and unknown
//     fields, and refused into Pointer (pointing at $inQuery), Relation and
//     scalar fields.
//   - Nesting: more than MaxWhereDepth levels of objects (the where itself
//     is level 1, inner $inQuery/$select wheres included) or of arrays is a
//     violation.
//   - Nested-quantifier detector: a group followed by *, + or {n,} / {n,m>1}
//     that contains a quantifier (any, including ? and lazy forms), a
//     quantified child group, or an alternation whose branches are not plain
//     literals with distinct first letters. (red|blue)+ passes; (a|aa)+,
//     (\w+)*, (a+){2,} are refused.
//   - A value object is either all operators or a literal; mixing is
//     invalid_query. Literal objects get their keys sorted; keys with $ or .
//     inside literals are refused.
//   - Dates become bson.DateTime. ISO strings without a zone are UTC; a bare
//     date is midnight UTC. Non-date values compared with a Date field are
//     invalid_query (null is allowed).
//   - Pointer fields: a "Class$id" string is refused with a hint to use the
//     bare id; a Pointer object of another class is pointer_shape_mismatch.
//     Pointers inside Object/Array values are embedded
//     {__type,className,objectId} documents.
//   - $text and $nearSphere are accepted at the top level and inside $and
//     (where MongoDB accepts them), at most one each per query; inside $or
//     or $nor they are invalid_query. A field-level $text becomes the
//     top-level $text; other operators on that field still apply.
//   - $polygon accepts GeoPoints, [lng,lat] pairs, or a Polygon object whose
//     REST coordinates are [lat,lng] (swapped to [lng,lat]).
//   - $containedBy with other operators on the same field: the other
//     operators stay on the field, the $containedBy becomes a $nor clause.
//     Clauses that would collide on one key ($relatedTo and objectId,
//     $inQuery and $in, $within and $geoWithin) are all kept, the extra ones
//     in a trailing $and; $nor lists merge.
//   - $relatedTo runs the sub-query first (so its policy answers hidden
//     classes like missing ones), then checks the key is a Relation to this
//     class when WhereOptions.Schema knows the owner.
//   - Relation fields: {f: Pointer}, {f: id}, {f: {$eq}}, {f: {$in: […]}}
//     resolve through the optional RelationOwners extension of SubQueries;
//     without it they are invalid_query explaining $relatedTo.

// SubQueries resolves cross-class operators. The caller's implementation
// applies the SAME policy (hidden classes, filters, tenant, ACL) to the
// sub-query; the whereTranslator only calls it.
type SubQueries interface {
	// MatchingIDs returns objectIds of className rows matching where
	// (already policy-scoped by the implementation).
	MatchingIDs(ctx context.Context, className string, where map[string]any) ([]string, error)
	// SelectValues returns the values of key of className rows matching
	// where ($select/$dontSelect). Values may be in REST shape (Pointer and
	// Date objects) or storage shape ("Class$id" strings, dates); both are
	// accepted.
	SelectValues(ctx context.Context, className string, where map[string]any, key string) ([]any, error)
	// RelatedIDs returns relatedId values of _Join:<key>:<ownerClass> where
	// owningId = ownerID ($relatedTo).
	RelatedIDs(ctx context.Context, ownerClass, ownerID, key string) ([]string, error)
}

// RelationOwners is an optional extension of SubQueries. When the
// SubQueries value also implements it, a where on a relation field
// ({"likes": {"__type":"Pointer","className":"_User","objectId":"u1"}}) is
// answered with the owning objects; otherwise such a where fails with
// invalid_query explaining the alternative ($relatedTo).
type RelationOwners interface {
	// OwningIDs returns the owningId values of _Join:<key>:<ownerClass>
	// whose relatedId is one of relatedIDs. The implementation applies the
	// policy of the relation's target class (a hidden target → refuse).
	OwningIDs(ctx context.Context, ownerClass, key string, relatedIDs []string) ([]string, error)
}

// WhereOptions configures WhereToFilter.
type WhereOptions struct {
	// Schema is used to check $relatedTo keys against the owning class.
	// Optional.
	Schema *Schema
	// Sub resolves cross-class operators; nil → they fail with
	// invalid_query "not available".
	Sub SubQueries
}

// Limits of the constraint language.
const (
	// MaxWhereDepth is the deepest object nesting a where may have (the
	// where object itself is level 1).
	MaxWhereDepth = 8
	// MaxRegexLength is the longest $regex pattern accepted, in characters.
	MaxRegexLength = 256
	// maxRelationIDs caps the pointers a relation-containment $in may list.
	maxRelationIDs = 100
)

// Earth radius used to turn $maxDistanceInMiles/Kilometers into radians,
// the same constants Parse Server uses.
const (
	earthRadiusMiles = 3958.8
	earthRadiusKm    = 6371.0
)

var (
	whereFieldNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,127}$`)
	whereClassNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// whereForbiddenOps are refused as security violations wherever they appear.
var whereForbiddenOps = map[string]struct{}{
	"$where": {}, "$function": {}, "$accumulator": {}, "$expr": {},
}

func isForbiddenWhereOp(k string) bool {
	_, ok := whereForbiddenOps[k]
	return ok
}

// WhereToFilter translates where for class cls. nil/empty where → empty
// bson.D{}. Keys of every object are processed in sorted order so the output
// is deterministic.
func WhereToFilter(ctx context.Context, cls *Class, where map[string]any, opt WhereOptions) (bson.D, error) {
	if len(where) == 0 {
		return bson.D{}, nil
	}
	// The security floor runs over the raw input first, so that no
	// translation path can let a forbidden operator or internal field through.
	if err := checkWhereSafety(where, 0, 0); err != nil {
		return nil, err
	}
	t := &whereTranslator{ctx: ctx, opt: opt}
	return t.where(cls, where, true)
}

// StorageFieldName maps a REST field to its storage name for class cls:
// objectId→_id, createdAt→_created_at, updatedAt→_updated_at,
// sessionToken→_session_token, pointer f→_p_f; dotted keys unchanged.
func StorageFieldName(cls *Class, field string) string {
	if strings.Contains(field, ".") {
		return field
	}
	switch field {
	case "objectId":
		return "_id"
	case "createdAt":
		return "_created_at"
	case "updatedAt":
		return "_updated_at"
	case "sessionToken":
		return "_session_token"
	}
	if f := cls.Field(field); f != nil && f.Type == TypePointer {
		return "_p_" + field
	}
	return field
}

// PointerStorageValue converts an accepted pointer value shape for field f
// (a bare objectId string, or {"__type":"Pointer","className","objectId"})
// to the storage form "Class$id". A Pointer object of another class than the
// field's target fails with pointer_shape_mismatch, as does any other shape.
func PointerStorageValue(f *Field, v any) (string, error) {
	name, target := "", ""
	if f != nil {
		name, target = f.Name, f.TargetClass
	}
	hint := pointerHint(name, target)
	switch x := v.(type) {
	case string:
		if x == "" {
			return "", pointerErr("%s: empty objectId; %s", fieldLabel(name), hint)
		}
		if cls, id, ok := strings.Cut(x, "$"); ok {
			if cls != "" && id != "" && !strings.Contains(id, "$") {
				return "", pointerErr("%s: %q is the storage form; use the bare objectId %q or %s", fieldLabel(name), x, id, hint)
			}
			return "", pointerErr("%s: %q is not an objectId; %s", fieldLabel(name), x, hint)
		}
		if target == "" {
			return "", pointerErr("%s: the target class is unknown, so a bare objectId cannot be used; pass {\"__type\":\"Pointer\",\"className\":…,\"objectId\":%q}", fieldLabel(name), x)
		}
		return target + "$" + x, nil
	}
	m, ok := whereMap(v)
	if !ok {
		return "", pointerErr("%s: a pointer must be %s, got %s", fieldLabel(name), hint, whereDescribe(v))
	}
	if ty, _ := m["__type"].(string); ty != "Pointer" {
		return "", pointerErr("%s: a pointer must be %s, got an object without \"__type\":\"Pointer\"", fieldLabel(name), hint)
	}
	for k := range m {
		if k != "__type" && k != "className" && k != "objectId" {
			return "", pointerErr("%s: unexpected key %q in pointer; %s", fieldLabel(name), k, hint)
		}
	}
	cls, _ := m["className"].(string)
	id, _ := m["objectId"].(string)
	if cls == "" || id == "" {
		return "", pointerErr("%s: a pointer needs string className and objectId; %s", fieldLabel(name), hint)
	}
	if strings.Contains(id, "$") || !whereClassNameRe.MatchString(cls) {
		return "", pointerErr("%s: malformed pointer; %s", fieldLabel(name), hint)
	}
	if target != "" && cls != target {
		return "", pointerErr("%s points to %s, not %s; %s", fieldLabel(name), target, cls, hint)
	}
	return cls + "$" + id, nil
}

func pointerHint(name, target string) string {
	if target == "" {
		return `{"__type":"Pointer","className":…,"objectId":…}`
	}
	return fmt.Sprintf(`a bare objectId string or {"__type":"Pointer","className":%q,"objectId":…}`, target)
}

func fieldLabel(name string) string {
	if name == "" {
		return "pointer"
	}
	return name
}

func pointerErr(format string, args ...any) error {
	return toolerror.New(toolerror.PointerShapeMismatch, format, args...)
}

func invalidQuery(format string, args ...any) error {
	return toolerror.New(toolerror.InvalidQuery, format, args...)
}

// checkWhereSafety walks the raw where (every object and array, values
// included) and refuses forbidden operators and internal field names as keys
// at any depth, and nesting deeper than MaxWhereDepth objects (or arrays).
func checkWhereSafety(v any, mapDepth, arrDepth int) error {
	if m, ok := whereMap(v); ok {
		mapDepth++
		if mapDepth > MaxWhereDepth {
			return toolerror.Violationf("where nesting deeper than %d levels", MaxWhereDepth)
		}
		for k, child := range m {
			if isForbiddenWhereOp(k) {
				return toolerror.Violationf("forbidden operator %s in where", k)
			}
			for _, seg := range strings.Split(k, ".") {
				if isForbiddenWhereOp(seg) {
					return toolerror.Violationf("forbidden operator %s in where key %q", seg, k)
				}
				if IsInternalField(seg) {
					return toolerror.Violationf("internal field %q in where key %q", seg, k)
				}
			}
			if err := checkWhereSafety(child, mapDepth, arrDepth); err != nil {
				return err
			}
		}
		return nil
	}
	if a, ok := whereArray(v); ok {
		arrDepth++
		if arrDepth > MaxWhereDepth {
			return toolerror.Violationf("where array nesting deeper than %d levels", MaxWhereDepth)
		}
		for _, child := range a {
			if err := checkWhereSafety(child, mapDepth, arrDepth); err != nil {
				return err
			}
		}
	}
	return nil
}

type whereTranslator struct {
	ctx  context.Context
	opt  WhereOptions
	text int // $text clauses seen (MongoDB allows one per query)
	near int // $nearSphere clauses seen (MongoDB allows one per query)
}

// where translates one where object. root is true for the top-level where
// and for objects reached from it only through $and: the places where
// MongoDB accepts $text and $nearSphere.
func (t *whereTranslator) where(cls *Class, w map[string]any, root bool) (bson.D, error) {
	b := &filterBuilder{}
	for _, k := range whereSortedKeys(w) {
		v := w[k]
		switch k {
		case "$or", "$and", "$nor":
			arr, err := t.logical(cls, k, v, root && k == "$and")
			if err != nil {
				return nil, err
			}
			b.add(k, arr)
		case "$relatedTo":
			e, err := t.relatedTo(cls, v)
			if err != nil {
				return nil, err
			}
			b.add(e.Key, e.Value)
		case "$text":
			e, err := t.textClause("", v, root)
			if err != nil {
				return nil, err
			}
			b.add(e.Key, e.Value)
		default:
			if strings.HasPrefix(k, "$") {
				if isForbiddenWhereOp(k) {
					return nil, toolerror.Violationf("forbidden operator %s in where", k)
				}
				return nil, invalidQuery("unknown operator %s at the top level of where (allowed there: $or, $and, $nor, $relatedTo, $text; field operators go inside a field: {\"field\":{\"$gt\":…}})", k)
			}
			clauses, err := t.field(cls, k, v, root)
			if err != nil {
				return nil, err
			}
			for _, e := range clauses {
				b.add(e.Key, e.Value)
			}
		}
	}
	return b.done(), nil
}

func (t *whereTranslator) logical(cls *Class, op string, v any, root bool) (bson.A, error) {
	arr, ok := whereArray(v)
	if !ok {
		return nil, invalidQuery("%s must be an array of where objects, got %s", op, whereDescribe(v))
	}
	if len(arr) == 0 {
		return nil, invalidQuery("%s must not be empty", op)
	}
	out := make(bson.A, 0, len(arr))
	for i, el := range arr {
		m, ok := whereMap(el)
		if !ok {
			return nil, invalidQuery("%s[%d] must be a where object, got %s", op, i, whereDescribe(el))
		}
		d, err := t.where(cls, m, root)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// resolveWhereKey validates a where key and returns the field (nil for dotted
// paths and fields not in the schema) and the storage key.
func resolveWhereKey(cls *Class, key string) (f *Field, storage string, err error) {
	if key == "" {
		return nil, "", invalidQuery("empty field name in where")
	}
	segs := strings.Split(key, ".")
	first := segs[0]
	if strings.HasPrefix(first, "_") {
		return nil, "", invalidQuery("%s", underscoreHint(cls, first))
	}
	if first == "ACL" {
		return nil, "", toolerror.Violationf("ACL used as a where key")
	}
	if !whereFieldNameRe.MatchString(first) {
		return nil, "", invalidQuery("invalid field name %q in where (field names start with a letter and contain only letters, digits and _)", first)
	}
	for _, s := range segs[1:] {
		if s == "" || strings.HasPrefix(s, "$") || strings.ContainsRune(s, 0) {
			return nil, "", invalidQuery("invalid field path %q in where", key)
		}
	}
	f = whereFieldOf(cls, first)
	if len(segs) == 1 {
		return f, StorageFieldName(cls, first), nil
	}
	if f != nil {
		switch f.Type {
		case TypeObject, TypeArray:
		case TypePointer:
			return nil, "", invalidQuery("%s is a Pointer to %s; to filter on its fields use {%q:{\"$inQuery\":{\"className\":%q,\"where\":{%q:…}}}}",
				first, f.TargetClass, first, f.TargetClass, strings.Join(segs[1:], "."))
		case TypeRelation:
			return nil, "", invalidQuery("%s is a Relation; dotted paths into relations are not supported (use $relatedTo on the %s class)", first, f.TargetClass)
		default:
			return nil, "", invalidQuery("%s is a %s field; dotted paths only apply to Object and Array fields", first, f.Type)
		}
	}
	return nil, key, nil
}

func underscoreHint(cls *Class, name string) string {
	rest := ""
	switch {
	case name == "_id":
		rest = "objectId"
	case name == "_created_at":
		rest = "createdAt"
	case name == "_updated_at":
		rest = "updatedAt"
	case strings.HasPrefix(name, "_p_") && len(name) > 3:
		rest = name[3:]
	}
	if rest != "" {
		return fmt.Sprintf("where keys use REST field names: use %s, not %s", rest, name)
	}
	return fmt.Sprintf("%s is not a queryable field; where keys use REST field names (fields of %s start with a letter)", name, classLabel(cls))
}

func classLabel(cls *Class) string {
	if cls == nil || cls.Name == "" {
		return "this class"
	}
	return cls.Name
}

// whereFieldOf is cls.Field plus the implicit fields every class has, even a
// built-in class that has no _SCHEMA document.
func whereFieldOf(cls *Class, name string) *Field {
	if f := cls.Field(name); f != nil {
		if f.Name == "" {
			ff := *f
			ff.Name = name
			return &ff
		}
		return f
	}
	if d, ok := defaultFields[name]; ok {
		ff := *d
		ff.Name = name
		return &ff
	}
	return nil
}

// field translates one `key: value` pair. It returns one or more clauses for
// the enclosing where object (operators like $text and $containedBy produce
// clauses under other keys).
func (t *whereTranslator) field(cls *Class, key string, v any, root bool) ([]bson.E, error) {
	f, storage, err := resolveWhereKey(cls, key)
	if err != nil {
		return nil, err
	}
	if f != nil && f.Type == TypeRelation {
		return t.relationField(cls, key, f, v)
	}
	if m, ok := whereMap(v); ok {
		nOps := 0
		for k := range m {
			if strings.HasPrefix(k, "$") {
				nOps++
			}
		}
		if nOps > 0 {
			if nOps != len(m) {
				return nil, invalidQuery("%s: an object value mixes operators ($…) with plain keys; use either a constraint like {\"$gt\":…} or a literal object", key)
			}
			return t.ops(key, storage, f, m, root)
		}
	}
	val, err := eqValue(key, f, v)
	if err != nil {
		return nil, err
	}
	return []bson.E{{Key: storage, Value: val}}, nil
}

// ops translates a field's operator object.
func (t *whereTranslator) ops(key, storage string, f *Field, m map[string]any, root bool) ([]bson.E, error) {
	fb := &filterBuilder{} // operators on storage
	var extra []bson.E     // clauses under other keys
	addExtra := func(k string, v any) { extra = append(extra, bson.E{Key: k, Value: v}) }
	addOp := func(op string, v any) {
		if _, dup := fb.index(op); dup {
			// Two operators that translate to the same Mongo operator
			// ($within + $geoWithin, $in + $inQuery, …) both apply.
			addExtra(storage, bson.D{{Key: op, Value: v}})
			return
		}
		fb.d = append(fb.d, bson.E{Key: op, Value: v})
	}

	for _, op := range whereSortedKeys(m) {
		v := m[op]
		switch op {
		case "$eq", "$ne", "$lt", "$lte", "$gt", "$gte":
			if _, isArr := whereArray(v); isArr && op != "$eq" && op != "$ne" {
				return nil, invalidQuery("%s: %s needs a single value, got an array", key, op)
			}
			val, err := eqValue(key, f, v)
			if err != nil {
				return nil, err
			}
			addOp(op, val)
		case "$in", "$nin", "$all":
			arr, ok := whereArray(v)
			if !ok {
				return nil, invalidQuery("%s: %s needs an array, got %s", key, op, whereDescribe(v))
			}
			out := make(bson.A, 0, len(arr))
			for _, el := range arr {
				val, err := eqValue(key, f, el)
				if err != nil {
					return nil, err
				}
				out = append(out, val)
			}
			addOp(op, out)
		case "$containedBy":
			if f != nil && f.Type != TypeArray {
				return nil, invalidQuery("%s: $containedBy needs an Array field, %s is a %s", key, key, f.Type)
			}
			arr, ok := whereArray(v)
			if !ok {
				return nil, invalidQuery("%s: $containedBy needs an array, got %s", key, whereDescribe(v))
			}
			out := make(bson.A, 0, len(arr))
			for _, el := range arr {
				val, err := literalValue(key, el)
				if err != nil {
					return nil, err
				}
				out = append(out, val)
			}
			addExtra("$nor", bson.A{bson.D{{Key: storage, Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$nin", Value: out}}}}}}})
		case "$exists":
			b, ok := v.(bool)
			if !ok {
				return nil, invalidQuery("%s: $exists needs true or false, got %s", key, whereDescribe(v))
			}
			addOp(op, b)
		case "$regex":
			pat, opts, err := regexOperands(key, v, m["$options"])
			if err != nil {
				return nil, err
			}
			addOp("$regex", pat)
			if opts != "" {
				addOp("$options", opts)
			}
		case "$options":
			if _, ok := m["$regex"]; !ok {
				return nil, invalidQuery("%s: $options is only allowed together with $regex", key)
			}
		case "$text":
			e, err := t.textClause(key, v, root)
			if err != nil {
				return nil, err
			}
			addExtra(e.Key, e.Value)
		case "$nearSphere":
			if err := geoFieldCheck(key, f, op, TypeGeoPoint); err != nil {
				return nil, err
			}
			if !root {
				return nil, invalidQuery("%s: $nearSphere cannot be used inside $or or $nor", key)
			}
			t.near++
			if t.near > 1 {
				return nil, invalidQuery("only one $nearSphere is allowed per query")
			}
			pt, err := geoPoint(key, op, v)
			if err != nil {
				return nil, err
			}
			addOp("$nearSphere", pt)
			dist, ok, err := maxDistance(key, m)
			if err != nil {
				return nil, err
			}
			if ok {
				addOp("$maxDistance", dist)
			}
		case "$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers":
			if _, ok := m["$nearSphere"]; !ok {
				return nil, invalidQuery("%s: %s is only allowed together with $nearSphere", key, op)
			}
		case "$within":
			if err := geoFieldCheck(key, f, op, TypeGeoPoint); err != nil {
				return nil, err
			}
			w, ok := whereMap(v)
			if !ok || len(w) != 1 || w["$box"] == nil {
				return nil, invalidQuery("%s: $within needs {\"$box\":[southwestGeoPoint, northeastGeoPoint]}", key)
			}
			box, err := geoBox(key, w["$box"])
			if err != nil {
				return nil, err
			}
			addOp("$geoWithin", bson.D{{Key: "$box", Value: box}})
		case "$geoWithin":
			if err := geoFieldCheck(key, f, op, TypeGeoPoint); err != nil {
				return nil, err
			}
			d, err := geoWithin(key, v)
			if err != nil {
				return nil, err
			}
			addOp("$geoWithin", d)
		case "$geoIntersects":
			if err := geoFieldCheck(key, f, op, TypePolygon); err != nil {
				return nil, err
			}
			w, ok := whereMap(v)
			if !ok || len(w) != 1 || w["$point"] == nil {
				return nil, invalidQuery("%s: $geoIntersects needs {\"$point\":{\"__type\":\"GeoPoint\",\"latitude\":…,\"longitude\":…}}", key)
			}
			pt, err := geoPoint(key, "$geoIntersects.$point", w["$point"])
			if err != nil {
				return nil, err
			}
			addOp("$geoIntersects", bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: pt}}}})
		case "$inQuery", "$notInQuery":
			ids, err := t.inQuery(key, f, op, v)
			if err != nil {
				return nil, err
			}
			if op == "$inQuery" {
				addOp("$in", ids)
			} else {
				addOp("$nin", ids)
			}
		case "$select", "$dontSelect":
			vals, err := t.selectValues(key, f, op, v)
			if err != nil {
				return nil, err
			}
			if op == "$select" {
				addOp("$in", vals)
			} else {
				addOp("$nin", vals)
			}
		default:
			if isForbiddenWhereOp(op) {
				return nil, toolerror.Violationf("forbidden operator %s on a where field", op)
			}
			return nil, invalidQuery("unknown operator %s on field %s", op, key)
		}
	}
	var out []bson.E
	if len(fb.d) > 0 {
		out = append(out, bson.E{Key: storage, Value: fb.d})
	}
	return append(out, extra...), nil
}

func geoFieldCheck(key string, f *Field, op, want string) error {
	if f != nil && f.Type != want {
		return invalidQuery("%s: %s needs a %s field, %s is a %s", key, op, want, key, f.Type)
	}
	return nil
}

// eqValue converts a value compared with field key (equality, $ne, $in
// elements, comparisons) to its storage form.
func eqValue(key string, f *Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if f != nil {
		switch f.Type {
		case TypePointer:
			return PointerStorageValue(f, v)
		case TypeDate:
			switch x := v.(type) {
			case string:
				d, ok := parseWhereDate(x)
				if !ok {
					return nil, invalidQuery("%s is a Date field; %q is not an ISO-8601 date (e.g. \"2024-01-31T00:00:00.000Z\")", key, x)
				}
				return d, nil
			case time.Time:
				return bson.NewDateTimeFromTime(x), nil
			case bson.DateTime:
				return x, nil
			}
			if m, ok := whereMap(v); ok {
				if ty, _ := m["__type"].(string); ty == "Date" {
					return dateValue(key, m)
				}
			}
			return nil, invalidQuery("%s is a Date field; compare it with an ISO-8601 string or {\"__type\":\"Date\",\"iso\":…}, got %s", key, whereDescribe(v))
		case TypeGeoPoint:
			if m, ok := whereMap(v); ok {
				if ty, _ := m["__type"].(string); ty == "GeoPoint" {
					return geoPoint(key, "", v)
				}
			}
		case TypeFile:
			if m, ok := whereMap(v); ok {
				if ty, _ := m["__type"].(string); ty == "File" {
					name, _ := m["name"].(string)
					if name == "" {
						return nil, invalidQuery("%s: a File value needs a string name", key)
					}
					return name, nil
				}
			}
		}
	}
	return literalValue(key, v)
}

// literal converts a plain JSON value (inside Object/Array fields, or for
// fields whose type gives no special meaning) to what Parse stores: dates as
// BSON dates, pointers as embedded {__type,className,objectId}, bytes as
// binary, other objects with their keys sorted.
func literalValue(key string, v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, float64, float32, int, int8, int16, int32, int64,
		uint8, uint16, uint32:
		return x, nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return nil, invalidQuery("%s: number out of range", key)
		}
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return nil, invalidQuery("%s: number out of range", key)
		}
		return int64(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		fl, err := x.Float64()
		if err != nil {
			return nil, invalidQuery("%s: invalid number %q", key, x.String())
		}
		return fl, nil
	case time.Time:
		return bson.NewDateTimeFromTime(x), nil
	case bson.DateTime:
		return x, nil
	}
	if a, ok := whereArray(v); ok {
		out := make(bson.A, 0, len(a))
		for _, el := range a {
			c, err := literalValue(key, el)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	m, ok := whereMap(v)
	if !ok {
		return nil, invalidQuery("%s: unsupported value %s", key, whereDescribe(v))
	}
	if ty, has := m["__type"]; has {
		return typedLiteral(key, ty, m)
	}
	out := make(bson.D, 0, len(m))
	for _, k := range whereSortedKeys(m) {
		if strings.HasPrefix(k, "$") {
			return nil, invalidQuery("%s: operator %s is not allowed inside a value", key, k)
		}
		if strings.Contains(k, ".") || k == "" || strings.ContainsRune(k, 0) {
			return nil, invalidQuery("%s: invalid key %q inside a value", key, k)
		}
		c, err := literalValue(key, m[k])
		if err != nil {
			return nil, err
		}
		out = append(out, bson.E{Key: k, Value: c})
	}
	return out, nil
}

func typedLiteral(key string, ty any, m map[string]any) (any, error) {
	switch ty {
	case "Date":
		return dateValue(key, m)
	case "Pointer":
		s, err := PointerStorageValue(&Field{Name: key}, m)
		if err != nil {
			return nil, err
		}
		cls, id, _ := strings.Cut(s, "$")
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: cls}, {Key: "objectId", Value: id}}, nil
	case "Bytes":
		s, _ := m["base64"].(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(m) != 2 {
			return nil, invalidQuery("%s: a Bytes value is {\"__type\":\"Bytes\",\"base64\":…}", key)
		}
		return bson.Binary{Subtype: 0, Data: b}, nil
	case "GeoPoint", "File", "Polygon":
		// Stored as their REST JSON inside Object/Array values.
		out := bson.D{{Key: "__type", Value: ty}}
		for _, k := range whereSortedKeys(m) {
			if k == "__type" {
				continue
			}
			if strings.HasPrefix(k, "$") || strings.Contains(k, ".") || k == "" {
				return nil, invalidQuery("%s: invalid key %q inside a value", key, k)
			}
			c, err := literalValue(key, m[k])
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: k, Value: c})
		}
		return out, nil
	}
	return nil, invalidQuery("%s: unsupported __type %s in where (use Date, Pointer, GeoPoint, File or Bytes)", key, whereDescribe(ty))
}

func dateValue(key string, m map[string]any) (any, error) {
	iso, _ := m["iso"].(string)
	if len(m) != 2 || iso == "" {
		return nil, invalidQuery("%s: a Date value is {\"__type\":\"Date\",\"iso\":\"2024-01-31T00:00:00.000Z\"}", key)
	}
	d, ok := parseWhereDate(iso)
	if !ok {
		return nil, invalidQuery("%s: %q is not an ISO-8601 date (e.g. \"2024-01-31T00:00:00.000Z\")", key, iso)
	}
	return d, nil
}

var whereISOLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// parseWhereDate parses an ISO-8601 date or date-time. Times without a zone
// are UTC; a bare date is midnight UTC (as JavaScript's Date does).
func parseWhereDate(s string) (bson.DateTime, bool) {
	if len(s) < 10 || len(s) > 40 {
		return 0, false
	}
	for _, l := range whereISOLayouts {
		if tm, err := time.Parse(l, s); err == nil {
			return bson.NewDateTimeFromTime(tm), true
		}
	}
	return 0, false
}

// regexOperands validates $regex and $options.
func regexOperands(key string, pat, opts any) (string, string, error) {
	p, ok := pat.(string)
	if !ok {
		return "", "", invalidQuery("%s: $regex needs a string pattern, got %s", key, whereDescribe(pat))
	}
	if utf8.RuneCountInString(p) > MaxRegexLength {
		return "", "", toolerror.Violationf("$regex longer than %d characters", MaxRegexLength)
	}
	if strings.ContainsRune(p, 0) {
		return "", "", invalidQuery("%s: $regex must not contain NUL", key)
	}
	if hasNestedQuantifier(p) {
		return "", "", toolerror.Violationf("$regex with a nested quantifier")
	}
	if opts == nil {
		return p, "", nil
	}
	o, ok := opts.(string)
	if !ok {
		return "", "", toolerror.Violationf("$options is not a string")
	}
	seen := map[rune]bool{}
	var b strings.Builder
	for _, c := range o {
		if c != 'i' && c != 'm' && c != 'x' {
			return "", "", toolerror.Violationf("$options %q outside i, m, x", o)
		}
		if !seen[c] {
			seen[c] = true
			b.WriteRune(c)
		}
	}
	return p, b.String(), nil
}

// regexGroup is the state of one open group in hasNestedQuantifier.
type regexGroup struct {
	quant   bool     // contains a quantified atom (directly or in a child group)
	alts    []string // literal text of each alternative so far
	complex bool     // some alternative is not plain literal text
}

func (g *regexGroup) lit(c byte) { g.alts[len(g.alts)-1] += string(c) }

// riskyAlternation: an alternation whose branches could match the same
// input start ((a|aa), (x|.), (|a)). Alternatives of plain literals that
// start with different characters, like (red|blue), are safe to repeat.
func (g *regexGroup) riskyAlternation() bool {
	if len(g.alts) < 2 {
		return false
	}
	if g.complex {
		return true
	}
	first := map[byte]bool{}
	for _, a := range g.alts {
		if a == "" {
			return true
		}
		c := strings.ToLower(a[:1])[0]
		if first[c] {
			return true
		}
		first[c] = true
	}
	return false
}

// hasNestedQuantifier is a small, conservative detector of catastrophic
// backtracking: a group that contains a quantifier (or an ambiguous
// alternation) and is itself repeated: (a+)+, (a*)*, (\w+)*, (a|aa)+,
// ((ab)?c){2,}. It errs on the side of refusing.
func hasNestedQuantifier(p string) bool {
	stack := []*regexGroup{{alts: []string{""}}}
	top := func() *regexGroup { return stack[len(stack)-1] }
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\\':
			top().complex = true
			i++ // the escaped character is one atom
		case '[':
			top().complex = true
			j := i + 1
			if j < len(p) && p[j] == '^' {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				if p[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case '(':
			top().complex = true
			g := &regexGroup{alts: []string{""}}
			stack = append(stack, g)
			if i+1 < len(p) && p[i+1] == '?' {
				// (?:…) (?=…) (?!…) (?<=…) (?<!…) (?<name>…) (?P<name>…) (?i)
				i += 2
				if i < len(p) && (p[i] == '<' || p[i] == 'P') {
					for i < len(p) && p[i] != '>' && p[i] != '=' && p[i] != '!' {
						i++
					}
				}
			}
		case ')':
			if len(stack) == 1 {
				top().complex = true
				continue
			}
			g := top()
			stack = stack[:len(stack)-1]
			n, repeats := quantifierAt(p, i+1)
			if repeats && (g.quant || g.riskyAlternation()) {
				return true
			}
			parent := top()
			if n > 0 || g.quant || g.riskyAlternation() {
				parent.quant = true
			}
			i += n
		case '|':
			top().alts = append(top().alts, "")
		case '*', '+', '?', '{':
			n, _ := quantifierAt(p, i)
			if n == 0 { // a literal '{'
				top().lit(c)
				continue
			}
			top().quant = true
			top().complex = true
			i += n - 1
		case '.', '^', '$':
			top().complex = true
		default:
			top().lit(c)
		}
	}
	return false
}

// quantifierAt reports the length of the quantifier starting at p[i]
// (including a lazy '?' or possessive '+' suffix; 0 if none) and whether it
// can repeat more than once.
func quantifierAt(p string, i int) (n int, repeats bool) {
	if i >= len(p) {
		return 0, false
	}
	switch p[i] {
	case '*', '+':
		n, repeats = 1, true
	case '?':
		n = 1
	case '{':
		j := i + 1
		lo, hi, sawComma, digitsLo, digitsHi := 0, 0, false, 0, 0
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			if lo < 1e6 {
				lo = lo*10 + int(p[j]-'0')
			}
			digitsLo++
			j++
		}
		if j < len(p) && p[j] == ',' {
			sawComma = true
			j++
			for j < len(p) && p[j] >= '0' && p[j] <= '9' {
				if hi < 1e6 {
					hi = hi*10 + int(p[j]-'0')
				}
				digitsHi++
				j++
			}
		}
		if digitsLo == 0 || j >= len(p) || p[j] != '}' {
			return 0, false
		}
		n = j - i + 1
		switch {
		case !sawComma:
			repeats = lo > 1
		case digitsHi == 0:
			repeats = true
		default:
			repeats = hi > 1
		}
	default:
		return 0, false
	}
	if i+n < len(p) && (p[i+n] == '?' || p[i+n] == '+') {
		n++
	}
	return n, repeats
}

// textClause translates {$search:{$term,$language?,$caseSensitive?,
// $diacriticSensitive?}} to the top-level $text clause.
func (t *whereTranslator) textClause(key string, v any, root bool) (bson.E, error) {
	where := "$text"
	if key != "" {
		where = key + ": $text"
	}
	if !root {
		return bson.E{}, invalidQuery("%s cannot be used inside $or or $nor", where)
	}
	t.text++
	if t.text > 1 {
		return bson.E{}, invalidQuery("only one $text is allowed per query")
	}
	const shape = `{"$text":{"$search":{"$term":"words","$language"?:…,"$caseSensitive"?:bool,"$diacriticSensitive"?:bool}}}`
	m, ok := whereMap(v)
	if !ok || len(m) != 1 {
		return bson.E{}, invalidQuery("%s must be %s", where, shape)
	}
	s, ok := whereMap(m["$search"])
	if !ok {
		return bson.E{}, invalidQuery("%s must be %s", where, shape)
	}
	term, ok := s["$term"].(string)
	if !ok || term == "" {
		return bson.E{}, invalidQuery("%s: $search.$term must be a non-empty string", where)
	}
	out := bson.D{{Key: "$search", Value: term}}
	for _, k := range whereSortedKeys(s) {
		switch k {
		case "$term":
		case "$language":
			l, ok := s[k].(string)
			if !ok {
				return bson.E{}, invalidQuery("%s: $language must be a string", where)
			}
			out = append(out, bson.E{Key: "$language", Value: l})
		case "$caseSensitive", "$diacriticSensitive":
			b, ok := s[k].(bool)
			if !ok {
				return bson.E{}, invalidQuery("%s: %s must be true or false", where, k)
			}
			out = append(out, bson.E{Key: k, Value: b})
		default:
			if isForbiddenWhereOp(k) {
				return bson.E{}, toolerror.Violationf("forbidden operator %s in $text", k)
			}
			return bson.E{}, invalidQuery("%s: unknown key %s in $search (allowed: $term, $language, $caseSensitive, $diacriticSensitive)", where, k)
		}
	}
	return bson.E{Key: "$text", Value: out}, nil
}

// geoPoint converts {"__type":"GeoPoint","latitude","longitude"} to
// [longitude, latitude].
func geoPoint(key, op string, v any) (bson.A, error) {
	where := key
	if op != "" {
		where = key + ": " + op
	}
	m, ok := whereMap(v)
	if !ok {
		return nil, invalidQuery("%s needs a GeoPoint {\"__type\":\"GeoPoint\",\"latitude\":…,\"longitude\":…}, got %s", where, whereDescribe(v))
	}
	if ty, _ := m["__type"].(string); ty != "GeoPoint" || len(m) != 3 {
		return nil, invalidQuery("%s needs a GeoPoint {\"__type\":\"GeoPoint\",\"latitude\":…,\"longitude\":…}", where)
	}
	lat, ok1 := whereFloat(m["latitude"])
	lng, ok2 := whereFloat(m["longitude"])
	if !ok1 || !ok2 {
		return nil, invalidQuery("%s: GeoPoint latitude and longitude must be numbers", where)
	}
	return lngLat(where, lng, lat)
}

func lngLat(where string, lng, lat float64) (bson.A, error) {
	if lat < -90 || lat > 90 || lng < -180 || lng > 180 || math.IsNaN(lat) || math.IsNaN(lng) {
		return nil, invalidQuery("%s: latitude must be within [-90, 90] and longitude within [-180, 180]", where)
	}
	return bson.A{lng, lat}, nil
}

// pointOrPair accepts a GeoPoint object or a [longitude, latitude] pair.
func pointOrPair(key, op string, v any) (bson.A, error) {
	if a, ok := whereArray(v); ok {
		if len(a) == 2 {
			lng, ok1 := whereFloat(a[0])
			lat, ok2 := whereFloat(a[1])
			if ok1 && ok2 {
				return lngLat(key+": "+op, lng, lat)
			}
		}
		return nil, invalidQuery("%s: %s points are GeoPoint objects or [longitude, latitude] pairs", key, op)
	}
	return geoPoint(key, op, v)
}

func maxDistance(key string, m map[string]any) (float64, bool, error) {
	var (
		dist  float64
		found string
	)
	for _, k := range []string{"$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if found != "" {
			return 0, false, invalidQuery("%s: use only one of %s and %s", key, found, k)
		}
		found = k
		d, ok := whereFloat(v)
		if !ok || d < 0 || math.IsNaN(d) || math.IsInf(d, 0) {
			return 0, false, invalidQuery("%s: %s must be a non-negative number", key, k)
		}
		switch k {
		case "$maxDistanceInMiles":
			d /= earthRadiusMiles
		case "$maxDistanceInKilometers":
			d /= earthRadiusKm
		}
		dist = d
	}
	return dist, found != "", nil
}

func geoBox(key string, v any) (bson.A, error) {
	a, ok := whereArray(v)
	if !ok || len(a) != 2 {
		return nil, invalidQuery("%s: $box needs [southwestGeoPoint, northeastGeoPoint]", key)
	}
	out := bson.A{}
	for _, p := range a {
		pt, err := geoPoint(key, "$box", p)
		if err != nil {
			return nil, err
		}
		out = append(out, pt)
	}
	return out, nil
}

func geoWithin(key string, v any) (bson.D, error) {
	m, ok := whereMap(v)
	if !ok || len(m) != 1 {
		return nil, invalidQuery("%s: $geoWithin needs exactly one of $box, $polygon, $centerSphere", key)
	}
	for op, arg := range m {
		switch op {
		case "$box":
			box, err := geoBox(key, arg)
			if err != nil {
				return nil, err
			}
			return bson.D{{Key: "$box", Value: box}}, nil
		case "$polygon":
			pts, err := polygonPoints(key, arg)
			if err != nil {
				return nil, err
			}
			return bson.D{{Key: "$polygon", Value: pts}}, nil
		case "$centerSphere":
			a, ok := whereArray(arg)
			if !ok || len(a) != 2 {
				return nil, invalidQuery("%s: $centerSphere needs [centerGeoPoint, radiusInRadians]", key)
			}
			center, err := pointOrPair(key, "$centerSphere", a[0])
			if err != nil {
				return nil, err
			}
			r, ok := whereFloat(a[1])
			if !ok || r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
				return nil, invalidQuery("%s: $centerSphere radius must be a non-negative number of radians", key)
			}
			return bson.D{{Key: "$centerSphere", Value: bson.A{center, r}}}, nil
		default:
			if isForbiddenWhereOp(op) {
				return nil, toolerror.Violationf("forbidden operator %s in $geoWithin", op)
			}
			return nil, invalidQuery("unknown operator %s in $geoWithin on field %s (allowed: $box, $polygon, $centerSphere)", op, key)
		}
	}
	return nil, invalidQuery("%s: $geoWithin needs exactly one of $box, $polygon, $centerSphere", key)
}

// polygonPoints accepts an array of ≥3 GeoPoints (or [lng,lat] pairs), or a
// Polygon object whose coordinates are REST [latitude, longitude] pairs.
func polygonPoints(key string, v any) (bson.A, error) {
	var pts bson.A
	if m, ok := whereMap(v); ok {
		coords, ok := whereArray(m["coordinates"])
		if ty, _ := m["__type"].(string); ty != "Polygon" || !ok || len(m) != 2 {
			return nil, invalidQuery("%s: $polygon needs an array of GeoPoints or {\"__type\":\"Polygon\",\"coordinates\":[[lat,lng],…]}", key)
		}
		for _, c := range coords {
			a, ok := whereArray(c)
			if !ok || len(a) != 2 {
				return nil, invalidQuery("%s: Polygon coordinates are [latitude, longitude] pairs", key)
			}
			lat, ok1 := whereFloat(a[0])
			lng, ok2 := whereFloat(a[1])
			if !ok1 || !ok2 {
				return nil, invalidQuery("%s: Polygon coordinates are [latitude, longitude] pairs", key)
			}
			pt, err := lngLat(key+": $polygon", lng, lat)
			if err != nil {
				return nil, err
			}
			pts = append(pts, pt)
		}
	} else {
		a, ok := whereArray(v)
		if !ok {
			return nil, invalidQuery("%s: $polygon needs an array of at least 3 GeoPoints", key)
		}
		for _, p := range a {
			pt, err := pointOrPair(key, "$polygon", p)
			if err != nil {
				return nil, err
			}
			pts = append(pts, pt)
		}
	}
	if len(pts) < 3 {
		return nil, invalidQuery("%s: $polygon needs at least 3 points", key)
	}
	return pts, nil
}

// subQuery parses {className, where} (the $inQuery value and $select.query).
func subQuery(key, op string, v any) (string, map[string]any, error) {
	shape := `{"className":"Class","where":{…}}`
	m, ok := whereMap(v)
	if !ok {
		return "", nil, invalidQuery("%s: %s needs %s", key, op, shape)
	}
	for k := range m {
		if k != "className" && k != "where" {
			return "", nil, invalidQuery("%s: unexpected key %q in %s; it needs %s", key, k, op, shape)
		}
	}
	cn, _ := m["className"].(string)
	if !whereClassNameRe.MatchString(cn) {
		return "", nil, invalidQuery("%s: %s needs a className string; it needs %s", key, op, shape)
	}
	if IsInternalCollection(cn) {
		return "", nil, invalidQuery("%s: class %s cannot be queried", key, cn)
	}
	var where map[string]any
	if w, has := m["where"]; has && w != nil {
		where, ok = whereMap(w)
		if !ok {
			return "", nil, invalidQuery("%s: %s.where must be an object", key, op)
		}
	}
	if where == nil {
		where = map[string]any{}
	}
	return cn, where, nil
}

func (t *whereTranslator) inQuery(key string, f *Field, op string, v any) (bson.A, error) {
	if f == nil || f.Type != TypePointer {
		what := "not a field of this class"
		if f != nil {
			what = "a " + f.Type + " field"
		} else if strings.Contains(key, ".") {
			what = "a dotted path"
		}
		return nil, invalidQuery("%s: %s needs a Pointer field; %s is %s", key, op, key, what)
	}
	cn, where, err := subQuery(key, op, v)
	if err != nil {
		return nil, err
	}
	if f.TargetClass != "" && cn != f.TargetClass {
		return nil, invalidQuery("%s: %s className %s is not the class %s points to", key, op, cn, key)
	}
	if t.opt.Sub == nil {
		return nil, invalidQuery("%s: %s is not available here", key, op)
	}
	ids, err := t.opt.Sub.MatchingIDs(t.ctx, cn, where)
	if err != nil {
		return nil, err
	}
	out := make(bson.A, 0, len(ids))
	for _, id := range ids {
		out = append(out, cn+"$"+id)
	}
	return out, nil
}

func (t *whereTranslator) selectValues(key string, f *Field, op string, v any) (bson.A, error) {
	shape := `{"query":{"className":"Class","where":{…}},"key":"field"}`
	m, ok := whereMap(v)
	if !ok {
		return nil, invalidQuery("%s: %s needs %s", key, op, shape)
	}
	for k := range m {
		if k != "query" && k != "key" {
			return nil, invalidQuery("%s: unexpected key %q in %s; it needs %s", key, k, op, shape)
		}
	}
	sk, ok := m["key"].(string)
	if !ok || sk == "" {
		return nil, invalidQuery("%s: %s needs %s", key, op, shape)
	}
	if err := checkRESTFieldPath(sk); err != nil {
		return nil, err
	}
	q, ok := m["query"]
	if !ok {
		return nil, invalidQuery("%s: %s needs %s", key, op, shape)
	}
	cn, where, err := subQuery(key, op+".query", q)
	if err != nil {
		return nil, err
	}
	if t.opt.Sub == nil {
		return nil, invalidQuery("%s: %s is not available here", key, op)
	}
	vals, err := t.opt.Sub.SelectValues(t.ctx, cn, where, sk)
	if err != nil {
		return nil, err
	}
	out := make(bson.A, 0, len(vals))
	for _, val := range vals {
		c, err := subValue(key, f, val)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// subValue converts a value returned by SelectValues for comparison with
// field f. Storage-shaped values pass through; REST shapes are converted.
func subValue(key string, f *Field, v any) (any, error) {
	if f != nil && f.Type == TypePointer {
		if s, ok := v.(string); ok && f.TargetClass != "" && strings.HasPrefix(s, f.TargetClass+"$") {
			return s, nil
		}
	}
	if f != nil && f.Type == TypeDate {
		if s, ok := v.(string); ok {
			if d, ok := parseWhereDate(s); ok {
				return d, nil
			}
			return s, nil
		}
	}
	if m, ok := whereMap(v); ok {
		if _, typed := m["__type"]; typed {
			return eqValue(key, f, v)
		}
	}
	if f != nil && f.Type == TypePointer {
		if s, ok := v.(string); ok && !strings.Contains(s, "$") {
			return PointerStorageValue(f, s)
		}
	}
	switch x := v.(type) {
	case time.Time:
		return bson.NewDateTimeFromTime(x), nil
	case map[string]any, bson.M, []any, json.Number:
		return literalValue(key, x)
	}
	return v, nil
}

// checkRESTFieldPath validates a field name passed as a value ($select.key,
// $relatedTo.key): the same floor as where keys.
func checkRESTFieldPath(path string) error {
	for _, seg := range strings.Split(path, ".") {
		if IsInternalField(seg) || isForbiddenWhereOp(seg) {
			return toolerror.Violationf("internal field %q referenced by value", path)
		}
	}
	first, _, _ := strings.Cut(path, ".")
	if first == "ACL" {
		return toolerror.Violationf("ACL referenced by value")
	}
	if strings.HasPrefix(first, "_") {
		return invalidQuery("%s", underscoreHint(nil, first))
	}
	if !whereFieldNameRe.MatchString(first) {
		return invalidQuery("invalid field name %q", path)
	}
	return nil
}

func (t *whereTranslator) relatedTo(cls *Class, v any) (bson.E, error) {
	shape := `{"$relatedTo":{"object":{"__type":"Pointer","className":"Owner","objectId":"…"},"key":"relationField"}}`
	m, ok := whereMap(v)
	if !ok || len(m) != 2 {
		return bson.E{}, invalidQuery("$relatedTo must be %s", shape)
	}
	key, _ := m["key"].(string)
	obj, ok := whereMap(m["object"])
	if !ok || key == "" {
		return bson.E{}, invalidQuery("$relatedTo must be %s", shape)
	}
	if err := checkRESTFieldPath(key); err != nil {
		return bson.E{}, err
	}
	if strings.Contains(key, ".") {
		return bson.E{}, invalidQuery("$relatedTo.key must be a relation field name, not a path")
	}
	owner, err := PointerStorageValue(&Field{Name: "$relatedTo.object"}, obj)
	if err != nil {
		return bson.E{}, err
	}
	ownerClass, ownerID, _ := strings.Cut(owner, "$")
	if IsInternalCollection(ownerClass) {
		return bson.E{}, invalidQuery("$relatedTo: class %s cannot be queried", ownerClass)
	}
	if t.opt.Sub == nil {
		return bson.E{}, invalidQuery("$relatedTo is not available here")
	}
	// The sub-query runs first so that its policy (hidden classes answer
	// like missing ones) decides before the schema check can tell
	// classes apart.
	ids, err := t.opt.Sub.RelatedIDs(t.ctx, ownerClass, ownerID, key)
	if err != nil {
		return bson.E{}, err
	}
	if s := t.opt.Schema; s != nil && s.Classes != nil {
		if oc := s.Class(ownerClass); oc != nil {
			f := oc.Field(key)
			if f == nil || f.Type != TypeRelation {
				return bson.E{}, invalidQuery("$relatedTo: %s.%s is not a Relation field", ownerClass, key)
			}
			if cls != nil && f.TargetClass != "" && cls.Name != "" && f.TargetClass != cls.Name {
				return bson.E{}, invalidQuery("$relatedTo: %s.%s relates to %s, not %s; query %s instead", ownerClass, key, f.TargetClass, cls.Name, f.TargetClass)
			}
		}
	}
	return bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: stringsToA(ids)}}}, nil
}

// relationField handles a where on a relation field: containment of one or
// more objects ({"likes": Pointer}, {"likes":{"$eq":Pointer}},
// {"likes":{"$in":[Pointer,…]}}), answered through RelationOwners.
func (t *whereTranslator) relationField(cls *Class, key string, f *Field, v any) ([]bson.E, error) {
	alt := fmt.Sprintf("%s is a Relation to %s (not stored on the object). To list the %s objects in one object's %s, query %s with {\"$relatedTo\":{\"object\":{\"__type\":\"Pointer\",\"className\":%q,\"objectId\":…},\"key\":%q}}",
		key, f.TargetClass, f.TargetClass, key, f.TargetClass, classLabel(cls), key)
	var items []any
	if m, ok := whereMap(v); ok && hasOpKey(m) {
		if len(m) != 1 {
			return nil, invalidQuery("%s: only a Pointer, $eq or $in of Pointers is supported on a relation field. %s", key, alt)
		}
		switch {
		case m["$eq"] != nil:
			items = []any{m["$eq"]}
		case m["$in"] != nil:
			a, ok := whereArray(m["$in"])
			if !ok {
				return nil, invalidQuery("%s: $in needs an array of Pointers", key)
			}
			items = a
		default:
			for op := range m {
				if isForbiddenWhereOp(op) {
					return nil, toolerror.Violationf("forbidden operator %s on a relation field", op)
				}
				return nil, invalidQuery("%s: operator %s is not supported on a relation field. %s", key, op, alt)
			}
		}
	} else {
		items = []any{v}
	}
	if len(items) > maxRelationIDs {
		return nil, invalidQuery("%s: at most %d pointers in $in on a relation field", key, maxRelationIDs)
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		s, err := PointerStorageValue(f, it)
		if err != nil {
			return nil, err
		}
		_, id, _ := strings.Cut(s, "$")
		ids = append(ids, id)
	}
	ro, ok := t.opt.Sub.(RelationOwners)
	if t.opt.Sub == nil || !ok {
		return nil, invalidQuery("%s: querying a relation field by member is not available here. %s", key, alt)
	}
	owners, err := ro.OwningIDs(t.ctx, classLabel(cls), key, ids)
	if err != nil {
		return nil, err
	}
	return []bson.E{{Key: "_id", Value: bson.D{{Key: "$in", Value: stringsToA(owners)}}}}, nil
}

func hasOpKey(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

func stringsToA(ss []string) bson.A {
	out := make(bson.A, 0, len(ss))
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}

// filterBuilder assembles one filter document. A key that is already present is
// merged when that preserves meaning ($and and $nor lists concatenate) and
// otherwise moved into a trailing $and, so no clause is ever lost to a
// duplicate key.
type filterBuilder struct {
	d   bson.D
	and bson.A
}

func (b *filterBuilder) index(k string) (int, bool) {
	for i, e := range b.d {
		if e.Key == k {
			return i, true
		}
	}
	return 0, false
}

func (b *filterBuilder) add(k string, v any) {
	i, dup := b.index(k)
	if !dup {
		b.d = append(b.d, bson.E{Key: k, Value: v})
		return
	}
	if k == "$and" || k == "$nor" {
		if cur, ok := b.d[i].Value.(bson.A); ok {
			if more, ok := v.(bson.A); ok {
				b.d[i].Value = append(cur, more...)
				return
			}
		}
	}
	b.and = append(b.and, bson.D{{Key: k, Value: v}})
}

func (b *filterBuilder) done() bson.D {
	if len(b.and) > 0 {
		if i, ok := b.index("$and"); ok {
			if cur, ok := b.d[i].Value.(bson.A); ok {
				b.d[i].Value = append(cur, b.and...)
				b.and = nil
			}
		}
		if len(b.and) > 0 {
			b.d = append(b.d, bson.E{Key: "$and", Value: b.and})
		}
	}
	if b.d == nil {
		return bson.D{}
	}
	return b.d
}

// whereMap accepts the map shapes a decoded where can contain.
func whereMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, m != nil
	case bson.M:
		return map[string]any(m), m != nil
	}
	return nil, false
}

func whereArray(v any) ([]any, bool) {
	switch a := v.(type) {
	case []any:
		return a, true
	case bson.A:
		return []any(a), true
	case []map[string]any:
		out := make([]any, len(a))
		for i := range a {
			out[i] = a[i]
		}
		return out, true
	case []string:
		out := make([]any, len(a))
		for i := range a {
			out[i] = a[i]
		}
		return out, true
	}
	return nil, false
}

func whereFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func whereSortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe names a value's JSON type for error messages (never echoes long
// values back).
func whereDescribe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		if len(x) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", x)
	case float64, float32, int, int32, int64, json.Number:
		return "a number"
	}
	if _, ok := whereArray(v); ok {
		return "an array"
	}
	if _, ok := whereMap(v); ok {
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
