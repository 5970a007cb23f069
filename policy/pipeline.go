package policy

// The aggregation pipeline validator (SECURITY.md "Pipelines", "Classes", "Fields"). It runs
// on the caller's pipeline, written with Parse field names, before the data
// layer translates it to storage names (parsedb.TranslatePipeline) and
// before anything is sent to MongoDB.
//
// Two passes:
//
//  1. A structural scan of every value at every depth: nesting, blocked
//     stages and operators, the internal-field floor (as keys, as "$field"
//     references, as $getField/$setField names) and regex length. Anything
//     found is a *toolerror.Violation (JSON-RPC -32602, nothing echoed).
//  2. A stage-aware forward pass: the top-level stage allowlist (also for
//     sub-pipelines), join targets, storage-form names and the agent_fields
//     allowlist. The set of usable fields starts as the class's allowlist
//     (plus objectId/createdAt/updatedAt); $group/$addFields/$set/
//     $lookup.as/$unwind includeArrayIndex/$count/$bucket/$sortByCount/
//     $facet introduce fields; schema-replacing stages reset the set; each
//     $facet branch starts from its parent's state; a $lookup/$unionWith
//     sub-pipeline starts from the joined class's own state.
//
// Decisions where the spec is silent:
//   - Join targets: internal collections (_SCHEMA, _Join:*, _Hooks, …), names
//     that are not class names, and `_` classes other than _User, _Role,
//     _Installation (and _Session in master posture) are security
//     violations; hidden classes get exactly a missing class's answer
//     (the class gate's, with its "did you mean" of visible classes).
//   - $unset of an internal field is accepted (removing a field reveals
//     nothing); every other mention of one is a violation, including
//     {$project: {_rperm: 0}} and literal strings such as "$_rperm".
//   - Storage names: `_p_f` and (while documents are still class-shaped)
//     `_created_at`/`_updated_at` are access_denied kind
//     storage_form_field_ref with the Parse name as suggested_rewrite;
//     `_id` is accepted everywhere (it is objectId, and $group's key).
//   - Other `_`-prefixed roots are refused (field_not_allowed) while
//     documents are class-shaped unless a stage introduced them.
//   - $getField/$setField/$unsetField need a literal field name; a computed
//     one is a violation (it could spell an internal field).
//   - Nesting is counted in objects and arrays below the pipeline array
//     (a stage document is level 1); more than 20 is a violation, like the
//     where translator's nesting limit. More than 20 stages in any
//     (sub-)pipeline, and unknown operators at the top of a $match, are
//     invalid_query.
//   - The validator is one layer: the tools also project every pipeline's
//     documents (and every joined class's) onto the visible fields, so
//     $$ROOT, $objectToArray or $mergeObjects never see an internal,
//     non-allowlisted or protected field (tools/aggregate.go).
//   - Joins are refused when a tenant scope governs the pipeline's class or
//     the joined class (CheckJoin), as includes are.
//   - Parse-only where operators ($inQuery, $select, $relatedTo, …) are
//     invalid_query inside a pipeline $match: pipelines take MongoDB syntax.
//   - $jsonSchema is a violation (required/patternProperties reach fields
//     without naming them as keys); $expr in $graphLookup's
//     restrictSearchWithMatch is invalid_query (it filters raw documents).
//   - A dotted path into a Pointer field, and any reference to a Relation
//     field, is invalid_query with a hint ($lookup first / $relatedTo).
//   - Hidden references (pipeline_values.go): the pass tracks the stored
//     paths every value copies, so each path read gets the
//     not-a-hidden-reference conjunct (RefPaths, JoinRefPaths), and a value
//     that may hold an Object or Array is opaque: it flows whole, never as
//     an operand of an expression operator or a $sort key (invalid_query).
//     $redact with $$DESCEND is invalid_query.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Pipeline limits (SECURITY.md "Pipelines").
const (
	MaxPipelineStages = 20
	MaxPipelineDepth  = 20
)

// PipelineStages are the stages a pipeline may use, at the top level and in
// sub-pipelines ($facet branches, $lookup.pipeline, $unionWith.pipeline):
// the one table the validator, the translator and the aggregate tool share
// (parsedb.PipelineStages; TestPipelineStagesAgree in package tools proves
// each layer handles every stage of it and only those).
var PipelineStages = parsedb.PipelineStages

// BlockedPipelineOperators are refused as security violations wherever they
// appear in a pipeline, as a stage or as an operator at any depth.
var BlockedPipelineOperators = []string{"$where", "$function", "$accumulator", "$out", "$merge",
	"$collMod", "$createIndex", "$dropIndex", "$planCacheSetFilter", "$planCacheClear",
	// Atlas Search stages: the Atlas tools are not part of this build.
	"$search", "$searchMeta", "$vectorSearch"}

// JoinableSystemClasses are the `_` classes a pipeline may join into
// (_Session too, in master posture only).
var JoinableSystemClasses = []string{"_User", "_Role", "_Installation"}

var (
	allowedStages   = setOf(PipelineStages)
	blockedPipeline = setOf(BlockedPipelineOperators)
	// Parse REST where operators that MongoDB does not know.
	parseOnlyOperators = setOf([]string{"$inQuery", "$notInQuery", "$select", "$dontSelect", "$relatedTo", "$containedBy"})
	regexOperators     = setOf([]string{"$regexMatch", "$regexFind", "$regexFindAll"})
)

