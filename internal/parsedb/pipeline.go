package parsedb

// Pipeline translation: an aggregation pipeline written with Parse field
// names (what Parse users and models expect) → the same pipeline against
// the storage format. The pipeline must already have passed the policy's
// validator (policy.ValidatePipeline); this file only translates. Which
// stages exist, the grammar of each one's argument and whether documents
// keep the class's shape after it are the stage table's
// (internal/pipelinestage); stageTranslations has one translation per
// grammar.
//
// While documents are class-shaped (no $group, $project with computed
// roots, $replaceRoot, $count, $bucket, $facet… yet), field names of the
// class are mapped to their storage names everywhere a field appears:
// "$artist" → "$_p_artist", objectId → _id, createdAt → _created_at,
// updatedAt → _updated_at, in expressions, $match keys, $sort/$project/
// $unset keys, $addFields outputs, $lookup localField/foreignField, … .
// $match values are converted the way a where's are: pointer values (bare
// objectId or {__type:"Pointer"}) → "Class$id", dates ({__type:"Date"},
// {$date}, ISO strings on Date fields) → BSON dates. {__type:"Date",iso}
// and {$date: iso} become BSON dates anywhere in the pipeline. Integral
// numbers become int32/int64 (MongoDB refuses $limit: 5.0 in places).
//
// Joins ($lookup, $graphLookup, $unionWith) are scoped with JoinScope:
//   - from/coll get the collection prefix;
//   - a $lookup gets a sub-pipeline that starts with the joined class's
//     scope filter ($match: policy filters + ACL) and a projection of its
//     visible fields; localField/foreignField are kept (MongoDB ≥ 5.0
//     accepts them together with a pipeline) except for a pointer joined to
//     objectId (or objectId to a pointer), which is rewritten to let +
//     $expr, since a pointer is stored as "Class$id" and the id as "id";
//   - a $unionWith gets the same two stages in front of its pipeline;
//   - a $graphLookup gets the scope filter AND-ed into
//     restrictSearchWithMatch, and is followed by a $set that rebuilds the
//     `as` array from the visible fields only (it has no sub-pipeline).

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
)

// JoinScope restricts what a pipeline may read from a joined class.
type JoinScope struct {
	// Filter is the storage-level filter every joined row must match
	// (policy filters and the identity's ACL); nil = none.
	Filter bson.D
	// Fields are the storage names of the joined class's visible fields
	// (VisibleProjectionFields); the joined rows carry nothing else.
	Fields []string
}

// PipelineOptions configure TranslatePipeline.
type PipelineOptions struct {
	// Schema resolves joined classes.
	Schema *Schema
	// Prefix is the collection prefix added to join targets.
	Prefix string
	// Joins scopes every joined class by name. A join whose class has no
	// entry fails (fail closed).
	Joins map[string]*JoinScope
}

// joinKeyVar is the variable a rewritten pointer $lookup binds.
const joinKeyVar = "parsemcpjoinkey"

// graphDocVar is the $map variable of the $graphLookup rebuild.
const graphDocVar = "parsemcpdoc"

// TranslatePipeline translates stages (decoded JSON: bson.D or
// map[string]any objects, []any or bson.A arrays) for class cls. It also
// returns the class whose shape the output documents still have (nil when
// a stage such as $group replaced it).
func TranslatePipeline(cls *Class, stages []any, opt PipelineOptions) (bson.A, *Class, error) {
	t := &pipelineTranslator{opt: opt}
	return t.stages(cls, stages)
}

