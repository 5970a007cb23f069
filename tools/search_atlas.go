package tools

// The Atlas Search engine: $search, $searchMeta and $vectorSearch on Atlas
// or mongot, for a class whose Atlas Search index (search.atlas_index,
// else "default") or vectorSearch index on the vector field is queryable.
// Its stages are golden-tested.

import (
	"context"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// atlasCompound wraps an Atlas Search operator with the tenant pre-filter
// (an equals on the tenant field; the index must map it as token).
func atlasCompound(op bson.D, tenant bson.D) bson.D {
	if len(tenant) == 0 {
		return op
	}
	var filter bson.A
	for _, e := range tenant {
		filter = append(filter, bson.D{{Key: "equals", Value: bson.D{{Key: "path", Value: e.Key}, {Key: "value", Value: e.Value}}}})
	}
	return bson.D{{Key: "compound", Value: bson.D{{Key: "must", Value: bson.A{op}}, {Key: "filter", Value: filter}}}}
}

// atlasTextStages is the pipeline of atlas_text_search on Atlas: $search
// (tenant pre-filter), the whole scope as $match, limit, ids and scores.
func atlasTextStages(index, query string, paths []string, s *searchScope, limit int) bson.A {
	op := atlasCompound(bson.D{{Key: "text", Value: bson.D{{Key: "query", Value: query}, {Key: "path", Value: paths}}}}, s.tenant)
	return bson.A{
		bson.D{{Key: "$search", Value: append(bson.D{{Key: "index", Value: index}}, op...)}},
		bson.D{{Key: "$match", Value: s.filter}},
		bson.D{{Key: "$limit", Value: limit}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 1}, {Key: "score", Value: bson.D{{Key: "$meta", Value: "searchScore"}}}}}},
	}
}

// atlasAutocompleteStages is atlas_autocomplete's pipeline on Atlas.
func atlasAutocompleteStages(index, prefix, path string, s *searchScope, limit int) bson.A {
	op := atlasCompound(bson.D{{Key: "autocomplete", Value: bson.D{{Key: "query", Value: prefix}, {Key: "path", Value: path}}}}, s.tenant)
	return bson.A{
		bson.D{{Key: "$search", Value: append(bson.D{{Key: "index", Value: index}}, op...)}},
		bson.D{{Key: "$match", Value: s.filter}},
		bson.D{{Key: "$limit", Value: limit}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 1}, {Key: "score", Value: bson.D{{Key: "$meta", Value: "searchScore"}}}}}},
	}
}

// vectorStages is find_similar's pipeline on Atlas (index named) or a
// native vector index (index ""): $vectorSearch with the tenant as its
// pre-filter, the whole scope as $match, then limit. The engine returns
// 10k candidates so that rows the scope removes leave k.
func vectorStages(index, path string, query []float64, s *searchScope, exclude string, k int) bson.A {
	vs := bson.D{}
	if index != "" {
		vs = append(vs, bson.E{Key: "index", Value: index})
	}
	vs = append(vs, bson.E{Key: "path", Value: path}, bson.E{Key: "queryVector", Value: query},
		bson.E{Key: "numCandidates", Value: min(k*100, 10000)}, bson.E{Key: "limit", Value: min(k*10, 10000)})
	if len(s.tenant) > 0 {
		var f bson.D
		for _, e := range s.tenant {
			f = append(f, bson.E{Key: e.Key, Value: bson.D{{Key: "$eq", Value: e.Value}}})
		}
		vs = append(vs, bson.E{Key: "filter", Value: f})
	}
	filter := s.filter
	if exclude != "" {
		filter = andFilters(filter, bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: exclude}}}})
	}
	return bson.A{
		bson.D{{Key: "$vectorSearch", Value: vs}},
		bson.D{{Key: "$match", Value: filter}},
		bson.D{{Key: "$limit", Value: k}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 1}, {Key: "score", Value: bson.D{{Key: "$meta", Value: "vectorSearchScore"}}}}}},
	}
}

// atlasFacetStages is atlas_faceted_search's $searchMeta (master posture,
// no policy filter: its counts cannot be filtered by ACL or $match).
func atlasFacetStages(index, query string, textPaths []string, facets []facetSpec) bson.A {
	var op bson.D
	if query != "" {
		op = bson.D{{Key: "text", Value: bson.D{{Key: "query", Value: query}, {Key: "path", Value: textPaths}}}}
	} else {
		op = bson.D{{Key: "exists", Value: bson.D{{Key: "path", Value: facets[0].field}}}}
	}
	fs := bson.D{}
	for _, f := range facets {
		spec := bson.D{{Key: "type", Value: f.kind}, {Key: "path", Value: f.field}}
		if f.kind == "string" {
			spec = append(spec, bson.E{Key: "numBuckets", Value: maxStringBuckets})
		} else {
			spec = append(spec, bson.E{Key: "boundaries", Value: f.boundaries}, bson.E{Key: "default", Value: "other"})
		}
		fs = append(fs, bson.E{Key: f.field, Value: spec})
	}
	return bson.A{bson.D{{Key: "$searchMeta", Value: bson.D{{Key: "index", Value: index}, {Key: "facet", Value: bson.D{{Key: "operator", Value: op}, {Key: "facets", Value: fs}}}}}}}
}

