package tools

// The aggregate tool and the pipeline plumbing shared with export_data's
// pipeline mode (RunPipelineRows).
//
// Decisions where the spec is silent (docs/decisions.md):
//   - Every pipeline sent is: the policy's $match stages (tenant first,
//     then canonical/agent filters, then the identity's ACL scope —
//     policy.PipelineScope), the caller's stages translated to storage names
//     (parsedb.TranslatePipeline), with an inclusion $project of the class's
//     visible fields inserted after the caller's leading $match/$sort/
//     $skip/$limit stages (so those still use indexes), then the automatic
//     {"$limit":200}. The projection guarantees that no internal field, no
//     field outside agent_fields and no protected field ever enters the
//     pipeline, whatever the stages do with $$ROOT, $objectToArray or
//     $getField. Joined classes get the same treatment inside their
//     sub-pipelines (see parsedb/pipeline.go).
//   - Rows are shown the way Parse Server's aggregate endpoint names them:
//     _id is objectId (also a $group key; a null _id is objectId: null),
//     _created_at/_updated_at are createdAt/updatedAt; values are compact
//     (dates ISO, pointers by id) unless shape is rest (docs/reading.md "Row
//     shapes"); hidden-class references are redacted at any depth.
//   - Pointer compaction applies to top-level `_p_` columns only; a column
//     whose bare name is taken by another column keeps its storage name and
//     raw "Class$id" value; a column mixing classes or holding redacted or
//     non-pointer values shows REST pointer objects.
//   - pipeline_stages is the list of stage operators actually sent, so the
//     model sees the injected filters, projection and limit.
//   - aggregate also takes dry_run (the pipeline that would be sent).
//   - MongoDB's own rejections of a pipeline are invalid_query with the
//     error's code and code name only (its message can quote stored values;
//     it goes to the operator log — SECURITY.md "Errors and logging");
//     FerretDB's "not implemented" names the missing feature.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// Limits of the aggregate tools.
const (
	// AggregateAutoLimit is appended to a pipeline that does not end with
	// $limit or $count.
	AggregateAutoLimit = 200
	// PipelineRowsCap bounds RunPipelineRows (export_data's row_cap max).
	PipelineRowsCap = 10000
	// pipelineRowsBytes bounds the rows RunPipelineRows holds in memory.
	pipelineRowsBytes = 32 << 20
	// aggEnvelopeReserve is kept free of rows for the envelope around them.
	aggEnvelopeReserve = 4096
)

// AggregateTools are the grouping, distinct and pipeline tools.
func AggregateTools() []*Tool {
	ro := func(name string, timeout time.Duration) policy.ToolInfo {
		return policy.ToolInfo{Name: name, Category: policy.CategoryAggregate, Tier: config.TierReadonly, Timeout: timeout, Operation: policy.OpFind, UntrustedOutput: true}
	}
	return []*Tool{
		{
			ToolInfo:     ro("aggregate", 60*time.Second),
			Description:  "Run a MongoDB aggregation pipeline on a class using Parse field names (objectId, createdAt, pointers by name); capped at 200 rows unless it ends with $limit or $count.",
			Example:      `{"class_name":"Song","pipeline":[{"$group":{"_id":"$genre","n":{"$sum":1}}}]}`,
			ReadOnly:     true,
			OutputSchema: aggregateOutSchema,
			Handler:      Typed(aggregateTool),
		},
		{
			ToolInfo:     ro("group_by", 45*time.Second),
			Description:  "Count (or sum/avg/min/max a number field) per value of a field, e.g. songs per genre.",
			Example:      `{"class_name":"Song","field":"genre","operation":"sum","value_field":"plays"}`,
			ReadOnly:     true,
			OutputSchema: groupOut(false),
			Handler:      Typed(groupByTool),
		},
		{
			ToolInfo:     ro("group_by_date", 45*time.Second),
			Description:  "Count (or sum/avg/min/max) objects per interval of a Date field, in a timezone.",
			Example:      `{"class_name":"Song","field":"createdAt","interval":"month"}`,
			ReadOnly:     true,
			OutputSchema: groupOut(true),
			Handler:      Typed(groupByDateTool),
		},
		{
			ToolInfo:     ro("distinct", 30*time.Second),
			Description:  "List the distinct values of a field (array fields are flattened).",
			Example:      `{"class_name":"Song","field":"genre"}`,
			ReadOnly:     true,
			OutputSchema: distinctOutSchema,
			Handler:      Typed(distinctTool),
		},
	}
}

