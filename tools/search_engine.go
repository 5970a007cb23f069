package tools

// The search tools' engines (docs/search.md "Search and retrieval"). A tool asks
// the engines in order — Atlas Search (search_atlas.go), the native
// indexes (search_native.go), the in-process engine (search_inprocess.go)
// — and the first that can answer on the class's indexes does; the tool
// names it in its result. Every engine searches the same searchScope and
// its hits are re-read through a read plan (search.go).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// classEngines is what the database offers for one collection.
type classEngines struct {
	atlasText   string   // queryable Atlas Search index name ("" none)
	atlasVector string   // queryable Atlas vectorSearch index on the vector field
	textFields  []string // fields of a MongoDB text index (nil: none)
	nativeVec   bool     // a native (cosmosSearch) vector index on the vector field
}

type engineCacheKey struct {
	store *parsedb.Store
	class string
}

type engineCacheEntry struct {
	at  time.Time
	eng classEngines
}

var engineCache sync.Map // engineCacheKey → engineCacheEntry

// enginesFor probes (and caches for engineCacheTTL) the engines of cls:
// $listSearchIndexes answers only on Atlas and mongot; listIndexes shows
// text and native vector indexes.
func enginesFor(ctx context.Context, d *Deps, cls *parsedb.Class, sp *policy.SearchPolicy) classEngines {
	key := engineCacheKey{d.Store, cls.Name}
	if e, ok := engineCache.Load(key); ok && time.Since(e.(engineCacheEntry).at) < engineCacheTTL {
		return e.(engineCacheEntry).eng
	}
	var eng classEngines
	if d.Store.DB == nil {
		return eng
	}
	eng.atlasText, eng.atlasVector = atlasIndexes(ctx, d, cls, sp)
	for _, ix := range classIndexes(ctx, d, cls) {
		if ix.text {
			eng.textFields = ix.fields
		}
	}
	if sp.VectorField != "" {
		eng.nativeVec = nativeVectorIndex(ctx, d, cls, sp.VectorField)
	}
	if ctx.Err() == nil {
		engineCache.Store(key, engineCacheEntry{time.Now(), eng})
	}
	return eng
}

// runHits runs a pipeline that yields {_id, score}.
func runHits(ctx context.Context, d *Deps, cls *parsedb.Class, pipeline bson.A) ([]hit, error) {
	cur, err := d.Store.Aggregate(ctx, cls.Name, pipeline)
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out []hit
	for cur.Next(ctx) {
		var h struct {
			ID    string  `bson:"_id"`
			Score float64 `bson:"score"`
		}
		if err := bson.Unmarshal(cur.Current, &h); err != nil {
			return nil, err
		}
		out = append(out, hit{h.ID, h.Score})
	}
	return out, cur.Err()
}

// searchEngine is one engine of the search tools. Each method answers a
// request within r.scope, or reports that the class's indexes (r.eng) do
// not let this engine answer it: no engine name (a nil result for
// facetCounts) and no error, and the next engine is asked.
type searchEngine interface {
	textHits(ctx context.Context, d *Deps, r *searchRequest) (hits []hit, engine string, err error)
	autocompleteHits(ctx context.Context, d *Deps, r *searchRequest) (hits []hit, engine string, err error)
	facetCounts(ctx context.Context, d *Deps, r *searchRequest) (*facetsOut, error)
	nearestHits(ctx context.Context, d *Deps, r *searchRequest) (hits []hit, engine string, err error)
}

// searchEngines in the order they are asked: the in-process engine last,
// as it answers every request.
var searchEngines = []searchEngine{atlasEngine{}, nativeEngine{}, inProcessEngine{}}

// searchRequest is one search on a class, as the engines see it.
type searchRequest struct {
	scope *searchScope
	sp    *policy.SearchPolicy
	eng   classEngines // the class's indexes (enginesFor)
	query string       // the text query, or the autocomplete prefix
	// fields are the searched text fields (text search, facets' query) or
	// the one autocompleted field.
	fields  []string
	limit   int // rows (text, autocomplete) or k (nearest)
	facets  []facetSpec
	vector  []float64
	exclude string // nearest: the seed object's id, never a hit
}

// newSearchRequest probes the class's engines for a search within s.
func newSearchRequest(ctx context.Context, d *Deps, s *searchScope, sp *policy.SearchPolicy) *searchRequest {
	return &searchRequest{scope: s, sp: sp, eng: enginesFor(ctx, d, s.cls, sp)}
}

// firstHits is the hits of the first engine that answers ask.
func firstHits(ask func(searchEngine) ([]hit, string, error)) ([]hit, string, error) {
	for _, e := range searchEngines {
		if hits, engine, err := ask(e); engine != "" || err != nil {
			return hits, engine, err
		}
	}
	return nil, "", errors.New("tools: no search engine answered")
}

// firstFacets is the counts of the first engine that answers r.
func firstFacets(ctx context.Context, d *Deps, r *searchRequest) (*facetsOut, error) {
	for _, e := range searchEngines {
		if out, err := e.facetCounts(ctx, d, r); out != nil || err != nil {
			return out, err
		}
	}
	return nil, errors.New("tools: no search engine answered")
}
