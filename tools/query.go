package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// Limits of the query tools (docs/tools.md "Tools").
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

// QueryTools are the object-reading tools.
func QueryTools() []*Tool {
	ro := func(name, op string, untrusted bool, timeout time.Duration) policy.ToolInfo {
		return policy.ToolInfo{Name: name, Category: policy.CategoryQuery, Tier: config.TierReadonly, Timeout: timeout, Operation: op, UntrustedOutput: untrusted}
	}
	return []*Tool{
		{
			ToolInfo:     ro("count_objects", policy.OpCount, false, 20*time.Second),
			Description:  "Count objects of a class matching a Parse where constraint.",
			Example:      `{"class_name":"Song","where":{"plays":{"$gt":1000}}}`,
			ReadOnly:     true,
			OutputSchema: countOutSchema,
			Handler:      Typed(countObjects),
		},
		{
			ToolInfo:     ro("query_class", policy.OpFind, true, 30*time.Second),
			Description:  "Find objects: Parse where, keys, include, order, paging. Rows (also get_objects, get_sample_objects, aggregate): columns + a value array per row (null = missing); pointers as ids (pointer_classes), dates ISO (date_fields), files by name, GeoPoints [lat,lng]; where accepts them. shape objects|rest: objects|REST.",
			Example:      `{"class_name":"Song","limit":3}`,
			OutputSchema: queryClassOutSchema,
			ReadOnly:     true,
			Handler:      Typed(queryClass),
		},
		{
			ToolInfo:     ro("get_object", policy.OpGet, true, 10*time.Second),
			Description:  "Fetch one object by objectId.",
			Example:      `{"class_name":"Song","object_id":"$objectId","include":["artist"]}`,
			OutputSchema: getObjectOutSchema,
			ReadOnly:     true,
			Handler:      Typed(getObject),
		},
		{
			ToolInfo:     ro("get_objects", policy.OpGet, true, 20*time.Second),
			Description:  "Fetch up to 50 objects by objectId.",
			Example:      `{"class_name":"Song","ids":["$objectId","missingId"]}`,
			OutputSchema: getObjectsOutSchema,
			ReadOnly:     true,
			Handler:      Typed(getObjects),
		},
		{
			ToolInfo:     ro("get_sample_objects", policy.OpFind, true, 15*time.Second),
			Description:  "The most recently created objects of a class, to see what its data looks like.",
			Example:      `{"class_name":"Song","limit":3}`,
			OutputSchema: samplesOutSchema,
			ReadOnly:     true,
			Handler:      Typed(getSampleObjects),
		},
		{
			ToolInfo:     ro("explain_query", policy.OpFind, false, 30*time.Second),
			Description:  "Explain how a where on a class is filtered and which indexes can serve it.",
			Example:      `{"class_name":"Song","where":{"genre":"rock"}}`,
			OutputSchema: explainOutSchema,
			ReadOnly:     true,
			Handler:      Typed(explainQuery),
		},
	}
}

// ---- count_objects -----------------------------------------------------------

type countIn struct {
	ClassName      string         `json:"class_name" arg:"class"`
	Where          map[string]any `json:"where" jsonschema:"Parse REST query constraints, e.g. {\"plays\":{\"$gt\":100}}"`
	ApplyCanonical bool           `json:"apply_canonical_filter" arg:"default=true"`
}

// countOut's members are in the order the result has always had.
type countOut struct {
	ClassName   string         `json:"class_name"`
	Constraints map[string]any `json:"constraints"`
	Count       int64          `json:"count"`
}

const countOutSchema = `{"type":"object","properties":{` + osClass + `,"count":{"type":"integer"},"constraints":{"type":"object"}},"required":["class_name","count"]}`