// pipelineArg is a pipeline argument, decoded by PipelineArg (an absent
// optional one is nil).
type pipelineArg []any

func (p *pipelineArg) decodeArg(ctx context.Context, args Args, name string, f *argField) error {
	if !f.required && args[name] == nil {
		return nil
	}
	stages, err := PipelineArg(ctx, args, name)
	*p = stages
	return err
}

func (*pipelineArg) schema() string { return `"type":"array","items":{"type":"object"}` }

// PipelineArg returns a pipeline argument with the key order of its objects
// kept (from the call's raw arguments when available).
func PipelineArg(ctx context.Context, args Args, name string) ([]any, error) {
	v, found, err := OrderedArgument(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found {
		v = args[name]
	}
	if v == nil {
		return nil, invalid("%s is required: an array of aggregation stages", name)
	}
	if str, ok := v.(string); ok && strings.HasPrefix(strings.TrimSpace(str), "[") {
		// Models sometimes send the pipeline as a JSON string.
		dec := json.NewDecoder(strings.NewReader(str))
		dec.UseNumber()
		if v, err = decodeOrdered(dec, 0); err != nil {
			return nil, err
		}
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, invalid("%s must be an array of stages, got %s", name, jsonType(v))
	}
	return arr, nil
}

// pipelinePlan is a validated, translated and scoped pipeline.
type pipelinePlan struct {
	cls *parsedb.Class
	// endClass is the class whose shape the output rows still have (nil
	// after $group and other schema-replacing stages).
	endClass *parsedb.Class
	// joined maps the `as` field of each top-level $lookup/$graphLookup to
	// the joined class, so joined objects are shown in REST shape too
	// (only while rows keep the class shape).
	joined   map[string]*parsedb.Class
	pipeline bson.A
	// autoLimited: the automatic $limit was appended.
	autoLimited bool
}

// planPipeline runs every gate on a caller's pipeline and builds the exact
// pipeline to send. autoLimit > 0 appends {$limit: autoLimit} unless the
// caller's last stage is $limit or $count.
func planPipeline(ctx context.Context, d *Deps, className string, stages []any, applyCanonical bool, autoLimit int) (*pipelinePlan, error) {
	schema, cls, err := d.resolveClass(ctx, className)
	if err != nil {
		return nil, err
	}
	vp, err := d.Policy.ValidatePipeline(ctx, schema, cls, stages)
	if err != nil {
		return nil, err
	}
	scope, _, err := d.Policy.PipelineScope(ctx, schema, cls, applyCanonical)
	if err != nil {
		return nil, err
	}
	joins := map[string]*parsedb.JoinScope{}
	hidden := d.Policy.HiddenRefs(schema)
	for _, jc := range vp.Joins {
		f, err := d.Policy.JoinScope(ctx, schema, jc)
		if err != nil {
			return nil, err
		}
		// Joined rows whose value at a path the stages read is a reference
		// to a hidden class are left out of the join, as the pipeline's
		// own rows are (SECURITY.md, "Hidden references").
		if nh := hidden.NotHiddenRefFilterAnyType(jc, vp.JoinRefPaths[jc.Name]); nh != nil {
			if len(f) == 0 {
				f = nh
			} else {
				f = bson.D{{Key: "$and", Value: append(bson.A{f}, nh[0].Value.(bson.A)...)}}
			}
		}
		joins[jc.Name] = &parsedb.JoinScope{Filter: f, Fields: parsedb.VisibleProjectionFields(jc, d.Policy.VisibleFields(jc))}
	}
	user, end, err := parsedb.TranslatePipeline(cls, vp.Stages, parsedb.PipelineOptions{Schema: schema, Prefix: d.Store.Prefix, Joins: joins})
	if err != nil {
		return nil, err
	}
	user = guardUnwinds(user, hidden)
	// The visible-fields projection goes after the caller's leading stages
	// that only filter (by field name), order or page, so those can still
	// use indexes; a $match with $expr (which can see the whole document
	// through $$ROOT) always comes after it.
	at := 0
	for at < len(user) && isLeadingStage(user[at]) {
		at++
	}
	proj := bson.D{{Key: pipelinestage.Project, Value: parsedb.FieldsProjection(parsedb.VisibleProjectionFields(cls, d.Policy.VisibleFields(cls)))}}
	full := make(bson.A, 0, len(scope)+len(user)+3)
	full = append(full, scope...)
	// Rows whose value at a path the stages read is a reference to a hidden
	// class never enter the caller's stages (SECURITY.md, "Hidden
	// references"): no expression or filter can take it apart.
	if nh := hidden.NotHiddenRefFilterAnyType(cls, vp.RefPaths); nh != nil {
		full = append(full, bson.D{{Key: pipelinestage.Match, Value: nh}})
	}
	full = append(full, user[:at]...)
	full = append(full, proj)
	full = append(full, user[at:]...)
	plan := &pipelinePlan{cls: cls, endClass: end}
	if end != nil {
		plan.joined = joinedFields(vp.Stages, schema)
	}
	if last, _ := pipelinestage.Of(callerStageName(vp.Stages[len(vp.Stages)-1])); autoLimit > 0 && !last.Bounds {
		full = append(full, bson.D{{Key: pipelinestage.Limit, Value: int32(autoLimit)}})
		plan.autoLimited = true
	}
	plan.pipeline = full
	return plan, nil
}

// guardUnwinds puts the not-a-hidden-reference conjunct on the unwound path
// right after each of the caller's $unwind stages, at the top level and in
// every sub-pipeline ($facet outputs, $lookup and $unionWith pipelines, at
// any depth): an array nested in a stored array hides its elements from
// the conjunct ahead of the stages (MongoDB matches one array level), and
// $unwind lifts them one level, where a path such as "$tags.objectId"
// would reach a hidden pointer's id, and a later $match could bisect it
// (SECURITY.md "Hidden references").
func guardUnwinds(stages bson.A, hidden *parsedb.HiddenRefs) bson.A {
	out := make(bson.A, 0, len(stages))
	for _, st := range stages {
		d, ok := st.(bson.D)
		if !ok || len(d) != 1 {
			out = append(out, st)
			continue
		}
		stage, _ := pipelinestage.Of(d[0].Key)
		switch stage.SubPipelines {
		case pipelinestage.EachValue:
			if outputs, ok := d[0].Value.(bson.D); ok {
				guarded := make(bson.D, len(outputs))
				for i, e := range outputs {
					guarded[i] = bson.E{Key: e.Key, Value: guardSubPipeline(e.Value, hidden)}
				}
				st = bson.D{{Key: d[0].Key, Value: guarded}}
			}
		case pipelinestage.PipelineOption:
			if spec, ok := d[0].Value.(bson.D); ok {
				guarded := make(bson.D, len(spec))
				for i, e := range spec {
					if e.Key == "pipeline" {
						e = bson.E{Key: e.Key, Value: guardSubPipeline(e.Value, hidden)}
					}
					guarded[i] = e
				}
				st = bson.D{{Key: d[0].Key, Value: guarded}}
			}
		}
		out = append(out, st)
		if d[0].Key != pipelinestage.Unwind {
			continue
		}
		path, _ := d[0].Value.(string)
		if opts, ok := d[0].Value.(bson.D); ok {
			for _, e := range opts {
				if e.Key == "path" {
					path, _ = e.Value.(string)
				}
			}
		}
		if !strings.HasPrefix(path, "$") || strings.HasPrefix(path, "$$") {
			continue
		}
		if nh := hidden.NotHiddenRefAtStoragePath(path[1:]); nh != nil {
			out = append(out, bson.D{{Key: pipelinestage.Match, Value: nh}})
		}
	}
	return out
}

// guardSubPipeline is guardUnwinds on a sub-pipeline value (bson.A or
// []any); any other value is returned unchanged.
func guardSubPipeline(v any, hidden *parsedb.HiddenRefs) any {
	switch p := v.(type) {
	case bson.A:
		return guardUnwinds(p, hidden)
	case []any:
		return guardUnwinds(bson.A(p), hidden)
	}
	return v
}

// isLeadingStage: a translated stage that may run before the
// visible-fields projection (pipelinestage.Spec.Leading).
func isLeadingStage(st any) bool {
	spec, ok := pipelinestage.Of(stageName(st))
	return ok && spec.Leading && !mentionsKey(st.(bson.D)[0].Value, "$expr")
}

// mentionsKey reports whether key appears as an object key anywhere in v.
func mentionsKey(v any, key string) bool {
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if e.Key == key || mentionsKey(e.Value, key) {
				return true
			}
		}
	case bson.A:
		for _, el := range x {
			if mentionsKey(el, key) {
				return true
			}
		}
	}
	return false
}