// VisibleProjectionFields are the storage names of a class's visible REST
// fields (relations, which are not stored in the document, excluded),
// _id/_created_at/_updated_at always first.
func VisibleProjectionFields(cls *Class, fields []*Field) []string {
	out := []string{"_id", "_created_at", "_updated_at"}
	seen := map[string]bool{"_id": true, "_created_at": true, "_updated_at": true}
	for _, f := range fields {
		if f == nil || f.Type == TypeRelation {
			continue
		}
		name := f.Name
		s := StorageFieldName(cls, name)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// FieldsProjection is an inclusion projection of storage names.
func FieldsProjection(fields []string) bson.D {
	d := make(bson.D, 0, len(fields))
	for _, f := range fields {
		d = append(d, bson.E{Key: f, Value: 1})
	}
	return d
}

type pipelineTranslator struct {
	opt PipelineOptions
}

// ---------------------------------------------------------------------------
// Generic access (the validator accepted the shapes; these stay defensive).

func pipelineErr(format string, args ...any) error {
	return invalidQuery(format, args...)
}

// NormalizeNumber turns an integral JSON number into int32 (or int64 when
// it does not fit), leaving other numbers as float64.
func NormalizeNumber(v any) any {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			if i >= math.MinInt32 && i <= math.MaxInt32 {
				return int32(i)
			}
			return i
		}
		ff, err := x.Float64()
		if err != nil {
			return x.String()
		}
		f = ff
	case int:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return int32(x)
		}
		return int64(x)
	default:
		return v
	}
	if f == math.Trunc(f) && !math.IsInf(f, 0) && math.Abs(f) <= 1<<53 {
		if f >= math.MinInt32 && f <= math.MaxInt32 {
			return int32(f)
		}
		return int64(f)
	}
	return f
}

// ---------------------------------------------------------------------------
// Field names.

// storagePath maps a field path to storage while documents are class-shaped
// (cls non-nil): only a single-segment name is renamed.
func storagePath(cls *Class, path string) string {
	if cls == nil || strings.Contains(path, ".") {
		return path
	}
	return StorageFieldName(cls, path)
}

// refString translates an expression string ("$field", "$$ROOT.field").
func refString(cls *Class, s string) string {
	if cls == nil || !strings.HasPrefix(s, "$") {
		return s
	}
	if strings.HasPrefix(s, "$$") {
		name, path, ok := strings.Cut(s[2:], ".")
		if ok && (name == "ROOT" || name == "CURRENT") {
			return "$$" + name + "." + storagePath(cls, path)
		}
		return s
	}
	return "$" + storagePath(cls, s[1:])
}

// ---------------------------------------------------------------------------
// Values.

