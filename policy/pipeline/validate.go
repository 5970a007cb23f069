// Package pipeline is the policy's aggregation pipeline validator
// (SECURITY.md "Pipelines", "Classes", "Fields"). The policy engine calls
// it (policy.Engine.ValidatePipeline) and is what it asks about classes and
// fields (Policy); the stages it allows are the shared table of
// internal/pipelinestage, each validated by its function in stages.go.
package pipeline

// The aggregation pipeline validator. It runs
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
//   - Hidden references (values.go): the pass tracks the stored
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
	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Pipeline limits (SECURITY.md "Pipelines").
const (
	MaxStages = 20
	MaxDepth  = 20
)

// BlockedOperators are refused as security violations wherever they
// appear in a pipeline, as a stage or as an operator at any depth.
var BlockedOperators = []string{"$where", "$function", "$accumulator", "$out", "$merge",
	"$collMod", "$createIndex", "$dropIndex", "$planCacheSetFilter", "$planCacheClear",
	// Atlas Search stages: the Atlas tools are not part of this build.
	"$search", "$searchMeta", "$vectorSearch"}

// JoinableSystemClasses are the `_` classes a pipeline may join into
// (_Session too, in master posture only).
var JoinableSystemClasses = []string{"_User", "_Role", "_Installation"}