func countObjects(ctx context.Context, d *Deps, in countIn) (*countOut, error) {
	t, err := resolveRead(ctx, d, in.ClassName, in.Where, in.ApplyCanonical)
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
	return &countOut{ClassName: t.Class.Name, Count: n, Constraints: t.Shown}, nil
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

// query_class's arguments, in the order they are checked.
type queryClassIn struct {
	ClassName      string         `json:"class_name" arg:"class"`
	Where          map[string]any `json:"where"`
	Keys           []string       `json:"keys" arg:"fields;max=MaxKeys"`
	Include        []string       `json:"include" arg:"fields;max=MaxIncludes" jsonschema:"pointer paths to expand"`
	Order          orderArg       `json:"order" jsonschema:"e.g. \"-plays,title\""`
	Limit          int            `json:"limit" arg:"default=DefaultQueryLimit,max=MaxQueryLimit;min=1"`
	Skip           int            `json:"skip" arg:";min=0,max=MaxSkip"`
	Format         string         `json:"format" arg:"enum=json|csv|markdown|table;default=json"`
	ApplyCanonical bool           `json:"apply_canonical_filter" arg:"default=true"`
	Shape          rowShape       `json:"shape" arg:"enum=columns|objects|rest;default=columns"`
	// Args are the arguments as sent, repeated by next_call.
	Args Args `json:"-"`
}

// queryClassOutSchema: JSON rows (columns + rows by default, results for
// shape objects/rest; result_count, has_more) or a text format (format,
// headers, row_count, output). The result is Rows: its members depend on
// the format and on truncation.
// queryClassOut is a page of rows in one of three modes, each writing its
// members in this order: JSON rows (result_count, has_more, next_call,
// the display-cap note, the legend, columns + rows or results), JSON rows
// over the byte cap (has_more, _truncated) and a text format (format,
// headers, row_count, next_call or _truncated, output). Rows are encoded
// straight from the stored documents.
type queryClassOut struct {
	ClassName         string              `json:"class_name"`
	Format            string              `json:"format,omitempty"`
	Headers           []string            `json:"headers,omitempty"`
	RowCount          *int                `json:"row_count,omitempty"`
	ResultCount       *int                `json:"result_count,omitempty"`
	HasMore           *bool               `json:"has_more,omitempty"`
	NextCall          map[string]any      `json:"next_call,omitempty"`
	Truncation        map[string]any      `json:"_truncated,omitempty"`
	Truncated         bool                `json:"truncated,omitempty"`
	TruncatedNote     string              `json:"truncated_note,omitempty"`
	TruncatedIncludes map[string][]string `json:"truncated_include_fields,omitempty"`
	RowLegend
	Columns json.RawMessage `json:"columns,omitempty"`
	Rows    *rowsArray      `json:"rows,omitempty"`
	Results *rowsArray      `json:"results,omitempty"`
	Output  *string         `json:"output,omitempty"`
}

// setRows sets the rows in the plan's shape, with their legend.
func (o *queryClassOut) setRows(p *readPlan, rows []byte) {
	o.TruncatedIncludes, o.RowLegend = p.truncatedIncludes, rowLegendOf(p.rowLegend())
	if cols, colRows, ok := columnsOf(p.shape, "results", rows); ok {
		o.Columns, o.Rows = cols, &colRows
	} else {
		o.Results = (*rowsArray)(&rows)
	}
}

const queryClassOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osLegend + `,` + osNext + `,` + osTrunc + `,` + osText +
	`,"results":` + osRows + `,` + osColumns + `,"result_count":{"type":"integer"},"has_more":{"type":"boolean"}},"required":["class_name"],"anyOf":[{"required":["rows"]},{"required":["results"]},{"required":["output"]}]}`

func queryClass(ctx context.Context, d *Deps, args queryClassIn) (*queryClassOut, error) {
	in := planInput{keys: args.Keys, include: args.Include, shape: args.Shape, compact: args.Shape.compact(),
		where: args.Where, order: args.Order, applyCanonical: args.ApplyCanonical}
	if args.Format != "json" {
		in.compact = false // text cells have their own rules (format.go)
	}
	p, err := newReadPlan(ctx, d, args.ClassName, in)
	if err != nil {
		return nil, err
	}
	if err := d.Policy.CheckCollscan(ctx, d.Store, p.target.Class, p.target.Filter); err != nil {
		return nil, err
	}
	argBytes, _ := json.Marshal(args.Args)
	budget := d.Policy.MaxResponseBytes() - envelopeReserve - len(argBytes)
	if args.Format != "json" {
		return p.queryText(ctx, args.Args, args.Format, args.Skip, args.Limit, budget)
	}
	return p.queryJSON(ctx, args.Args, args.Skip, args.Limit, budget)
}

// nextCall repeats a query_class call at another skip.
func nextCall(args Args, skip int) map[string]any {
	a := make(map[string]any, len(args)+1)
	maps.Copy(a, args)
	a["skip"] = skip
	return map[string]any{"tool": "query_class", "arguments": a}
}

func (p *readPlan) queryJSON(ctx context.Context, args Args, skip, limit, budget int) (*queryClassOut, error) {
	shown := min(limit, DisplayCap)
	pg, err := p.jsonPage(ctx, skip, limit, shown, budget, true)
	if err != nil {
		return nil, err
	}
	o := &queryClassOut{ClassName: p.target.Class.Name}
	if !pg.over {
		displayCut := pg.n > pg.kept
		hasMore := pg.hasMore || displayCut
		o.ResultCount, o.HasMore = &pg.n, &hasMore
		if hasMore {
			o.NextCall = nextCall(args, skip+pg.kept)
		}
		if displayCut {
			o.Truncated = true
			o.TruncatedNote = fmt.Sprintf("rows shows the first %d of the %d rows of this page (JSON display cap %d); next_call continues at skip %d. For more rows per call use format csv, markdown or table, or export_data.", pg.kept, pg.n, DisplayCap, skip+pg.kept)
		}
		o.setRows(p, pg.rows)
		telemetry.ToolRows(ctx, pg.kept)
		return o, nil
	}
	// Over the byte cap: drop the heaviest field, then trim rows.
	dropped := heaviestDroppable(pg.sizes)
	p2 := p
	if dropped != "" {
		p2 = p.without(dropped)
	}
	p2.resetLegend()
	pg2, err := p2.jsonPage(ctx, skip, limit, shown, budget, false)
	if err != nil {
		return nil, err
	}
	more := pg2.hasMore || pg2.kept < pg2.n
	o.HasMore, o.Truncation = &more, p.truncation(dropped, pg2.kept, pg2.n, skip, more)
	o.setRows(p2, pg2.rows)
	telemetry.ToolRows(ctx, pg2.kept)
	return o, nil
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
		} else {
			// Room for the page at the first row's size (within the
			// budget), instead of growing through every power of two.
			pg.rows = slices.Grow(pg.rows, min(budget, (len(row)+1)*min(shown, limit)))
		}
		pg.rows = append(pg.rows, row...)
		pg.kept++
		return true, nil
	})
	return pg, err
}

