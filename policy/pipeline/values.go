package pipeline

// Where a pipeline's values come from, and what may be done with them
// (SECURITY.md "Hidden references", "Pipelines").
//
// The forward pass tracks, for every field of the documents flowing into a
// stage, the stored class paths it is a copy of: a field of the pipeline's
// class, of a joined class, or a value built from such fields (renamed with
// "$f", included by $project, unwound, grouped by, accumulated by $push,
// a joined `as` array, a $facet branch's output, $$ROOT…). Two rules follow
// from it, by type and whatever the operator:
//
//   - Every stored path a stage reads gets the "not a hidden reference"
//     conjunct: paths of the pipeline's class as a leading $match
//     (Validated.RefPaths), paths of a joined class inside its join
//     scope (Validated.JoinRefPaths). A String value read anywhere
//     is therefore never a "Hidden$id" string, and a path into an Object is
//     never below a hidden pointer or embedded object along its prefixes.
//   - A value that may hold an Object or Array (an Object/Array field, a
//     field missing from the schema, anything below one, a whole document)
//     is *opaque*: the conjunct cannot reach what lies below it. It may
//     flow whole to the output (where the row codec redacts hidden
//     references), be grouped by, accumulated by a copying accumulator
//     ($push, $addToSet, $first, $last, $mergeObjects), unwound, joined on,
//     and filtered in $match with the where rules (sub-paths get the
//     conjunct; a literal naming a hidden or missing class is refused). It
//     is refused as an operand of every expression operator but the
//     shape-only $size, $isArray and $type, and as a $sort key. The refusal
//     depends on the schema and the pipeline only, never on the data.

