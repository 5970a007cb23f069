package tools

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/config"
	"github.com/parse-mcp/parse-mcp/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
)

// QueryTools are the object-reading tools.
func QueryTools() []*Tool {
	return []*Tool{
		{
			ToolInfo:    policy.ToolInfo{Name: "count_objects", Category: "query", Tier: config.TierReadonly, Timeout: 20 * time.Second},
			Description: "Count objects of a class matching a Parse where constraint.",
			InputSchema: `{"type":"object","properties":{"class_name":{"type":"string"},"where":{"type":"object","description":"Parse REST query constraints, e.g. {\"plays\":{\"$gt\":100}}"},"apply_canonical_filter":{"type":"boolean","default":true}},"required":["class_name"]}`,
			ReadOnly:    true,
			Handler:     countObjects,
		},
	}
}

// readTarget is a resolved class plus the filter a read sends to MongoDB.
type readTarget struct {
	Class *parsedb.Class
	// Shown is the REST-level where actually applied (caller where AND every
	// policy filter), as reported back to the model.
	Shown  map[string]any
	Filter bson.D
}

// resolveRead resolves class_name and builds the full filter for a read.
func resolveRead(ctx context.Context, d *Deps, args Args, applyCanonicalDefault bool) (*readTarget, error) {
	name, err := args.ClassName()
	if err != nil {
		return nil, err
	}
	where, err := args.Object("where")
	if err != nil {
		return nil, err
	}
	applyCanonical, err := args.Bool("apply_canonical_filter", applyCanonicalDefault)
	if err != nil {
		return nil, err
	}
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	cls, err := d.Policy.ResolveClass(ctx, schema, name)
	if err != nil {
		return nil, err
	}
	return buildFilter(ctx, d, schema, cls, where, applyCanonical)
}

func buildFilter(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, where map[string]any, applyCanonical bool) (*readTarget, error) {
	shown, err := d.Policy.ComposeWhere(ctx, cls, where, applyCanonical)
	if err != nil {
		return nil, err
	}
	filter, err := parsedb.WhereToFilter(ctx, cls, shown, parsedb.WhereOptions{Schema: schema, Sub: &subQueries{d: d, schema: schema}})
	if err != nil {
		return nil, err
	}
	scope, err := d.Policy.StorageScope(ctx, cls)
	if err != nil {
		return nil, err
	}
	return &readTarget{Class: cls, Shown: shown, Filter: andFilters(filter, scope)}, nil
}

// andFilters combines two filters without nesting when one is empty.
func andFilters(a, b bson.D) bson.D {
	switch {
	case len(a) == 0 && len(b) == 0:
		return bson.D{}
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	}
	return bson.D{{Key: "$and", Value: bson.A{a, b}}}
}

func countObjects(ctx context.Context, d *Deps, args Args) (any, error) {
	t, err := resolveRead(ctx, d, args, true)
	if err != nil {
		return nil, err
	}
	n, err := d.Store.Count(ctx, t.Class.Name, t.Filter)
	if err != nil {
		return nil, err
	}
	return map[string]any{"class_name": t.Class.Name, "count": n, "constraints": t.Shown}, nil
}
