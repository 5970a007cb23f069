package tools

// The in-process engine: it streams the identity's scope (bounded by
// search.fallback_max_rows) and scores, matches or counts each row here.
// It answers every request no index can.

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/embed"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// topK keeps the k best hits (highest score; ties by id).
type topK struct {
	k    int
	hits []hit
}

func (t *topK) add(h hit) {
	better := func(a, b hit) bool { return a.score > b.score || a.score == b.score && a.id < b.id }
	if len(t.hits) == t.k && !better(h, t.hits[len(t.hits)-1]) {
		return
	}
	i := sort.Search(len(t.hits), func(i int) bool { return better(h, t.hits[i]) })
	t.hits = slices.Insert(t.hits, i, h)
	if len(t.hits) > t.k {
		t.hits = t.hits[:t.k]
	}
}

// scan streams the scope's rows (projection: only what the engine needs) to
// fn, refusing beyond search.fallback_max_rows with the index to create.
func scan(ctx context.Context, d *Deps, s *searchScope, projection bson.D, needIndex string, fn func(doc bson.Raw)) error {
	maxRows := d.Policy.FallbackMaxRows()
	tooMany := func() error {
		return toolerror.New(toolerror.InvalidQuery, "%s has more than %d rows in this search's scope: the in-process search stops there (search.fallback_max_rows). Narrow it with where, or ask the operator for %s", s.cls.Name, maxRows, needIndex)
	}
	// A scope that may exceed the bound (the collection holds more rows
	// than it, by $collStats) is counted first, on the server and
	// up to maxRows+1: a refusal costs a count, not the scan of maxRows
	// rows it would refuse. A smaller collection is not counted (on
	// FerretDB 1.24 a scoped count costs as much as the scan); the loop
	// below still stops at maxRows+1 whatever the metadata said.
	var n int64
	total, err := d.Store.CollectionCount(ctx, s.cls.Name)
	if err != nil || total > int64(maxRows) {
		if n, err = d.Store.CountUpTo(ctx, s.cls.Name, s.filter, int64(maxRows)+1); err != nil {
			return err
		}
		if n > int64(maxRows) {
			return tooMany()
		}
	}
	cur, err := d.Store.Find(ctx, s.cls.Name, parsedb.FindSpec{Filter: s.filter, Projection: projection, Limit: int64(maxRows) + 1, BatchSize: 1000})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = cur.Close(cctx)
	}()
	prog := ProgressFrom(ctx)
	n = 0
	for cur.Next(ctx) {
		n++
		if n > int64(maxRows) { // rows added since the count
			return tooMany()
		}
		if n%scanProgressEvery == 0 {
			prog.Report(float64(n), 0, fmt.Sprintf("%d rows scanned", n))
		}
		fn(cur.Current)
	}
	if err := cur.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// stopWords are left out of queries, as MongoDB's English text index does
// with its (longer) list.
var stopWords = map[string]bool{"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true, "for": true, "from": true, "in": true, "is": true, "it": true, "of": true, "on": true, "or": true, "that": true, "the": true, "this": true, "to": true, "was": true, "with": true}

// stem is a light English suffix stripper: the in-process engine's answer
// to the text index's stemming (plurals and common verb endings).
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// queryTerms are the distinct stemmed words of a query, stop words out, at
// most 32.
func queryTerms(q string) []string {
	var out []string
	for _, w := range embed.Words(q) {
		if stopWords[w] {
			continue
		}
		if s := stem(w); !slices.Contains(out, s) && len(out) < 32 {
			out = append(out, s)
		}
	}
	return out
}

// textScore scores one row for the in-process engine: for each query term
// that occurs, 1 + ln(occurrences), divided by the square root of the
// length in words (a shorter text matching as often ranks higher); 0 when
// no term occurs (the row is not a hit, as with $text's OR of terms).
func textScore(terms []string, texts []string) float64 {
	var counts [32]int
	total := 0
	for _, t := range texts {
		for _, w := range embed.Words(t) {
			total++
			if i := slices.Index(terms, stem(w)); i >= 0 {
				counts[i]++
			}
		}
	}
	var score float64
	for i := range terms {
		if counts[i] > 0 {
			score += 1 + math.Log(float64(counts[i]))
		}
	}
	if score == 0 {
		return 0
	}
	return score / math.Sqrt(1+float64(total)/50)
}

func textScan(ctx context.Context, d *Deps, s *searchScope, query string, fields []string, limit int) ([]hit, error) {
	terms := queryTerms(query)
	top := &topK{k: limit}
	texts := make([]string, len(fields))
	err := scan(ctx, d, s, parsedb.Projection(s.cls, fields), "a text index on "+strings.Join(fields, ", ")+" (or an Atlas Search index)", func(doc bson.Raw) {
		for i, f := range fields {
			texts[i], _ = doc.Lookup(f).StringValueOK()
		}
		if sc := textScore(terms, texts); sc > 0 {
			top.add(hit{rawID(doc), sc})
		}
	})
	return top.hits, err
}

// PrefixFilter is the fallback autocomplete's constraint: the prefix
// escaped (every regex metacharacter literal) and anchored, matched
// case-insensitively — never a caller-supplied pattern.
func PrefixFilter(storageField, prefix string) bson.D {
	return bson.D{{Key: storageField, Value: bson.D{{Key: "$regex", Value: "^" + regexp.QuoteMeta(prefix)}, {Key: "$options", Value: "i"}}}}
}

func prefixHits(ctx context.Context, d *Deps, s *searchScope, field, prefix string, limit int) ([]hit, error) {
	sf := parsedb.StorageFieldName(s.cls, field)
	spec := parsedb.FindSpec{Filter: andFilters(s.filter, PrefixFilter(sf, prefix)), Projection: bson.D{{Key: "_id", Value: 1}, {Key: sf, Value: 1}},
		Sort: bson.D{{Key: sf, Value: 1}, {Key: "_id", Value: 1}}, Limit: int64(limit), BatchSize: int32(limit)}
	cur, err := d.Store.Find(ctx, s.cls.Name, spec)
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out []hit
	for cur.Next(ctx) {
		out = append(out, hit{id: rawID(cur.Current), score: 1})
	}
	return out, cur.Err()
}

// facetCounter counts one facet's buckets in process.
type facetCounter struct {
	spec    facetSpec
	strings map[string]int
	buckets []int // [len(boundaries)-1] counts, then "other"
}

func (c *facetCounter) add(v bson.RawValue) {
	if c.spec.kind == "string" {
		var key string
		switch v.Type {
		case bson.TypeString:
			key = v.StringValue()
		case bson.TypeBoolean:
			key = fmt.Sprint(v.Boolean())
		case 0, bson.TypeNull:
			key = "null"
		default:
			return
		}
		c.strings[key]++
		return
	}
	var x any
	switch v.Type {
	case bson.TypeDouble, bson.TypeInt32, bson.TypeInt64:
		if c.spec.kind == "number" {
			f, _ := v.AsFloat64OK()
			x = f
		}
	case bson.TypeDateTime:
		if c.spec.kind == "date" {
			x = v.Time().UTC()
		}
	}
	b := c.spec.boundaries
	if x != nil {
		for i := 0; i+1 < len(b); i++ {
			if !less(x, b[i]) && less(x, b[i+1]) {
				c.buckets[i]++
				return
			}
		}
	}
	c.buckets[len(b)-1]++ // other (out of range, missing or another type)
}

func (c *facetCounter) result() []map[string]any {
	out := []map[string]any{}
	if c.spec.kind == "string" {
		keys := make([]string, 0, len(c.strings))
		for k := range c.strings {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := c.strings[keys[i]], c.strings[keys[j]]
			return a > b || a == b && keys[i] < keys[j]
		})
		for i, k := range keys {
			if i == maxStringBuckets {
				break
			}
			out = append(out, map[string]any{"key": k, "count": c.strings[k]})
		}
		return out
	}
	for i, n := range c.buckets {
		key := any("other")
		if i < len(c.spec.boundaries)-1 {
			key = boundaryLabel(c.spec.boundaries[i])
		}
		out = append(out, map[string]any{"key": key, "count": n})
	}
	return out
}