func setOf(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

// ValidatedPipeline is a pipeline the validator accepted.
type ValidatedPipeline struct {
	// Stages are the caller's stages, unchanged (Parse field names).
	Stages []any
	// Joins are the classes joined by $lookup, $graphLookup and $unionWith
	// at any depth, each once, in order of first appearance. The caller
	// must scope each of them (policy filters, ACL, field projection).
	Joins []*parsedb.Class
	// RefPaths are the paths of the pipeline's class that the stages read
	// while documents are still the class's own, each once. The caller
	// keeps rows whose value there is a reference to a hidden class out of
	// the pipeline (parsedb.HiddenRefs.NotHiddenRefFilter), so no
	// expression or filter can take such a reference apart. They include
	// the paths a stage reads through a copy of the class's values (a
	// renamed, included, unwound, grouped or accumulated field).
	RefPaths []string
	// JoinRefPaths are, per joined class, the paths of its rows that the
	// stages read; the caller adds the same conjunct to the join's scope.
	JoinRefPaths map[string][]string
}

// ValidatePipeline checks an aggregation pipeline for class cls. Elements
// may be bson.D (ordered, as decoded from the raw arguments) or
// map[string]any; arrays []any or bson.A.
func (e *Engine) ValidatePipeline(ctx context.Context, schema *parsedb.Schema, cls *parsedb.Class, pipeline []any) (ValidatedPipeline, error) {
	if len(pipeline) == 0 {
		return ValidatedPipeline{}, toolerror.New(toolerror.InvalidQuery, "pipeline must be a non-empty array of stages, e.g. [{\"$match\":{\"genre\":\"rock\"}},{\"$group\":{\"_id\":\"$artist\",\"n\":{\"$sum\":1}}}]")
	}
	pv := &pipelineValidator{e: e, ctx: ctx, schema: schema, root: cls, seen: map[string]bool{}}
	for _, st := range pipeline {
		if err := pv.scan(st, 1, ""); err != nil {
			return ValidatedPipeline{}, err
		}
	}
	if err := parsedb.CheckSizeLimits(pipeline); err != nil {
		return ValidatedPipeline{}, err
	}
	rootState := pv.classState(cls, false)
	if _, err := pv.pipeline(rootState, pipeline, "pipeline"); err != nil {
		return ValidatedPipeline{}, err
	}
	return ValidatedPipeline{Stages: pipeline, Joins: pv.joins, RefPaths: pv.refPaths, JoinRefPaths: pv.joinRefs}, nil
}

type pipelineValidator struct {
	e      *Engine
	ctx    context.Context
	schema *parsedb.Schema
	root   *parsedb.Class
	joins  []*parsedb.Class
	seen   map[string]bool
	// refPaths, joinRefs: see ValidatedPipeline.RefPaths, JoinRefPaths.
	refPaths []string
	joinRefs map[string][]string
	refSeen  map[string]bool
	// prev is a frozen copy of prevOf as the current stage started: the
	// state values read by the stage refer to (pipeline_values.go).
	prev, prevOf *fieldState
	resolved     map[resolveKey]bool
	resolveSteps int // resolutions computed (not memoized): a cost measure for tests
}

// ---------------------------------------------------------------------------
// Generic access to decoded JSON / BSON values.

func pNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case interface{ Float64() (float64, error) }:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func invalidPipeline(format string, args ...any) error {
	return toolerror.New(toolerror.InvalidQuery, format, args...)
}

// ---------------------------------------------------------------------------
// Pass 1: the structural scan.

// pathSegments splits a field reference ("$a.b", "$$ROOT.a", "a.b") into
// its segments, variable name included.
func pathSegments(ref string) []string {
	return strings.Split(strings.TrimLeft(ref, "$"), ".")
}

func hasInternalSegment(ref string) bool {
	return slices.ContainsFunc(pathSegments(ref), parsedb.IsInternalField)
}

// scan walks any value. parentOp is the key whose value v is.
func (pv *pipelineValidator) scan(v any, depth int, parentOp string) error {
	if entries, ok := parsedb.Entries(v); ok {
		if depth > MaxPipelineDepth {
			return toolerror.Violationf("pipeline nesting deeper than %d levels", MaxPipelineDepth)
		}
		for _, e := range entries {
			if blockedPipeline[e.Key] {
				return toolerror.Violationf("blocked pipeline operator %s", e.Key)
			}
			if hasInternalSegment(e.Key) {
				return toolerror.Violationf("internal field %q used as a key in a pipeline", e.Key)
			}
			switch e.Key {
			case "$jsonSchema":
				// patternProperties/required name fields without naming
				// them as keys: a way around the internal-field floor.
				return toolerror.Violationf("$jsonSchema in a pipeline")
			case "$regex":
				if err := checkPipelineRegex("$regex", e.Value); err != nil {
					return err
				}
			case "regex":
				if regexOperators[parentOp] {
					if err := checkPipelineRegex(parentOp, e.Value); err != nil {
						return err
					}
				}
			case "$options":
				if err := checkPipelineRegexOptions("$options", e.Value); err != nil {
					return err
				}
			case "options":
				if regexOperators[parentOp] {
					if err := checkPipelineRegexOptions(parentOp, e.Value); err != nil {
						return err
					}
				}
			case "$getField", "$setField", "$unsetField":
				if err := scanFieldOperator(e.Key, e.Value); err != nil {
					return err
				}
			}
			if err := pv.scan(e.Value, depth+1, e.Key); err != nil {
				return err
			}
		}
		return nil
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		if depth > MaxPipelineDepth {
			return toolerror.Violationf("pipeline nesting deeper than %d levels", MaxPipelineDepth)
		}
		for _, el := range arr {
			if err := pv.scan(el, depth+1, parentOp); err != nil {
				return err
			}
		}
		return nil
	}
	if s, ok := v.(string); ok && strings.HasPrefix(s, "$") && hasInternalSegment(s) {
		return toolerror.Violationf("internal field referenced in a pipeline")
	}
	return nil
}

// scanFieldOperator checks the field name of $getField/$setField/
// $unsetField: it must be a literal, and not an internal field.
func scanFieldOperator(op string, arg any) error {
	field := arg
	if entries, ok := parsedb.Entries(arg); ok {
		f, ok := parsedb.EntryValue(entries, "field")
		if !ok {
			return toolerror.Violationf("%s without a field", op)
		}
		field = f
		if lit, ok := parsedb.Entries(f); ok && len(lit) == 1 && lit[0].Key == "$literal" {
			field = lit[0].Value
		}
	}
	s, ok := field.(string)
	if !ok {
		return toolerror.Violationf("%s with a computed field name", op)
	}
	if parsedb.IsInternalField(s) {
		return toolerror.Violationf("%s on an internal field", op)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Pass 2: stages and the forward pass over usable fields.

// fieldState is what the forward pass knows about the documents flowing
// into a stage.
type fieldState struct {
	// cls is the class of the documents while they are still class-shaped
	// (nil after a schema-replacing stage).
	cls *parsedb.Class
	// restricted: the documents' class has an agent_fields allowlist, so
	// references must stay inside usable (or anyRoot).
	restricted bool
	usable     map[string]bool
	// anyRoot: after $replaceRoot with a computed root every root is
	// usable (the new root is built from usable data).
	anyRoot bool
	// pristine: no schema-replacing stage yet; class fields are checked
	// with CheckReadField.
	pristine bool
	// intro are roots introduced by earlier stages.
	intro map[string]bool
	// shapes: where the fields not bound in alias come from (the stored
	// rows of a class, an earlier state, a document value); several after
	// $unionWith.
	shapes []vref
	// alias: fields (dotted keys too) bound by stages to the values they
	// copy; an empty list is a computed value (pipeline_values.go).
	alias map[string][]vref
	// frozen: a snapshot that no stage changes any more (resolutions of
	// its paths are memoized); sortedKeys caches its alias keys.
	frozen     bool
	sortedKeys []string
}

// classState is the state of a class's stored rows: the pipeline's own
// class, or a joined class (join).
func (pv *pipelineValidator) classState(cls *parsedb.Class, join bool) *fieldState {
	s := &fieldState{cls: cls, pristine: true, usable: map[string]bool{}, intro: map[string]bool{},
		shapes: []vref{{cls: cls, join: join}}, alias: map[string][]vref{}}
	if cp := pv.e.Class(cls.Name); cp != nil && len(cp.AgentFields) > 0 {
		s.restricted = true
		for _, f := range append([]string{"objectId", "createdAt", "updatedAt"}, cp.AgentFields...) {
			s.usable[f] = true
		}
	}
	return s
}

func (s *fieldState) clone() *fieldState {
	c := *s
	c.usable = make(map[string]bool, len(s.usable))
	for k := range s.usable {
		c.usable[k] = true
	}
	c.intro = make(map[string]bool, len(s.intro))
	for k := range s.intro {
		c.intro[k] = true
	}
	c.frozen = false
	c.sortedKeys = nil
	c.shapes = slices.Clone(s.shapes)
	c.alias = make(map[string][]vref, len(s.alias))
	maps.Copy(c.alias, s.alias)
	return &c
}

// introduce makes a root usable downstream.
func (s *fieldState) introduce(root string) {
	s.usable[root] = true
	s.intro[root] = true
}

// reset replaces the set: only roots are usable afterwards.
func (s *fieldState) reset(roots ...string) {
	s.cls = nil
	s.pristine = false
	s.anyRoot = false
	s.shapes = nil
	s.alias = map[string][]vref{}
	s.usable = map[string]bool{"_id": true}
	s.intro = map[string]bool{"_id": true}
	for _, r := range roots {
		s.introduce(r)
	}
}

func rootOf(path string) string {
	if before, _, ok := strings.Cut(path, "."); ok {
		return before
	}
	return path
}

// storageFormError refuses a storage-form name with the Parse name as the
// suggested rewrite. ref is the name as written; dollar is "$" for
// expression references, "" for keys.
func storageFormError(ref, dollar string) error {
	root := rootOf(ref)
	rest := ref[len(root):]
	var parse string
	switch {
	case strings.HasPrefix(root, "_p_"):
		parse = root[3:]
	case root == "_created_at":
		parse = "createdAt"
	case root == "_updated_at":
		parse = "updatedAt"
	}
	rewrite := dollar + parse + rest
	return &toolerror.Error{Code: toolerror.AccessDenied,
		Message: fmt.Sprintf("pipelines use Parse field names, not storage names: use %s instead of %s%s", rewrite, dollar, ref),
		Details: &toolerror.Details{Kind: "storage_form_field_ref", DeniedField: root, SuggestedRewrite: rewrite}}
}

func isStorageForm(root string, classShaped bool) bool {
	if strings.HasPrefix(root, "_p_") && len(root) > 3 {
		return true
	}
	return classShaped && (root == "_created_at" || root == "_updated_at")
}

// checkRef checks a field reference (without its "$") against the state.
func (pv *pipelineValidator) checkRef(s *fieldState, path, dollar string) error {
	if path == "" || strings.HasPrefix(path, "$") {
		return invalidPipeline("invalid field path %q in pipeline", truncateText(dollar+path, 60))
	}
	if hasInternalSegment(path) {
		return toolerror.Violationf("internal field referenced in a pipeline")
	}
	root := rootOf(path)
	if isStorageForm(root, s.cls != nil) {
		return storageFormError(path, dollar)
	}
	if root == "_id" || s.intro[root] {
		return nil
	}
	if s.cls != nil {
		if f := s.cls.Field(root); f != nil {
			if (f.Type == parsedb.TypePointer || f.Type == parsedb.TypeRelation) && pv.e.TargetInvisible(pv.schema, f.TargetClass) {
				// Any use of a pointer into a hidden class could take its
				// id apart ($substr, $split, comparisons): refused, and a
				// pointer into a missing class answers alike. A relation
				// into one is refused the same way, so that no hint names
				// its target.
				return pv.e.TargetUnavailable(pv.ctx, "%s%s: %s", dollar, truncateText(path, 60), root)
			}
			switch {
			case f.Type == parsedb.TypeRelation:
				return invalidPipeline("%s is a Relation of %s: relations are not stored in the object, so a pipeline cannot read them (query %s with $relatedTo instead)", root, s.cls.Name, f.TargetClass)
			case f.Type == parsedb.TypePointer && path != root:
				return invalidPipeline("%s is a Pointer to %s: %s%s is not a field; join it first, e.g. {\"$lookup\":{\"from\":%q,\"localField\":%q,\"foreignField\":\"objectId\",\"as\":\"%sDoc\"}}, then use %s%sDoc%s", root, f.TargetClass, dollar, path, f.TargetClass, root, root, dollar, root, path[len(root):])
			}
		}
	}
	if s.pristine && s.cls != nil {
		if strings.HasPrefix(root, "_") {
			return pv.notAllowed(s, root)
		}
		return pv.e.CheckReadField(s.cls, root)
	}
	if s.restricted && !s.anyRoot && !s.usable[root] {
		return pv.notAllowed(s, root)
	}
	if s.cls != nil && strings.HasPrefix(root, "_") {
		return pv.notAllowed(s, root)
	}
	return nil
}

func (pv *pipelineValidator) notAllowed(s *fieldState, root string) error {
	var allowed []string
	if s.restricted {
		for f := range s.usable {
			allowed = append(allowed, f)
		}
	} else if s.cls != nil {
		for _, f := range pv.e.VisibleFields(s.cls) {
			allowed = append(allowed, f.Name)
		}
		for f := range s.intro {
			allowed = append(allowed, f)
		}
	}
	sort.Strings(allowed)
	if len(allowed) > 20 {
		allowed = allowed[:20]
	}
	where := "at this point of the pipeline"
	if s.pristine && s.cls != nil {
		where = "on " + s.cls.Name
	}
	return &toolerror.Error{Code: toolerror.AccessDenied,
		Message: fmt.Sprintf("field %s is not available to this agent %s", root, where),
		Details: &toolerror.Details{Kind: "field_not_allowed", DeniedField: root, AllowedFields: allowed}}
}

// checkOutputName checks a name a stage creates ($addFields keys, $group
// outputs, $count, as, …).
func (pv *pipelineValidator) checkOutputName(s *fieldState, name, what string) error {
	if name == "" || strings.HasPrefix(name, "$") || strings.ContainsRune(name, 0) {
		return invalidPipeline("%s: invalid field name %q", what, truncateText(name, 60))
	}
	if hasInternalSegment(name) {
		return toolerror.Violationf("internal field name used as a pipeline output")
	}
	if isStorageForm(rootOf(name), s.cls != nil) {
		return storageFormError(name, "")
	}
	return pv.checkNotBelowOpaque(s, name, what)
}

// pipeline validates a (sub-)pipeline from state s and returns the state
// after its last stage.
func (pv *pipelineValidator) pipeline(s *fieldState, stages []any, where string) (*fieldState, error) {
	if len(stages) == 0 {
		return nil, invalidPipeline("%s must not be empty", where)
	}
	if len(stages) > MaxPipelineStages {
		return nil, invalidPipeline("%s has %d stages; at most %d are allowed", where, len(stages), MaxPipelineStages)
	}
	for i, st := range stages {
		entries, ok := parsedb.Entries(st)
		if !ok || len(entries) != 1 {
			return nil, invalidPipeline("%s[%d] must be an object with exactly one stage operator, e.g. {\"$match\":{…}}", where, i)
		}
		name, arg := entries[0].Key, entries[0].Value
		if !allowedStages[name] {
			return nil, invalidPipeline("%s[%d]: unknown or unsupported stage %s (allowed: %s)", where, i, truncateText(name, 40), strings.Join(PipelineStages, " "))
		}
		if err := pv.stage(s, name, arg, fmt.Sprintf("%s[%d].%s", where, i, name)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// stage validates one stage and advances s.
func (pv *pipelineValidator) stage(s *fieldState, name string, arg any, where string) error {
	savedPrev, savedOf := pv.prev, pv.prevOf
	pv.prev, pv.prevOf = s.clone(), s
	pv.prev.frozen = true
	defer func() { pv.prev, pv.prevOf = savedPrev, savedOf }()
	prev := pv.prev
	switch name {
	case "$match":
		return pv.filter(s, arg, where, true)

	case "$sort":
		entries, ok := parsedb.Entries(arg)
		if !ok || len(entries) == 0 {
			return invalidPipeline("%s needs an object of field: 1 or -1", where)
		}
		for _, e := range entries {
			v, err := pv.ref(s, e.Key, "")
			if err != nil {
				return err
			}
			if v.opaque {
				// Its place in the order would compare what lies inside.
				return opaqueOperand(v, "a $sort key")
			}
		}
		return nil

	case "$limit", "$skip":
		if n, ok := pNumber(arg); !ok || n < 0 || (name == "$limit" && n < 1) {
			return invalidPipeline("%s needs a positive whole number", where)
		}
		return nil

	case "$sample":
		entries, ok := parsedb.Entries(arg)
		if !ok {
			return invalidPipeline("%s needs {\"size\": n}", where)
		}
		if n, ok := parsedb.EntryValue(entries, "size"); !ok {
			return invalidPipeline("%s needs {\"size\": n}", where)
		} else if _, ok := pNumber(n); !ok {
			return invalidPipeline("%s needs {\"size\": n}", where)
		}
		return nil

	case "$count":
		n, ok := arg.(string)
		if !ok || strings.Contains(n, ".") {
			return invalidPipeline("%s needs the name of the output field, e.g. {\"$count\":\"total\"}", where)
		}
		if err := pv.checkOutputName(s, n, where); err != nil {
			return err
		}
		s.reset()
		s.bind(nil, n, exprVal{})
		return nil

	case "$project":
		return pv.project(s, arg, where)

	case "$addFields", "$set":
		entries, ok := parsedb.Entries(arg)
		if !ok || len(entries) == 0 {
			return invalidPipeline("%s needs an object of new fields", where)
		}
		vals := make([]exprVal, len(entries))
		for i, e := range entries {
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			// A non-operator object is a set of paths below e.Key that
			// MongoDB merges into the stored value, not a new value.
			if (parsedb.IsSubProjection(e.Value) || isPlainObject(e.Value)) && s.names(e.Key) {
				if err := pv.checkNotBelowOpaque(s, e.Key+".*", where); err != nil {
					return err
				}
			}
			v, err := pv.value(s, e.Value)
			if err != nil {
				return err
			}
			vals[i] = v
		}
		for i, e := range entries {
			s.bind(prev, e.Key, vals[i])
		}
		return nil

	case "$unset":
		var names []any
		if str, ok := arg.(string); ok {
			names = []any{str}
		} else if arr, ok := parsedb.ArrayValues(arg); ok && len(arr) > 0 {
			names = arr
		} else {
			return invalidPipeline("%s needs a field name or an array of field names", where)
		}
		for _, n := range names {
			str, ok := n.(string)
			if !ok || str == "" || strings.HasPrefix(str, "$") {
				return invalidPipeline("%s needs field names (without $)", where)
			}
			// Removing an internal field reveals nothing: accepted.
			if !hasInternalSegment(str) && isStorageForm(rootOf(str), s.cls != nil) {
				return storageFormError(str, "")
			}
			if err := pv.checkNotBelowOpaque(s, str, where); err != nil {
				return err
			}
			if !strings.Contains(str, ".") {
				delete(s.usable, str)
			}
		}
		return nil

	case "$unwind":
		path := arg
		var entries []parsedb.Entry
		if e, ok := parsedb.Entries(arg); ok {
			entries = e
			path, _ = parsedb.EntryValue(entries, "path")
		}
		p, ok := path.(string)
		if !ok || !strings.HasPrefix(p, "$") || strings.HasPrefix(p, "$$") {
			return invalidPipeline("%s needs a field path such as \"$tags\"", where)
		}
		// The unwound field holds its elements: the same stored paths.
		if _, err := pv.ref(s, p[1:], "$"); err != nil {
			return err
		}
		if idx, ok := parsedb.EntryValue(entries, "includeArrayIndex"); ok {
			n, ok := idx.(string)
			if !ok {
				return invalidPipeline("%s: includeArrayIndex must be a field name", where)
			}
			if err := pv.checkOutputName(s, n, where); err != nil {
				return err
			}
			s.bind(prev, n, exprVal{})
		}
		return nil

	case "$group":
		entries, ok := parsedb.Entries(arg)
		if !ok {
			return invalidPipeline("%s needs an object with _id and accumulators", where)
		}
		id, ok := parsedb.EntryValue(entries, "_id")
		if !ok {
			return invalidPipeline("%s needs an _id (the grouping key, e.g. \"$genre\", or null for one group)", where)
		}
		idVal, err := pv.value(s, id)
		if err != nil {
			return err
		}
		var outs []string
		var vals []exprVal
		for _, e := range entries {
			if e.Key == "_id" {
				continue
			}
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			if strings.Contains(e.Key, ".") {
				return invalidPipeline("%s: output field %q cannot contain a dot", where, truncateText(e.Key, 60))
			}
			acc, ok := parsedb.Entries(e.Value)
			if !ok || !parsedb.IsOperatorObject(acc) {
				return invalidPipeline("%s: %s must be an accumulator such as {\"$sum\":1}", where, truncateText(e.Key, 60))
			}
			v, err := pv.accumulator(s, acc[0].Key, acc[0].Value)
			if err != nil {
				return err
			}
			outs = append(outs, e.Key)
			vals = append(vals, v)
		}
		s.reset(outs...)
		s.bind(nil, "_id", idVal)
		for i, o := range outs {
			s.bind(nil, o, vals[i])
		}
		return nil

	case "$bucket", "$bucketAuto":
		entries, ok := parsedb.Entries(arg)
		if !ok {
			return invalidPipeline("%s needs an object with groupBy", where)
		}
		gb, ok := parsedb.EntryValue(entries, "groupBy")
		if !ok {
			return invalidPipeline("%s needs groupBy", where)
		}
		// Buckets compare the value with the boundaries.
		if err := pv.operand(s, gb, name+" groupBy"); err != nil {
			return err
		}
		outs := []string{"count"}
		vals := []exprVal{{}}
		if out, ok := parsedb.EntryValue(entries, "output"); ok {
			oe, ok := parsedb.Entries(out)
			if !ok {
				return invalidPipeline("%s: output must be an object of accumulators", where)
			}
			outs, vals = outs[:0], vals[:0]
			for _, e := range oe {
				if err := pv.checkOutputName(s, e.Key, where); err != nil {
					return err
				}
				var v exprVal
				var err error
				if acc, ok := parsedb.Entries(e.Value); ok && parsedb.IsOperatorObject(acc) {
					v, err = pv.accumulator(s, acc[0].Key, acc[0].Value)
				} else {
					err = pv.operand(s, e.Value, "a "+name+" output")
				}
				if err != nil {
					return err
				}
				outs = append(outs, e.Key)
				vals = append(vals, v)
			}
		}
		s.reset(outs...)
		for i, o := range outs {
			s.bind(nil, o, vals[i])
		}
		return nil

	case "$sortByCount":
		// A group key: the value is copied whole into _id.
		v, err := pv.value(s, arg)
		if err != nil {
			return err
		}
		s.reset("count")
		s.bind(nil, "_id", v)
		s.bind(nil, "count", exprVal{})
		return nil

	case "$replaceRoot", "$replaceWith":
		root := arg
		if name == "$replaceRoot" {
			entries, ok := parsedb.Entries(arg)
			if !ok {
				return invalidPipeline("%s needs {\"newRoot\": …}", where)
			}
			if root, ok = parsedb.EntryValue(entries, "newRoot"); !ok {
				return invalidPipeline("%s needs {\"newRoot\": …}", where)
			}
		}
		v, err := pv.value(s, root)
		if err != nil {
			return err
		}
		if lit, ok := parsedb.Entries(root); ok && !parsedb.IsOperatorObject(lit) {
			var outs []string
			for _, e := range lit {
				if err := pv.checkOutputName(s, e.Key, where); err != nil {
					return err
				}
				outs = append(outs, rootOf(e.Key))
			}
			s.reset(outs...)
			s.shapes = v.refs
			return nil
		}
		s.reset()
		s.anyRoot = true
		// The new documents are the value's: its fields come from where
		// its fields came from (nothing, for a computed root).
		s.shapes = v.refs
		return nil

	case "$redact":
		// $$DESCEND evaluates the condition again inside every embedded
		// document, where "$objectId" is an embedded pointer's id: the
		// paths would read below Object and Array values.
		if mentionsString(arg, "$$DESCEND") {
			return invalidPipeline("%s: $$DESCEND is not supported (it evaluates the condition inside embedded documents, below Object and Array values); decide with $$KEEP or $$PRUNE for the whole document", where)
		}
		return pv.operand(s, arg, "a $redact condition")

	case "$facet":
		entries, ok := parsedb.Entries(arg)
		if !ok || len(entries) == 0 {
			return invalidPipeline("%s needs an object of named sub-pipelines", where)
		}
		var outs []string
		var ends []*fieldState
		for _, e := range entries {
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			branch, ok := parsedb.ArrayValues(e.Value)
			if !ok {
				return invalidPipeline("%s.%s must be an array of stages", where, truncateText(e.Key, 40))
			}
			end, err := pv.pipeline(s.clone(), branch, where+"."+e.Key)
			if err != nil {
				return err
			}
			end.frozen = true
			outs = append(outs, e.Key)
			ends = append(ends, end)
		}
		s.reset(outs...)
		for i, o := range outs {
			s.bind(nil, o, exprVal{refs: []vref{{st: ends[i]}}})
		}
		return nil

	case "$lookup":
		return pv.lookup(s, arg, where)
	case "$graphLookup":
		return pv.graphLookup(s, arg, where)
	case "$unionWith":
		return pv.unionWith(s, arg, where)
	}
	return invalidPipeline("%s: unsupported stage", where)
}

func (pv *pipelineValidator) project(s *fieldState, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok || len(entries) == 0 {
		return invalidPipeline("%s needs an object of fields", where)
	}
	inclusion := false
	for _, e := range entries {
		if e.Key == "_id" {
			continue
		}
		if !isExclusionValue(e.Value) {
			inclusion = true
		}
	}
	if !inclusion {
		for _, e := range entries {
			if isStorageForm(rootOf(e.Key), s.cls != nil) {
				return storageFormError(e.Key, "")
			}
			if err := pv.checkNotBelowOpaque(s, e.Key, where); err != nil {
				return err
			}
			if !strings.Contains(e.Key, ".") {
				delete(s.usable, e.Key)
			}
		}
		return nil
	}
	prev := pv.frozen(s)
	outs := []string{}
	var binds []binding
	for _, e := range entries {
		if e.Key == "_id" {
			if isExclusionValue(e.Value) {
				continue
			}
		}
		switch {
		case isInclusionValue(e.Value):
			// The field as it was (the root: a dotted inclusion keeps
			// part of it).
			if _, err := pv.ref(s, e.Key, ""); err != nil {
				return err
			}
			binds = append(binds, binding{rootOf(e.Key), exprVal{refs: []vref{{st: prev, path: rootOf(e.Key)}}}})
		case parsedb.IsSubProjection(e.Value):
			// {"meta": {"source": 1}}: a projection inside a field — of an
			// opaque one, a path below it (as the dotted form is).
			if s.names(e.Key) {
				if err := pv.checkNotBelowOpaque(s, e.Key+".*", where); err != nil {
					return err
				}
			}
			if _, err := pv.ref(s, e.Key, ""); err != nil {
				return err
			}
			binds = append(binds, binding{rootOf(e.Key), exprVal{refs: []vref{{st: prev, path: rootOf(e.Key)}}}})
			if err := pv.nestedProjection(s, e.Key, e.Value, &binds); err != nil {
				return err
			}
		default:
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			v, err := pv.value(s, e.Value)
			if err != nil {
				return err
			}
			binds = append(binds, binding{e.Key, v})
		}
		outs = append(outs, rootOf(e.Key))
	}
	// An inclusion projection keeps storage names, so documents stay
	// class-shaped for the translation, but only the listed fields remain.
	cls := s.cls
	s.reset(outs...)
	s.cls = cls
	for _, b := range binds {
		s.bind(prev, b.key, b.v)
	}
	return nil
}

// names reports whether key names a value the documents hold — a field a
// stage bound, or a field of the class's schema — rather than a new name
// (a nested spec on a new name builds a new object: nothing to merge into).
func (s *fieldState) names(key string) bool {
	if _, _, ok := s.aliasOf(key); ok {
		return true
	}
	return s.cls != nil && s.cls.Field(rootOf(key)) != nil
}

// isPlainObject reports whether v is an object whose first key is not an
// operator ({"zz": 1}, as opposed to {"$concat": …}).
func isPlainObject(v any) bool {
	entries, ok := parsedb.Entries(v)
	return ok && len(entries) > 0 && !strings.HasPrefix(entries[0].Key, "$")
}

// binding is an output field of a stage and the value it gets.
type binding struct {
	key string
	v   exprVal
}

// nestedProjection checks a sub-projection's computed values: output
// fields below the projected field (path), copies like $project's.
func (pv *pipelineValidator) nestedProjection(s *fieldState, path string, v any, binds *[]binding) error {
	entries, _ := parsedb.Entries(v)
	for _, e := range entries {
		if isInclusionValue(e.Value) || isExclusionValue(e.Value) {
			continue
		}
		if parsedb.IsSubProjection(e.Value) {
			if err := pv.nestedProjection(s, path+"."+e.Key, e.Value, binds); err != nil {
				return err
			}
			continue
		}
		ev, err := pv.value(s, e.Value)
		if err != nil {
			return err
		}
		*binds = append(*binds, binding{path + "." + e.Key, ev})
	}
	return nil
}

func isExclusionValue(v any) bool {
	if b, ok := v.(bool); ok {
		return !b
	}
	n, ok := pNumber(v)
	return ok && n == 0
}

func isInclusionValue(v any) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	n, ok := pNumber(v)
	return ok && n != 0
}

// filter validates a $match filter (top) or a sub-filter.
func (pv *pipelineValidator) filter(s *fieldState, v any, where string, top bool) error {
	entries, ok := parsedb.Entries(v)
	if !ok {
		return invalidPipeline("%s needs a filter object", where)
	}
	for _, e := range entries {
		switch {
		case e.Key == "$and" || e.Key == "$or" || e.Key == "$nor":
			arr, ok := parsedb.ArrayValues(e.Value)
			if !ok || len(arr) == 0 {
				return invalidPipeline("%s: %s needs a non-empty array of filters", where, e.Key)
			}
			for _, sub := range arr {
				if err := pv.filter(s, sub, where, top); err != nil {
					return err
				}
			}
		case e.Key == "$expr":
			if err := pv.operand(s, e.Value, "used in $expr"); err != nil {
				return err
			}
		case parseOnlyOperators[e.Key]:
			return parseOnlyError(e.Key, where)
		case e.Key == "$text" || e.Key == "$comment":
			// No field references.
		case strings.HasPrefix(e.Key, "$"):
			return invalidPipeline("%s: unknown operator %s at the top of a filter (allowed there: $and, $or, $nor, $expr, $text, $comment)", where, truncateText(e.Key, 40))
		default:
			if err := pv.fieldFilter(s, e.Key, e.Value, where); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldFilter checks one `path: condition` of a $match, with the where
// rules: every stored path it reads gets the not-a-hidden-reference
// conjunct (so do the sub-paths an $elemMatch tests), and on a value that
// may hold an Object or Array a literal naming a hidden or missing class is
// refused, as the where translator refuses it.
func (pv *pipelineValidator) fieldFilter(s *fieldState, path string, cond any, where string) error {
	v, err := pv.ref(s, path, "")
	if err != nil {
		return err
	}
	if v.opaque && pv.namesInvisibleClass(cond) {
		return invalidPipeline("%s: %s: the value refers to a class that does not exist or is not accessible: it cannot be used in a $match", where, truncateText(path, 60))
	}
	if v.opaque {
		// MongoDB orders objects field by field: a range over a whole
		// Object or Array value with an object literal ({objectId: "m"})
		// bisects what lies below it, as in a where (parsedb rangeOperand).
		if op := orderingWithObject(cond); op != "" {
			return invalidPipeline("%s: %s: %s compares with a single value (a number, string or date), not an object or array: bad atom (compare a sub-field with a dotted path instead)", where, truncateText(path, 60), op)
		}
	}
	return pv.fieldOperators(s, path, cond, where)
}

// fieldOperators looks into a $match field's condition: Parse-only
// operators are refused; $elemMatch conditions on element sub-paths are
// field conditions of path.sub.
func (pv *pipelineValidator) fieldOperators(s *fieldState, path string, v any, where string) error {
	entries, ok := parsedb.Entries(v)
	if !ok {
		return nil
	}
	for _, e := range entries {
		if parseOnlyOperators[e.Key] {
			return parseOnlyError(e.Key, where)
		}
		switch e.Key {
		case "$not":
			if err := pv.fieldOperators(s, path, e.Value, where); err != nil {
				return err
			}
		case "$elemMatch":
			sub, ok := parsedb.Entries(e.Value)
			if !ok {
				continue
			}
			for _, se := range sub {
				switch {
				case se.Key == "$and" || se.Key == "$or" || se.Key == "$nor":
					arr, _ := parsedb.ArrayValues(se.Value)
					for _, br := range arr {
						if err := pv.fieldOperators(s, path, bsonDoc("$elemMatch", br), where); err != nil {
							return err
						}
					}
				case se.Key == "$expr" || se.Key == "$where":
					return invalidPipeline("%s: %s is not supported inside $elemMatch", where, se.Key)
				case strings.HasPrefix(se.Key, "$"):
					if err := pv.fieldOperators(s, path, bsonDoc(se.Key, se.Value), where); err != nil {
						return err
					}
				default:
					if err := pv.fieldFilter(s, path+"."+se.Key, se.Value, where); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func bsonDoc(key string, v any) map[string]any { return map[string]any{key: v} }

// orderingWithObject returns the ordering operator ($gt, $gte, $lt, $lte)
// of a $match condition whose operand is an object or array (a date
// object aside), at any depth of $not and $elemMatch; "" if none.
func orderingWithObject(cond any) string {
	entries, ok := parsedb.Entries(cond)
	if !ok {
		return ""
	}
	for _, e := range entries {
		switch e.Key {
		case "$gt", "$gte", "$lt", "$lte":
			if _, isArr := parsedb.ArrayValues(e.Value); isArr {
				return e.Key
			}
			if obj, isObj := parsedb.Entries(e.Value); isObj && !isDateObject(obj) {
				return e.Key
			}
		case "$not":
			if op := orderingWithObject(e.Value); op != "" {
				return op
			}
		case "$elemMatch", "$and", "$or", "$nor":
			if op := orderingWithObject(e.Value); op != "" {
				return op
			}
			if arr, ok := parsedb.ArrayValues(e.Value); ok {
				for _, x := range arr {
					if op := orderingWithObject(x); op != "" {
						return op
					}
				}
			}
		default:
			if !strings.HasPrefix(e.Key, "$") {
				// A field condition inside $elemMatch.
				if op := orderingWithObject(e.Value); op != "" {
					return op
				}
			}
		}
	}
	return ""
}

// isDateObject: {"__type":"Date","iso":…} or {"$date":…}.
func isDateObject(obj []parsedb.Entry) bool {
	if t, ok := parsedb.EntryValue(obj, "__type"); ok && t == "Date" {
		return true
	}
	return len(obj) == 1 && obj[0].Key == "$date"
}

func parseOnlyError(op, where string) error {
	return invalidPipeline("%s: %s is a Parse where operator; pipelines use MongoDB syntax (use $lookup to join, or query_class/count_objects for where constraints)", where, op)
}

// accumulator checks one $group/$bucket accumulator: the copying ones take
// any value whole (their output holds copies of it), the others compute on
// their input.
func (pv *pipelineValidator) accumulator(s *fieldState, op string, arg any) (exprVal, error) {
	if copyAccumulators[op] {
		return pv.value(s, arg)
	}
	return pv.operator(s, op, arg)
}

// fieldOperatorExpr checks $getField/$setField/$unsetField: a literal field
// name read from the current document ($$ROOT/$$CURRENT or no input) is a
// field reference; $getField of it is that field's value.
func (pv *pipelineValidator) fieldOperatorExpr(s *fieldState, op string, arg any) (exprVal, error) {
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

// ---------------------------------------------------------------------------
// Joins.

// joinTarget is the class gate of a join target.
func (pv *pipelineValidator) joinTarget(v any, where string) (*parsedb.Class, error) {
	name, ok := v.(string)
	if !ok || name == "" {
		return nil, invalidPipeline("%s needs a class name", where)
	}
	if !parsedb.ClassNameRe.MatchString(name) || parsedb.IsInternalCollection(name) {
		return nil, toolerror.Violationf("join into internal collection %q", truncateText(name, 60))
	}
	if pv.e.Hidden(name) {
		return nil, pv.e.hiddenClass(pv.ctx, pv.schema, name)
	}
	if strings.HasPrefix(name, "_") && !(slices.Contains(JoinableSystemClasses, name) || name == "_Session" && pv.e.MasterPosture()) {
		return nil, toolerror.Violationf("join into system class %s", name)
	}
	cls, err := pv.e.ResolveClass(pv.ctx, pv.schema, name)
	if err != nil {
		return nil, err
	}
	if err := pv.e.CheckJoin(pv.root.Name, name); err != nil {
		return nil, err
	}
	if !pv.seen[name] {
		pv.seen[name] = true
		pv.joins = append(pv.joins, cls)
	}
	return cls, nil
}

func (pv *pipelineValidator) lookup(s *fieldState, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok {
		return invalidPipeline("%s needs an object with from and as", where)
	}
	from, _ := parsedb.EntryValue(entries, "from")
	jc, err := pv.joinTarget(from, where+".from")
	if err != nil {
		return err
	}
	as, ok := parsedb.EntryValue(entries, "as")
	asName, isStr := as.(string)
	if !ok || !isStr {
		return invalidPipeline("%s needs as (the name of the output array field)", where)
	}
	if err := pv.checkOutputName(s, asName, where+".as"); err != nil {
		return err
	}
	lf, hasLF := parsedb.EntryValue(entries, "localField")
	ff, hasFF := parsedb.EntryValue(entries, "foreignField")
	if hasLF != hasFF {
		return invalidPipeline("%s needs both localField and foreignField, or neither", where)
	}
	if hasLF {
		l, ok1 := lf.(string)
		f, ok2 := ff.(string)
		if !ok1 || !ok2 {
			return invalidPipeline("%s: localField and foreignField must be field names", where)
		}
		// An equality join: both stored paths are read (and get the
		// conjunct), whole values included.
		if _, err := pv.ref(s, l, ""); err != nil {
			return err
		}
		js := pv.classState(jc, true)
		if _, err := pv.resolveChecked(js, f); err != nil {
			return err
		}
	}
	if let, ok := parsedb.EntryValue(entries, "let"); ok {
		le, ok := parsedb.Entries(let)
		if !ok {
			return invalidPipeline("%s: let must be an object of variables", where)
		}
		// Variables are not tracked: they take values that may be
		// computed on, so an opaque one is refused.
		for _, e := range le {
			if err := pv.operand(s, e.Value, "a $lookup let variable"); err != nil {
				return err
			}
		}
	}
	joined := vref{cls: jc, join: true}
	sub, hasPipeline := parsedb.EntryValue(entries, "pipeline")
	if !hasLF && !hasPipeline {
		return invalidPipeline("%s needs localField/foreignField or a pipeline", where)
	}
	if hasPipeline {
		arr, ok := parsedb.ArrayValues(sub)
		if !ok {
			return invalidPipeline("%s.pipeline must be an array of stages", where)
		}
		if len(arr) > 0 {
			end, err := pv.pipeline(pv.classState(jc, true), arr, where+".pipeline")
			if err != nil {
				return err
			}
			end.frozen = true
			joined = vref{st: end}
		}
	}
	for _, e := range entries {
		switch e.Key {
		case "from", "as", "localField", "foreignField", "let", "pipeline":
		default:
			return invalidPipeline("%s: unsupported option %s", where, truncateText(e.Key, 40))
		}
	}
	// as holds the joined documents: their fields are the joined class's.
	s.bind(pv.frozen(s), asName, exprVal{refs: []vref{joined}})
	return nil
}

func (pv *pipelineValidator) graphLookup(s *fieldState, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok {
		return invalidPipeline("%s needs an object", where)
	}
	from, _ := parsedb.EntryValue(entries, "from")
	jc, err := pv.joinTarget(from, where+".from")
	if err != nil {
		return err
	}
	js := pv.classState(jc, true)
	for _, k := range []string{"startWith", "connectFromField", "connectToField", "as"} {
		if _, ok := parsedb.EntryValue(entries, k); !ok {
			return invalidPipeline("%s needs %s", where, k)
		}
	}
	var asName, depthField string
	for _, e := range entries {
		switch e.Key {
		case "from", "maxDepth":
		case "startWith":
			// Compared for equality with connectToField, like a
			// localField: a whole value is fine.
			if _, err := pv.value(s, e.Value); err != nil {
				return err
			}
		case "connectFromField", "connectToField":
			f, ok := e.Value.(string)
			if !ok {
				return invalidPipeline("%s: %s must be a field name", where, e.Key)
			}
			if _, err := pv.resolveChecked(js, f); err != nil {
				return err
			}
		case "as", "depthField":
			n, ok := e.Value.(string)
			if !ok {
				return invalidPipeline("%s: %s must be a field name", where, e.Key)
			}
			if err := pv.checkOutputName(s, n, where+"."+e.Key); err != nil {
				return err
			}
			if e.Key == "as" {
				asName = n
			} else {
				depthField = n
			}
		case "restrictSearchWithMatch":
			// It filters the joined class's raw documents, before any
			// projection: field conditions only.
			if mentionsExpr(e.Value) {
				return invalidPipeline("%s: restrictSearchWithMatch takes field conditions only ($expr is not supported there)", where)
			}
			if err := pv.filter(js, e.Value, where+".restrictSearchWithMatch", true); err != nil {
				return err
			}
		default:
			return invalidPipeline("%s: unsupported option %s", where, truncateText(e.Key, 40))
		}
	}
	// as holds joined documents (with depthField, computed, in each).
	found := &fieldState{shapes: []vref{{cls: jc, join: true}}, alias: map[string][]vref{}, usable: map[string]bool{}, intro: map[string]bool{}}
	if depthField != "" {
		found.bind(nil, depthField, exprVal{})
	}
	found.frozen = true
	s.bind(pv.frozen(s), asName, exprVal{refs: []vref{{st: found}}})
	return nil
}

// mentionsString reports whether the string str appears as a value
// anywhere in v.
func mentionsString(v any, str string) bool {
	if s, ok := v.(string); ok {
		return s == str
	}
	if entries, ok := parsedb.Entries(v); ok {
		for _, e := range entries {
			if mentionsString(e.Value, str) {
				return true
			}
		}
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		return slices.ContainsFunc(arr, func(x any) bool { return mentionsString(x, str) })
	}
	return false
}

// mentionsExpr reports whether $expr appears anywhere in v.
func mentionsExpr(v any) bool {
	if entries, ok := parsedb.Entries(v); ok {
		for _, e := range entries {
			if e.Key == "$expr" || mentionsExpr(e.Value) {
				return true
			}
		}
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		if slices.ContainsFunc(arr, mentionsExpr) {
			return true
		}
	}
	return false
}

func (pv *pipelineValidator) unionWith(s *fieldState, arg any, where string) error {
	coll := arg
	var sub any
	hasPipeline := false
	if entries, ok := parsedb.Entries(arg); ok {
		coll, _ = parsedb.EntryValue(entries, "coll")
		sub, hasPipeline = parsedb.EntryValue(entries, "pipeline")
		for _, e := range entries {
			if e.Key != "coll" && e.Key != "pipeline" {
				return invalidPipeline("%s: unsupported option %s", where, truncateText(e.Key, 40))
			}
		}
	}
	jc, err := pv.joinTarget(coll, where+".coll")
	if err != nil {
		return err
	}
	union := vref{cls: jc, join: true}
	if hasPipeline {
		arr, ok := parsedb.ArrayValues(sub)
		if !ok {
			return invalidPipeline("%s.pipeline must be an array of stages", where)
		}
		if len(arr) > 0 {
			end, err := pv.pipeline(pv.classState(jc, true), arr, where+".pipeline")
			if err != nil {
				return err
			}
			end.frozen = true
			union = vref{st: end}
		}
	}
	// The joined class's documents flow on next to the pipeline's own: a
	// field comes from either, whatever earlier stages bound it to.
	s.shapes = []vref{{st: pv.frozen(s)}, union}
	s.alias = map[string][]vref{}
	return nil
}