func facetsAtlas(ctx context.Context, d *Deps, cls *parsedb.Class, pipeline bson.A) (*facetsOut, error) {
	cur, err := d.Store.Aggregate(ctx, cls.Name, pipeline)
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var meta struct {
		Count struct {
			Lower int64 `bson:"lowerBound"`
		} `bson:"count"`
		Facet map[string]struct {
			Buckets []struct {
				ID    any   `bson:"_id"`
				Count int64 `bson:"count"`
			} `bson:"buckets"`
		} `bson:"facet"`
	}
	if cur.Next(ctx) {
		if err := bson.Unmarshal(cur.Current, &meta); err != nil {
			return nil, err
		}
	}
	if err := cur.Err(); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for f, b := range meta.Facet {
		list := []map[string]any{}
		for _, x := range b.Buckets {
			key := x.ID
			if t, ok := key.(bson.DateTime); ok {
				key = t.Time().UTC().Format("2006-01-02T15:04:05.000Z")
			}
			list = append(list, map[string]any{"key": key, "count": x.Count})
		}
		out[f] = list
	}
	return &facetsOut{ClassName: cls.Name, Engine: EngineAtlas, Total: meta.Count.Lower, Facets: out}, nil
}

type atlasEngine struct{}

func (atlasEngine) textHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	if r.eng.atlasText == "" {
		return nil, "", nil
	}
	hits, err := runHits(ctx, d, r.scope.cls, atlasTextStages(r.eng.atlasText, r.query, r.fields, r.scope, r.limit))
	return hits, EngineAtlas, err
}

func (atlasEngine) autocompleteHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	if r.eng.atlasText == "" {
		return nil, "", nil
	}
	hits, err := runHits(ctx, d, r.scope.cls, atlasAutocompleteStages(r.eng.atlasText, r.query, r.fields[0], r.scope, r.limit))
	return hits, EngineAtlas, err
}

// facetCounts answers only in master posture, for a class no policy filter
// restricts, without a caller where: $searchMeta counts cannot be filtered
// by _rperm, CLP or a $match.
func (atlasEngine) facetCounts(ctx context.Context, d *Deps, r *searchRequest) (*facetsOut, error) {
	if r.eng.atlasText == "" || !r.scope.policyOnly || len(r.scope.where) > 0 {
		return nil, nil
	}
	return facetsAtlas(ctx, d, r.scope.cls, atlasFacetStages(r.eng.atlasText, r.query, r.fields, r.facets))
}

func (atlasEngine) nearestHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	if r.eng.atlasVector == "" {
		return nil, "", nil
	}
	hits, err := runHits(ctx, d, r.scope.cls, vectorStages(r.eng.atlasVector, r.sp.VectorField, r.vector, r.scope, r.exclude, r.limit))
	return hits, EngineAtlas, err
}

// atlasIndexes are the queryable Atlas Search index the policy names
// (search.atlas_index, else "default") and a vectorSearch index on the
// vector field (the named one if it is such), "" for none:
// $listSearchIndexes answers only on Atlas and mongot.
func atlasIndexes(ctx context.Context, d *Deps, cls *parsedb.Class, sp *policy.SearchPolicy) (text, vector string) {
	want := sp.AtlasIndex
	if want == "" {
		want = defaultAtlasIndex
	}
	cur, err := d.Store.Aggregate(ctx, cls.Name, bson.A{bson.D{{Key: "$listSearchIndexes", Value: bson.D{}}}})
	if err != nil {
		return "", ""
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	for cur.Next(ctx) {
		var ix struct {
			Name      string `bson:"name"`
			Type      string `bson:"type"`
			Queryable bool   `bson:"queryable"`
			Latest    struct {
				Fields []struct {
					Type string `bson:"type"`
					Path string `bson:"path"`
				} `bson:"fields"`
			} `bson:"latestDefinition"`
		}
		if bson.Unmarshal(cur.Current, &ix) != nil || !ix.Queryable {
			continue
		}
		switch {
		case ix.Type == "vectorSearch" && sp.VectorField != "":
			for _, f := range ix.Latest.Fields {
				if f.Type == "vector" && f.Path == sp.VectorField && (vector == "" || ix.Name == want) {
					vector = ix.Name
				}
			}
		case ix.Type != "vectorSearch" && ix.Name == want:
			text = ix.Name
		}
	}
	return text, vector
}