var (
	blockedPipeline = setOf(BlockedOperators)
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

// Policy is what the validator asks the policy engine (policy.Engine):
// the class gate, the field rules and the refusals that must read exactly
// as the engine's own.
type Policy interface {
	// AgentFields is the agent_fields allowlist of a class (empty: none).
	AgentFields(class string) []string
	Hidden(class string) bool
	// HiddenClassRefusal is the refusal of a hidden class: a missing
	// class's answer, byte for byte.
	HiddenClassRefusal(ctx context.Context, schema *parsedb.Schema, class string) error
	MasterPosture() bool
	ResolveClass(ctx context.Context, schema *parsedb.Schema, name string) (*parsedb.Class, error)
	CheckJoin(from, to string) error
	CheckReadField(cls *parsedb.Class, field string) error
	VisibleFields(cls *parsedb.Class) []*parsedb.Field
	TargetInvisible(schema *parsedb.Schema, class string) bool
	// TargetUnavailableRefusal is the refusal of a path through a Pointer
	// or Relation whose target class is hidden or missing.
	TargetUnavailableRefusal(ctx context.Context, format string, args ...any) error
}

// Validated is a pipeline the validator accepted.
type Validated struct {
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

// Validate checks an aggregation pipeline for class cls under policy e.
// Elements may be bson.D (ordered, as decoded from the raw arguments) or
// map[string]any; arrays []any or bson.A.
func Validate(ctx context.Context, e Policy, schema *parsedb.Schema, cls *parsedb.Class, pipeline []any) (Validated, error) {
	if len(pipeline) == 0 {
		return Validated{}, toolerror.New(toolerror.InvalidQuery, "pipeline must be a non-empty array of stages, e.g. [{\"$match\":{\"genre\":\"rock\"}},{\"$group\":{\"_id\":\"$artist\",\"n\":{\"$sum\":1}}}]")
	}
	pv := &validator{e: e, ctx: ctx, schema: schema, root: cls, seen: map[string]bool{}}
	for _, st := range pipeline {
		if err := pv.scan(st, 1, ""); err != nil {
			return Validated{}, err
		}
	}
	if err := parsedb.CheckSizeLimits(pipeline); err != nil {
		return Validated{}, err
	}
	rootState := pv.classState(cls, false)
	if _, err := pv.pipeline(rootState, pipeline, "pipeline"); err != nil {
		return Validated{}, err
	}
	return Validated{Stages: pipeline, Joins: pv.joins, RefPaths: pv.refPaths, JoinRefPaths: pv.joinRefs}, nil
}

type validator struct {
	e      Policy
	ctx    context.Context
	schema *parsedb.Schema
	root   *parsedb.Class
	joins  []*parsedb.Class
	seen   map[string]bool
	// refPaths, joinRefs: see Validated.RefPaths, JoinRefPaths.
	refPaths []string
	joinRefs map[string][]string
	refSeen  map[string]bool
	// prev is a frozen copy of prevOf as the current stage started: the
	// state values read by the stage refer to (values.go).
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

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
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
func (pv *validator) scan(v any, depth int, parentOp string) error {
	if entries, ok := parsedb.Entries(v); ok {
		if depth > MaxDepth {
			return toolerror.Violationf("pipeline nesting deeper than %d levels", MaxDepth)
		}
		for _, e := range entries {
			if err := scanKey(e, parentOp); err != nil {
				return err
			}
			if err := pv.scan(e.Value, depth+1, e.Key); err != nil {
				return err
			}
		}
		return nil
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		if depth > MaxDepth {
			return toolerror.Violationf("pipeline nesting deeper than %d levels", MaxDepth)
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

// scanKey checks one key of a pipeline object (and the value of the
// operators whose argument is checked here) against the floor.
func scanKey(e parsedb.Entry, parentOp string) error {
	if blockedPipeline[e.Key] {
		return toolerror.Violationf("blocked pipeline operator %s", e.Key)
	}
	if hasInternalSegment(e.Key) {
		return toolerror.Violationf("internal field %q used as a key in a pipeline", e.Key)
	}
	if len(e.Key) > 1 && strings.ContainsRune(e.Key[1:], '$') {
		// An output name, a nested spec's or a literal's key
		// "Hidden$id" would reach the row codec, which redacts such
		// a key for a hidden class only: one call would tell hidden
		// class names from missing ones (SECURITY.md "Object keys
		// are values too"). Operators hold one "$", at the start.
		return invalidPipeline("invalid key %q in pipeline: a key holds no \"$\" after its first character", truncateText(e.Key, 60))
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
	// copy; an empty list is a computed value (values.go).
	alias map[string][]vref
	// frozen: a snapshot that no stage changes any more (resolutions of
	// its paths are memoized); sortedKeys caches its alias keys.
	frozen     bool
	sortedKeys []string
}

// classState is the state of a class's stored rows: the pipeline's own
// class, or a joined class (join).
func (pv *validator) classState(cls *parsedb.Class, join bool) *fieldState {
	s := &fieldState{cls: cls, pristine: true, usable: map[string]bool{}, intro: map[string]bool{},
		shapes: []vref{{cls: cls, join: join}}, alias: map[string][]vref{}}
	if af := pv.e.AgentFields(cls.Name); len(af) > 0 {
		s.restricted = true
		for _, f := range append([]string{"objectId", "createdAt", "updatedAt"}, af...) {
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
func (pv *validator) checkRef(s *fieldState, path, dollar string) error {
	// No "$" inside a path either: a segment "Hidden$id" would read an
	// object key the row codec redacts (SECURITY.md "Object keys are
	// values too"), as a where's path may not.
	if path == "" || strings.Contains(path, "$") {
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
				return pv.e.TargetUnavailableRefusal(pv.ctx, "%s%s: %s", dollar, truncateText(path, 60), root)
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

func (pv *validator) notAllowed(s *fieldState, root string) error {
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
func (pv *validator) checkOutputName(s *fieldState, name, what string) error {
	// No "$" anywhere: the name is a key of the rows the codec shows, and a
	// key "Hidden$id" is redacted for a hidden class only.
	if name == "" || strings.ContainsRune(name, '$') || strings.ContainsRune(name, 0) {
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
func (pv *validator) pipeline(s *fieldState, stages []any, where string) (*fieldState, error) {
	if len(stages) == 0 {
		return nil, invalidPipeline("%s must not be empty", where)
	}
	if len(stages) > MaxStages {
		return nil, invalidPipeline("%s has %d stages; at most %d are allowed", where, len(stages), MaxStages)
	}
	for i, st := range stages {
		entries, ok := parsedb.Entries(st)
		if !ok || len(entries) != 1 {
			return nil, invalidPipeline("%s[%d] must be an object with exactly one stage operator, e.g. {\"$match\":{…}}", where, i)
		}
		name, arg := entries[0].Key, entries[0].Value
		if _, ok := pipelinestage.Of(name); !ok {
			return nil, invalidPipeline("%s[%d]: unknown or unsupported stage %s (allowed: %s)", where, i, truncateText(name, 40), strings.Join(pipelinestage.Names(), " "))
		}
		if err := pv.stage(s, name, arg, fmt.Sprintf("%s[%d].%s", where, i, name)); err != nil {
			return nil, err
		}
	}
	return s, nil
}
