package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/policy"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Limits of the query tools (PRODUCT.md §4.1, §4.2).
const (
	DefaultQueryLimit  = 100
	MaxQueryLimit      = 1000
	DisplayCap         = 50 // rows shown in query_class's JSON envelope
	MaxGetObjects      = 50
	DefaultSampleLimit = 5
	MaxSampleLimit     = 20
	MaxSkip            = math.MaxInt32

	// judgeRows is how many leading rows decide the heaviest field when a
	// result exceeds the byte cap.
	judgeRows = 10
	// envelopeReserve is kept free of rows for the envelope around them
	// (query_class also reserves the size of its arguments, for next_call).
	envelopeReserve = 1024
	// includeChunk is how many rows share one batch of include queries.
	includeChunk = 1000
	// progressEvery is how many rows pass between progress reports.
	progressEvery = 250
)

const queryOut = `{"type":"object","properties":{"class_name":{"type":"string"}},"required":["class_name"]}`

// QueryTools are the object-reading tools.
func QueryTools() []*Tool {
	ro := func(name string, timeout time.Duration) policy.ToolInfo {
		return policy.ToolInfo{Name: name, Category: "query", Tier: config.TierReadonly, Timeout: timeout}
	}
	return []*Tool{
		{
			ToolInfo:    ro("count_objects", 20*time.Second),
			Description: "Count objects of a class matching a Parse where constraint.",
			InputSchema: `{"type":"object","properties":{"class_name":{"type":"string"},"where":{"type":"object","description":"Parse REST query constraints, e.g. {\"plays\":{\"$gt\":100}}"},"apply_canonical_filter":{"type":"boolean","default":true}},"required":["class_name"]}`,
			ReadOnly:    true,
			Handler:     countObjects,
		},
		{
			ToolInfo:     ro("query_class", 30*time.Second),
			Description:  "Find objects of a class with a Parse where, keys, include, order and paging; JSON or csv/markdown/table.",
			InputSchema:  `{"type":"object","properties":{"class_name":{"type":"string"},"where":{"type":"object"},"keys":{"type":"array","items":{"type":"string"}},"include":{"type":"array","items":{"type":"string"},"description":"pointer paths to expand"},"order":{"type":"string","description":"e.g. \"-plays,title\""},"limit":{"type":"integer","default":100,"maximum":1000},"skip":{"type":"integer"},"format":{"enum":["json","csv","markdown","table"]},"apply_canonical_filter":{"type":"boolean","default":true}},"required":["class_name"]}`,
			OutputSchema: queryOut,
			ReadOnly:     true,
			Handler:      queryClass,
		},
		{
			ToolInfo:     ro("get_object", 10*time.Second),
			Description:  "Fetch one object by objectId.",
			InputSchema:  `{"type":"object","properties":{"class_name":{"type":"string"},"object_id":{"type":"string"},"keys":{"type":"array","items":{"type":"string"}},"include":{"type":"array","items":{"type":"string"}}},"required":["class_name","object_id"]}`,
			OutputSchema: queryOut,
			ReadOnly:     true,
			Handler:      getObject,
		},
		{
			ToolInfo:     ro("get_objects", 20*time.Second),
			Description:  "Fetch up to 50 objects by objectId.",
			InputSchema:  `{"type":"object","properties":{"class_name":{"type":"string"},"ids":{"type":"array","items":{"type":"string"},"maxItems":50},"keys":{"type":"array","items":{"type":"string"}},"include":{"type":"array","items":{"type":"string"}}},"required":["class_name","ids"]}`,
			OutputSchema: queryOut,
			ReadOnly:     true,
			Handler:      getObjects,
		},
		{
			ToolInfo:     ro("get_sample_objects", 15*time.Second),
			Description:  "The most recently created objects of a class, to see what its data looks like.",
			InputSchema:  `{"type":"object","properties":{"class_name":{"type":"string"},"limit":{"type":"integer","default":5,"maximum":20}},"required":["class_name"]}`,
			OutputSchema: queryOut,
			ReadOnly:     true,
			Handler:      getSampleObjects,
		},
		{
			ToolInfo:     ro("explain_query", 30*time.Second),
			Description:  "Explain how a where on a class is filtered and which indexes can serve it.",
			InputSchema:  `{"type":"object","properties":{"class_name":{"type":"string"},"where":{"type":"object"}},"required":["class_name"]}`,
			OutputSchema: queryOut,
			ReadOnly:     true,
			Handler:      explainQuery,
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
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := checkWhereFields(d, cls, where); err != nil {
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

// whereFieldNames collects the field names a where constrains (through
// $and/$or/$nor), not the fields of sub-queries on other classes.
func whereFieldNames(where map[string]any, out map[string]bool) {
	for k, v := range where {
		switch k {
		case "$and", "$or", "$nor":
			if list, ok := v.([]any); ok {
				for _, e := range list {
					if m, ok := e.(map[string]any); ok {
						whereFieldNames(m, out)
					}
				}
			}
		default:
			if !strings.HasPrefix(k, "$") {
				out[k] = true
			}
		}
	}
}

// checkWhereFields runs the field policy over the caller's where keys.
func checkWhereFields(d *Deps, cls *parsedb.Class, where map[string]any) error {
	if len(where) == 0 {
		return nil
	}
	names := map[string]bool{}
	whereFieldNames(where, names)
	for _, n := range sortedKeys(names) {
		if err := d.Policy.CheckReadField(cls, n); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func countObjects(ctx context.Context, d *Deps, args Args) (any, error) {
	t, err := resolveRead(ctx, d, args, true)
	if err != nil {
		return nil, err
	}
	if err := d.Policy.CheckCollscan(ctx, d.Store, t.Class, t.Filter); err != nil {
		return nil, err
	}
	n, err := d.Store.Count(ctx, t.Class.Name, t.Filter)
	if err != nil {
		return nil, err
	}
	return map[string]any{"class_name": t.Class.Name, "count": n, "constraints": t.Shown}, nil
}

// enumArg returns a string argument that must be one of allowed.
func enumArg(args Args, name, def string, allowed ...string) (string, error) {
	s, err := args.String(name, false)
	if err != nil {
		return "", err
	}
	if s == "" {
		return def, nil
	}
	for _, a := range allowed {
		if strings.EqualFold(s, a) {
			return a, nil
		}
	}
	return "", invalid("%s must be one of %s, got %q", name, strings.Join(allowed, ", "), truncate(s, 40))
}

// ---- query_class ----------------------------------------------------------

func queryClass(ctx context.Context, d *Deps, args Args) (any, error) {
	name, err := args.ClassName()
	if err != nil {
		return nil, err
	}
	in, err := readInputArgs(args, true)
	if err != nil {
		return nil, err
	}
	limit, err := args.Int("limit", DefaultQueryLimit, 1, MaxQueryLimit)
	if err != nil {
		return nil, err
	}
	skip, err := args.Int("skip", 0, 0, MaxSkip)
	if err != nil {
		return nil, err
	}
	format, err := enumArg(args, "format", "json", "json", "csv", "markdown", "table")
	if err != nil {
		return nil, err
	}
	if in.applyCanonical, err = args.Bool("apply_canonical_filter", true); err != nil {
		return nil, err
	}
	p, err := newReadPlan(ctx, d, name, in)
	if err != nil {
		return nil, err
	}
	if err := d.Policy.CheckCollscan(ctx, d.Store, p.target.Class, p.target.Filter); err != nil {
		return nil, err
	}
	argBytes, _ := json.Marshal(args)
	budget := d.Policy.MaxResponseBytes() - envelopeReserve - len(argBytes)
	if format != "json" {
		return p.queryText(ctx, args, format, skip, limit, budget)
	}
	return p.queryJSON(ctx, args, skip, limit, budget)
}

// nextCall repeats a query_class call at another skip.
func nextCall(args Args, skip int) map[string]any {
	a := make(map[string]any, len(args)+1)
	for k, v := range args {
		a[k] = v
	}
	a["skip"] = skip
	return map[string]any{"tool": "query_class", "arguments": a}
}

func (p *readPlan) queryJSON(ctx context.Context, args Args, skip, limit, budget int) (any, error) {
	shown := min(limit, DisplayCap)
	pg, err := p.jsonPage(ctx, skip, limit, shown, budget, true)
	if err != nil {
		return nil, err
	}
	o := newJSONObject()
	o.str("class_name", p.target.Class.Name)
	if !pg.over {
		displayCut := pg.n > pg.kept
		hasMore := pg.hasMore || displayCut
		o.val("result_count", pg.n)
		o.val("pagination", map[string]any{"limit": limit, "skip": skip, "has_more": hasMore})
		if hasMore {
			o.val("next_call", nextCall(args, skip+pg.kept))
		}
		if displayCut {
			o.val("truncated", true)
			o.str("truncated_note", fmt.Sprintf("results shows the first %d of the %d rows of this page (JSON display cap %d); next_call continues at skip %d. For more rows per call use format csv, markdown or table, or export_data.", pg.kept, pg.n, DisplayCap, skip+pg.kept))
		}
		p.addIncludeNote(o)
		o.rawArray("results", pg.rows)
		return o.done(), nil
	}
	// Over the byte cap: drop the heaviest field, then trim rows.
	dropped := heaviestDroppable(pg.sizes)
	p2 := p
	if dropped != "" {
		p2 = p.without(dropped)
	}
	pg2, err := p2.jsonPage(ctx, skip, limit, shown, budget, false)
	if err != nil {
		return nil, err
	}
	more := pg2.hasMore || pg2.kept < pg2.n
	o.val("pagination", map[string]any{"limit": limit, "skip": skip, "has_more": more})
	o.val("_truncated", p.truncation(dropped, pg2.kept, pg2.n, skip, more))
	p2.addIncludeNote(o)
	o.rawArray("results", pg2.rows)
	return o.done(), nil
}

// truncation is the _truncated member of an over-the-cap query_class.
func (p *readPlan) truncation(dropped string, kept, original, skip int, more bool) map[string]any {
	droppedList := []string{}
	if dropped != "" {
		droppedList = append(droppedList, dropped)
	}
	t := map[string]any{
		"reason":         "response_exceeded_max_bytes",
		"dropped_fields": droppedList,
		"kept_count":     kept,
		"original_count": original,
	}
	var hint strings.Builder
	fmt.Fprintf(&hint, "The rows exceed the %d-byte response cap.", p.d.Policy.MaxResponseBytes())
	if dropped != "" {
		fmt.Fprintf(&hint, " %s was left out; read it with keys on fewer rows (e.g. get_object).", dropped)
	}
	if more && kept > 0 {
		t["next_skip"] = skip + kept
		fmt.Fprintf(&hint, " Continue with skip %d.", skip+kept)
	}
	if kept == 0 {
		hint.WriteString(" Not even one row fits: name fewer fields with keys.")
	}
	t["hint"] = hint.String()
	return t
}

// heaviestDroppable is the heaviest field by encoded bytes, never objectId,
// createdAt or updatedAt ("" when there is none).
func heaviestDroppable(sizes map[string]int) string {
	for _, f := range parsedb.HeaviestFields(sizes) {
		if !isIdentityField(f.Field) {
			return f.Field
		}
	}
	return ""
}

func isIdentityField(f string) bool {
	return f == "objectId" || f == "createdAt" || f == "updatedAt"
}

// jsonRows is a run of encoded rows.
type jsonRows struct {
	rows    []byte // comma-separated JSON objects
	kept    int    // rows in rows
	n       int    // rows of the page read (≤ limit)
	hasMore bool   // a row exists after the page
	over    bool   // the byte budget was exceeded
	sizes   map[string]int
}

// jsonPage reads one page (skip, limit; limit+1 rows are fetched to learn
// has_more), encoding at most `shown` rows within budget bytes. With
// stopAtOver the read stops at the first row that does not fit.
func (p *readPlan) jsonPage(ctx context.Context, skip, limit, shown, budget int, stopAtOver bool) (*jsonRows, error) {
	pg := &jsonRows{sizes: map[string]int{}}
	prog := ProgressFrom(ctx)
	spec := p.findSpec(skip, limit+1)
	err := p.rows(ctx, spec, func(i int) bool { return i < shown && !pg.over }, func(i int, _ bson.Raw, row []byte) (bool, error) {
		if i >= limit {
			pg.hasMore = true
			return false, nil
		}
		pg.n++
		if limit > DefaultQueryLimit && pg.n%progressEvery == 0 {
			prog.Report(float64(pg.n), float64(limit), fmt.Sprintf("%d rows read", pg.n))
		}
		if row == nil {
			return true, nil
		}
		if i < judgeRows {
			parsedb.AddFieldSizes(pg.sizes, row)
		}
		if len(pg.rows)+len(row)+1 > budget {
			pg.over = true
			return !stopAtOver, nil
		}
		if pg.kept > 0 {
			pg.rows = append(pg.rows, ',')
		}
		pg.rows = append(pg.rows, row...)
		pg.kept++
		return true, nil
	})
	return pg, err
}

func (p *readPlan) queryText(ctx context.Context, args Args, format string, skip, limit, budget int) (any, error) {
	cols := p.defaultColumns()
	tp, err := p.textPage(ctx, cols, skip, limit, budget, true)
	if err != nil {
		return nil, err
	}
	var dropped string
	if tp.over {
		dropped = heaviestDroppable(tp.sizes)
		p2 := p
		if dropped != "" {
			p2 = p.without(dropped)
			cols = withoutColumn(cols, dropped)
		}
		if tp, err = p2.textPage(ctx, cols, skip, limit, budget, false); err != nil {
			return nil, err
		}
	}
	headers := columnHeaders(cols)
	out, rows, trimmed := fitText(format, headers, tp.rows, budget)
	over := tp.over || trimmed
	o := newJSONObject()
	o.str("class_name", p.target.Class.Name)
	o.str("format", format)
	o.val("headers", headers)
	o.val("row_count", len(rows))
	if over {
		more := tp.hasMore || len(rows) < tp.n
		o.val("_truncated", p.truncation(dropped, len(rows), tp.n, skip, more))
	} else if tp.hasMore {
		o.val("next_call", nextCall(args, skip+len(rows)))
	}
	p.addIncludeNote(o)
	o.str("output", out)
	return o.done(), nil
}

func (p *readPlan) addIncludeNote(o *jsonObject) {
	if len(p.truncatedIncludes) > 0 {
		o.val("truncated_include_fields", p.truncatedIncludes)
	}
}

// ---- result envelopes -------------------------------------------------------

// jsonObject writes a JSON object member by member, so that pre-encoded rows
// are copied once instead of being decoded and encoded again.
type jsonObject struct {
	b []byte
	n int
}

func newJSONObject() *jsonObject { return &jsonObject{b: append(make([]byte, 0, 256), '{')} }

func (o *jsonObject) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = appendJSONString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *jsonObject) val(k string, v any) {
	o.key(k)
	b, err := MarshalCompact(v)
	if err != nil {
		b = []byte("null")
	}
	o.b = append(o.b, b...)
}

func (o *jsonObject) raw(k string, v []byte) {
	o.key(k)
	if len(v) == 0 {
		v = []byte("null")
	}
	o.b = append(o.b, v...)
}

// rawArray writes comma-separated JSON values as an array.
func (o *jsonObject) rawArray(k string, items []byte) {
	o.key(k)
	o.b = append(o.b, '[')
	o.b = append(o.b, items...)
	o.b = append(o.b, ']')
}

func (o *jsonObject) done() json.RawMessage {
	return json.RawMessage(append(o.b, '}'))
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := MarshalCompact(s)
	return append(dst, b...)
}

// tooLarge is the refusal of tools other than query_class whose result
// would exceed the byte cap: it names the heaviest fields by bytes and a
// positive keys list to retry with (names only, never values).
func tooLarge(d *Deps, tool string, sizes map[string]int, extra string) error {
	heavy := parsedb.HeaviestFields(sizes)
	total := 0
	for _, f := range heavy {
		total += f.Bytes
	}
	var names []string
	for i, f := range heavy {
		if i == 3 {
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", f.Field, humanBytes(f.Bytes)))
	}
	// Leave out the heaviest fields until at most half of the bytes remain.
	removed := map[string]bool{}
	left := total
	for _, f := range heavy {
		if left <= total/2 && len(removed) > 0 {
			break
		}
		if isIdentityField(f.Field) {
			continue
		}
		removed[f.Field] = true
		left -= f.Bytes
	}
	var keep []string
	for _, k := range sortedKeys(sizes) {
		if !removed[k] && !isIdentityField(k) {
			keep = append(keep, k)
		}
	}
	if len(keep) == 0 {
		keep = []string{"objectId"}
	}
	keysJSON, _ := MarshalCompact(keep)
	msg := fmt.Sprintf("%s: the result exceeds the %d-byte response cap. Heaviest fields: %s. Retry with keys: %s", tool, d.Policy.MaxResponseBytes(), strings.Join(names, ", "), keysJSON)
	if extra != "" {
		msg += " " + extra
	}
	return toolerror.New(toolerror.InvalidArgument, "%s", msg)
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ---- the read plan ------------------------------------------------------------

// planInput is what a read tool asks for.
type planInput struct {
	where          map[string]any
	applyCanonical bool
	keys           []string
	include        []string
	order          []parsedb.OrderKey
	noSort         bool // lookups by id need no order
	dropLarge      bool // leave the class's large_fields out (samples)
}

// readInputArgs reads keys and include (and where/order when full).
func readInputArgs(args Args, full bool) (planInput, error) {
	var in planInput
	var err error
	if in.keys, err = args.FieldList("keys", MaxKeys); err != nil {
		return in, err
	}
	if in.include, err = args.FieldList("include", MaxIncludes); err != nil {
		return in, err
	}
	if !full {
		return in, nil
	}
	if in.where, err = args.Object("where"); err != nil {
		return in, err
	}
	order, err := args.StringList("order")
	if err != nil {
		return in, err
	}
	if in.order, err = parsedb.ParseOrder(order); err != nil {
		return in, err
	}
	return in, nil
}

// readPlan is a policy-checked read of one class: filter, projection,
// sort, includes and the encoders that turn stored rows into REST JSON.
type readPlan struct {
	d        *Deps
	schema   *parsedb.Schema
	target   *readTarget
	userKeys []string // keys as the caller gave them
	keys     []string // keys of the queried class (include sub-keys routed away)
	includes []*parsedb.IncludeNode
	// truncatedIncludes: include path → join_fields it was projected to.
	truncatedIncludes map[string][]string
	projection        bson.D
	sort              bson.D
	enc               parsedb.RowEncoder
	incEnc            map[*parsedb.IncludeNode]*parsedb.RowEncoder
}

func newReadPlan(ctx context.Context, d *Deps, name string, in planInput) (*readPlan, error) {
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	return planFor(ctx, d, schema, name, in)
}

// planFor builds the plan against a given schema snapshot.
func planFor(ctx context.Context, d *Deps, schema *parsedb.Schema, name string, in planInput) (*readPlan, error) {
	cls, err := d.Policy.ResolveClass(ctx, schema, name)
	if err != nil {
		return nil, err
	}
	if err := checkWhereFields(d, cls, in.where); err != nil {
		return nil, err
	}
	for _, k := range in.keys {
		if err := d.Policy.CheckReadField(cls, k); err != nil {
			return nil, err
		}
	}
	for _, o := range in.order {
		if err := d.Policy.CheckReadField(cls, o.Field); err != nil {
			return nil, err
		}
	}
	p := &readPlan{d: d, schema: schema, userKeys: in.keys, incEnc: map[*parsedb.IncludeNode]*parsedb.RowEncoder{}}
	p.includes, err = parsedb.BuildIncludeTree(cls, in.include, func(from *parsedb.Class, f *parsedb.Field, path string) (*parsedb.Class, error) {
		return d.Policy.CheckInclude(ctx, schema, from, f.Name)
	})
	if err != nil {
		return nil, err
	}
	if p.keys, err = p.routeKeys(in.keys); err != nil {
		return nil, err
	}
	if p.target, err = buildFilter(ctx, d, schema, cls, in.where, in.applyCanonical); err != nil {
		return nil, err
	}
	p.projection = parsedb.Projection(cls, p.keys)
	if !in.noSort {
		p.sort = parsedb.SortDoc(cls, in.order)
	}
	p.enc = *d.Policy.RowEncoder(cls, p.keys)
	if in.dropLarge && len(p.keys) == 0 {
		if large := d.Policy.LargeFields(cls.Name); len(large) > 0 {
			p.projection = parsedb.ExclusionProjection(cls, large)
			p.enc.Drop = dropAlso(p.enc.Drop, large...)
		}
	}
	parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
		p.incEnc[n] = d.Policy.RowEncoder(n.Target, n.Keys)
	})
	return p, nil
}

// dropAlso extends an encoder's Drop with more field names.
func dropAlso(prev func(string) bool, fields ...string) func(string) bool {
	set := map[string]bool{}
	for _, f := range fields {
		set[f] = true
	}
	return func(f string) bool { return set[f] || prev != nil && prev(f) }
}

// routeKeys sends keys that reach into included objects ("artist.name" with
// include artist) to their include node, applies join_fields when a bare
// included pointer is named in keys, and returns the keys of the queried
// class itself (every top-level included pointer among them).
func (p *readPlan) routeKeys(keys []string) ([]string, error) {
	var main []string
	seen := map[string]bool{}
	addMain := func(k string) {
		if !seen[k] {
			seen[k] = true
			main = append(main, k)
		}
	}
	bare := map[*parsedb.IncludeNode]bool{}
	for _, k := range keys {
		var best *parsedb.IncludeNode
		parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
			if (k == n.Path || strings.HasPrefix(k, n.Path+".")) && (best == nil || len(n.Path) > len(best.Path)) {
				best = n
			}
		})
		if best == nil {
			addMain(k)
			continue
		}
		root, _, _ := strings.Cut(k, ".")
		addMain(root)
		if k == best.Path {
			bare[best] = true
			continue
		}
		sub := k[len(best.Path)+1:]
		if err := p.d.Policy.CheckReadField(best.Target, sub); err != nil {
			return nil, err
		}
		best.Keys = append(best.Keys, sub)
	}
	parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
		if len(n.Keys) == 0 && bare[n] {
			if jf := p.d.Policy.JoinFields(n.Target.Name); len(jf) > 0 {
				n.Keys = append([]string(nil), jf...)
				if p.truncatedIncludes == nil {
					p.truncatedIncludes = map[string][]string{}
				}
				p.truncatedIncludes[n.Path] = jf
			}
		}
		if len(n.Keys) > 0 {
			for _, c := range n.Children {
				if !slicesContains(n.Keys, c.Field) {
					n.Keys = append(n.Keys, c.Field)
				}
			}
		}
	})
	if len(main) > 0 {
		for _, n := range p.includes {
			addMain(n.Field)
		}
	}
	return main, nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// without is the plan with one more field left out (the size-cap fallback).
func (p *readPlan) without(field string) *readPlan {
	q := *p
	q.includes = nil
	for _, n := range p.includes {
		if n.Field != field {
			q.includes = append(q.includes, n)
		}
	}
	cls := p.target.Class
	if len(p.keys) > 0 {
		var keys []string
		for _, k := range p.keys {
			if root, _, _ := strings.Cut(k, "."); root != field {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			keys = []string{"objectId"}
		}
		q.keys = keys
		q.projection = parsedb.Projection(cls, keys)
		q.enc.Keys = parsedb.KeyRoots(keys)
	} else {
		q.projection = append(append(bson.D(nil), p.projection...), parsedb.ExclusionProjection(cls, []string{field})...)
		q.enc.Drop = dropAlso(p.enc.Drop, field)
	}
	return &q
}

func (p *readPlan) findSpec(skip, limit int) parsedb.FindSpec {
	return parsedb.FindSpec{Filter: p.target.Filter, Projection: p.projection, Sort: p.sort, Skip: int64(skip), Limit: int64(limit), BatchSize: int32(limit)}
}

// rows runs the find and calls fn for every row in order; row is its REST
// JSON (includes spliced in) when encode(i) is true, else nil. row is only
// valid during the call. fn returns false to stop.
func (p *readPlan) rows(ctx context.Context, spec parsedb.FindSpec, encode func(i int) bool, fn func(i int, doc bson.Raw, row []byte) (bool, error)) error {
	cur, err := p.d.Store.Find(ctx, p.target.Class.Name, spec)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = cur.Close(cctx)
	}()
	i := 0
	if len(p.includes) == 0 {
		var buf []byte
		for cur.Next(ctx) {
			var row []byte
			if encode(i) {
				if buf, err = p.enc.AppendRow(buf[:0], cur.Current); err != nil {
					return err
				}
				row = buf
			}
			cont, err := fn(i, cur.Current, row)
			if err != nil || !cont {
				return err
			}
			i++
		}
		return cur.Err()
	}
	// With includes, rows are read in chunks so that each chunk's pointers
	// are fetched with one $in query per target class and level.
	var chunk []bson.Raw
	size, limit := 0, p.d.Policy.MaxResponseBytes()
	var buf, out []byte
	flush := func() (bool, error) {
		defer func() { chunk, size = chunk[:0], 0 }()
		var need []bson.Raw
		for j, doc := range chunk {
			if encode(i + j) {
				need = append(need, doc)
			}
		}
		inc := &includeSet{p: p, docs: map[*parsedb.IncludeNode]map[string]bson.Raw{}, cache: map[*parsedb.IncludeNode]map[string][]byte{}}
		if err := inc.load(ctx, need); err != nil {
			return false, err
		}
		for _, doc := range chunk {
			var row []byte
			if encode(i) {
				var err error
				if buf, err = p.enc.AppendRow(buf[:0], doc); err != nil {
					return false, err
				}
				out = inc.splice(out[:0], doc, buf, p.includes)
				row = out
			}
			cont, err := fn(i, doc, row)
			i++
			if err != nil || !cont {
				return false, err
			}
		}
		return true, nil
	}
	for cur.Next(ctx) {
		doc := append(bson.Raw(nil), cur.Current...)
		chunk = append(chunk, doc)
		size += len(doc)
		if len(chunk) >= includeChunk || size >= limit {
			if cont, err := flush(); err != nil || !cont {
				return err
			}
		}
	}
	if err := cur.Err(); err != nil {
		return err
	}
	if len(chunk) > 0 {
		_, err := flush()
		return err
	}
	return nil
}

// includeSet holds the included objects of one chunk of rows.
type includeSet struct {
	p     *readPlan
	docs  map[*parsedb.IncludeNode]map[string]bson.Raw
	cache map[*parsedb.IncludeNode]map[string][]byte
}

type includeFetch struct {
	cls   *parsedb.Class
	ids   []any
	seen  map[string]bool
	nodes []*parsedb.IncludeNode
	full  bool
	keys  []string
}

// load fetches the pointed-to objects level by level: one query per target
// class per level, each through the target class's filters and ACL scope
// (the canonical filter is skipped, as for lookups by id).
func (s *includeSet) load(ctx context.Context, mains []bson.Raw) error {
	parents := map[*parsedb.IncludeNode][]bson.Raw{}
	for _, n := range s.p.includes {
		parents[n] = mains
	}
	level := s.p.includes
	budget, used := s.p.d.Policy.MaxResponseBytes(), 0
	for len(level) > 0 {
		byClass := map[string]*includeFetch{}
		var order []string
		for _, n := range level {
			f := byClass[n.Target.Name]
			if f == nil {
				f = &includeFetch{cls: n.Target, seen: map[string]bool{}}
				byClass[n.Target.Name] = f
				order = append(order, n.Target.Name)
			}
			f.nodes = append(f.nodes, n)
			if len(n.Keys) == 0 {
				f.full = true
			} else {
				f.keys = append(f.keys, n.Keys...)
			}
			for _, doc := range parents[n] {
				if c, id, ok := parsedb.PointerRef(doc, n.Field); ok && c == n.Target.Name && !f.seen[id] {
					f.seen[id] = true
					f.ids = append(f.ids, id)
				}
			}
		}
		for _, name := range order {
			f := byClass[name]
			got := map[string]bson.Raw{}
			if len(f.ids) > 0 {
				t, err := buildFilter(ctx, s.p.d, s.p.schema, f.cls, map[string]any{"objectId": map[string]any{"$in": f.ids}}, false)
				if err != nil {
					return err
				}
				var proj bson.D
				if !f.full {
					proj = parsedb.Projection(f.cls, f.keys)
				}
				cur, err := s.p.d.Store.Find(ctx, name, parsedb.FindSpec{Filter: t.Filter, Projection: proj, Limit: int64(len(f.ids)), BatchSize: int32(len(f.ids))})
				if err != nil {
					return err
				}
				for cur.Next(ctx) {
					doc := append(bson.Raw(nil), cur.Current...)
					if used += len(doc); used > budget {
						_ = cur.Close(context.WithoutCancel(ctx))
						return toolerror.New(toolerror.InvalidArgument, "the included %s objects exceed the %d-byte response cap; name the fields you need with keys (e.g. \"%s.<field>\") or lower the limit", name, budget, f.nodes[0].Path)
					}
					got[parsedb.DocID(doc)] = doc
				}
				err = cur.Err()
				_ = cur.Close(context.WithoutCancel(ctx))
				if err != nil {
					return err
				}
			}
			for _, n := range f.nodes {
				s.docs[n] = got
			}
		}
		var next []*parsedb.IncludeNode
		for _, n := range level {
			if len(n.Children) == 0 {
				continue
			}
			docs := make([]bson.Raw, 0, len(s.docs[n]))
			for _, doc := range s.docs[n] {
				docs = append(docs, doc)
			}
			for _, c := range n.Children {
				parents[c] = docs
				next = append(next, c)
			}
		}
		level = next
	}
	return nil
}

// splice appends row with the pointers of nodes replaced by their objects.
// A pointer whose object was not found or was filtered out stays a pointer.
func (s *includeSet) splice(dst []byte, doc bson.Raw, row []byte, nodes []*parsedb.IncludeNode) []byte {
	var repl map[string][]byte
	for _, n := range nodes {
		c, id, ok := parsedb.PointerRef(doc, n.Field)
		if !ok || c != n.Target.Name {
			continue
		}
		if v := s.encode(n, id); v != nil {
			if repl == nil {
				repl = map[string][]byte{}
			}
			repl[n.Field] = v
		}
	}
	return parsedb.SpliceRow(dst, row, repl)
}

func (s *includeSet) encode(n *parsedb.IncludeNode, id string) []byte {
	if v, ok := s.cache[n][id]; ok {
		return v
	}
	if s.cache[n] == nil {
		s.cache[n] = map[string][]byte{}
	}
	doc := s.docs[n][id]
	if doc == nil {
		s.cache[n][id] = nil
		return nil
	}
	row, err := s.p.incEnc[n].AppendRow(nil, doc)
	if err != nil {
		s.cache[n][id] = nil
		return nil
	}
	if len(n.Children) > 0 {
		row = s.splice(nil, doc, row, n.Children)
	}
	out := parsedb.ObjectPrefix(nil, n.Target.Name, row)
	s.cache[n][id] = out
	return out
}
