package tools

// Keeping vectors fresh (docs/search.md "Search and retrieval"): a write to an
// embed_from field recomputes the row's vector, and `parse-mcp embed CLASS`
// backfills rows without one. Both are maintenance by the server itself: they
// read only the embed_from fields and write only the vector field, whatever
// the session's identity (the identity's scope governs what searches return,
// not which rows have vectors).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
)

// EmbedBatch is how many rows one backfill step embeds and writes.
const EmbedBatch = 64

// embedText is the text of a row embedded into its vector: the embed_from
// fields that hold text, in policy order, one per line.
func embedText(doc bson.Raw, fields []string) string {
	var parts []string
	for _, f := range fields {
		if s, ok := doc.Lookup(f).StringValueOK(); ok && strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// embedRows computes and stores the vectors of docs (each holding _id and
// the embed_from fields). A row without text gets an empty vector, so that
// a resumed backfill does not pick it up again.
func embedRows(ctx context.Context, d *Deps, class string, sp *policy.SearchPolicy, docs []bson.Raw) error {
	var texts []string
	var idx []int
	for i, doc := range docs {
		if t := embedText(doc, sp.EmbedFrom); t != "" {
			texts = append(texts, t)
			idx = append(idx, i)
		}
	}
	vecs := make([][]float64, len(docs))
	if len(texts) > 0 {
		out, err := d.Embedder.Embed(ctx, texts)
		if err != nil {
			return err
		}
		for j, i := range idx {
			vecs[i] = out[j]
		}
	}
	coll := d.Store.Collection(class)
	for i, doc := range docs {
		v := vecs[i]
		if v == nil {
			v = []float64{}
		}
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: rawID(doc)}}, bson.D{{Key: "$set", Value: bson.D{{Key: sp.VectorField, Value: v}}}}); err != nil {
			return err
		}
	}
	return nil
}

// refreshVectorAfterWrite recomputes the vector of an object just created,
// or updated in an embed_from field. Its failure never fails the write (the
// write is done): it is logged, and `parse-mcp embed` repairs it.
func (d *Deps) refreshVectorAfterWrite(ctx context.Context, req *parsedb.WriteRequest, id string) {
	if d.Embedder == nil || id == "" {
		return
	}
	sp := d.Policy.Search(req.ClassName)
	if sp == nil || sp.VectorField == "" || len(sp.EmbedFrom) == 0 {
		return
	}
	switch req.Op {
	case parsedb.WriteCreateObject:
	case parsedb.WriteUpdateObject:
		if !slices.ContainsFunc(writeFieldNames(req), func(f string) bool { return slices.Contains(sp.EmbedFrom, f) }) {
			return
		}
	default:
		return
	}
	proj := bson.D{{Key: "_id", Value: 1}}
	for _, f := range sp.EmbedFrom {
		proj = append(proj, bson.E{Key: f, Value: 1})
	}
	var doc bson.Raw
	err := d.Store.Collection(req.ClassName).FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(proj)).Decode(&doc)
	if err == nil {
		err = embedRows(ctx, d, req.ClassName, sp, []bson.Raw{doc})
	}
	if err != nil {
		d.Log.Warn().Str("class", req.ClassName).Str("object_id", id).Err(err).Msg("search: the vector of a written object was not refreshed; run parse-mcp embed")
	}
}

// Backfill embeds every row of class that has no vector yet (all rows with
// all), EmbedBatch rows at a time in _id order, calling progress after each
// batch. It is resumable: rows done keep their vector, and a new run picks
// up the rest.
func Backfill(ctx context.Context, d *Deps, class string, all bool, progress func(done, total int64)) (int64, error) {
	if d.Embedder == nil {
		return 0, fmt.Errorf("no embedder: set PARSE_MCP_EMBEDDINGS_URL and PARSE_MCP_EMBEDDINGS_MODEL (or fixture)")
	}
	sp := d.Policy.Search(class)
	if sp == nil || sp.VectorField == "" || len(sp.EmbedFrom) == 0 {
		return 0, fmt.Errorf("class %s has no search.vector_field with embed_from in the policy file", class)
	}
	filter := bson.D{}
	if !all {
		filter = bson.D{{Key: sp.VectorField, Value: bson.D{{Key: "$exists", Value: false}}}}
	}
	total, err := d.Store.Count(ctx, class, filter)
	if err != nil {
		return 0, err
	}
	proj := bson.D{{Key: "_id", Value: 1}}
	for _, f := range sp.EmbedFrom {
		proj = append(proj, bson.E{Key: f, Value: 1})
	}
	var done int64
	last := ""
	for {
		f := filter
		if last != "" {
			f = andFilters(filter, bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: last}}}})
		}
		cur, err := d.Store.Find(ctx, class, parsedb.FindSpec{Filter: f, Projection: proj, Sort: bson.D{{Key: "_id", Value: 1}}, Limit: EmbedBatch, BatchSize: EmbedBatch})
		if err != nil {
			return done, err
		}
		var docs []bson.Raw
		for cur.Next(ctx) {
			docs = append(docs, append(bson.Raw(nil), cur.Current...))
		}
		err = cur.Err()
		_ = cur.Close(context.WithoutCancel(ctx))
		if err != nil {
			return done, err
		}
		if len(docs) == 0 {
			return done, nil
		}
		if err := embedRows(ctx, d, class, sp, docs); err != nil {
			return done, err
		}
		done += int64(len(docs))
		last = rawID(docs[len(docs)-1])
		if progress != nil {
			progress(done, total)
		}
	}
}
