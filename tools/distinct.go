package tools

// distinct (docs/tools.md "Tools").
//
// Decisions where the spec is silent (docs/decisions.md):
//   - Runs as an aggregation ($match → $unwind for Array fields → $group →
//     $sort → $limit limit+1), so the read filter, limit and truncation
//     work as in group_by; Array fields are flattened, as MongoDB's
//     distinct command does.
//   - sort defaults to asc; "none" leaves the server's order.
//   - Missing/null values are left out, as Parse Server's distinct does;
//     rows whose value is redacted (a hidden or missing-class reference)
//     give the marker once, after every other value (SECURITY.md "Hidden
//     references").

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/telemetry"
)

// distinctPipeline builds the distinct pipeline.
func distinctPipeline(g *groupField, filter bson.D, sort string, limit int) bson.A {
	if filter == nil {
		filter = bson.D{}
	}
	p := bson.A{bson.D{{Key: "$match", Value: filter}}}
	if g.isArray() {
		p = append(p, bson.D{{Key: "$unwind", Value: "$" + g.storage}})
	}
	p = append(p, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$" + g.storage}}}})
	switch sort {
	case "asc":
		p = append(p, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: int32(1)}}}})
	case "desc":
		p = append(p, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: int32(-1)}}}})
	}
	return append(p, bson.D{{Key: "$limit", Value: int32(limit + 1)}})
}

type distinctIn struct {
	ClassName string         `json:"class_name" arg:"class"`
	Field     string         `json:"field" arg:"required"`
	Where     map[string]any `json:"where"`
	Sort      string         `json:"sort" arg:"enum=asc|desc|none,default=asc"`
	Limit     int            `json:"limit" arg:"default=DefaultDistinctLimit,min=1,max=MaxDistinctLimit"`
	DryRun    bool           `json:"dry_run"`
}

// distinctOutSchema: the values, or with dry_run the pipeline that would
// run; the result is Dynamic.
var distinctOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,"field":{"type":"string"},"count":{"type":"integer"},"limit":{"type":"integer"},"values":{"type":"array"}` + osDryRun + `},"required":["class_name"],` + orDryRun("values") + `}`

func distinctTool(ctx context.Context, d *Deps, in distinctIn) (Dynamic, error) {
	name, field, where, sort, limit, dry := in.ClassName, in.Field, in.Where, in.Sort, in.Limit, in.DryRun
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil {
		return nil, err
	}
	g, err := resolveGroupField(d, cls, "field", field)
	if err != nil {
		return nil, err
	}
	t, err := buildFilter(ctx, d, schema, cls, where, true)
	if err != nil {
		return nil, err
	}
	nh, err := groupHiddenRefFilter(d, schema, cls, g, nil)
	if err != nil {
		return nil, err
	}
	redacted := redactedKeyFilter(d.Policy.HiddenRefs(schema), cls, t.Filter, g)
	t.Filter = andFilters(t.Filter, nh)
	p := distinctPipeline(g, t.Filter, sort, limit)
	if dry {
		params := map[string]any{"field": g.name, "sort": sort, "limit": limit}
		if len(where) > 0 {
			params["where"] = where
		}
		return dryRun(cls.Name, params, p)
	}
	if err := d.Policy.CheckCollscan(ctx, d.Store, cls, t.Filter); err != nil {
		return nil, err
	}
	items, err := readKeyed(ctx, d, "distinct", cls, p, false)
	if err != nil {
		return nil, err
	}
	// Rows whose value is redacted give one value, the marker, after
	// every other (as a sorted read places them), whatever the sort.
	if redacted != nil && len(items) <= limit {
		n, err := d.Store.Count(ctx, cls.Name, redacted)
		if err != nil {
			return nil, pipelineRunError(d, "distinct", err)
		}
		if n > 0 {
			items = append(items, keyed{key: redactedMarker()})
		}
	}
	ProgressFrom(ctx).Report(float64(len(items)), 0, fmt.Sprintf("%d values", len(items)))
	truncated := len(items) > limit
	if truncated {
		items = items[:limit]
	}
	pointerClass := ""
	if g.isPointer() {
		pointerClass = pointerKeys(items)
	}
	// Null and missing values are left out, as Parse Server's distinct
	// does; rows holding a redacted value in the field were filtered out
	// of the pipeline and give the marker above.
	values := make([]any, 0, len(items))
	for _, it := range items {
		if it.key == nil {
			continue
		}
		values = append(values, it.key)
	}
	telemetry.ToolRows(ctx, len(values))
	out := map[string]any{
		"class_name": cls.Name,
		"field":      g.name,
		"count":      len(values),
		"values":     values,
		"limit":      limit,
	}
	if pointerClass != "" {
		out["pointer_class"] = pointerClass
	}
	if truncated {
		out["truncated"] = true
	}
	return out, nil
}