import (
	"slices"
	"sort"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// vref is where a value comes from: stored rows of a class at a path
// (cls set), or a path of an earlier, frozen field state (st set).
type vref struct {
	st   *fieldState
	cls  *parsedb.Class
	join bool // cls is a joined class (its rows are scoped by the join)
	path string
}

// exprVal is what the forward pass knows about an expression's value.
type exprVal struct {
	// opaque: the value may hold an Object or Array whose content no
	// conjunct protects.
	opaque bool
	// src is the first opaque reference as written, for messages.
	src string
	// refs: the value is a copy of these (empty for computed values).
	refs []vref
}

// copyAccumulators copy their input into the output without looking at it.
var copyAccumulators = setOf([]string{"$push", "$addToSet", "$first", "$last", "$mergeObjects"})

// shapeOperators look at an opaque value's shape only (its type, its
// length), never at its content.
var shapeOperators = setOf([]string{"$size", "$isArray", "$type"})

func joinPath(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// aliasOf finds the longest bound key of s equal to path or above it.
func (s *fieldState) aliasOf(path string) (key string, refs []vref, ok bool) {
	for p := path; ; {
		if r, found := s.alias[p]; found {
			return p, r, true
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return "", nil, false
		}
		p = p[:i]
	}
}

// resolve records every stored path that reading path of s reads and
// reports whether the value there is opaque.
func (pv *validator) resolve(s *fieldState, path string, depth int) (bool, error) {
	if depth > 4*MaxDepth+MaxStages {
		return true, nil // unreachable in practice; unknown counts as opaque
	}
	// A frozen state never changes: each of its paths is resolved once
	// (the same value is often reached many ways, e.g. $$ROOT copied into
	// several fields at every stage; without this the walk is exponential).
	key := resolveKey{s, path}
	if s.frozen {
		if o, ok := pv.resolved[key]; ok {
			return o, nil
		}
	}
	opaque, err := pv.resolveOnce(s, path, depth)
	if err == nil && s.frozen {
		if pv.resolved == nil {
			pv.resolved = map[resolveKey]bool{}
		}
		pv.resolved[key] = opaque
	}
	return opaque, err
}

type resolveKey struct {
	st   *fieldState
	path string
}

func (pv *validator) resolveOnce(s *fieldState, path string, depth int) (bool, error) {
	pv.resolveSteps++
	opaque := false
	if key, refs, ok := s.aliasOf(path); ok {
		rest := strings.TrimPrefix(strings.TrimPrefix(path, key), ".")
		for _, r := range refs {
			o, err := pv.resolveRef(r, rest, depth+1)
			if err != nil {
				return false, err
			}
			opaque = opaque || o
		}
	} else {
		for _, r := range s.shapes {
			o, err := pv.resolveRef(r, path, depth+1)
			if err != nil {
				return false, err
			}
			opaque = opaque || o
		}
	}
	// Values bound below path make the whole value at path what they are.
	for _, key := range s.keysBelow(path) {
		o, err := pv.resolve(s, key, depth+1)
		if err != nil {
			return false, err
		}
		opaque = opaque || o
	}
	return opaque, nil
}

// keysBelow lists the bound keys strictly below path (every key for "").
func (s *fieldState) keysBelow(path string) []string {
	keys := s.sortedKeys
	if keys == nil || !s.frozen {
		keys = make([]string, 0, len(s.alias))
		for k := range s.alias {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if s.frozen {
			s.sortedKeys = keys
		}
	}
	if path == "" {
		return keys
	}
	prefix := path + "."
	i := sort.SearchStrings(keys, prefix)
	j := i
	for j < len(keys) && strings.HasPrefix(keys[j], prefix) {
		j++
	}
	return keys[i:j]
}

func (pv *validator) resolveRef(r vref, rest string, depth int) (bool, error) {
	if r.cls == nil {
		return pv.resolve(r.st, joinPath(r.path, rest), depth)
	}
	return pv.storedPath(r.cls, r.join, joinPath(r.path, rest))
}

// storedPath records a stored path of cls read by the pipeline and reports
// whether its value is opaque.
func (pv *validator) storedPath(cls *parsedb.Class, join bool, path string) (bool, error) {
	if path == "" {
		// A whole row: every visible field is read.
		if !join {
			for _, f := range pv.e.VisibleFields(cls) {
				pv.noteRef(cls, false, f.Name)
			}
		}
		return true, nil
	}
	root := rootOf(path)
	if root == "_id" || root == "objectId" {
		return false, nil
	}
	f := cls.Field(root)
	if f != nil {
		switch {
		case (f.Type == parsedb.TypePointer || f.Type == parsedb.TypeRelation) && pv.e.TargetInvisible(pv.schema, f.TargetClass):
			return false, pv.e.TargetUnavailableRefusal(pv.ctx, "$%s: %s", truncateText(path, 60), root)
		case f.Type == parsedb.TypeRelation:
			return false, invalidPipeline("%s is a Relation of %s: relations are not stored in the object, so a pipeline cannot read them (query %s with $relatedTo instead)", root, cls.Name, f.TargetClass)
		case f.Type == parsedb.TypePointer && path != root:
			return false, invalidPipeline("%s is a Pointer to %s: $%s is not a field; join it first with $lookup", root, f.TargetClass, truncateText(path, 60))
		}
	}
	pv.noteRef(cls, join, path)
	return f == nil || f.Type == parsedb.TypeObject || f.Type == parsedb.TypeArray || f.Type == "", nil
}

// noteRef records a stored path read by the pipeline: of the pipeline's
// class (RefPaths) or of a joined class (JoinRefPaths).
func (pv *validator) noteRef(cls *parsedb.Class, join bool, path string) {
	if path == "_id" {
		return
	}
	key := path
	if join {
		key = cls.Name + "\x00" + path
	}
	if pv.refSeen == nil {
		pv.refSeen = map[string]bool{}
	}
	if pv.refSeen[key] {
		return
	}
	pv.refSeen[key] = true
	if !join {
		pv.refPaths = append(pv.refPaths, path)
		return
	}
	if pv.joinRefs == nil {
		pv.joinRefs = map[string][]string{}
	}
	pv.joinRefs[cls.Name] = append(pv.joinRefs[cls.Name], path)
}

// ref checks a field reference and resolves it: the value of path in the
// documents entering the current stage.
func (pv *validator) ref(s *fieldState, path, dollar string) (exprVal, error) {
	if err := pv.checkRef(s, path, dollar); err != nil {
		return exprVal{}, err
	}
	// Resolved in the frozen snapshot (the same documents; memoized).
	st := pv.frozen(s)
	opaque, err := pv.resolve(st, path, 0)
	if err != nil {
		return exprVal{}, err
	}
	v := exprVal{opaque: opaque, refs: []vref{{st: st, path: path}}}
	if opaque {
		v.src = dollar + path
	}
	return v, nil
}

// frozen is the state documents had when the current stage started (the
// state refs point into must not change afterwards).
func (pv *validator) frozen(s *fieldState) *fieldState {
	if pv.prev != nil && pv.prevOf == s {
		return pv.prev
	}
	c := s.clone()
	c.frozen = true
	return c
}

// opaqueOperand refuses an opaque value as an operand.
func opaqueOperand(v exprVal, use string) error {
	return invalidPipeline("%s may hold an Object or Array value (or a value inside one), so it cannot be %s: a pipeline may pass such a value through whole ($project, $addFields, $group _id, $push, $addToSet, $first, $last, $mergeObjects, $unwind) or filter it in $match (e.g. {\"$match\":{\"meta.source\":\"x\"}}), but not compute on it or below it. Match on the sub-path, or group by it, instead", truncateText(v.src, 60), use)
}

// checkNotBelowOpaque refuses a stage path that sets, removes or projects
// part of an opaque value ($unset "meta.credential.className", an exclusion
// {"meta.credential.className": 0}, a dotted $addFields key, $lookup "as",
// $unwind includeArrayIndex, a nested {"meta": {…}} spec, which MongoDB
// merges into the stored document): taking a member away or overwriting it
// can strip the className or __type that marks an embedded reference as
// one, and the row encoder would then show a hidden object's id and
// members. The value may be set, removed or projected whole.
func (pv *validator) checkNotBelowOpaque(s *fieldState, path, what string) error {
	for i := strings.IndexByte(path, '.'); i > 0; {
		prefix := path[:i]
		opaque, err := pv.resolve(s, prefix, 0)
		if err != nil {
			return err
		}
		if opaque {
			return invalidPipeline("%s: %s is inside %s, which may hold an Object or Array value: a stage may set, remove or project such a value only whole (name %s itself, or build a new object with {\"$literal\": …} under another name), not a path below it", what, truncateText(path, 60), truncateText(prefix, 60), truncateText(prefix, 60))
		}
		j := strings.IndexByte(path[i+1:], '.')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return nil
}

// operand evaluates an expression whose value an operator or a stage
// computes on: it must not be opaque.
func (pv *validator) operand(s *fieldState, v any, use string) error {
	ev, err := pv.value(s, v)
	if err != nil {
		return err
	}
	if ev.opaque {
		return opaqueOperand(ev, use)
	}
	return nil
}

// value evaluates an expression in a position that copies its value whole
// (an output field, a group key, a copying accumulator).
func (pv *validator) value(s *fieldState, v any) (exprVal, error) {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "$$") {
			name, path, hasPath := strings.Cut(x[2:], ".")
			if name == "ROOT" || name == "CURRENT" {
				if hasPath {
					return pv.ref(s, path, "$")
				}
				st := pv.frozen(s)
				opaque, err := pv.resolve(st, "", 0)
				if err != nil {
					return exprVal{}, err
				}
				return exprVal{opaque: opaque, src: x, refs: []vref{{st: st}}}, nil
			}
			if hasInternalSegment(x) {
				return exprVal{}, toolerror.Violationf("internal field referenced in a pipeline")
			}
			// Other variables ($$NOW, $$this of an operator over plain
			// values, $lookup let variables) never hold an opaque value:
			// the operators and options that bind them refuse one.
			return exprVal{}, nil
		}
		if strings.HasPrefix(x, "$") {
			return pv.ref(s, x[1:], "$")
		}
		if pv.namesInvisibleClass([]any{x}) {
			return exprVal{}, invisibleLiteral()
		}
		return exprVal{}, nil
	}
	if entries, ok := parsedb.Entries(v); ok {
		if parsedb.IsOperatorObject(entries) {
			return pv.operator(s, entries[0].Key, entries[0].Value)
		}
		for _, e := range entries {
			if c, ok := e.Value.(string); ok && e.Key == "className" && pv.namesInvisibleClass(map[string]any{"className": c}) {
				return exprVal{}, invisibleLiteral()
			}
		}
		// An object literal: a document whose fields are the values.
		lit := &fieldState{alias: map[string][]vref{}, usable: map[string]bool{}, intro: map[string]bool{}}
		out := exprVal{}
		for _, e := range entries {
			ev, err := pv.value(s, e.Value)
			if err != nil {
				return exprVal{}, err
			}
			lit.bind(nil, e.Key, ev)
			if ev.opaque && !out.opaque {
				out.opaque, out.src = true, ev.src
			}
		}
		lit.frozen = true
		out.refs = []vref{{st: lit}}
		return out, nil
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		// An array literal: its elements' sources (paths reach into
		// array elements).
		out := exprVal{}
		for _, el := range arr {
			ev, err := pv.value(s, el)
			if err != nil {
				return exprVal{}, err
			}
			out.refs = append(out.refs, ev.refs...)
			if ev.opaque && !out.opaque {
				out.opaque, out.src = true, ev.src
			}
		}
		return out, nil
	}
	return exprVal{}, nil
}

// operator evaluates {op: arg}. Its operands must not be opaque (the
// shape-only operators aside); its value is computed, so never opaque.
func (pv *validator) operator(s *fieldState, op string, arg any) (exprVal, error) {
	switch op {
	case "$literal":
		if pv.namesInvisibleClass([]any{arg}) {
			return exprVal{}, invisibleLiteral()
		}
		return exprVal{}, nil
	case "$getField", "$setField", "$unsetField":
		return pv.fieldOperatorExpr(s, op, arg)
	}
	var operands []any
	if arr, ok := parsedb.ArrayValues(arg); ok {
		operands = arr
	} else if entries, ok := parsedb.Entries(arg); ok && !parsedb.IsOperatorObject(entries) {
		// Named arguments ({input, as, in}, {if, then, else}, …).
		for _, e := range entries {
			operands = append(operands, e.Value)
		}
	} else {
		operands = []any{arg}
	}
	for _, o := range operands {
		ev, err := pv.value(s, o)
		if err != nil {
			return exprVal{}, err
		}
		if ev.opaque && !shapeOperators[op] {
			return exprVal{}, opaqueOperand(ev, "an operand of "+truncateText(op, 30))
		}
	}
	return exprVal{}, nil
}

// bind makes key of s hold v (prev: the state before the stage, for the
// parts of a dotted key's root that the stage leaves as they were).
func (s *fieldState) bind(prev *fieldState, key string, v exprVal) {
	if s.alias == nil {
		s.alias = map[string][]vref{}
	}
	root := rootOf(key)
	if root != key {
		if _, ok := s.alias[root]; !ok && prev != nil {
			s.alias[root] = []vref{{st: prev, path: root}}
		}
	}
	for k := range s.alias {
		if strings.HasPrefix(k, key+".") {
			delete(s.alias, k)
		}
	}
	s.alias[key] = slices.Clone(v.refs)
	s.introduce(root)
}

// namesInvisibleClass reports whether a $match value on an opaque path
// holds a literal naming a hidden or missing class (the where rule).
func (pv *validator) namesInvisibleClass(v any) bool {
	return parsedb.NamesInvisibleClass(v, false, func(class string) bool {
		return pv.e.Hidden(class) || pv.schema.Class(class) == nil
	})
}

// invisibleLiteral refuses a literal that names a hidden or missing class
// anywhere in a pipeline — a "Class$…" string, an embedded className — as
// $match refuses one: the output would show it redacted for a hidden class
// and as written for a missing one (an oracle of the hidden classes'
// names), and a join or group could compare it whole with a stored value.
func invisibleLiteral() error {
	return invalidPipeline("a literal refers to a class that does not exist or is not accessible: it cannot be used in a pipeline")
}

// resolveChecked checks and resolves a field name of s (a join option).
func (pv *validator) resolveChecked(s *fieldState, path string) (bool, error) {
	if err := pv.checkRef(s, path, ""); err != nil {
		return false, err
	}
	return pv.resolve(s, path, 0)
}

// accumulator checks one $group/$bucket accumulator: the copying ones take
// any value whole (their output holds copies of it), the others compute on
// their input.
func (pv *validator) accumulator(s *fieldState, op string, arg any) (exprVal, error) {
	if copyAccumulators[op] {
		return pv.value(s, arg)
	}
	return pv.operator(s, op, arg)
}

// fieldOperatorExpr checks $getField/$setField/$unsetField: a literal field
// name read from the current document ($$ROOT/$$CURRENT or no input) is a
// field reference; $getField of it is that field's value.
func (pv *validator) fieldOperatorExpr(s *fieldState, op string, arg any) (exprVal, error) {
	if err := scanFieldOperator(op, arg); err != nil {
		return exprVal{}, err
	}
	if name, ok := arg.(string); ok {
		return pv.ref(s, name, "")
	}
	entries, _ := parsedb.Entries(arg)
	field, _ := parsedb.EntryValue(entries, "field")
	if lit, ok := parsedb.Entries(field); ok && len(lit) == 1 {
		field = lit[0].Value
	}
	name, _ := field.(string)
	input, hasInput := parsedb.EntryValue(entries, "input")
	var result exprVal
	onRoot := false
	if in, ok := input.(string); !hasInput || (ok && (in == "$$ROOT" || in == "$$CURRENT")) {
		onRoot = true
		if op == "$getField" {
			return pv.ref(s, name, "")
		}
		if err := pv.checkOutputName(s, name, op); err != nil {
			return exprVal{}, err
		}
		// $setField/$unsetField on the current document rebuild it: the
		// result holds the document's other fields as they were.
		r, err := pv.value(s, "$$CURRENT")
		if err != nil {
			return exprVal{}, err
		}
		result = r
	}
	for _, e := range entries {
		if e.Key == "input" && onRoot {
			continue
		}
		if e.Key == "input" || e.Key == "value" {
			if err := pv.operand(s, e.Value, "an operand of "+op); err != nil {
				return exprVal{}, err
			}
		}
	}
	return result, nil
}
