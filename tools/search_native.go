package tools

// The native index engine: $text on a MongoDB text index whose fields are
// exactly the searched ones, and $vectorSearch on a native vector index
// (DocumentDB's cosmosSearch) on the vector field.

import (
	"context"
	"slices"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// textIndexStages is atlas_text_search's pipeline on a MongoDB text index.
func textIndexStages(query string, s *searchScope, limit int) bson.A {
	return bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: query}}}, {Key: "$and", Value: bson.A{s.filter}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}}},
		bson.D{{Key: "$limit", Value: limit}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 1}, {Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}}},
	}
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

type nativeEngine struct{}

// textHits answers when the class's text index covers exactly the searched
// fields and the session may see it (indexmeta.go).
func (nativeEngine) textHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	if r.eng.textFields == nil || !sameSet(r.eng.textFields, r.fields) || !indexVisible(d, r.scope.cls, indexInfo{fields: r.eng.textFields}) {
		return nil, "", nil
	}
	hits, err := runHits(ctx, d, r.scope.cls, textIndexStages(r.query, r.scope, r.limit))
	return hits, EngineTextIndex, err
}

func (nativeEngine) autocompleteHits(context.Context, *Deps, *searchRequest) ([]hit, string, error) {
	return nil, "", nil
}

func (nativeEngine) facetCounts(context.Context, *Deps, *searchRequest) (*facetsOut, error) {
	return nil, nil
}

func (nativeEngine) nearestHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	if !r.eng.nativeVec {
		return nil, "", nil
	}
	hits, err := runHits(ctx, d, r.scope.cls, vectorStages("", r.sp.VectorField, r.vector, r.scope, r.exclude, r.limit))
	return hits, EngineVectorIndex, err
}

// nativeVectorIndex reports a native (cosmosSearch) vector index on field.
func nativeVectorIndex(ctx context.Context, d *Deps, cls *parsedb.Class, field string) bool {
	cur, err := d.Store.Collection(cls.Name).Indexes().List(ctx)
	if err != nil {
		return false
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	found := false
	for cur.Next(ctx) {
		var spec struct {
			Key bson.D `bson:"key"`
		}
		if bson.Unmarshal(cur.Current, &spec) == nil {
			for _, e := range spec.Key {
				if s, ok := e.Value.(string); ok && s == "cosmosSearch" && e.Key == field {
					found = true
				}
			}
		}
	}
	return found
}
