package parsedb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
) // WhereOptions configures WhereToFilter.
type WhereOptions struct {
	// Schema is used to check $relatedTo keys against the owning class.
	// Optional.
	Schema *Schema
	// Sub resolves cross-class operators; nil → they fail with
	// invalid_query "not available".
	Sub SubQueries
	// Hidden, if set, makes references to hidden classes inert: a
	// constraint on a field that may hold one is AND-ed with
	// NotHiddenRef, and a Pointer field whose target class is hidden (or,
	// with Schema, does not exist) cannot be constrained (hiddenrefs.go).
	Hidden *HiddenRefs
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
	if err := CheckSizeLimits(where); err != nil {
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
	if strings.Contains(id, "$") || !ClassNameRe.MatchString(cls) {
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
			for seg := range strings.SplitSeq(k, ".") {
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
func resolveWhereKey(cls *Class, key string, invisible func(class string) bool) (f *Field, storage string, err error) {
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
	if !FieldNameRe.MatchString(first) {
		return nil, "", invalidQuery("invalid field name %q in where (field names start with a letter and contain only letters, digits and _)", first)
	}
	for _, s := range segs[1:] {
		// No "$" anywhere in a segment, as Parse Server's key check: a
		// segment "Hidden$id" would test an object key the row codec
		// redacts (SECURITY.md "Object keys are values too").
		if s == "" || strings.ContainsRune(s, '$') || strings.ContainsRune(s, 0) {
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
		case TypePointer, TypeRelation:
			if invisible(f.TargetClass) {
				// The hints below name the target: answer as for the
				// field itself, hidden and missing alike.
				return nil, "", invalidQuery("%s points to a class that does not exist or is not accessible: it cannot be used in a where", key)
			}
			if f.Type == TypeRelation {
				return nil, "", invalidQuery("%s is a Relation; dotted paths into relations are not supported (use $relatedTo on the %s class)", first, f.TargetClass)
			}
			return nil, "", invalidQuery("%s is a Pointer to %s; to filter on its fields use {%q:{\"$inQuery\":{\"className\":%q,\"where\":{%q:…}}}}",
				first, f.TargetClass, first, f.TargetClass, strings.Join(segs[1:], "."))
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
	f, storage, err := resolveWhereKey(cls, key, t.targetInvisible)
	if err != nil {
		return nil, err
	}
	if f != nil && (f.Type == TypePointer || f.Type == TypeRelation) && t.targetInvisible(f.TargetClass) {
		return nil, invalidQuery("%s points to a class that does not exist or is not accessible: it cannot be used in a where", key)
	}
	if f != nil && f.Type == TypeRelation {
		return t.relationField(cls, key, f, v)
	}
	// Every field but a Pointer (whose value the translator encodes with the
	// field's own target): a typed field holds an object only when the data
	// drifted from the schema, and is then no safer than an Object field.
	if t.opt.Hidden != nil && (f == nil || f.Type != TypePointer) && t.nestedInvisibleRef(v, false) {
		return nil, invalidQuery("%s: the value refers to a class that does not exist or is not accessible: it cannot be used in a where", key)
	}
	clauses, err := t.fieldClauses(cls, key, storage, f, v, root)
	if err != nil {
		return nil, err
	}
	if want, ok := existsOnly(v); ok && t.opt.Hidden != nil && MayHoldHiddenRef(cls, key) {
		// $exists tests presence, not the value: a hidden reference at key
		// exists (shown as the marker), a key below one does not. Exactly
		// one of $exists true/false matches every row.
		above := t.opt.Hidden.NotHiddenRefAbove(cls, key)
		if above == nil {
			return clauses, nil
		}
		if want {
			return append(clauses, bson.E{Key: "$and", Value: above}), nil
		}
		return []bson.E{{Key: "$or", Value: bson.A{bson.D(clauses), bson.D{{Key: "$nor", Value: bson.A{bson.D{{Key: "$and", Value: above}}}}}}}}, nil
	}
	nh := t.opt.Hidden.NotHiddenRef(cls, key)
	if nh == nil && stringOperand(f, v) {
		nh = t.opt.Hidden.NotHiddenRefAnyType(cls, key)
	}
	if nh != nil {
		at, below := redactedAnswers(v)
		clauses = redactedOr(clauses, nh, t.opt.Hidden.NotHiddenRefAbove(cls, key), at, below)
	}
	return clauses, nil
}

// redactedOr is a field's constraint with the rule for redacted values
// (SECURITY.md "Hidden references", the operator table): a row whose value
// at the path is, or passes through, a hidden reference is never tested on
// what is stored there. It answers at when a hidden reference sits at the
// path itself (one present, non-null value equal to no operand) and below
// when one sits above the path (the path is absent, as the row codec shows
// it). clauses are the constraint on the stored value, nh the
// not-a-hidden-reference conjunct over every prefix of the path, above the
// one over its proper prefixes (nil: none).
func redactedOr(clauses []bson.E, nh, above bson.A, at, below bool) []bson.E {
	tested := append(append([]bson.E{}, clauses...), bson.E{Key: "$and", Value: nh})
	not := func(x bson.A) bson.D { return bson.D{{Key: "$nor", Value: bson.A{bson.D{{Key: "$and", Value: x}}}}} }
	switch {
	case at && (below || above == nil):
		return []bson.E{{Key: "$or", Value: bson.A{bson.D(tested), not(nh)}}}
	case at:
		return []bson.E{{Key: "$or", Value: bson.A{bson.D(tested), append(bson.D{{Key: "$and", Value: above}}, not(nh)...)}}}
	case below && above != nil:
		return []bson.E{{Key: "$or", Value: bson.A{bson.D(tested), not(above)}}}
	}
	return tested
}

// redactedAnswers is what a where value answers for a redacted value at
// its path (at) and for a path below one, which is absent (below): every
// operator of the value must hold. Equality, ranges, $regex, $all, geo
// and sub-query membership test a value and hold for neither; $ne, $nin,
// $notInQuery, $dontSelect and $containedBy hold for the present value,
// and for the absent one as MongoDB answers a missing field ($ne null and
// $nin [null] do not); null equality and $in [null] hold for the absent
// one only; $exists answers by presence.
func redactedAnswers(v any) (at, below bool) {
	m, ok := whereMap(v)
	if !ok || len(m) == 0 || !strings.HasPrefix(whereSortedKeys(m)[0], "$") {
		return false, v == nil
	}
	at, below = true, true
	for op, x := range m {
		a, b := false, false
		list, _ := whereArray(x)
		switch op {
		case "$eq":
			b = x == nil
		case "$ne":
			a, b = true, x != nil
		case "$in":
			b = slices.Contains(list, nil)
		case "$nin":
			a, b = true, !slices.Contains(list, nil)
		case "$exists":
			want, _ := x.(bool)
			a, b = want, !want
		case "$notInQuery", "$dontSelect", "$containedBy":
			// $containedBy holds for a value that is not an array
			// (MongoDB's {$nor: [{p: {$elemMatch: {$nin: L}}}]}), present or
			// absent.
			a, b = true, true
		case "$options", "$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers":
			a, b = true, true // modifiers: their operator decides
		}
		at, below = at && a, below && b
	}
	return at, below
}

// existsOnly reports whether a where value is exactly {"$exists": bool}.
func existsOnly(v any) (want, ok bool) {
	m, isMap := whereMap(v)
	if !isMap || len(m) != 1 {
		return false, false
	}
	want, ok = m["$exists"].(bool)
	return want, ok
}

// stringOperand reports whether a where value on a typed field can match a
// stored string: it holds a string (a value, an operator's operand, an
// $in element) or a $regex. Such a field holds a "Hidden$id" string only
// when the data drifted from the schema, but then a string range or $regex
// would bisect it, so the constraint gets the not-a-hidden-reference
// conjunct whatever the declared type (SECURITY.md "Hidden references").
// On Pointer and Date fields a string operand is encoded ("Target$id" with
// the field's visible target, a BSON date), so only a $regex counts there.
// Sub-query operators compare with values the translator computes, which
// carry their own rules.
func stringOperand(f *Field, v any) bool {
	encoded := f != nil && (f.Type == TypePointer || f.Type == TypeDate)
	var walk func(v any) bool
	walk = func(v any) bool {
		if _, ok := v.(string); ok {
			return !encoded
		}
		if m, ok := whereMap(v); ok {
			for k, x := range m {
				switch k {
				case "$regex":
					return true
				case "$inQuery", "$notInQuery", "$select", "$dontSelect", "$text", "$options":
					continue
				}
				if walk(x) {
					return true
				}
			}
			return false
		}
		if a, ok := whereArray(v); ok {
			if slices.ContainsFunc(a, walk) {
				return true
			}
		}
		return false
	}
	return walk(v)
}

// nestedInvisibleRef reports whether a where value names a hidden or missing
// class inside a literal (NamesInvisibleClass, shared with the pipeline
// validator's $match): hidden and missing classes are refused alike
// (SECURITY.md "Hidden references").
func (t *whereTranslator) nestedInvisibleRef(v any, inLiteral bool) bool {
	return NamesInvisibleClass(v, inLiteral, t.targetInvisible)
}

// targetInvisible reports a pointer target that is hidden or, when the
// schema is known, missing: both answer the same (hidden equals missing).
func (t *whereTranslator) targetInvisible(target string) bool {
	if t.opt.Hidden == nil {
		return false
	}
	return TargetInvisible(t.opt.Schema, t.opt.Hidden.IsHidden, target)
}

func (t *whereTranslator) fieldClauses(cls *Class, key, storage string, f *Field, v any, root bool) ([]bson.E, error) {
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
	if a, ok := whereArray(v); ok && len(a) == 0 {
		// Parse Server's MongoTransform takes a bare [] for a constraint
		// object without operators and sends {key: {}}: equality with an
		// empty object, which no empty array matches (MongoDB and both
		// test engines agree). {"$eq": []} keeps MongoDB's equality.
		return []bson.E{{Key: storage, Value: bson.D{}}}, nil
	}
	if str, d, ok := untypedDate(f, v); ok {
		return []bson.E{{Key: storage, Value: bson.D{{Key: "$in", Value: bson.A{str, d}}}}}, nil
	}
	val, err := eqValue(key, f, v)
	if err != nil {
		return nil, err
	}
	if _, isDoc := val.(bson.D); isDoc && f != nil && f.Type == TypeArray {
		// Parse Server rewrites equality of a single value with an Array
		// field to {$all: [value]} (MongoTransform). For a document (an
		// embedded pointer or object) that is what matches an element equal
		// to it on every backend; a scalar keeps the plain form, which means
		// the same.
		return []bson.E{{Key: storage, Value: bson.D{{Key: "$all", Value: bson.A{val}}}}}, nil
	}
	return []bson.E{{Key: storage, Value: val}}, nil
}

// untypedDate recognizes a date as the compact row shape shows it (an ISO
// string with milliseconds, as the codec writes every date) compared with
// a value whose type the schema does not give: a dotted path into an
// Object or Array field, an Object or Array field, or a field missing from
// the schema. Such a string may be a stored date or a stored string, so
// equality and $in/$ne/$nin match both, and range comparisons compare
// with the date (docs/reading.md "Row shapes").
func untypedDate(f *Field, v any) (string, bson.DateTime, bool) {
	s, ok := v.(string)
	if !ok || !isCodecISO(s) {
		return "", 0, false
	}
	if f != nil && f.Type != TypeObject && f.Type != TypeArray {
		return "", 0, false
	}
	d, ok := parseWhereDate(s)
	return s, d, ok
}

// isCodecISO reports whether s has the codec's date form
// 2006-01-02T15:04:05.000Z.
func isCodecISO(s string) bool {
	if len(s) != 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != 'T' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		case 19:
			if c != '.' {
				return false
			}
		case 23:
			if c != 'Z' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// ops translates a field's operator object, one operator at a time in
// key order (fieldOperators).
func (t *whereTranslator) ops(key, storage string, f *Field, m map[string]any, root bool) ([]bson.E, error) {
	c := &opClause{t: t, key: key, storage: storage, f: f, m: m, root: root}
	for _, op := range whereSortedKeys(m) {
		translate, ok := fieldOperators[op]
		if !ok {
			if isForbiddenWhereOp(op) {
				return nil, toolerror.Violationf("forbidden operator %s on a where field", op)
			}
			return nil, invalidQuery("unknown operator %s on field %s", op, key)
		}
		if err := translate(c, op, m[op]); err != nil {
			return nil, err
		}
	}
	var out []bson.E
	if len(c.fb.d) > 0 {
		out = append(out, bson.E{Key: storage, Value: c.fb.d})
	}
	return append(out, c.extra...), nil
}

// fieldOperators are the operators of a field's operator object, one
// function each, keyed by the operator's name; any other operator is
// refused (a forbidden one as a violation).
var fieldOperators = map[string]func(c *opClause, op string, v any) error{
	"$eq":                      (*opClause).compare,
	"$ne":                      (*opClause).compare,
	"$lt":                      (*opClause).compare,
	"$lte":                     (*opClause).compare,
	"$gt":                      (*opClause).compare,
	"$gte":                     (*opClause).compare,
	"$in":                      (*opClause).list,
	"$nin":                     (*opClause).list,
	"$all":                     (*opClause).list,
	"$containedBy":             (*opClause).containedBy,
	"$exists":                  (*opClause).exists,
	"$regex":                   (*opClause).regex,
	"$options":                 (*opClause).options,
	"$text":                    (*opClause).text,
	"$nearSphere":              (*opClause).nearSphere,
	"$maxDistance":             (*opClause).maxDistance,
	"$maxDistanceInRadians":    (*opClause).maxDistance,
	"$maxDistanceInMiles":      (*opClause).maxDistance,
	"$maxDistanceInKilometers": (*opClause).maxDistance,
	"$within":                  (*opClause).within,
	"$geoWithin":               (*opClause).geoWithin,
	"$geoIntersects":           (*opClause).geoIntersects,
	"$inQuery":                 (*opClause).inQuery,
	"$notInQuery":              (*opClause).inQuery,
	"$select":                  (*opClause).selectKey,
	"$dontSelect":              (*opClause).selectKey,
}

// opClause collects what one field's operator object translates to.
type opClause struct {
	t            *whereTranslator
	key, storage string
	f            *Field
	m            map[string]any // the whole operator object: some operators come in pairs
	root         bool           // not inside $or or $nor
	fb           filterBuilder  // operators on storage
	extra        []bson.E       // clauses under other keys
}

func (c *opClause) addExtra(k string, v any) { c.extra = append(c.extra, bson.E{Key: k, Value: v}) }

func (c *opClause) addOp(op string, v any) {
	if _, dup := c.fb.index(op); dup {
		// Two operators that translate to the same Mongo operator
		// ($within + $geoWithin, $in + $inQuery, …) both apply.
		c.addExtra(c.storage, bson.D{{Key: op, Value: v}})
		return
	}
	c.fb.d = append(c.fb.d, bson.E{Key: op, Value: v})
}

// compare: $eq, $ne, $lt, $lte, $gt, $gte.
func (c *opClause) compare(op string, v any) error {
	if _, isArr := whereArray(v); isArr && op != "$eq" && op != "$ne" {
		return invalidQuery("%s: %s needs a single value, got an array", c.key, op)
	}
	if str, d, ok := untypedDate(c.f, v); ok {
		switch op {
		case "$eq":
			c.addOp("$in", bson.A{str, d})
		case "$ne":
			c.addOp("$nin", bson.A{str, d})
		default:
			c.addOp(op, d)
		}
		return nil
	}
	val, err := eqValue(c.key, c.f, v)
	if err != nil {
		return err
	}
	if err := rangeOperand(c.key, op, val); err != nil {
		return err
	}
	c.addOp(op, val)
	return nil
}

// list: $in, $nin, $all.
func (c *opClause) list(op string, v any) error {
	arr, ok := whereArray(v)
	if !ok {
		return invalidQuery("%s: %s needs an array, got %s", c.key, op, whereDescribe(v))
	}
	out := make(bson.A, 0, len(arr))
	for _, el := range arr {
		if str, d, ok := untypedDate(c.f, el); ok && op != "$all" {
			out = append(out, str, d)
			continue
		}
		val, err := eqValue(c.key, c.f, el)
		if err != nil {
			return err
		}
		out = append(out, val)
	}
	c.addOp(op, out)
	return nil
}

func (c *opClause) containedBy(_ string, v any) error {
	if c.f != nil && c.f.Type != TypeArray {
		return invalidQuery("%s: $containedBy needs an Array field, %s is a %s", c.key, c.key, c.f.Type)
	}
	arr, ok := whereArray(v)
	if !ok {
		return invalidQuery("%s: $containedBy needs an array, got %s", c.key, whereDescribe(v))
	}
	out := make(bson.A, 0, len(arr))
	for _, el := range arr {
		val, err := literalValue(c.key, el)
		if err != nil {
			return err
		}
		out = append(out, val)
	}
	c.addExtra("$nor", bson.A{bson.D{{Key: c.storage, Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$nin", Value: out}}}}}}})
	return nil
}

func (c *opClause) exists(op string, v any) error {
	b, ok := v.(bool)
	if !ok {
		return invalidQuery("%s: $exists needs true or false, got %s", c.key, whereDescribe(v))
	}
	c.addOp(op, b)
	return nil
}

// regex: $regex, with its $options.
func (c *opClause) regex(_ string, v any) error {
	pat, opts, err := regexOperands(c.key, v, c.m["$options"])
	if err != nil {
		return err
	}
	c.addOp("$regex", pat)
	if opts != "" {
		c.addOp("$options", opts)
	}
	return nil
}

// options: $options, translated with its $regex.
func (c *opClause) options(string, any) error {
	if _, ok := c.m["$regex"]; !ok {
		return invalidQuery("%s: $options is only allowed together with $regex", c.key)
	}
	return nil
}

func (c *opClause) text(_ string, v any) error {
	e, err := c.t.textClause(c.key, v, c.root)
	if err != nil {
		return err
	}
	c.addExtra(e.Key, e.Value)
	return nil
}

// nearSphere: $nearSphere, with its $maxDistance….
func (c *opClause) nearSphere(op string, v any) error {
	if err := geoFieldCheck(c.key, c.f, op, TypeGeoPoint); err != nil {
		return err
	}
	if !c.root {
		return invalidQuery("%s: $nearSphere cannot be used inside $or or $nor", c.key)
	}
	c.t.near++
	if c.t.near > 1 {
		return invalidQuery("only one $nearSphere is allowed per query")
	}
	pt, err := geoPoint(c.key, op, v)
	if err != nil {
		return err
	}
	c.addOp("$nearSphere", pt)
	dist, ok, err := maxDistance(c.key, c.m)
	if err != nil {
		return err
	}
	if ok {
		c.addOp("$maxDistance", dist)
	}
	return nil
}

// maxDistance: $maxDistance and its unit forms, translated with their
// $nearSphere.
func (c *opClause) maxDistance(op string, _ any) error {
	if _, ok := c.m["$nearSphere"]; !ok {
		return invalidQuery("%s: %s is only allowed together with $nearSphere", c.key, op)
	}
	return nil
}

func (c *opClause) within(op string, v any) error {
	if err := geoFieldCheck(c.key, c.f, op, TypeGeoPoint); err != nil {
		return err
	}
	w, ok := whereMap(v)
	if !ok || len(w) != 1 || w["$box"] == nil {
		return invalidQuery("%s: $within needs {\"$box\":[southwestGeoPoint, northeastGeoPoint]}", c.key)
	}
	box, err := geoBox(c.key, w["$box"])
	if err != nil {
		return err
	}
	c.addOp("$geoWithin", bson.D{{Key: "$box", Value: box}})
	return nil
}

func (c *opClause) geoWithin(op string, v any) error {
	if err := geoFieldCheck(c.key, c.f, op, TypeGeoPoint); err != nil {
		return err
	}
	d, err := geoWithin(c.key, v)
	if err != nil {
		return err
	}
	c.addOp("$geoWithin", d)
	return nil
}

func (c *opClause) geoIntersects(op string, v any) error {
	if err := geoFieldCheck(c.key, c.f, op, TypePolygon); err != nil {
		return err
	}
	w, ok := whereMap(v)
	if !ok || len(w) != 1 || w["$point"] == nil {
		return invalidQuery("%s: $geoIntersects needs {\"$point\":{\"__type\":\"GeoPoint\",\"latitude\":…,\"longitude\":…}}", c.key)
	}
	pt, err := geoPoint(c.key, "$geoIntersects.$point", w["$point"])
	if err != nil {
		return err
	}
	c.addOp("$geoIntersects", bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: pt}}}})
	return nil
}

// inQuery: $inQuery and $notInQuery (where_subquery.go).
func (c *opClause) inQuery(op string, v any) error {
	ids, err := c.t.inQuery(c.key, c.f, op, v)
	if err != nil {
		return err
	}
	if op == "$inQuery" {
		c.addOp("$in", ids)
	} else {
		c.addOp("$nin", ids)
	}
	return nil
}

// selectKey: $select and $dontSelect (where_subquery.go).
func (c *opClause) selectKey(op string, v any) error {
	vals, err := c.t.selectValues(c.key, c.f, op, v)
	if err != nil {
		return err
	}
	if op == "$select" {
		c.addOp("$in", vals)
	} else {
		c.addOp("$nin", vals)
	}
	return nil
}

// rangeOperand refuses an ordering operator ($lt, $lte, $gt, $gte) whose
// operand is stored as an object or array (a plain object, an embedded
// Pointer, a GeoPoint…), on any field. MongoDB orders documents field by
// field, so a range over a whole Object or Array value with a crafted
// literal is a bisection oracle on whatever the value holds below its top
// level — a hidden reference's id included, where the
// not-a-hidden-reference conjunct (a path and its prefixes) does not reach,
// and whatever string follows its class name. Parse Server refuses such
// an operand too ("bad atom", code 107). Dates, numbers, strings, bytes
// and pointers on a Pointer field (stored as strings) keep their order.
// SECURITY.md "Hidden references".
func rangeOperand(key, op string, val any) error {
	switch op {
	case "$lt", "$lte", "$gt", "$gte":
	default:
		return nil
	}
	switch val.(type) {
	case bson.D, bson.A:
		return invalidQuery("%s: %s compares with a single value (a number, string or date), not an object: bad atom (compare a sub-field with a dotted path instead, e.g. {\"%s.k\":{%q:…}})", key, op, key, op)
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
			if a, ok := whereArray(v); ok && len(a) == 2 {
				// The compact row shape's [latitude, longitude].
				lat, ok1 := whereFloat(a[0])
				lng, ok2 := whereFloat(a[1])
				if ok1 && ok2 {
					return lngLat(key, lng, lat)
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

// checkRESTFieldPath validates a field name passed as a value ($select.key,
// $relatedTo.key): the same floor as where keys.
func checkRESTFieldPath(path string) error {
	for seg := range strings.SplitSeq(path, ".") {
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
	if !FieldNameRe.MatchString(first) {
		return invalidQuery("invalid field name %q", path)
	}
	return nil
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