// literal converts a literal value: numbers normalized, {__type:"Date"} and
// {$date} to BSON dates, order of objects kept.
func literal(v any) (any, error) {
	if entries, ok := Entries(v); ok {
		if d, ok, err := dateObject(entries); ok || err != nil {
			return d, err
		}
		out := make(bson.D, 0, len(entries))
		for _, e := range entries {
			c, err := literal(e.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: e.Key, Value: c})
		}
		return out, nil
	}
	if arr, ok := ArrayValues(v); ok {
		out := make(bson.A, 0, len(arr))
		for _, el := range arr {
			c, err := literal(el)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	return NormalizeNumber(v), nil
}

// dateObject recognizes {__type:"Date",iso} and {$date: iso}.
func dateObject(entries []Entry) (any, bool, error) {
	if len(entries) == 1 && entries[0].Key == "$date" {
		if s, ok := entries[0].Value.(string); ok {
			d, ok := parseWhereDate(s)
			if !ok {
				return nil, true, pipelineErr("{\"$date\": %q} is not an ISO-8601 date (e.g. \"2024-01-31T00:00:00.000Z\")", truncateMsg(s, 40))
			}
			return d, true, nil
		}
	}
	if len(entries) == 2 {
		ty, _ := EntryValue(entries, "__type")
		iso, _ := EntryValue(entries, "iso")
		if ty == "Date" {
			s, ok := iso.(string)
			d, ok2 := parseWhereDate(s)
			if !ok || !ok2 {
				return nil, true, pipelineErr("a Date value is {\"__type\":\"Date\",\"iso\":\"2024-01-31T00:00:00.000Z\"}")
			}
			return d, true, nil
		}
	}
	return nil, false, nil
}

// expr translates an aggregation expression.
func (t *pipelineTranslator) expr(cls *Class, v any) (any, error) {
	switch x := v.(type) {
	case string:
		return refString(cls, x), nil
	}
	if entries, ok := Entries(v); ok {
		if d, ok, err := dateObject(entries); ok || err != nil {
			return d, err
		}
		if IsOperatorObject(entries) {
			op, arg := entries[0].Key, entries[0].Value
			var out any
			var err error
			switch op {
			case "$literal":
				out, err = literal(arg)
			case "$getField", "$setField", "$unsetField":
				out, err = t.fieldOperator(cls, arg)
			default:
				out, err = t.expr(cls, arg)
			}
			if err != nil {
				return nil, err
			}
			return bson.D{{Key: op, Value: out}}, nil
		}
		out := make(bson.D, 0, len(entries))
		for _, e := range entries {
			c, err := t.expr(cls, e.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: e.Key, Value: c})
		}
		return out, nil
	}
	if arr, ok := ArrayValues(v); ok {
		out := make(bson.A, 0, len(arr))
		for _, el := range arr {
			c, err := t.expr(cls, el)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	return NormalizeNumber(v), nil
}

// fieldOperator translates the argument of $getField/$setField/$unsetField:
// a literal field name read from the current document is renamed.
func (t *pipelineTranslator) fieldOperator(cls *Class, arg any) (any, error) {
	if name, ok := arg.(string); ok {
		return storagePath(cls, name), nil
	}
	entries, ok := Entries(arg)
	if !ok {
		return literal(arg)
	}
	input, hasInput := EntryValue(entries, "input")
	in, _ := input.(string)
	current := !hasInput || in == "$$ROOT" || in == "$$CURRENT"
	out := make(bson.D, 0, len(entries))
	for _, e := range entries {
		var c any
		var err error
		switch e.Key {
		case "field":
			if s, ok := e.Value.(string); ok && current {
				c = storagePath(cls, s)
			} else {
				c, err = literal(e.Value)
			}
		default:
			c, err = t.expr(cls, e.Value)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, bson.E{Key: e.Key, Value: c})
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// $match.

// match translates a query filter. cls is nil when documents are no longer
// class-shaped (no renaming, no typed values).
func (t *pipelineTranslator) match(cls *Class, v any) (bson.D, error) {
	entries, ok := Entries(v)
	if !ok {
		return nil, pipelineErr("$match needs a filter object")
	}
	out := make(bson.D, 0, len(entries))
	for _, e := range entries {
		switch {
		case e.Key == "$and" || e.Key == "$or" || e.Key == "$nor":
			arr, _ := ArrayValues(e.Value)
			subs := make(bson.A, 0, len(arr))
			for _, sub := range arr {
				d, err := t.match(cls, sub)
				if err != nil {
					return nil, err
				}
				subs = append(subs, d)
			}
			out = append(out, bson.E{Key: e.Key, Value: subs})
		case e.Key == "$expr":
			c, err := t.expr(cls, e.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: e.Key, Value: c})
		case strings.HasPrefix(e.Key, "$"):
			c, err := literal(e.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: e.Key, Value: c})
		default:
			var f *Field
			if cls != nil && !strings.Contains(e.Key, ".") {
				f = whereFieldOf(cls, e.Key)
			}
			c, err := t.matchValue(e.Key, f, e.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: storagePath(cls, e.Key), Value: c})
		}
	}
	return out, nil
}

// matchValue translates the value of a $match field: an operator object or
// a literal compared for equality.
func (t *pipelineTranslator) matchValue(key string, f *Field, v any) (any, error) {
	entries, ok := Entries(v)
	if ok && len(entries) > 0 && strings.HasPrefix(entries[0].Key, "$") {
		if d, ok, err := dateObject(entries); ok || err != nil {
			return d, err
		}
		out := make(bson.D, 0, len(entries))
		for _, e := range entries {
			var c any
			var err error
			switch e.Key {
			case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte":
				c, err = t.compared(key, f, e.Value)
			case "$in", "$nin", "$all":
				arr, ok := ArrayValues(e.Value)
				if !ok {
					return nil, pipelineErr("%s: %s needs an array", key, e.Key)
				}
				list := make(bson.A, 0, len(arr))
				for _, el := range arr {
					x, err := t.compared(key, f, el)
					if err != nil {
						return nil, err
					}
					list = append(list, x)
				}
				c = list
			case "$not":
				c, err = t.matchValue(key, f, e.Value)
			case "$elemMatch":
				if sub, ok := Entries(e.Value); ok && len(sub) > 0 && !strings.HasPrefix(sub[0].Key, "$") {
					c, err = t.match(nil, e.Value)
				} else {
					c, err = literal(e.Value)
				}
			default:
				c, err = literal(e.Value)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: e.Key, Value: c})
		}
		return out, nil
	}
	return t.compared(key, f, v)
}

