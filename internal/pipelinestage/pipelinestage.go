// Package pipelinestage is the table of the aggregation stages parse-mcp
// accepts in a caller's pipeline, at the top level and in sub-pipelines
// ($facet outputs, $lookup.pipeline, $unionWith.pipeline), with every fact
// about a stage that more than one layer reads (ARCHITECTURE.md "Where each
// rule lives"):
//
//   - the policy's validator (policy/pipeline) allows exactly these stages,
//     with one validate function per entry (stageValidators, keyed by these
//     names);
//   - the translator (internal/parsedb/pipeline.go) renames and converts a
//     stage's argument by its Arg and knows from KeepsClass whether the
//     documents still have the class's shape (storage names) after it;
//   - the aggregate tool (tools/aggregate.go) reads Leading, Bounds,
//     SubPipelines and Join to place the visible-fields projection, the
//     automatic $limit, the unwind guards and the REST shape of joined rows.
//
// Adding or changing a stage is one entry here, its validate function in
// policy/pipeline and, for a new argument grammar, one translation in
// parsedb; the tests fail until all three agree (TestPipelineStagesAgree and
// TestStageNamesOnlyInTable in tools, TestStageValidatorsMatchTable in
// policy/pipeline, TestStageTranslationsCoverTable in parsedb).
//
// The package is a leaf (it imports nothing of the project), so the data
// layer, which must not import the policy, and the policy, which imports the
// data layer, can both read it.
package pipelinestage

// The stage names. Code outside this package names a stage by these
// constants, never by a string literal (TestStageNamesOnlyInTable).
const (
	Match       = "$match"
	Group       = "$group"
	Sort        = "$sort"
	Project     = "$project"
	Limit       = "$limit"
	Skip        = "$skip"
	Unwind      = "$unwind"
	Lookup      = "$lookup"
	Count       = "$count"
	AddFields   = "$addFields"
	Set         = "$set"
	Unset       = "$unset"
	Bucket      = "$bucket"
	BucketAuto  = "$bucketAuto"
	Facet       = "$facet"
	Sample      = "$sample"
	SortByCount = "$sortByCount"
	ReplaceRoot = "$replaceRoot"
	ReplaceWith = "$replaceWith"
	Redact      = "$redact"
	GraphLookup = "$graphLookup"
	UnionWith   = "$unionWith"
)

// Arg is the grammar of a stage's argument: what the translator renames
// (Parse field names → storage names while documents are class-shaped) and
// converts (dates, integral numbers) in it.
type Arg int

// The argument grammars.
const (
	// ArgNone is the zero value: no stage has it.
	ArgNone Arg = iota
	// ArgFilter is a query filter ($match): keys renamed, values compared
	// with a field converted as a where's are.
	ArgFilter
	// ArgSortKeys is {field: direction}: keys renamed.
	ArgSortKeys
	// ArgLiteral is a literal value ($limit n, $sample {size}).
	ArgLiteral
	// ArgOutputName is the name of a new field, sent as written ($count).
	ArgOutputName
	// ArgProjection is a $project body: inclusions, exclusions, nested
	// projections and computed fields.
	ArgProjection
	// ArgNewFields is {field: expression}: keys renamed, values expressions.
	ArgNewFields
	// ArgFieldNames is a field name or an array of them ($unset).
	ArgFieldNames
	// ArgUnwind is "$path" or {path, includeArrayIndex, …}.
	ArgUnwind
	// ArgAccumulators is {_id: expression, output: {accumulator: …}}.
	ArgAccumulators
	// ArgBucket is a $bucket/$bucketAuto body: groupBy and output are
	// expressions, the rest literals.
	ArgBucket
	// ArgExpression is one aggregation expression.
	ArgExpression
	// ArgFacets is {output: sub-pipeline}.
	ArgFacets
	// ArgLookup is a $lookup body (a join with an optional sub-pipeline).
	ArgLookup
	// ArgUnionWith is a class name or {coll, pipeline}.
	ArgUnionWith
	// ArgGraphLookup is a $graphLookup body (a recursive join).
	ArgGraphLookup
)

// SubPipelines says where a stage holds sub-pipelines.
type SubPipelines int

