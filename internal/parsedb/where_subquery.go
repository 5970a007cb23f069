package parsedb

// Cross-class operators of the where translator: $inQuery/$notInQuery,
// $select/$dontSelect, $relatedTo and relation fields. Each sub-query runs
// through the caller's SubQueries, which applies the same policy.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// This file is the constraint whereTranslator (docs/reading.md "The `where`
// language"): it turns a Parse REST `where` object into a MongoDB filter
// against Parse's storage format, refusing everything that is not on the
// operator list. Security refusals (forbidden operators, internal fields,
// excessive nesting, dangerous regexes) are *toolerror.Violation; everything
// the model can fix is a *toolerror.Error (invalid_query or
// pointer_shape_mismatch).
//
// Decisions where the spec is silent:
//   - Accepted operators are exactly docs/reading.md's list (plus $within and the
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
//
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
	if !ClassNameRe.MatchString(cn) {
		return "", nil, invalidQuery("%s: %s needs a className string; it needs %s", key, op, shape)
	}
	// Whether the class may be read (hidden, internal, missing, CLP) is the
	// sub-query's class gate's to say (SubQueries), with the same answer a
	// tool gives for its own class: a system class and a class that does
	// not exist must not be told apart here (SECURITY.md "Hidden
	// references").
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
	// Parse Server refuses $inQuery/$notInQuery without a where ("improper
	// usage of $inQuery", code 102); $select/$dontSelect accept a query
	// without one.
	if m, ok := whereMap(v); ok {
		if _, has := m["where"]; !has {
			return nil, invalidQuery("%s: improper usage of %s: it needs {\"className\":\"Class\",\"where\":{…}} (an empty where {} matches every object)", key, op)
		}
	}
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
			if t.targetInvisible(f.TargetClass) {
				// Reached only if the sub-query did not refuse first: the
				// hint below would name the target.
				return bson.E{}, invalidQuery("$relatedTo: the relation %s.%s points to a class that does not exist or is not accessible", ownerClass, key)
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