// callerStageName is the operator of one of the caller's stages.
func callerStageName(st any) string {
	switch x := st.(type) {
	case bson.D:
		if len(x) == 1 {
			return x[0].Key
		}
	case map[string]any:
		for k := range x {
			return k
		}
	}
	return ""
}

func stageName(st any) string {
	if d, ok := st.(bson.D); ok && len(d) == 1 {
		return d[0].Key
	}
	return ""
}

// stageNames lists the operators of a pipeline.
func stageNames(p bson.A) []string {
	out := make([]string, len(p))
	for i, st := range p {
		out[i] = stageName(st)
	}
	return out
}

// pipelineJSON renders a pipeline as relaxed Extended JSON (dates as
// {"$date":…}), keeping key order, for dry runs.
func pipelineJSON(p bson.A) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, st := range p {
		b, err := bson.MarshalExtJSON(st, false, false)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	return json.RawMessage(buf.Bytes()), nil
}

// dryRun is the answer of every dry_run:true call, after every gate ran.
//
// The pipeline is shown without the hidden class names of the policy's
// not-a-hidden-reference conjuncts (parsedb.WithoutHiddenNames): they would
// list every hidden class.
func dryRun(className string, params map[string]any, p bson.A) (Dynamic, error) {
	pj, err := pipelineJSON(parsedb.WithoutHiddenNames(p).(bson.A))
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"dry_run":    true,
		"class_name": className,
		"parameters": params,
		"pipeline":   pj,
		"hint":       "This is the exact pipeline that would run (policy filters and limits included; the hidden classes' names are shown as <hidden classes>); call again without dry_run to run it.",
	}, nil
}