// compared converts a value compared with field f: pointer values to
// "Class$id", ISO strings on Date fields to BSON dates (as in a where),
// everything else through literal.
func (t *pipelineTranslator) compared(key string, f *Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if f != nil {
		switch f.Type {
		case TypePointer:
			return eqValue(key, f, plainValue(v))
		case TypeDate:
			if s, ok := v.(string); ok {
				return eqValue(key, f, s)
			}
		}
	}
	return literal(v)
}

// plainValue converts ordered documents to maps (for the where helpers).
func plainValue(v any) any {
	if entries, ok := Entries(v); ok {
		m := make(map[string]any, len(entries))
		for _, e := range entries {
			m[e.Key] = plainValue(e.Value)
		}
		return m
	}
	if arr, ok := ArrayValues(v); ok {
		out := make([]any, len(arr))
		for i, el := range arr {
			out[i] = plainValue(el)
		}
		return out
	}
	return v
}

// ---------------------------------------------------------------------------
// Stages.

// stages translates a (sub-)pipeline; it returns the class-shape after it.
func (t *pipelineTranslator) stages(cls *Class, stages []any) (bson.A, *Class, error) {
	out := make(bson.A, 0, len(stages))
	for i, st := range stages {
		entries, ok := Entries(st)
		if !ok || len(entries) != 1 {
			return nil, nil, pipelineErr("stage %d must be an object with exactly one stage operator", i)
		}
		translated, next, err := t.stage(cls, entries[0].Key, entries[0].Value)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, translated...)
		cls = next
	}
	return out, cls, nil
}

// stageTranslation translates the argument of a stage of one grammar
// (pipelinestage.Arg; the stage table says which grammar each stage's
// argument has) into the stages sent: one, or more for $graphLookup.
type stageTranslation func(t *pipelineTranslator, cls *Class, name string, arg any) ([]any, error)

// stageTranslations holds a translation for every grammar of the stage
// table (TestStageTranslationsCoverTable); filled in init, since the
// sub-pipeline translations reach it again.
var stageTranslations map[pipelinestage.Arg]stageTranslation

func init() {
	stageTranslations = map[pipelinestage.Arg]stageTranslation{
		pipelinestage.ArgFilter:       (*pipelineTranslator).matchStage,
		pipelinestage.ArgSortKeys:     (*pipelineTranslator).sortStage,
		pipelinestage.ArgLiteral:      (*pipelineTranslator).literalStage,
		pipelinestage.ArgOutputName:   (*pipelineTranslator).outputNameStage,
		pipelinestage.ArgProjection:   (*pipelineTranslator).projectStage,
		pipelinestage.ArgNewFields:    (*pipelineTranslator).newFieldsStage,
		pipelinestage.ArgFieldNames:   (*pipelineTranslator).fieldNamesStage,
		pipelinestage.ArgUnwind:       (*pipelineTranslator).unwindStage,
		pipelinestage.ArgAccumulators: (*pipelineTranslator).accumulatorsStage,
		pipelinestage.ArgBucket:       (*pipelineTranslator).bucketStage,
		pipelinestage.ArgExpression:   (*pipelineTranslator).expressionStage,
		pipelinestage.ArgFacets:       (*pipelineTranslator).facetStage,
		pipelinestage.ArgLookup:       (*pipelineTranslator).lookupStage,
		pipelinestage.ArgUnionWith:    (*pipelineTranslator).unionWithStage,
		pipelinestage.ArgGraphLookup:  (*pipelineTranslator).graphLookup,
	}
}

func stageDoc(name string, v any) bson.D { return bson.D{{Key: name, Value: v}} }

// single is a translation into one stage.
func single(name string, v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	return []any{stageDoc(name, v)}, nil
}

// stage translates one stage into one or more stages and returns the
// class-shape after it (nil once a stage replaced the class's shape).
func (t *pipelineTranslator) stage(cls *Class, name string, arg any) ([]any, *Class, error) {
	spec, ok := pipelinestage.Of(name)
	translate := stageTranslations[spec.Arg]
	if !ok || translate == nil {
		return nil, nil, pipelineErr("unsupported stage %s", name)
	}
	out, err := translate(t, cls, name, arg)
	if err != nil {
		return nil, nil, err
	}
	if !spec.KeepsClass {
		cls = nil
	}
	return out, cls, nil
}

