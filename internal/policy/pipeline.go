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

import (
	"context"
	"fmt"
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
	MaxPipelineRegex  = 512
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
	// expression or filter can take such a reference apart.
	RefPaths []string
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
	rootState := pv.classState(cls)
	rootState.rootDocs = true
	if _, err := pv.pipeline(rootState, pipeline, "pipeline"); err != nil {
		return ValidatedPipeline{}, err
	}
	return ValidatedPipeline{Stages: pipeline, Joins: pv.joins, RefPaths: pv.refPaths}, nil
}

type pipelineValidator struct {
	e      *Engine
	ctx    context.Context
	schema *parsedb.Schema
	root   *parsedb.Class
	joins  []*parsedb.Class
	seen   map[string]bool
	// refPaths: see ValidatedPipeline.RefPaths.
	refPaths []string
	refSeen  map[string]bool
}

// noteRootRef records a path of the pipeline's own class read by a stage.
func (pv *pipelineValidator) noteRootRef(s *fieldState, path string) {
	if !s.rootDocs || s.cls == nil || path == "_id" {
		return
	}
	if pv.refSeen == nil {
		pv.refSeen = map[string]bool{}
	}
	if !pv.refSeen[path] {
		pv.refSeen[path] = true
		pv.refPaths = append(pv.refPaths, path)
	}
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
	// rootDocs: the documents are the pipeline's own class's stored rows
	// (not a joined class's, not reshaped).
	rootDocs bool
}