// pipelineRunError maps a failure of a pipeline the server ran. MongoDB's
// message is never passed on: expression errors quote the offending value
// in MongoDB's own syntax ("found: object with value { …, credential: {
// className: \"VaultSecret\", objectId: … } }", "Failed to parse number
// '…'"), which would carry stored values past the redaction — a hidden
// reference, a protected field read inside an expression, a joined class's
// value. The caller gets the error's code and code name (value-free) and
// the operator's log gets the message (SECURITY.md "Errors and logging").
func pipelineRunError(d *Deps, tool string, err error) error {
	if e := parsedb.AsNotSupported(err); e != nil {
		return e
	}
	if parsedb.IsTimeout(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		if _, ok := errors.AsType[mongo.ServerError](err); !ok {
			return err
		}
	}
	d.Log.Warn().Str("tool", tool).Int32("code", ce.Code).Str("code_name", ce.Name).Str("message", ce.Message).Msg("the database rejected a pipeline (the message is not sent to the client)")
	what := "an error"
	if ce.Code != 0 {
		what = fmt.Sprintf("error %d", ce.Code)
		if ce.Name != "" {
			what += " (" + ce.Name + ")"
		}
	}
	return toolerror.New(toolerror.InvalidQuery, "%s: MongoDB rejected the pipeline with %s. Its message is not shown because it can quote stored values; check each operator's input types (a string where a number or date is expected, an array where a document is expected) and the field names, then retry.", tool, what)
}

// ---- aggregate --------------------------------------------------------------------

type aggregateIn struct {
	ClassName      string      `json:"class_name" arg:"class"`
	Pipeline       pipelineArg `json:"pipeline" arg:"required" jsonschema:"stages, e.g. [{\"$match\":{\"genre\":\"rock\"}},{\"$group\":{\"_id\":\"$artist\",\"plays\":{\"$sum\":\"$plays\"}}},{\"$sort\":{\"plays\":-1}},{\"$limit\":10}]"`
	CompactPtrs    bool        `json:"compact_pointers" arg:"default=true"`
	ApplyCanonical bool        `json:"apply_canonical_filter" arg:"default=true"`
	DryRun         bool        `json:"dry_run"`
	Shape          rowShape    `json:"shape" arg:"enum=columns|objects|rest;default=columns"`
}

