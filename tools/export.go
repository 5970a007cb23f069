package tools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/policy"
)

// Export limits (docs/tools.md "Tools").
const (
	DefaultRowCap = 1000
	MaxRowCap     = 10000
)

// ExportTools is export_data.
func ExportTools() []*Tool {
	return []*Tool{{
		ToolInfo:     policy.ToolInfo{Name: "export_data", Category: policy.CategoryExport, Tier: config.TierReadonly, Timeout: 60 * time.Second, Operation: policy.OpFind, UntrustedOutput: true},
		Description:  "Export a class's objects (query mode) or pipeline results as CSV, a markdown table or a fixed-width table.",
		Example:      `{"class_name":"Song","limit":3}`,
		OutputSchema: exportOutSchema,
		ReadOnly:     true,
		Handler:      Typed(exportData),
	}}
}

// export_data's arguments, in the order they are checked. limit and skip
// apply to query mode only, and are checked in both modes.
type exportIn struct {
	ClassName string         `json:"class_name" arg:"class"`
	Where     map[string]any `json:"where"`
	Keys      []string       `json:"keys" arg:"fields;max=MaxKeys"`
	Include   []string       `json:"include" arg:"fields;max=MaxIncludes"`
	Order     orderArg       `json:"order"`
	Limit     int            `json:"limit" arg:";min=1,max=MaxRowCap"`
	Skip      int            `json:"skip" arg:";min=0,max=MaxSkip"`
	Pipeline  pipelineArg    `json:"pipeline"`
	Columns   columnsArg     `json:"columns" jsonschema:"paths in order; path:Header names a header: [\"a\",\"b.c:B\"]"`
	Format    string         `json:"format" arg:"enum=csv|markdown|table;default=csv"`
	RowCap    int            `json:"row_cap" arg:"default=DefaultRowCap,max=MaxRowCap;min=1"`
	// Shape is checked as the query tools check it, though export_data's
	// input schema has never listed it (text cells have their own rules).
	Shape rowShape `json:"shape" arg:"enum=columns|objects|rest,unlisted;default=columns"`
}

// exportOut: the text of the rows and, when row_cap cut it, how many rows
// there were and how to get the rest.
// exportOut is the text export; the truncation members are set when
// row_cap (or limit) cut it.
type exportOut struct {
	ClassName     string   `json:"class_name"`
	Format        string   `json:"format"`
	Headers       []string `json:"headers"`
	RowCount      int      `json:"row_count"`
	Output        string   `json:"output"`
	Truncated     bool     `json:"truncated,omitempty"`
	AvailableRows int      `json:"available_rows,omitempty"`
	RowCap        int      `json:"row_cap,omitempty"`
	Hint          string   `json:"hint,omitempty"`
}

const exportOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,"format":{"type":"string","enum":["csv","markdown","table"]},"headers":{"type":"array","items":{"type":"string"}},"row_count":{"type":"integer"},"output":{"type":"string"},` +
	`"truncated":{"type":"boolean"},"available_rows":{"type":"integer"},"row_cap":{"type":"integer"},"hint":{"type":"string"}},"required":["format","output"]}`

func exportData(ctx context.Context, d *Deps, args exportIn) (*exportOut, error) {
	name, format, rowCap, cols := args.ClassName, args.Format, args.RowCap, []column(args.Columns)
	if args.Pipeline != nil {
		return exportPipeline(ctx, d, args.Pipeline, name, format, rowCap, cols)
	}
	limit, skip := args.Limit, args.Skip
	in := planInput{keys: args.Keys, include: args.Include, shape: args.Shape, where: args.Where, order: args.Order, applyCanonical: true}
	if cols != nil {
		if err := addColumnKeys(ctx, d, name, cols, &in); err != nil {
			return nil, err
		}
	}
	p, err := newReadPlan(ctx, d, name, in)
	if err != nil {
		return nil, err
	}
	if err := d.Policy.CheckCollscan(ctx, d.Store, p.target.Class, p.target.Filter); err != nil {
		return nil, err
	}
	if cols == nil {
		cols = p.defaultColumns()
	}
	want := rowCap
	if limit > 0 && limit < rowCap {
		want = limit
	}
	budget := d.Policy.MaxResponseBytes() - envelopeReserve
	tp, err := p.textPage(ctx, cols, skip, want, budget, true)
	if err != nil {
		return nil, err
	}
	if tp.over {
		return nil, tooLarge(d, "export_data", "columns", tp.sizes, "(or lower row_cap).")
	}
	headers := columnHeaders(cols)
	out, rows, trimmed := fitText(format, headers, tp.rows, budget)
	if trimmed {
		return nil, tooLarge(d, "export_data", "columns", tp.sizes, "(or lower row_cap).")
	}
	ProgressFrom(ctx).Report(float64(len(rows)), float64(len(rows)), fmt.Sprintf("exported %d rows", len(rows)))
	telemetry.ToolRows(ctx, len(rows))
	o := &exportOut{ClassName: p.target.Class.Name, Format: format, Headers: headers, RowCount: len(rows), Output: out}
	if tp.hasMore && (limit == 0 || limit > want) {
		total, err := d.Store.Count(ctx, p.target.Class.Name, p.target.Filter)
		if err != nil {
			return nil, err
		}
		available := int(total) - skip
		if limit > 0 && limit < available {
			available = limit
		}
		o.Truncated, o.AvailableRows, o.RowCap = true, available, rowCap
		o.Hint = fmt.Sprintf("output holds the first %d of %d rows. Raise row_cap (at most %d) or continue with skip %d.", len(rows), available, MaxRowCap, skip+len(rows))
	}
	return o, nil
}

// columnsArg is export_data's columns. The schema declares one type, a
// list of "path" or "path:Header" strings (a field path never holds a colon),
// because clients that map tool schemas to single-type dialects reject a
// union. The earlier forms stay accepted for the CLI and older clients: a
// string "a,b" and an object {path: header}, which keeps the caller's key
// order when the raw arguments are available; otherwise (a decoded map has
// no order) it follows the order of keys, then sorts the remaining paths.
type columnsArg []column

func (*columnsArg) schema() string { return `"type":"array","items":{"type":"string"}` }

func (c *columnsArg) decodeArg(ctx context.Context, args Args, name string, _ *argField) error {
	// The order of keys places the columns of an unordered object.
	keys, err := args.FieldList("keys", MaxKeys)
	if err != nil {
		return err
	}
	cols, err := readColumns(ctx, args, keys)
	*c = cols
	return err
}

func readColumns(ctx context.Context, args Args, keys []string) ([]column, error) {
	v, ok := args["columns"]
	if !ok || v == nil {
		return nil, nil
	}
	var cols []column
	if _, isMap := v.(map[string]any); isMap {
		if ov, found, err := OrderedArgument(ctx, "columns"); err == nil && found {
			if d, ok := ov.(bson.D); ok && len(d) == len(v.(map[string]any)) {
				for _, e := range d {
					hs, ok := e.Value.(string)
					if !ok || strings.TrimSpace(hs) == "" || len(hs) > 128 {
						return nil, invalid("columns[%q] must be a header string of 1-128 characters", truncate(e.Key, 40))
					}
					cols = append(cols, column{e.Key, hs})
				}
				v = nil
			}
		}
	}
	var err error
	switch x := v.(type) {
	case nil:
	case string, []any:
		cols, err = columnList(args)
	case map[string]any:
		cols, err = columnMap(x, keys)
	default:
		return nil, invalid("columns must be a list of field paths [\"a\",\"b.c:Header\"], got %s", jsonType(v))
	}
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, invalid("columns is empty")
	}
	if len(cols) > MaxKeys {
		return nil, invalid("columns has %d entries; at most %d are allowed", len(cols), MaxKeys)
	}
	for _, c := range cols {
		if !parsedb.FieldPathRe.MatchString(c.path) {
			return nil, invalid("columns entry %q is not a valid field path (letters, digits and _, each dotted segment starting with a letter)", truncate(c.path, 40))
		}
	}
	return cols, nil
}

// columnList reads columns given as a list: "path" or "path:Header".
func columnList(args Args) ([]column, error) {
	list, err := args.StringList("columns")
	if err != nil {
		return nil, err
	}
	var cols []column
	for _, p := range list {
		path, header, named := strings.Cut(p, ":")
		if !named {
			cols = append(cols, column{p, p})
			continue
		}
		path, header = strings.TrimSpace(path), strings.TrimSpace(header)
		if header == "" || len(header) > 128 {
			return nil, invalid("columns entry %q: the header after the colon must be 1-128 characters", truncate(p, 40))
		}
		cols = append(cols, column{path, header})
	}
	return cols, nil
}

// columnMap reads columns given as {path: header} without their order:
// the paths in keys first, in keys' order, then the others by name.
func columnMap(x map[string]any, keys []string) ([]column, error) {
	pos := map[string]int{}
	for i, k := range keys {
		pos[k] = i
	}
	var cols []column
	for p, h := range x {
		hs, ok := h.(string)
		if !ok || strings.TrimSpace(hs) == "" || len(hs) > 128 {
			return nil, invalid("columns[%q] must be a header string of 1-128 characters", truncate(p, 40))
		}
		cols = append(cols, column{p, hs})
	}
	sort.Slice(cols, func(i, j int) bool {
		pi, iok := pos[cols[i].path]
		pj, jok := pos[cols[j].path]
		switch {
		case iok && jok:
			return pi < pj
		case iok != jok:
			return iok
		}
		return cols[i].path < cols[j].path
	})
	return cols, nil
}

// addColumnKeys makes the read fetch what the columns name: their paths
// join keys, and dotted paths through pointers ("artist.name") include the
// pointer automatically.
func addColumnKeys(ctx context.Context, d *Deps, name string, cols []column, in *planInput) error {
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil {
		return err
	}
	for _, c := range cols {
		if !slicesContains(in.keys, c.path) {
			in.keys = append(in.keys, c.path)
		}
	}
	if len(in.keys) > MaxKeys {
		return invalid("keys and columns name %d fields together; at most %d are allowed", len(in.keys), MaxKeys)
	}
	for _, c := range cols {
		segs := strings.Split(c.path, ".")
		from := cls
		for i := 0; i < len(segs)-1 && from != nil; i++ {
			f := from.Field(segs[i])
			if f == nil || f.Type != parsedb.TypePointer {
				break
			}
			if i == len(segs)-2 && segs[i+1] == "objectId" {
				break // the pointer itself carries the objectId
			}
			path := strings.Join(segs[:i+1], ".")
			if !slicesContains(in.include, path) {
				in.include = append(in.include, path)
			}
			from = schema.Class(f.TargetClass)
		}
	}
	if len(in.include) > MaxIncludes {
		return invalid("include and the pointer paths of columns name %d includes together; at most %d are allowed", len(in.include), MaxIncludes)
	}
	return nil
}

// exportPipeline is export_data's pipeline mode: the pipeline runs through
// every gate of the aggregate tool (RunPipelineRows), the canonical filter
// included; its rows become the table.
func exportPipeline(ctx context.Context, d *Deps, pipeline []any, name, format string, rowCap int, cols []column) (*exportOut, error) {
	rows, err := RunPipelineRows(ctx, d, name, pipeline, true)
	if err != nil {
		return nil, err
	}
	if cols == nil {
		cols = pipelineColumns(rows)
	}
	headers := columnHeaders(cols)
	budget := d.Policy.MaxResponseBytes() - envelopeReserve
	prog := ProgressFrom(ctx)
	var cells [][]string
	sizes := map[string]int{}
	used := 0
	for i, r := range rows {
		if i == rowCap {
			break
		}
		row := make([]string, len(cols))
		size := 1
		for j, c := range cols {
			row[j] = cellString(columnValue(r, c.path))
			l := jsonStringLen(row[j]) + 3
			size += l
			sizes[pathRoot(c.path)] += l
		}
		if used += size; used > budget {
			return nil, tooLarge(d, "export_data", "columns", sizes, "(or lower row_cap, or $project fewer fields).")
		}
		cells = append(cells, row)
		if (i+1)%progressEvery == 0 {
			prog.Report(float64(i+1), 0, fmt.Sprintf("%d rows exported", i+1))
		}
	}
	out, cells, trimmed := fitText(format, headers, cells, budget)
	if trimmed {
		return nil, tooLarge(d, "export_data", "columns", sizes, "(or lower row_cap, or $project fewer fields).")
	}
	prog.Report(float64(len(cells)), float64(len(cells)), fmt.Sprintf("exported %d rows", len(cells)))
	telemetry.ToolRows(ctx, len(cells))
	o := &exportOut{ClassName: name, Format: format, Headers: headers, RowCount: len(cells), Output: out}
	if len(rows) > len(cells) {
		o.Truncated, o.RowCap = true, rowCap
		if len(rows) <= PipelineRowsCap {
			o.AvailableRows = len(rows)
		}
		if len(rows) > PipelineRowsCap {
			o.Hint = fmt.Sprintf("output holds the first %d rows; the pipeline returns more than %d. Raise row_cap (at most %d), add $skip/$limit stages to page, or summarize with $group.", len(cells), PipelineRowsCap, MaxRowCap)
		} else {
			o.Hint = fmt.Sprintf("output holds the first %d of %d rows. Raise row_cap (at most %d) or add $skip/$limit stages to page.", len(cells), len(rows), MaxRowCap)
		}
	}
	return o, nil
}

// pipelineColumns are the keys of pipeline rows: objectId, createdAt,
// updatedAt first, then every other key in sorted order (decoded rows carry
// no key order).
func pipelineColumns(rows []map[string]any) []column {
	seen := map[string]bool{}
	for _, r := range rows {
		for k := range r {
			seen[k] = true
		}
	}
	var cols []column
	for _, k := range []string{"objectId", "createdAt", "updatedAt"} {
		if seen[k] {
			cols = append(cols, column{k, k})
			delete(seen, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		cols = append(cols, column{k, k})
	}
	if len(cols) == 0 {
		cols = []column{{"objectId", "objectId"}}
	}
	return cols
}