func (t *pipelineTranslator) matchStage(cls *Class, name string, arg any) ([]any, error) {
	d, err := t.match(cls, arg)
	return single(name, d, err)
}

func (t *pipelineTranslator) sortStage(cls *Class, name string, arg any) ([]any, error) {
	entries, _ := Entries(arg)
	d := make(bson.D, 0, len(entries))
	for _, e := range entries {
		c, err := literal(e.Value)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: storagePath(cls, e.Key), Value: c})
	}
	return single(name, d, nil)
}

func (t *pipelineTranslator) literalStage(_ *Class, name string, arg any) ([]any, error) {
	v, err := literal(arg)
	return single(name, v, err)
}

func (t *pipelineTranslator) outputNameStage(_ *Class, name string, arg any) ([]any, error) {
	return single(name, arg, nil)
}

func (t *pipelineTranslator) projectStage(cls *Class, name string, arg any) ([]any, error) {
	d, err := t.projection(cls, arg, true)
	return single(name, d, err)
}

func (t *pipelineTranslator) newFieldsStage(cls *Class, name string, arg any) ([]any, error) {
	entries, _ := Entries(arg)
	d := make(bson.D, 0, len(entries))
	for _, e := range entries {
		c, err := t.expr(cls, e.Value)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: storagePath(cls, e.Key), Value: c})
	}
	return single(name, d, nil)
}

func (t *pipelineTranslator) fieldNamesStage(cls *Class, name string, arg any) ([]any, error) {
	if s, ok := arg.(string); ok {
		return single(name, storagePath(cls, s), nil)
	}
	arr, _ := ArrayValues(arg)
	names := make(bson.A, 0, len(arr))
	for _, n := range arr {
		s, _ := n.(string)
		names = append(names, storagePath(cls, s))
	}
	return single(name, names, nil)
}

func (t *pipelineTranslator) unwindStage(cls *Class, name string, arg any) ([]any, error) {
	if s, ok := arg.(string); ok {
		return single(name, refString(cls, s), nil)
	}
	entries, _ := Entries(arg)
	d := make(bson.D, 0, len(entries))
	for _, e := range entries {
		var c any = NormalizeNumber(e.Value)
		if e.Key == "path" {
			s, _ := e.Value.(string)
			c = refString(cls, s)
		}
		d = append(d, bson.E{Key: e.Key, Value: c})
	}
	return single(name, d, nil)
}

func (t *pipelineTranslator) accumulatorsStage(cls *Class, name string, arg any) ([]any, error) {
	entries, _ := Entries(arg)
	d := make(bson.D, 0, len(entries))
	for _, e := range entries {
		c, err := t.expr(cls, e.Value)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: e.Key, Value: c})
	}
	return single(name, d, nil)
}

func (t *pipelineTranslator) bucketStage(cls *Class, name string, arg any) ([]any, error) {
	entries, _ := Entries(arg)
	d := make(bson.D, 0, len(entries))
	for _, e := range entries {
		var c any
		var err error
		switch e.Key {
		case "groupBy", "output":
			c, err = t.expr(cls, e.Value)
		default:
			c, err = literal(e.Value)
		}
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: e.Key, Value: c})
	}
	return single(name, d, nil)
}

func (t *pipelineTranslator) expressionStage(cls *Class, name string, arg any) ([]any, error) {
	c, err := t.expr(cls, arg)
	return single(name, c, err)
}

func (t *pipelineTranslator) facetStage(cls *Class, name string, arg any) ([]any, error) {
	entries, _ := Entries(arg)
	d := make(bson.D, 0, len(entries))
	for _, e := range entries {
		branch, _ := ArrayValues(e.Value)
		sub, _, err := t.stages(cls, branch)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: e.Key, Value: sub})
	}
	return single(name, d, nil)
}

func (t *pipelineTranslator) lookupStage(cls *Class, name string, arg any) ([]any, error) {
	d, err := t.lookup(cls, arg)
	return single(name, d, err)
}

func (t *pipelineTranslator) unionWithStage(_ *Class, name string, arg any) ([]any, error) {
	d, err := t.unionWith(arg)
	return single(name, d, err)
}

