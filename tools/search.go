package tools

// The search family (docs/search.md "Search and retrieval"): atlas_text_search,
// atlas_autocomplete, atlas_faceted_search, find_similar, semantic_search.
// Each tool picks the best engine the database offers and names it in the
// result: Atlas Search / mongot ($search, $searchMeta, $vectorSearch) → a
// MongoDB text index ($text) or a native vector index ($vectorSearch on
// DocumentDB) → the in-process engine, which streams the identity's scope
// (bounded by search.fallback_max_rows). Every engine searches the same
// scope: the filter is built by buildFilter (caller where, canonical and
// agent filters, tenant, _rperm/CLP), the tenant also goes into the
// engine's own pre-filter, and the hits are re-read through a read plan
// (the same filter again, the same row encoder as query_class) before
// anything is shown. The engines and the order they are asked in are in
// search_engine.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// Engines named in results.
const (
	EngineAtlas       = "atlas_search"  // $search / $searchMeta / $vectorSearch on Atlas or mongot
	EngineTextIndex   = "text_index"    // $text with textScore
	EngineVectorIndex = "vector_index"  // native $vectorSearch (DocumentDB)
	EngineRegexPrefix = "prefix_match"  // anchored, escaped, case-insensitive prefix filter
	EngineInProcess   = "in_process"    // streamed scan of the identity's scope
	defaultAtlasIndex = "default"       // atlas_index when the policy names none
	maxQueryChars     = 500             // query length cap
	maxPrefixChars    = 100             // autocomplete prefix cap
	maxVectorDims     = 4096            // caller vector cap
	maxFacets         = 5               // facets per call
	maxBoundaries     = 20              // boundaries per facet
	maxStringBuckets  = 20              // buckets of a string facet
	semanticChunkCap  = 200             // chunks embedded per semantic_search
	chunkChars        = 800             // target chunk size
	chunkOverlap      = 100             // overlap between chunks
	scanProgressEvery = 2000            // rows between progress reports of a scan
	engineCacheTTL    = 5 * time.Minute // how long an engine probe is trusted
)

// SearchTools are the search toolset; listed only when the policy file opts
// a class in (policy.SearchEnabled).
func SearchTools() []*Tool {
	ro := func(name string, timeout time.Duration) policy.ToolInfo {
		return policy.ToolInfo{Name: name, Category: policy.CategorySearch, Tier: config.TierReadonly, Timeout: timeout, Operation: policy.OpFind, UntrustedOutput: true}
	}
	return []*Tool{
		{
			ToolInfo:     ro("atlas_text_search", 30*time.Second),
			Description:  "Full-text search of a searchable class (get_schema: search). Rows as query_class, best first, with scores; engine names what answered.",
			Example:      `{"class_name":"Song","query":"harbor"}`,
			OutputSchema: searchRowsOut,
			ReadOnly:     true,
			Handler:      Typed(atlasTextSearch),
		},
		{
			ToolInfo:     ro("atlas_autocomplete", 15*time.Second),
			Description:  "Values of an autocomplete field starting with prefix (literal, case-insensitive), with objectIds.",
			Example:      `{"class_name":"Song","field":"title","prefix":"mid"}`,
			OutputSchema: autocompleteOutSchema,
			ReadOnly:     true,
			Handler:      Typed(atlasAutocomplete),
		},
		{
			ToolInfo:     ro("atlas_faceted_search", 30*time.Second),
			Description:  "Bucket counts of facet fields, optionally for a text query. Number/date facets need ascending boundaries.",
			Example:      `{"class_name":"Song","query":"harbor","facets":[{"field":"genre"}]}`,
			OutputSchema: facetsOutSchema,
			ReadOnly:     true,
			Handler:      Typed(atlasFacetedSearch),
		},
		{
			ToolInfo:     ro("find_similar", 30*time.Second),
			Description:  "Nearest rows by vector cosine to an object (itself excluded) or to a vector.",
			Example:      `{"class_name":"Song","object_id":"$objectId"}`,
			OutputSchema: searchRowsOut,
			ReadOnly:     true,
			Handler:      Typed(findSimilar),
		},
		{
			ToolInfo:     ro("semantic_search", 60*time.Second),
			Description:  "Best text chunks for a question across searchable classes (or class_name), within token_budget.",
			Example:      `{"query":"harbor","k":2}`,
			OutputSchema: semanticOutSchema,
			ReadOnly:     true,
			Handler:      Typed(semanticSearch),
		},
	}
}