// Where sub-pipelines are.
const (
	// NoSubPipelines: the stage holds none.
	NoSubPipelines SubPipelines = iota
	// EachValue: every value of the stage's object is a sub-pipeline
	// ($facet).
	EachValue
	// PipelineOption: the "pipeline" option is one ($lookup, $unionWith).
	PipelineOption
)

// Join describes a stage that reads another class.
type Join struct {
	// From is the option naming the joined class ("from", "coll"); a
	// $unionWith may also be the bare class name.
	From string
	// As: the joined rows are put in the "as" array of each document (the
	// aggregate tool shows them in the joined class's REST shape), rather
	// than flowing on next to the pipeline's own rows.
	As bool
}

// Spec is everything more than one layer needs to know about a stage.
type Spec struct {
	// Name is the stage operator, e.g. "$match".
	Name string
	// Arg is the grammar of the stage's argument.
	Arg Arg
	// KeepsClass: the documents after the stage still have the class's
	// shape (its stored fields, under storage names), so the stages after
	// it name class fields; false after $group, $count, $facet, … .
	KeepsClass bool
	// Leading: the stage only filters by field name, orders or pages, so
	// at the head of a pipeline it may run before the visible-fields
	// projection and use indexes — unless it mentions $expr, which can see
	// the whole document through $$ROOT.
	Leading bool
	// Bounds: a pipeline ending with the stage has a bounded output, so no
	// automatic $limit is appended.
	Bounds bool
	// SubPipelines says where the stage holds sub-pipelines.
	SubPipelines SubPipelines
	// Join is set (From not empty) for a stage that reads another class.
	Join Join
}

var (
	joinAs    = Join{From: "from", As: true}
	joinUnion = Join{From: "coll"}
)

// table is the one table of stages, in the order the validator lists them
// to the caller.
var table = []Spec{
	{Name: Match, Arg: ArgFilter, KeepsClass: true, Leading: true},
	{Name: Group, Arg: ArgAccumulators},
	{Name: Sort, Arg: ArgSortKeys, KeepsClass: true, Leading: true},
	{Name: Project, Arg: ArgProjection, KeepsClass: true},
	{Name: Limit, Arg: ArgLiteral, KeepsClass: true, Leading: true, Bounds: true},
	{Name: Skip, Arg: ArgLiteral, KeepsClass: true, Leading: true},
	{Name: Unwind, Arg: ArgUnwind, KeepsClass: true},
	{Name: Lookup, Arg: ArgLookup, KeepsClass: true, SubPipelines: PipelineOption, Join: joinAs},
	{Name: Count, Arg: ArgOutputName, Bounds: true},
	{Name: AddFields, Arg: ArgNewFields, KeepsClass: true},
	{Name: Set, Arg: ArgNewFields, KeepsClass: true},
	{Name: Unset, Arg: ArgFieldNames, KeepsClass: true},
	{Name: Bucket, Arg: ArgBucket},
	{Name: BucketAuto, Arg: ArgBucket},
	{Name: Facet, Arg: ArgFacets, SubPipelines: EachValue},
	{Name: Sample, Arg: ArgLiteral, KeepsClass: true},
	{Name: SortByCount, Arg: ArgExpression},
	{Name: ReplaceRoot, Arg: ArgExpression},
	{Name: ReplaceWith, Arg: ArgExpression},
	{Name: Redact, Arg: ArgExpression, KeepsClass: true},
	{Name: GraphLookup, Arg: ArgGraphLookup, KeepsClass: true, Join: joinAs},
	{Name: UnionWith, Arg: ArgUnionWith, KeepsClass: true, SubPipelines: PipelineOption, Join: joinUnion},
}

var byName = func() map[string]*Spec {
	m := make(map[string]*Spec, len(table))
	for i := range table {
		m[table[i].Name] = &table[i]
	}
	return m
}()

// Of returns the stage named name; ok is false for a stage outside the
// table (refused by the validator).
func Of(name string) (Spec, bool) {
	s, ok := byName[name]
	if !ok {
		return Spec{}, false
	}
	return *s, true
}

// All returns the table, in order.
func All() []Spec {
	return append([]Spec(nil), table...)
}

// Names returns the stage names, in the table's order.
func Names() []string {
	out := make([]string, len(table))
	for i, s := range table {
		out[i] = s.Name
	}
	return out
}