func boundaryLabel(b any) any {
	if t, ok := b.(time.Time); ok {
		return t.Format("2006-01-02T15:04:05.000Z")
	}
	return b
}

type inProcessEngine struct{}

func (inProcessEngine) textHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	hits, err := textScan(ctx, d, r.scope, r.query, r.fields, r.limit)
	return hits, EngineInProcess, err
}

func (inProcessEngine) autocompleteHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	hits, err := prefixHits(ctx, d, r.scope, r.fields[0], r.query, r.limit)
	return hits, EngineRegexPrefix, err
}

// facetCounts counts the facets over the scope's rows that match the query
// (every row without one).
func (inProcessEngine) facetCounts(ctx context.Context, d *Deps, r *searchRequest) (*facetsOut, error) {
	s, query, textFields := r.scope, r.query, r.fields
	searched := append(slices.Clone(textFields), facetFieldNames(r.facets)...)
	counters := make([]*facetCounter, len(r.facets))
	for i, f := range r.facets {
		counters[i] = &facetCounter{spec: f, strings: map[string]int{}, buckets: make([]int, len(f.boundaries))}
	}
	terms := queryTerms(query)
	texts := make([]string, len(textFields))
	total := 0
	err := scan(ctx, d, s, parsedb.Projection(s.cls, searched), "an Atlas Search index with these facets", func(doc bson.Raw) {
		if query != "" {
			for i, f := range textFields {
				texts[i], _ = doc.Lookup(f).StringValueOK()
			}
			if textScore(terms, texts) == 0 {
				return
			}
		}
		total++
		for _, c := range counters {
			v, _ := doc.LookupErr(c.spec.field)
			c.add(v)
		}
	})
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, c := range counters {
		out[c.spec.field] = c.result()
	}
	return &facetsOut{ClassName: s.cls.Name, Engine: EngineInProcess, Total: int64(total), Facets: out}, nil
}

// nearestHits ranks the scope's rows by cosine similarity; rows whose
// vector has other dimensions are skipped, and refused when no row has
// the query's.
func (inProcessEngine) nearestHits(ctx context.Context, d *Deps, r *searchRequest) ([]hit, string, error) {
	vectorField, vector, exclude := r.sp.VectorField, r.vector, r.exclude
	top := &topK{k: r.limit}
	mismatched, dims := 0, 0
	err := scan(ctx, d, r.scope, bson.D{{Key: vectorField, Value: 1}}, "an Atlas Vector Search index on "+vectorField, func(doc bson.Raw) {
		id := rawID(doc)
		if id == exclude {
			return
		}
		v := rawVector(doc.Lookup(vectorField))
		if v == nil {
			return
		}
		if len(v) != len(vector) {
			mismatched++
			dims = len(v)
			return
		}
		top.add(hit{id, embed.Cosine(vector, v)})
	})
	if err != nil {
		return nil, "", err
	}
	if len(top.hits) == 0 && mismatched > 0 {
		return nil, "", toolerror.New(toolerror.InvalidArgument, "%s's vectors have %d dimensions; the query vector has %d", r.scope.cls.Name, dims, len(vector))
	}
	return top.hits, EngineInProcess, nil
}