// aggregateOutSchema: the rows, or with dry_run the pipeline that would
// run; the result is Dynamic.
const aggregateOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osLegend + `,"pipeline_stages":{"type":"array","items":{"type":"string"}},"result_count":{"type":"integer"},"results":` + osRows + `,` + osColumns + `,"truncated":{"type":"boolean"},"auto_limited":{"type":"boolean"},"auto_limit":{"type":"integer"},"hint":{"type":"string"},"dry_run":{"type":"boolean"},"parameters":{"type":"object"},"pipeline":{"type":"array"}},"required":["class_name"]}`

func aggregateTool(ctx context.Context, d *Deps, in aggregateIn) (Dynamic, error) {
	name, stages, shape, applyCanonical, dry := in.ClassName, []any(in.Pipeline), in.Shape, in.ApplyCanonical, in.DryRun
	compactShape := shape.compact()
	compact := in.CompactPtrs && compactShape
	plan, err := planPipeline(ctx, d, name, stages, applyCanonical, AggregateAutoLimit)
	if err != nil {
		return nil, err
	}
	if dry {
		return dryRun(plan.cls.Name, map[string]any{"compact_pointers": compact, "apply_canonical_filter": applyCanonical, "stages": len(stages)}, plan.pipeline)
	}
	var legend *parsedb.Legend
	if compactShape {
		legend = &parsedb.Legend{}
	}
	rows, err := readRows(ctx, d, "aggregate", plan, PipelineRowsCap+1, d.Policy.MaxResponseBytes()-aggEnvelopeReserve, legend)
	if err != nil {
		return nil, err
	}
	truncated := len(rows) > PipelineRowsCap
	if truncated {
		rows = rows[:PipelineRowsCap]
	}
	ProgressFrom(ctx).Report(float64(len(rows)), 0, fmt.Sprintf("%d rows", len(rows)))
	var ptrClasses map[string]string
	if compact {
		ptrClasses = compactPointers(rows)
	}
	var objects []byte
	for i, r := range rows {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			objects = append(objects, ',')
		}
		objects = append(objects, b...)
	}
	telemetry.ToolRows(ctx, len(rows))
	out := map[string]any{
		"class_name":      plan.cls.Name,
		"pipeline_stages": stageNames(plan.pipeline),
		"result_count":    len(rows),
	}
	rowsMember(out, shape, "results", objects)
	if legend != nil {
		legend.Merge("", &parsedb.Legend{PointerClasses: ptrClasses})
		legendMap(out, legend)
	} else if len(ptrClasses) > 0 {
		out["pointer_classes"] = ptrClasses
	}
	if truncated {
		out["truncated"] = true
		out["hint"] = fmt.Sprintf("Only the first %d rows are returned; summarize with $group/$count or lower $limit.", PipelineRowsCap)
	}
	if plan.autoLimited && len(rows) >= AggregateAutoLimit {
		out["auto_limited"] = true
		out["auto_limit"] = AggregateAutoLimit
		out["hint"] = fmt.Sprintf("Only the first %d rows were returned: an automatic {\"$limit\":%d} was appended. End the pipeline with your own $limit (or summarize with $group/$count) to control this.", AggregateAutoLimit, AggregateAutoLimit)
	}
	return out, nil
}

// RunPipelineRows runs a caller's pipeline on className through every gate
// of the aggregate tool (class gate, validator, policy filters, ACL,
// visible-fields projection, join scoping) and returns the rows in REST
// shape: objectId/createdAt/updatedAt, pointers as {"__type":"Pointer"}
// objects (not compacted), dates as {"__type":"Date"}, hidden-class
// references redacted. It is export_data's pipeline mode. Unless the
// pipeline ends with $limit or $count, {"$limit": PipelineRowsCap+1} is
// appended; at most PipelineRowsCap+1 rows are returned, so the caller can
// tell that more exist. Get the pipeline with PipelineArg to keep its key
// order.
func RunPipelineRows(ctx context.Context, d *Deps, className string, pipeline []any, applyCanonical bool) ([]map[string]any, error) {
	plan, err := planPipeline(ctx, d, className, pipeline, applyCanonical, PipelineRowsCap+1)
	if err != nil {
		return nil, err
	}
	rows, err := readRows(ctx, d, "export_data", plan, PipelineRowsCap+1, pipelineRowsBytes, nil)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		if out[i], err = r.toMap(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