// projection translates a $project body; root is true for the top level
// (class field names are renamed only there).
func (t *pipelineTranslator) projection(cls *Class, arg any, root bool) (bson.D, error) {
	entries, _ := Entries(arg)
	d := make(bson.D, 0, len(entries))
	for _, e := range entries {
		key := e.Key
		if root {
			key = storagePath(cls, e.Key)
		}
		var c any
		var err error
		switch {
		case isNumberOrBool(e.Value):
			c = NormalizeNumber(e.Value)
		case IsSubProjection(e.Value):
			c, err = t.projection(nil, e.Value, false)
		default:
			c, err = t.expr(cls, e.Value)
		}
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: key, Value: c})
	}
	return d, nil
}

func isNumberOrBool(v any) bool {
	switch v.(type) {
	case bool, float64, float32, int, int32, int64, json.Number:
		return true
	}
	return false
}

// IsSubProjection reports whether a $project value is a nested projection
// ({"a": 1, "b": 0}) rather than an expression (an object of $ operators).
func IsSubProjection(v any) bool {
	entries, ok := Entries(v)
	if !ok || len(entries) == 0 {
		return false
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Key, "$") {
			return false
		}
	}
	return true
}

// joinClass resolves a join target and its scope.
func (t *pipelineTranslator) joinClass(v any) (*Class, *JoinScope, error) {
	name, _ := v.(string)
	var jc *Class
	if t.opt.Schema != nil {
		jc = t.opt.Schema.Class(name)
	}
	scope := t.opt.Joins[name]
	if jc == nil || scope == nil {
		return nil, nil, fmt.Errorf("parsedb: join into %q was not validated and scoped", name)
	}
	return jc, scope, nil
}

// scopeStages are the stages a joined class's sub-pipeline starts with.
func scopeStages(scope *JoinScope) bson.A {
	var out bson.A
	if len(scope.Filter) > 0 {
		out = append(out, stageDoc(pipelinestage.Match, scope.Filter))
	}
	if len(scope.Fields) > 0 {
		out = append(out, stageDoc(pipelinestage.Project, FieldsProjection(scope.Fields)))
	}
	return out
}

// joinedPipeline appends to sub what a $lookup's or $unionWith's
// pipeline runs on the joined class jc: its scope (filter, visible-fields
// projection), then the caller's stages user translated for jc.
func (t *pipelineTranslator) joinedPipeline(sub bson.A, jc *Class, scope *JoinScope, user []any) (bson.A, error) {
	sub = append(sub, scopeStages(scope)...)
	if len(user) == 0 {
		return sub, nil
	}
	translated, _, err := t.stages(jc, user)
	if err != nil {
		return nil, err
	}
	return append(sub, translated...), nil
}