func (p *readPlan) queryText(ctx context.Context, args Args, format string, skip, limit, budget int) (*queryClassOut, error) {
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
	n := len(rows)
	telemetry.ToolRows(ctx, n)
	o := &queryClassOut{ClassName: p.target.Class.Name, Format: format, Headers: headers, RowCount: &n, TruncatedIncludes: p.truncatedIncludes, Output: &out}
	if over {
		more := tp.hasMore || len(rows) < tp.n
		o.Truncation = p.truncation(dropped, len(rows), tp.n, skip, more)
	} else if tp.hasMore {
		o.NextCall = nextCall(args, skip+len(rows))
	}
	return o, nil
}

// ---- result envelopes -------------------------------------------------------

// tooLarge is the refusal of tools other than query_class whose result
// would exceed the byte cap: it names the heaviest fields by bytes and a
// positive keys list to retry with (names only, never values).
func tooLarge(d *Deps, tool, retryArg string, sizes map[string]int, extra string) error {
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
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		if !removed[k] && !isIdentityField(k) {
			keep = append(keep, k)
		}
	}
	if len(keep) == 0 {
		keep = []string{"objectId"}
	}
	keysJSON, _ := jsonenc.Marshal(keep)
	retry := fmt.Sprintf("Retry with %s: %s", retryArg, keysJSON)
	if retryArg == "" { // the tool takes no field list (get_sample_objects)
		retry = fmt.Sprintf("Retry with a smaller limit, or read these objects with query_class and keys: %s", keysJSON)
	}
	msg := fmt.Sprintf("%s: the result exceeds the %d-byte response cap. Heaviest fields: %s. %s", tool, d.Policy.MaxResponseBytes(), strings.Join(names, ", "), retry)
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