func (pv *pipelineValidator) classState(cls *parsedb.Class) *fieldState {
	s := &fieldState{cls: cls, pristine: true, usable: map[string]bool{}, intro: map[string]bool{}}
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
	s.rootDocs = false
	s.pristine = false
	s.anyRoot = false
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
			if f.Type == parsedb.TypePointer && (pv.e.Hidden(f.TargetClass) || pv.schema.Class(f.TargetClass) == nil) {
				// Any use of a pointer into a hidden class could take its
				// id apart ($substr, $split, comparisons): refused, and a
				// pointer into a missing class answers alike.
				return pv.e.TargetUnavailable(pv.ctx, "%s%s: %s", dollar, truncateText(path, 60), root)
			}
			switch {
			case f.Type == parsedb.TypeRelation:
				return invalidPipeline("%s is a Relation of %s: relations are not stored in the object, so a pipeline cannot read them (query %s with $relatedTo instead)", root, s.cls.Name, f.TargetClass)
			case f.Type == parsedb.TypePointer && path != root && !pv.e.Hidden(f.TargetClass):
				return invalidPipeline("%s is a Pointer to %s: %s%s is not a field; join it first, e.g. {\"$lookup\":{\"from\":%q,\"localField\":%q,\"foreignField\":\"objectId\",\"as\":\"%sDoc\"}}, then use %s%sDoc%s", root, f.TargetClass, dollar, path, f.TargetClass, root, root, dollar, root, path[len(root):])
			}
		}
	}
	if s.pristine && s.cls != nil {
		if strings.HasPrefix(root, "_") {
			return pv.notAllowed(s, root)
		}
		if err := pv.e.CheckReadField(s.cls, root); err != nil {
			return err
		}
		pv.noteRootRef(s, path)
		return nil
	}
	if s.restricted && !s.anyRoot && !s.usable[root] {
		return pv.notAllowed(s, root)
	}
	if s.cls != nil && strings.HasPrefix(root, "_") {
		return pv.notAllowed(s, root)
	}
	pv.noteRootRef(s, path)
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
	return nil
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
	switch name {
	case "$match":
		return pv.filter(s, arg, where, true)

	case "$sort":
		entries, ok := parsedb.Entries(arg)
		if !ok || len(entries) == 0 {
			return invalidPipeline("%s needs an object of field: 1 or -1", where)
		}
		for _, e := range entries {
			if err := pv.checkRef(s, e.Key, ""); err != nil {
				return err
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
		s.reset(n)
		return nil

	case "$project":
		return pv.project(s, arg, where)

	case "$addFields", "$set":
		entries, ok := parsedb.Entries(arg)
		if !ok || len(entries) == 0 {
			return invalidPipeline("%s needs an object of new fields", where)
		}
		for _, e := range entries {
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
		}
		for _, e := range entries {
			s.introduce(rootOf(e.Key))
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
		if err := pv.checkRef(s, p[1:], "$"); err != nil {
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
			s.introduce(rootOf(n))
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
		if err := pv.expr(s, id); err != nil {
			return err
		}
		var outs []string
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
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
			outs = append(outs, e.Key)
		}
		s.reset(outs...)
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
		if err := pv.expr(s, gb); err != nil {
			return err
		}
		outs := []string{"count"}
		if out, ok := parsedb.EntryValue(entries, "output"); ok {
			oe, ok := parsedb.Entries(out)
			if !ok {
				return invalidPipeline("%s: output must be an object of accumulators", where)
			}
			outs = outs[:0]
			for _, e := range oe {
				if err := pv.checkOutputName(s, e.Key, where); err != nil {
					return err
				}
				if err := pv.expr(s, e.Value); err != nil {
					return err
				}
				outs = append(outs, e.Key)
			}
		}
		s.reset(outs...)
		return nil

	case "$sortByCount":
		if err := pv.expr(s, arg); err != nil {
			return err
		}
		s.reset("count")
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
		if err := pv.expr(s, root); err != nil {
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
			return nil
		}
		s.reset()
		s.anyRoot = true
		return nil

	case "$redact":
		return pv.expr(s, arg)

	case "$facet":
		entries, ok := parsedb.Entries(arg)
		if !ok || len(entries) == 0 {
			return invalidPipeline("%s needs an object of named sub-pipelines", where)
		}
		var outs []string
		for _, e := range entries {
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			branch, ok := parsedb.ArrayValues(e.Value)
			if !ok {
				return invalidPipeline("%s.%s must be an array of stages", where, truncateText(e.Key, 40))
			}
			if _, err := pv.pipeline(s.clone(), branch, where+"."+e.Key); err != nil {
				return err
			}
			outs = append(outs, e.Key)
		}
		s.reset(outs...)
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
			if !strings.Contains(e.Key, ".") {
				delete(s.usable, e.Key)
			}
		}
		return nil
	}
	outs := []string{}
	for _, e := range entries {
		if e.Key == "_id" {
			if isExclusionValue(e.Value) {
				continue
			}
		}
		switch {
		case isInclusionValue(e.Value):
			if err := pv.checkRef(s, e.Key, ""); err != nil {
				return err
			}
		case parsedb.IsSubProjection(e.Value):
			// {"meta": {"source": 1}}: a projection inside a field.
			if err := pv.checkRef(s, e.Key, ""); err != nil {
				return err
			}
			if err := pv.nestedProjection(s, e.Value); err != nil {
				return err
			}
		default:
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
		}
		outs = append(outs, rootOf(e.Key))
	}
	// An inclusion projection keeps storage names, so documents stay
	// class-shaped for the translation, but only the listed fields remain.
	cls := s.cls
	s.reset(outs...)
	s.cls = cls
	return nil
}

func (pv *pipelineValidator) nestedProjection(s *fieldState, v any) error {
	entries, _ := parsedb.Entries(v)
	for _, e := range entries {
		if isInclusionValue(e.Value) || isExclusionValue(e.Value) {
			continue
		}
		if parsedb.IsSubProjection(e.Value) {
			if err := pv.nestedProjection(s, e.Value); err != nil {
				return err
			}
			continue
		}
		if err := pv.expr(s, e.Value); err != nil {
			return err
		}
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
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
		case parseOnlyOperators[e.Key]:
			return parseOnlyError(e.Key, where)
		case e.Key == "$text" || e.Key == "$comment":
			// No field references.
		case strings.HasPrefix(e.Key, "$"):
			return invalidPipeline("%s: unknown operator %s at the top of a filter (allowed there: $and, $or, $nor, $expr, $text, $comment)", where, truncateText(e.Key, 40))
		default:
			if err := pv.checkRef(s, e.Key, ""); err != nil {
				return err
			}
			if err := pv.fieldOperators(e.Value, where); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldOperators looks into a $match field's value for Parse-only operators.
func (pv *pipelineValidator) fieldOperators(v any, where string) error {
	entries, ok := parsedb.Entries(v)
	if !ok {
		return nil
	}
	for _, e := range entries {
		if parseOnlyOperators[e.Key] {
			return parseOnlyError(e.Key, where)
		}
		if e.Key == "$not" {
			if err := pv.fieldOperators(e.Value, where); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseOnlyError(op, where string) error {
	return invalidPipeline("%s: %s is a Parse where operator; pipelines use MongoDB syntax (use $lookup to join, or query_class/count_objects for where constraints)", where, op)
}

// expr walks an aggregation expression and checks its field references.
func (pv *pipelineValidator) expr(s *fieldState, v any) error {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "$$") {
			name, path, hasPath := strings.Cut(x[2:], ".")
			if hasPath && (name == "ROOT" || name == "CURRENT") {
				return pv.checkRef(s, path, "$")
			}
			if name == "ROOT" || name == "CURRENT" {
				// The whole document: every visible field is read.
				if s.rootDocs && s.cls != nil {
					for _, f := range pv.e.VisibleFields(s.cls) {
						pv.noteRootRef(s, f.Name)
					}
				}
				return nil
			}
			if hasInternalSegment(x) {
				return toolerror.Violationf("internal field referenced in a pipeline")
			}
			return nil
		}
		if strings.HasPrefix(x, "$") {
			return pv.checkRef(s, x[1:], "$")
		}
		return nil
	}
	if entries, ok := parsedb.Entries(v); ok {
		if parsedb.IsOperatorObject(entries) {
			op, arg := entries[0].Key, entries[0].Value
			switch op {
			case "$literal":
				return nil
			case "$getField", "$setField", "$unsetField":
				return pv.fieldOperatorExpr(s, op, arg)
			}
			return pv.expr(s, arg)
		}
		for _, e := range entries {
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
		}
		return nil
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		for _, el := range arr {
			if err := pv.expr(s, el); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldOperatorExpr checks $getField/$setField/$unsetField: a literal field
// name read from the current document ($$ROOT/$$CURRENT or no input) is a
// field reference.
func (pv *pipelineValidator) fieldOperatorExpr(s *fieldState, op string, arg any) error {
	if err := scanFieldOperator(op, arg); err != nil {
		return err
	}
	if name, ok := arg.(string); ok {
		return pv.checkRef(s, name, "")
	}
	entries, _ := parsedb.Entries(arg)
	field, _ := parsedb.EntryValue(entries, "field")
	if lit, ok := parsedb.Entries(field); ok && len(lit) == 1 {
		field = lit[0].Value
	}
	name, _ := field.(string)
	input, hasInput := parsedb.EntryValue(entries, "input")
	if in, ok := input.(string); !hasInput || (ok && (in == "$$ROOT" || in == "$$CURRENT")) {
		if op == "$getField" {
			if err := pv.checkRef(s, name, ""); err != nil {
				return err
			}
		} else if err := pv.checkOutputName(s, name, op); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if e.Key == "input" || e.Key == "value" {
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
		}
	}
	return nil
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
		if err := pv.checkRef(s, l, ""); err != nil {
			return err
		}
		if err := pv.checkRef(pv.classState(jc), f, ""); err != nil {
			return err
		}
	}
	if let, ok := parsedb.EntryValue(entries, "let"); ok {
		le, ok := parsedb.Entries(let)
		if !ok {
			return invalidPipeline("%s: let must be an object of variables", where)
		}
		for _, e := range le {
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
		}
	}
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
			if _, err := pv.pipeline(pv.classState(jc), arr, where+".pipeline"); err != nil {
				return err
			}
		}
	}
	for _, e := range entries {
		switch e.Key {
		case "from", "as", "localField", "foreignField", "let", "pipeline":
		default:
			return invalidPipeline("%s: unsupported option %s", where, truncateText(e.Key, 40))
		}
	}
	s.introduce(rootOf(asName))
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
	js := pv.classState(jc)
	for _, k := range []string{"startWith", "connectFromField", "connectToField", "as"} {
		if _, ok := parsedb.EntryValue(entries, k); !ok {
			return invalidPipeline("%s needs %s", where, k)
		}
	}
	var asName string
	for _, e := range entries {
		switch e.Key {
		case "from", "maxDepth":
		case "startWith":
			if err := pv.expr(s, e.Value); err != nil {
				return err
			}
		case "connectFromField", "connectToField":
			f, ok := e.Value.(string)
			if !ok {
				return invalidPipeline("%s: %s must be a field name", where, e.Key)
			}
			if err := pv.checkRef(js, f, ""); err != nil {
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
	s.introduce(rootOf(asName))
	return nil
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
	if hasPipeline {
		arr, ok := parsedb.ArrayValues(sub)
		if !ok {
			return invalidPipeline("%s.pipeline must be an array of stages", where)
		}
		if len(arr) > 0 {
			if _, err := pv.pipeline(pv.classState(jc), arr, where+".pipeline"); err != nil {
				return err
			}
		}
	}
	return nil
}