func (t *pipelineTranslator) lookup(cls *Class, arg any) (bson.D, error) {
	entries, _ := Entries(arg)
	from, _ := EntryValue(entries, "from")
	jc, scope, err := t.joinClass(from)
	if err != nil {
		return nil, err
	}
	out := bson.D{{Key: "from", Value: t.opt.Prefix + jc.Name}}
	var let bson.D
	sub := bson.A{}
	lfv, hasLF := EntryValue(entries, "localField")
	ffv, _ := EntryValue(entries, "foreignField")
	if hasLF {
		lfName, _ := lfv.(string)
		ffName, _ := ffv.(string)
		lf, ff := storagePath(cls, lfName), storagePath(jc, ffName)
		var lField, fField *Field
		if cls != nil && !strings.Contains(lfName, ".") {
			lField = cls.Field(lfName)
		}
		if !strings.Contains(ffName, ".") {
			fField = jc.Field(ffName)
		}
		switch {
		case lField != nil && lField.Type == TypePointer && lField.TargetClass == jc.Name && ff == "_id":
			// Song.artist ("Artist$id") → Artist._id ("id").
			let = append(let, bson.E{Key: joinKeyVar, Value: bson.D{{Key: "$arrayElemAt", Value: bson.A{
				bson.D{{Key: "$split", Value: bson.A{bson.D{{Key: "$ifNull", Value: bson.A{"$" + lf, ""}}}, bson.D{{Key: "$literal", Value: "$"}}}}}, 1}}}})
			sub = append(sub, stageDoc(pipelinestage.Match, bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$_id", "$$" + joinKeyVar}}}}}))
		case cls != nil && lf == "_id" && fField != nil && fField.Type == TypePointer && fField.TargetClass == cls.Name:
			// Artist._id → Song.artist.
			let = append(let, bson.E{Key: joinKeyVar, Value: bson.D{{Key: "$concat", Value: bson.A{cls.Name + "$", "$_id"}}}})
			sub = append(sub, stageDoc(pipelinestage.Match, bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$" + ff, "$$" + joinKeyVar}}}}}))
		default:
			out = append(out, bson.E{Key: "localField", Value: lf}, bson.E{Key: "foreignField", Value: ff})
		}
	}
	if lv, ok := EntryValue(entries, "let"); ok {
		le, _ := Entries(lv)
		for _, e := range le {
			c, err := t.expr(cls, e.Value)
			if err != nil {
				return nil, err
			}
			let = append(let, bson.E{Key: e.Key, Value: c})
		}
	}
	var user []any
	if pv, ok := EntryValue(entries, "pipeline"); ok {
		user, _ = ArrayValues(pv)
	}
	if sub, err = t.joinedPipeline(sub, jc, scope, user); err != nil {
		return nil, err
	}
	if len(let) > 0 {
		out = append(out, bson.E{Key: "let", Value: let})
	}
	out = append(out, bson.E{Key: "pipeline", Value: sub})
	as, _ := EntryValue(entries, "as")
	out = append(out, bson.E{Key: "as", Value: as})
	return out, nil
}

func (t *pipelineTranslator) unionWith(arg any) (bson.D, error) {
	coll := arg
	var user []any
	if entries, ok := Entries(arg); ok {
		coll, _ = EntryValue(entries, "coll")
		if pv, ok := EntryValue(entries, "pipeline"); ok {
			user, _ = ArrayValues(pv)
		}
	}
	jc, scope, err := t.joinClass(coll)
	if err != nil {
		return nil, err
	}
	sub, err := t.joinedPipeline(bson.A{}, jc, scope, user)
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "coll", Value: t.opt.Prefix + jc.Name}, {Key: "pipeline", Value: sub}}, nil
}

func (t *pipelineTranslator) graphLookup(cls *Class, name string, arg any) ([]any, error) {
	entries, _ := Entries(arg)
	from, _ := EntryValue(entries, "from")
	jc, scope, err := t.joinClass(from)
	if err != nil {
		return nil, err
	}
	d := bson.D{}
	var as, depthField string
	hasRestrict := false
	for _, e := range entries {
		var c any
		switch e.Key {
		case "from":
			c = t.opt.Prefix + jc.Name
		case "startWith":
			c, err = t.expr(cls, e.Value)
		case "connectFromField", "connectToField":
			s, _ := e.Value.(string)
			c = storagePath(jc, s)
		case "as":
			as, _ = e.Value.(string)
			c = as
		case "depthField":
			depthField, _ = e.Value.(string)
			c = depthField
		case "restrictSearchWithMatch":
			hasRestrict = true
			var m bson.D
			m, err = t.match(jc, e.Value)
			c = m
			if err == nil && len(scope.Filter) > 0 {
				c = bson.D{{Key: "$and", Value: bson.A{m, scope.Filter}}}
			}
		default:
			c, err = literal(e.Value)
		}
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: e.Key, Value: c})
	}
	if !hasRestrict && len(scope.Filter) > 0 {
		d = append(d, bson.E{Key: "restrictSearchWithMatch", Value: scope.Filter})
	}
	out := []any{stageDoc(name, d)}
	if len(scope.Fields) > 0 && as != "" {
		keep := bson.D{}
		for _, f := range append(append([]string{}, scope.Fields...), depthField) {
			if f == "" {
				continue
			}
			keep = append(keep, bson.E{Key: f, Value: "$$" + graphDocVar + "." + f})
		}
		out = append(out, stageDoc(pipelinestage.Set, bson.D{{Key: as, Value: bson.D{{Key: "$map", Value: bson.D{
			{Key: "input", Value: "$" + as}, {Key: "as", Value: graphDocVar}, {Key: "in", Value: keep}}}}}}))
	}
	return out, nil
}