// Output schemas of the search tools (outschema.go has the fragments):
// atlas_text_search and find_similar answer searchRows, the others their
// Out structs.
const (
	osEngine      = `"engine":{"type":"string"}`
	searchRowsOut = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osEngine + `,` + osLegend + `,"result_count":{"type":"integer"},"truncated_note":{"type":"string"},"results":` + osRows + `,` + osColumns +
		`,"scores":{"type":"array","items":{"type":"number"}},"snippets":{"type":"array","items":{"type":"object"}}},"required":["class_name","engine","scores"]}`
	autocompleteOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osEngine + `,"field":{"type":"string"},"suggestions":{"type":"array","items":{"type":"object","properties":{"value":{},"object_id":{"type":"string"}}}}},"required":["engine","suggestions"]}`
	facetsOutSchema       = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osEngine + `,"total":{"type":"integer"},"facets":{"type":"object","additionalProperties":{"type":"array","items":{"type":"object","properties":{"key":{},"count":{"type":"integer"}}}}}},"required":["engine","facets"]}`
	semanticOutSchema     = `{"type":"object","properties":{` + osNote + `,"query":{"type":"string"},"classes":{"type":"array","items":{"type":"string"}},"embedder":{"type":"string"},"budget_truncated":{"type":"boolean"},"tokens_estimated":{"type":"integer"},` +
		`"chunks":{"type":"array","items":{"type":"object","properties":{` + osClass + `,"object_id":{"type":"string"},"field":{"type":"string"},"text":{"type":"string"},"score":{"type":"number"}}}}},"required":["chunks","budget_truncated"]}`
)

// ---- what a session may search -------------------------------------------------

// searchableFor is what this session may search on cls (get_schema's
// search member), or nil: the readable fields of its search: section.
func searchableFor(d *Deps, cls *parsedb.Class) map[string]any {
	sp := d.Policy.Search(cls.Name)
	if sp == nil {
		return nil
	}
	readable := func(list []string) []string {
		var out []string
		for _, f := range list {
			if d.Policy.CheckReadField(cls, f) == nil {
				out = append(out, f)
			}
		}
		return out
	}
	out := map[string]any{}
	if l := readable(sp.TextFields); len(l) > 0 {
		out["text_fields"] = l
	}
	if l := readable(sp.AutocompleteFields); len(l) > 0 {
		out["autocomplete_fields"] = l
	}
	if l := readable(sp.FacetFields); len(l) > 0 {
		out["facet_fields"] = l
	}
	if vectorReadable(d, cls, sp) == nil {
		out["vector"] = true
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// vectorReadable checks that the session may use cls's vectors: the
// vector field and every embed_from field are readable (a vector is
// derived from its text, so similarity would rank rows by text the session
// cannot read).
func vectorReadable(d *Deps, cls *parsedb.Class, sp *policy.SearchPolicy) error {
	if sp == nil || sp.VectorField == "" {
		return toolerror.New(toolerror.InvalidArgument, "%s has no vector_field in its search policy", cls.Name)
	}
	if err := d.Policy.CheckReadField(cls, sp.VectorField); err != nil {
		return err
	}
	for _, f := range sp.EmbedFrom {
		if err := d.Policy.CheckReadField(cls, f); err != nil {
			return err
		}
	}
	return nil
}

// searchClass resolves a class for a search tool: the class gate, then the
// search opt-in (a class without one answers as not searchable).
func searchClass(ctx context.Context, d *Deps, name string) (*parsedb.Schema, *parsedb.Class, *policy.SearchPolicy, error) {
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil {
		return nil, nil, nil, err
	}
	sp := d.Policy.Search(cls.Name)
	if sp == nil {
		return nil, nil, nil, toolerror.New(toolerror.InvalidArgument, "%s is not searchable: the policy file gives it no search: section (searchable: %s)", cls.Name, strings.Join(searchableNames(ctx, d, schema), ", "))
	}
	return schema, cls, sp, nil
}

// searchableNames are the searchable classes this session may read.
func searchableNames(ctx context.Context, d *Deps, schema *parsedb.Schema) []string {
	var out []string
	for _, n := range d.Policy.SearchClasses() {
		if d.Policy.Visible(n) && schema.Class(n) != nil {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// fieldsIn checks that every field is in allowed (the class's search
// section) and readable by the session.
func fieldsIn(d *Deps, cls *parsedb.Class, arg string, fields, allowed []string) error {
	for _, f := range fields {
		if !slices.Contains(allowed, f) {
			return toolerror.New(toolerror.InvalidArgument, "%s: %s is not one of %s's searchable fields %v", arg, f, cls.Name, allowed)
		}
		if err := d.Policy.CheckReadField(cls, f); err != nil {
			return err
		}
	}
	return nil
}

// readableOf keeps the fields of list the session may read.
func readableOf(d *Deps, cls *parsedb.Class, list []string) []string {
	var out []string
	for _, f := range list {
		if d.Policy.CheckReadField(cls, f) == nil {
			out = append(out, f)
		}
	}
	return out
}

// ---- scope -----------------------------------------------------------------------

// searchScope is the filter every engine searches within, and what the
// engine pre-filters need of it.
type searchScope struct {
	schema *parsedb.Schema
	cls    *parsedb.Class
	where  map[string]any // the caller's where
	filter bson.D         // the whole read filter (buildFilter) + hidden-ref conjuncts
	// tenant is the tenant constraint in storage form ({field: value}),
	// for the engines' pre-filters; nil without a tenant scope.
	tenant bson.D
	// policyOnly reports that no policy part (canonical/agent filters,
	// tenant), no identity scope and no hidden-reference exclusion on the
	// searched fields restricts the class: only then may an engine that
	// cannot apply the filter ($searchMeta) count it.
	policyOnly bool
}

// newSearchScope builds the scope of a search over fields of cls.
func newSearchScope(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, where map[string]any, fields []string) (*searchScope, error) {
	if err := checkWhereFields(d, cls, where); err != nil {
		return nil, err
	}
	t, err := buildFilter(ctx, d, schema, cls, where, true)
	if err != nil {
		return nil, err
	}
	s := &searchScope{schema: schema, cls: cls, where: where, filter: t.Filter}
	// Searched fields holding a reference to a hidden class are left out:
	// matching on them would test the hidden id (as $text does, indexmeta.go).
	// References to missing classes are left out alike, by the same filter
	// on every engine, so hidden ≡ missing holds for membership too.
	refs := d.Policy.HiddenRefs(schema)
	nh := refs.NotHiddenRefFilter(cls, fields)
	if nh != nil {
		s.filter = andFilters(s.filter, nh)
	}
	nm := refs.NotMissingRefFilter(cls, fields)
	if nm != nil {
		s.filter = andFilters(s.filter, nm)
	}
	if tf := d.Policy.TenantField(cls.Name); tf != "" && d.Config != nil && d.Config.TenantID != "" {
		tw, err := parsedb.WhereToFilter(ctx, cls, map[string]any{tf: d.Config.TenantID}, parsedb.WhereOptions{Schema: schema})
		if err != nil {
			return nil, err
		}
		s.tenant = tw
	}
	policyWhere, err := d.Policy.ComposeWhere(ctx, cls, nil, true)
	if err != nil {
		return nil, err
	}
	// $searchMeta would count (and show as string facet keys) the rows
	// whose searched field holds a hidden reference, which never match.
	s.policyOnly = len(policyWhere) == 0 && d.Policy.MasterPosture() && nh == nil && nm == nil
	return s, nil
}

// hit is one search result before its row is read.
type hit struct {
	id    string
	score float64
}

// roundScore rounds a score for the session: 2 decimals for a scoped
// identity (a precise score is a side channel on rows and fields it
// cannot see), 4 in master posture.
func roundScore(d *Deps, s float64) float64 {
	p := 1e4
	if !d.Policy.MasterPosture() {
		p = 100
	}
	return math.Round(s*p) / p
}

func rawID(doc bson.Raw) string {
	s, _ := doc.Lookup("_id").StringValueOK()
	return s
}

// ---- reading the hits' rows ---------------------------------------------------------------------

// hitRows re-reads the hits through a read plan: the caller's where AND the
// ids, under the whole policy again (tenant, filters, _rperm/CLP), encoded
// by the session's row encoder. Rows come back in hit order; a hit the
// re-read does not return is dropped.
func hitRows(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, where map[string]any, hits []hit, in planInput) (*readPlan, [][]byte, []hit, error) {
	if len(hits) == 0 {
		return nil, nil, nil, nil
	}
	ids := make([]any, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	w := map[string]any{"objectId": map[string]any{"$in": ids}}
	if len(where) > 0 {
		w = map[string]any{"$and": []any{where, w}}
	}
	in.where, in.applyCanonical, in.noSort, in.compact = w, true, true, in.shape.compact()
	p, err := planFor(ctx, d, schema, cls.Name, in)
	if err != nil {
		return nil, nil, nil, err
	}
	byID := map[string][]byte{}
	err = p.rows(ctx, p.findSpec(0, len(hits)), func(int) bool { return true }, func(_ int, doc bson.Raw, row []byte) (bool, error) {
		byID[rawID(doc)] = append([]byte(nil), row...)
		return true, nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var rows [][]byte
	var kept []hit
	for _, h := range hits {
		if r, ok := byID[h.id]; ok {
			rows = append(rows, r)
			kept = append(kept, h)
		}
	}
	return p, rows, kept, nil
}

// searchRows is a search result: class, engine, rows (query_class's
// layout, encoded straight from the stored documents), their scores in row
// order and, for atlas_text_search, snippets of the large fields searched.
type searchRows struct {
	ClassName     string `json:"class_name"`
	Engine        string `json:"engine"`
	ResultCount   int    `json:"result_count"`
	TruncatedNote string `json:"truncated_note,omitempty"`
	RowLegend
	Columns  json.RawMessage     `json:"columns,omitempty"`
	Rows     *rowsArray          `json:"rows,omitempty"`
	Results  *rowsArray          `json:"results,omitempty"`
	Scores   []float64           `json:"scores"`
	Snippets []map[string]string `json:"snippets,omitempty"`
}

// rowsEnvelope is the searchRows of the rows that fit budget.
func rowsEnvelope(d *Deps, p *readPlan, cls *parsedb.Class, engine string, rows [][]byte, hits []hit, shape rowShape, budget int) *searchRows {
	var joined []byte
	scores := []float64{}
	for i, r := range rows {
		if len(joined)+len(r)+1 > budget {
			break
		}
		if i > 0 {
			joined = append(joined, ',')
		}
		joined = append(joined, r...)
		scores = append(scores, roundScore(d, hits[i].score))
	}
	out := &searchRows{ClassName: cls.Name, Engine: engine, ResultCount: len(scores), Scores: scores}
	if len(scores) < len(rows) {
		out.TruncatedNote = fmt.Sprintf("%d of %d rows fit the response cap; lower limit", len(scores), len(rows))
	}
	if p != nil {
		out.RowLegend = rowLegendOf(p.rowLegend())
	}
	if cols, colRows, ok := columnsOf(shape, "results", joined); ok {
		out.Columns, out.Rows = cols, &colRows
	} else {
		out.Results = (*rowsArray)(&joined)
	}
	return out
}

// ---- atlas_text_search ------------------------------------------------------------------------

type textSearchIn struct {
	ClassName string         `json:"class_name" arg:"class"`
	Query     searchQuery    `json:"query" arg:"required"`
	Fields    []string       `json:"fields" arg:"fields;max=MaxKeys"`
	Where     map[string]any `json:"where"`
	Limit     int            `json:"limit" arg:"default=10,max=50;min=1"`
}

func atlasTextSearch(ctx context.Context, d *Deps, in textSearchIn) (*searchRows, error) {
	name, query, fields, where, limit := in.ClassName, string(in.Query), in.Fields, in.Where, in.Limit
	schema, cls, sp, err := searchClass(ctx, d, name)
	if err != nil {
		return nil, err
	}
	if len(sp.TextFields) == 0 {
		return nil, toolerror.New(toolerror.InvalidArgument, "%s has no text_fields to search", cls.Name)
	}
	explicit := len(fields) > 0
	if explicit {
		if err := fieldsIn(d, cls, "fields", fields, sp.TextFields); err != nil {
			return nil, err
		}
	} else if fields = readableOf(d, cls, sp.TextFields); len(fields) == 0 {
		return nil, d.Policy.CheckReadFields(cls, sp.TextFields)
	}
	s, err := newSearchScope(ctx, d, schema, cls, where, fields)
	if err != nil {
		return nil, err
	}
	r := newSearchRequest(ctx, d, s, sp)
	r.query, r.fields, r.limit = query, fields, limit
	hits, engine, err := firstHits(func(e searchEngine) ([]hit, string, error) { return e.textHits(ctx, d, r) })
	if err != nil {
		return nil, err
	}
	// Rows leave the class's large_fields out (as get_sample_objects);
	// a searched large field is shown as a snippet around the match.
	shape := shapeColumns
	p, rows, kept, err := hitRows(ctx, d, schema, cls, where, hits, planInput{dropLarge: true, shape: shape})
	if err != nil {
		return nil, err
	}
	var snippets []map[string]string
	if large := intersect(fields, d.Policy.LargeFields(cls.Name)); len(large) > 0 && len(kept) > 0 {
		if snippets, err = hitSnippets(ctx, d, schema, cls, where, kept, large, queryTerms(query)); err != nil {
			return nil, err
		}
	}
	res := rowsEnvelope(d, p, cls, engine, rows, kept, shape, d.Policy.MaxResponseBytes()-envelopeReserve-snippetBytes(snippets))
	if snippets != nil {
		res.Snippets = snippets[:min(len(snippets), res.ResultCount)]
	}
	telemetry.ToolRows(ctx, res.ResultCount)
	return res, nil
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func snippetBytes(s []map[string]string) int {
	n := 0
	for _, m := range s {
		for k, v := range m {
			n += len(k) + len(v) + 8
		}
	}
	return n
}

// resultCount reads result_count back from an envelope.
// snippetChars is the length of a snippet of a large text field.
const snippetChars = 240

// hitSnippets reads the hits' large searched fields (through the read
// plan again: same scope, same encoder) and cuts each to the window around
// its first matching word; one map per hit, in hit order.
func hitSnippets(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, where map[string]any, hits []hit, fields []string, terms []string) ([]map[string]string, error) {
	_, rows, kept, err := hitRows(ctx, d, schema, cls, where, hits, planInput{keys: fields, shape: shapeObjects})
	if err != nil {
		return nil, err
	}
	byID := map[string]map[string]any{}
	for i, r := range rows {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, err
		}
		byID[kept[i].id] = m
	}
	out := make([]map[string]string, len(hits))
	for i, h := range hits {
		out[i] = map[string]string{}
		for _, f := range fields {
			if s, ok := byID[h.id][f].(string); ok && s != "" {
				out[i][f] = Snippet(s, terms, snippetChars)
			}
		}
	}
	return out, nil
}

// Snippet is the window of about n characters of text around the first
// word matching one of terms (the start of text when none does).
func Snippet(text string, terms []string, n int) string {
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	at := 0
	lower := []rune(strings.ToLower(text))
	for i := 0; i < len(lower); {
		j := i
		for j < len(lower) && (unicode.IsLetter(lower[j]) || unicode.IsDigit(lower[j])) {
			j++
		}
		if j > i && slices.Contains(terms, stem(string(lower[i:j]))) {
			at = i
			break
		}
		i = j + 1
	}
	start := max(0, min(at-n/3, len(r)-n))
	end := min(len(r), start+n)
	s := string(r[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(r) {
		s += "…"
	}
	return s
}

// searchQuery is the query of the search tools: at most maxQueryChars,
// and, when required, with a word to search for.
type searchQuery string

func (q *searchQuery) decodeArg(_ context.Context, args Args, name string, f *argField) error {
	s, err := queryArg(args, f.required)
	*q = searchQuery(s)
	return err
}

func (*searchQuery) schema() string { return `"type":"string"` }

func queryArg(args Args, required bool) (string, error) {
	q, err := args.String("query", required)
	if err != nil {
		return "", err
	}
	if len([]rune(q)) > maxQueryChars {
		return "", invalid("query is longer than %d characters", maxQueryChars)
	}
	if required && len(queryTerms(q)) == 0 {
		return "", invalid("query has no words to search for")
	}
	return q, nil
}

// ---- atlas_autocomplete ---------------------------------------------------------------------------

// autocompletePrefix is atlas_autocomplete's prefix, at most
// maxPrefixChars.
type autocompletePrefix string

func (p *autocompletePrefix) decodeArg(_ context.Context, args Args, name string, f *argField) error {
	s, err := args.String(name, f.required)
	if err != nil {
		return err
	}
	if len([]rune(s)) > maxPrefixChars {
		return invalid("%s is longer than %d characters", name, maxPrefixChars)
	}
	*p = autocompletePrefix(s)
	return nil
}

func (*autocompletePrefix) schema() string { return `"type":"string"` }

type autocompleteIn struct {
	ClassName string             `json:"class_name" arg:"class"`
	Field     string             `json:"field" arg:"required"`
	Prefix    autocompletePrefix `json:"prefix" arg:"required"`
	Where     map[string]any     `json:"where"`
	Limit     int                `json:"limit" arg:"default=10,max=20;min=1"`
}

// autocompleteOut's members are in the order the result has always had.
type autocompleteOut struct {
	ClassName   string           `json:"class_name"`
	Engine      string           `json:"engine"`
	Field       string           `json:"field"`
	Suggestions []map[string]any `json:"suggestions"`
}

func atlasAutocomplete(ctx context.Context, d *Deps, in autocompleteIn) (*autocompleteOut, error) {
	name, field, prefix, where, limit := in.ClassName, in.Field, string(in.Prefix), in.Where, in.Limit
	schema, cls, sp, err := searchClass(ctx, d, name)
	if err != nil {
		return nil, err
	}
	if err := fieldsIn(d, cls, "field", []string{field}, sp.AutocompleteFields); err != nil {
		return nil, err
	}
	s, err := newSearchScope(ctx, d, schema, cls, where, []string{field})
	if err != nil {
		return nil, err
	}
	r := newSearchRequest(ctx, d, s, sp)
	r.query, r.fields, r.limit = prefix, []string{field}, limit
	hits, engine, err := firstHits(func(e searchEngine) ([]hit, string, error) { return e.autocompleteHits(ctx, d, r) })
	if err != nil {
		return nil, err
	}
	_, rows, kept, err := hitRows(ctx, d, schema, cls, where, hits, planInput{keys: []string{field}, shape: shapeObjects})
	if err != nil {
		return nil, err
	}
	suggestions := []map[string]any{}
	for i, r := range rows {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, err
		}
		if _, ok := m[field].(string); !ok {
			continue // a redacted reference (to a missing class) completes nothing, as a hidden one
		}
		suggestions = append(suggestions, map[string]any{"value": m[field], "object_id": kept[i].id})
	}
	return &autocompleteOut{ClassName: cls.Name, Field: field, Engine: engine, Suggestions: suggestions}, nil
}

// ---- atlas_faceted_search -------------------------------------------------------------------------

type facetSpec struct {
	field      string
	kind       string // string | number | date
	boundaries []any  // number: float64; date: time.Time
}

// facetsArg is atlas_faceted_search's facets before the class is known: a
// non-empty array of at most maxFacets entries (facetArgs checks each).
type facetsArg []any

func (fs *facetsArg) decodeArg(_ context.Context, args Args, name string, _ *argField) error {
	raw, ok := args[name].([]any)
	if !ok || len(raw) == 0 {
		return invalid("%s must be a non-empty array of {field, type, boundaries?}", name)
	}
	if len(raw) > maxFacets {
		return invalid("at most %d facets per call", maxFacets)
	}
	*fs = raw
	return nil
}

func (*facetsArg) schema() string {
	return `"type":"array","items":{"type":"object","properties":{"field":{"type":"string"},"type":{"type":"string","enum":["string","number","date"]},"boundaries":{"type":"array"}},"required":["field"]}`
}

func facetArgs(d *Deps, cls *parsedb.Class, sp *policy.SearchPolicy, raw facetsArg) ([]facetSpec, error) {
	var out []facetSpec
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, invalid("facets[%d] must be an object", i)
		}
		fa := Args(m)
		field, err := fa.String("field", true)
		if err != nil {
			return nil, invalid("facets[%d].%v", i, err)
		}
		if err := fieldsIn(d, cls, fmt.Sprintf("facets[%d].field", i), []string{field}, sp.FacetFields); err != nil {
			return nil, err
		}
		f := cls.Field(field)
		def := "string"
		switch f.Type {
		case parsedb.TypeNumber:
			def = "number"
		case parsedb.TypeDate:
			def = "date"
		}
		kind, err := enumArg(fa, "type", def, "string", "number", "date")
		if err != nil {
			return nil, err
		}
		if kind != def {
			return nil, invalid("facets[%d]: %s is a %s field; its facet type is %s", i, field, f.Type, def)
		}
		fs := facetSpec{field: field, kind: kind}
		if b, ok := m["boundaries"]; ok && kind == "string" && b != nil {
			return nil, invalid("facets[%d]: a string facet takes no boundaries", i)
		}
		if kind != "string" {
			bl, ok := m["boundaries"].([]any)
			if !ok || len(bl) < 2 || len(bl) > maxBoundaries {
				return nil, invalid("facets[%d]: a %s facet needs 2 to %d ascending boundaries", i, kind, maxBoundaries)
			}
			for j, b := range bl {
				v, err := boundary(kind, b)
				if err != nil {
					return nil, invalid("facets[%d].boundaries[%d]: %v", i, j, err)
				}
				if j > 0 && !less(fs.boundaries[j-1], v) {
					return nil, invalid("facets[%d].boundaries must be strictly ascending", i)
				}
				fs.boundaries = append(fs.boundaries, v)
			}
		}
		out = append(out, fs)
	}
	return out, nil
}

func boundary(kind string, v any) (any, error) {
	if kind == "number" {
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("must be a number")
		}
		return f, nil
	}
	s, ok := v.(string)
	if m, isMap := v.(map[string]any); isMap {
		s, ok = m["iso"].(string)
	}
	if !ok {
		return nil, fmt.Errorf("must be an ISO date string")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if t, err = time.Parse("2006-01-02", s); err != nil {
			return nil, fmt.Errorf("must be an ISO date string")
		}
	}
	return t.UTC(), nil
}

func less(a, b any) bool {
	switch x := a.(type) {
	case float64:
		return x < b.(float64)
	case time.Time:
		return x.Before(b.(time.Time))
	}
	return false
}

type facetedSearchIn struct {
	ClassName string         `json:"class_name" arg:"class"`
	Query     searchQuery    `json:"query"`
	Facets    facetsArg      `json:"facets" arg:"required"`
	Where     map[string]any `json:"where"`
}

// facetsOut's members are in the order the result has always had.
type facetsOut struct {
	ClassName string         `json:"class_name"`
	Engine    string         `json:"engine"`
	Facets    map[string]any `json:"facets"`
	Total     int64          `json:"total"`
}

func atlasFacetedSearch(ctx context.Context, d *Deps, in facetedSearchIn) (*facetsOut, error) {
	name, query, where := in.ClassName, string(in.Query), in.Where
	schema, cls, sp, err := searchClass(ctx, d, name)
	if err != nil {
		return nil, err
	}
	facets, err := facetArgs(d, cls, sp, in.Facets)
	if err != nil {
		return nil, err
	}
	var textFields []string
	if query != "" {
		if textFields = readableOf(d, cls, sp.TextFields); len(textFields) == 0 {
			return nil, toolerror.New(toolerror.InvalidArgument, "%s has no text_fields this session may search; leave query out", cls.Name)
		}
		if len(queryTerms(query)) == 0 {
			return nil, invalid("query has no words to search for")
		}
	}
	searched := append(slices.Clone(textFields), facetFieldNames(facets)...)
	s, err := newSearchScope(ctx, d, schema, cls, where, searched)
	if err != nil {
		return nil, err
	}
	r := newSearchRequest(ctx, d, s, sp)
	r.query, r.fields, r.facets = query, textFields, facets
	return firstFacets(ctx, d, r)
}

func facetFieldNames(fs []facetSpec) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.field)
	}
	return out
}

// ---- find_similar ------------------------------------------------------------------------------------

// find_similar's arguments: exactly one of object_id and vector.
type findSimilarIn struct {
	ClassName string         `json:"class_name" arg:"class"`
	ObjectID  string         `json:"object_id" arg:"objectid"`
	Vector    vectorArg      `json:"vector"`
	K         int            `json:"k" arg:"default=5,max=20;min=1"`
	Where     map[string]any `json:"where"`
}

func findSimilar(ctx context.Context, d *Deps, in findSimilarIn) (*searchRows, error) {
	name, k, where, vector, objectID := in.ClassName, in.K, in.Where, []float64(in.Vector), in.ObjectID
	if (objectID == "") == (vector == nil) {
		return nil, invalid("give exactly one of object_id and vector")
	}
	schema, cls, sp, err := searchClass(ctx, d, name)
	if err != nil {
		return nil, err
	}
	if err := vectorReadable(d, cls, sp); err != nil {
		return nil, err
	}
	if objectID != "" {
		if vector, err = seedVector(ctx, d, schema, cls, sp, objectID); err != nil {
			return nil, err
		}
	}
	hits, engine, err := nearest(ctx, d, schema, cls, sp, where, vector, objectID, k)
	if err != nil {
		return nil, err
	}
	shape := shapeColumns
	p, rows, kept, err := hitRows(ctx, d, schema, cls, where, hits, planInput{dropLarge: true, shape: shape})
	if err != nil {
		return nil, err
	}
	res := rowsEnvelope(d, p, cls, engine, rows, kept, shape, d.Policy.MaxResponseBytes()-envelopeReserve)
	telemetry.ToolRows(ctx, res.ResultCount)
	return res, nil
}

// vectorArg is find_similar's vector: 1 to maxVectorDims finite numbers
// (nil when absent).
type vectorArg []float64

func (vec *vectorArg) decodeArg(_ context.Context, args Args, name string, _ *argField) error {
	v, ok := args[name]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 || len(list) > maxVectorDims {
		return invalid("%s must be an array of 1 to %d numbers", name, maxVectorDims)
	}
	out := make([]float64, len(list))
	for i, x := range list {
		f, ok := x.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return invalid("%s[%d] must be a finite number", name, i)
		}
		out[i] = f
	}
	*vec = out
	return nil
}

func (*vectorArg) schema() string { return `"type":"array","items":{"type":"number"}` }

// seedVector reads an object's vector through the read scope: an object
// the session cannot read answers "not found", like get_object.
func seedVector(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, sp *policy.SearchPolicy, id string) ([]float64, error) {
	t, err := buildFilter(ctx, d, schema, cls, map[string]any{"objectId": id}, false)
	if err != nil {
		return nil, err
	}
	cur, err := d.Store.Find(ctx, cls.Name, parsedb.FindSpec{Filter: t.Filter, Projection: bson.D{{Key: sp.VectorField, Value: 1}}, Limit: 1})
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	if !cur.Next(ctx) {
		if err := cur.Err(); err != nil {
			return nil, err
		}
		return nil, toolerror.New(toolerror.InvalidArgument, "Object not found: %s#%s", cls.Name, id)
	}
	v := rawVector(cur.Current.Lookup(sp.VectorField))
	if v == nil {
		return nil, toolerror.New(toolerror.InvalidArgument, "%s#%s has no vector in %s yet (the operator can run parse-mcp embed %s)", cls.Name, id, sp.VectorField, cls.Name)
	}
	return v, nil
}

// rawVector decodes a stored array of numbers (nil if it is not one).
func rawVector(v bson.RawValue) []float64 {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	vals, err := arr.Values()
	if err != nil || len(vals) == 0 {
		return nil
	}
	out := make([]float64, len(vals))
	for i, x := range vals {
		f, ok := x.AsFloat64OK()
		if !ok {
			return nil
		}
		out[i] = f
	}
	return out
}

// nearest finds the k rows nearest to vector within the scope.
func nearest(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, sp *policy.SearchPolicy, where map[string]any, vector []float64, exclude string, k int) ([]hit, string, error) {
	s, err := newSearchScope(ctx, d, schema, cls, where, sp.EmbedFrom)
	if err != nil {
		return nil, "", err
	}
	r := newSearchRequest(ctx, d, s, sp)
	r.vector, r.exclude, r.limit = vector, exclude, k
	return firstHits(func(e searchEngine) ([]hit, string, error) { return e.nearestHits(ctx, d, r) })
}
