package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// get_object, get_objects, get_sample_objects and explain_query (their
// definitions are in QueryTools).

// objectsBudget is the byte budget for the rows of a bounded result.
func objectsBudget(d *Deps) int { return d.Policy.MaxResponseBytes() - envelopeReserve }

// collectRows reads every row of spec, refusing the call when the rows do
// not fit the byte cap: the refusal names retryArg, the tool's argument
// that narrows its rows ("" when it has none). fn receives each row (valid
// during the call).
func (p *readPlan) collectRows(ctx context.Context, tool, retryArg string, spec parsedb.FindSpec, fn func(doc bson.Raw, row []byte)) error {
	budget := objectsBudget(p.d)
	sizes := map[string]int{}
	used, over := 0, false
	err := p.rows(ctx, spec, func(int) bool { return true }, func(i int, doc bson.Raw, row []byte) (bool, error) {
		parsedb.AddFieldSizes(sizes, row)
		if used += len(row) + 1; used > budget {
			over = true
			return false, nil
		}
		fn(doc, row)
		return true, nil
	})
	if err != nil {
		return err
	}
	if over {
		return tooLarge(p.d, tool, retryArg, sizes, "")
	}
	return nil
}

// ---- get_object ----------------------------------------------------------------

type getObjectIn struct {
	ClassName string   `json:"class_name" arg:"class"`
	ObjectID  string   `json:"object_id" arg:"objectid,required"`
	Keys      []string `json:"keys" arg:"fields;max=MaxKeys"`
	Include   []string `json:"include" arg:"fields;max=MaxIncludes"`
	Shape     rowShape `json:"shape" arg:"enum=objects|rest;default=objects"`
}

// getObjectOut's object is encoded straight from the stored document.
type getObjectOut struct {
	ClassName         string              `json:"class_name"`
	TruncatedIncludes map[string][]string `json:"truncated_include_fields,omitempty"`
	RowLegend
	Object json.RawMessage `json:"object"`
}

// getObjectOutSchema: the object in its shape.
const getObjectOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osLegend + `,"truncated_include_fields":{"type":"object"},"object":{"type":"object"}},"required":["class_name","object"]}`

func getObject(ctx context.Context, d *Deps, args getObjectIn) (*getObjectOut, error) {
	name, id := args.ClassName, args.ObjectID
	in := planInput{keys: args.Keys, include: args.Include, shape: args.Shape, compact: args.Shape.compact()}
	// Lookups by id skip the canonical filter but keep every other filter:
	// a filtered-out object is "not found", exactly like a missing one.
	in.where, in.noSort = map[string]any{"objectId": id}, true
	p, err := newReadPlan(ctx, d, name, in)
	if err != nil {
		return nil, err
	}
	var obj []byte
	if err := p.collectRows(ctx, "get_object", "keys", p.findSpec(0, 1), func(_ bson.Raw, row []byte) {
		obj = append([]byte(nil), row...)
	}); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, toolerror.New(toolerror.InvalidArgument, "Object not found: %s#%s", p.target.Class.Name, id)
	}
	// The object carries its id and dates: the envelope does not repeat
	// them.
	telemetry.ToolRows(ctx, 1)
	return &getObjectOut{ClassName: p.target.Class.Name, TruncatedIncludes: p.truncatedIncludes, RowLegend: rowLegendOf(p.rowLegend()), Object: obj}, nil
}

// ---- get_objects ---------------------------------------------------------------

// objectIDs are get_objects' ids: objectIds, deduplicated in order, at most
// the field's max.
type objectIDs []string

func (ids *objectIDs) decodeArg(_ context.Context, args Args, name string, f *argField) error {
	v, ok := args[name]
	if !ok || v == nil {
		return invalid("%s is required (an array of objectIds)", name)
	}
	list, err := args.StringList(name)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(list))
	for _, id := range list {
		if !parsedb.ObjectIDRe.MatchString(id) {
			return invalid("%s entry %q is not a valid objectId (1-32 of A-Z a-z 0-9 _ -)", name, truncate(id, 40))
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if len(out) > f.max {
		return invalid("%s has %d distinct entries; at most %d are allowed (use query_class with where {\"objectId\":{\"$in\":[…]}} for more)", name, len(out), f.max)
	}
	*ids = out
	return nil
}

func (*objectIDs) schema() string { return `"type":"array","items":{"type":"string"}` }

type getObjectsIn struct {
	ClassName string    `json:"class_name" arg:"class"`
	IDs       objectIDs `json:"ids" arg:"required,max=MaxGetObjects"`
	Keys      []string  `json:"keys" arg:"fields;max=MaxKeys"`
	Include   []string  `json:"include" arg:"fields;max=MaxIncludes"`
	Shape     rowShape  `json:"shape" arg:"enum=columns|objects|rest;default=columns"`
}

// getObjectsOut are the objects found, as columns + rows or keyed by
// objectId (shape objects/rest, or columns sparser than the objects), all
// encoded straight from the stored documents.
type getObjectsOut struct {
	ClassName         string              `json:"class_name"`
	Found             int                 `json:"found"`
	Missing           []string            `json:"missing,omitempty"`
	TruncatedIncludes map[string][]string `json:"truncated_include_fields,omitempty"`
	RowLegend
	Columns json.RawMessage `json:"columns,omitempty"`
	Rows    *rowsArray      `json:"rows,omitempty"`
	Objects json.RawMessage `json:"objects,omitempty"`
}

// getObjectsOutSchema: the objects found.
const getObjectsOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osLegend + `,"truncated_include_fields":{"type":"object"},"found":{"type":"integer"},"missing":{"type":"array","items":{"type":"string"}},"objects":{"type":"object","additionalProperties":{"type":"object"}},` + osColumns + `},"required":["class_name","found"]}`

func getObjects(ctx context.Context, d *Deps, args getObjectsIn) (*getObjectsOut, error) {
	name, ids := args.ClassName, []string(args.IDs)
	in := planInput{keys: args.Keys, include: args.Include, shape: args.Shape, compact: args.Shape.compact()}
	if len(ids) == 0 {
		_, cls, err := d.resolveClass(ctx, name)
		if err != nil {
			return nil, err
		}
		if in.shape == shapeColumns {
			return &getObjectsOut{ClassName: cls.Name, Columns: json.RawMessage("[]"), Rows: &rowsArray{}}, nil
		}
		return &getObjectsOut{ClassName: cls.Name, Objects: json.RawMessage("{}")}, nil
	}
	list := make([]any, len(ids))
	for i, id := range ids {
		list[i] = id
	}
	in.where, in.noSort = map[string]any{"objectId": map[string]any{"$in": list}}, true
	p, err := newReadPlan(ctx, d, name, in)
	if err != nil {
		return nil, err
	}
	prog := ProgressFrom(ctx)
	found := map[string][]byte{}
	if err := p.collectRows(ctx, "get_objects", "keys", p.findSpec(0, len(ids)), func(doc bson.Raw, row []byte) {
		found[parsedb.DocID(doc)] = append([]byte(nil), row...)
		if n := len(found); n%10 == 0 || n == len(ids) {
			prog.Report(float64(n), float64(len(ids)), fmt.Sprintf("fetched %d of %d objects", n, len(ids)))
		}
	}); err != nil {
		return nil, err
	}
	// Columnar: one row per found object, in the order of ids. Objects:
	// an object keyed by objectId.
	objs := newJSONObject()
	var rows []byte
	missing := []string{}
	for _, id := range ids {
		row, ok := found[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		if len(rows) > 0 {
			rows = append(rows, ',')
		}
		rows = append(rows, row...)
		objs.raw(id, row)
	}
	telemetry.ToolRows(ctx, len(ids)-len(missing))
	out := &getObjectsOut{ClassName: p.target.Class.Name, Found: len(ids) - len(missing), TruncatedIncludes: p.truncatedIncludes, RowLegend: rowLegendOf(p.rowLegend())}
	if len(missing) > 0 {
		out.Missing = missing
	}
	if p.shape != shapeColumns {
		out.Objects = objs.done()
		return out, nil
	}
	byID := objs.done()
	cols, colRows, ok, err := columnsByID(rows, byID)
	if err != nil {
		return nil, err
	}
	if ok {
		out.Columns, out.Rows = cols, &colRows
	} else {
		out.Objects = byID
	}
	return out, nil
}

// ---- get_sample_objects --------------------------------------------------------

type samplesIn struct {
	ClassName string   `json:"class_name" arg:"class"`
	Limit     int      `json:"limit" arg:"default=DefaultSampleLimit,max=MaxSampleLimit;min=1"`
	Shape     rowShape `json:"shape" arg:"enum=columns|objects|rest;default=columns"`
}

// samplesOut are the newest objects: the rows (columns + rows, or samples
// for shape objects/rest) are encoded straight from the stored documents.
type samplesOut struct {
	ClassName   string `json:"class_name"`
	SampleCount int    `json:"sample_count"`
	Note        string `json:"note,omitempty"`
	RowLegend
	Columns json.RawMessage `json:"columns,omitempty"`
	Rows    *rowsArray      `json:"rows,omitempty"`
	Samples *rowsArray      `json:"samples,omitempty"`
}

// samplesOutSchema: the newest objects.
const samplesOutSchema = `{"type":"object","properties":{` + osNote + `,` + osClass + `,` + osLegend + `,"note":{"type":"string"},"sample_count":{"type":"integer"},"samples":` + osRows + `,` + osColumns + `},"required":["class_name","sample_count"]}`

func getSampleObjects(ctx context.Context, d *Deps, args samplesIn) (*samplesOut, error) {
	name, limit, shape := args.ClassName, args.Limit, args.Shape
	in := planInput{applyCanonical: true, order: []parsedb.OrderKey{{Field: "createdAt", Desc: true}}, dropLarge: true, compact: shape.compact(), shape: shape}
	p, err := newReadPlan(ctx, d, name, in)
	if err != nil {
		return nil, err
	}
	var rows []byte
	n := 0
	if err := p.collectRows(ctx, "get_sample_objects", "", p.findSpec(0, limit), func(_ bson.Raw, row []byte) {
		if n > 0 {
			rows = append(rows, ',')
		}
		rows = append(rows, row...)
		n++
	}); err != nil {
		return nil, err
	}
	// The untrusted-data note is the envelope's (one per response); this
	// note is only there when it says something the rows do not.
	telemetry.ToolRows(ctx, n)
	out := &samplesOut{ClassName: p.target.Class.Name, SampleCount: n, RowLegend: rowLegendOf(p.rowLegend())}
	if large := d.Policy.LargeFields(p.target.Class.Name); len(large) > 0 {
		out.Note = "Newest first. Large fields left out: " + strings.Join(large, ", ") + " (read them with get_object)."
	}
	if cols, colRows, ok := columnsOf(shape, "samples", rows); ok {
		out.Columns, out.Rows = cols, &colRows
	} else {
		out.Samples = (*rowsArray)(&rows)
	}
	return out, nil
}

// ---- explain_query ------------------------------------------------------------

type explainIn struct {
	ClassName string         `json:"class_name" arg:"class"`
	Where     map[string]any `json:"where"`
	// ApplyCanonical is accepted as count_objects takes it, though the
	// input schema has never listed it.
	ApplyCanonical bool `json:"apply_canonical_filter" arg:"unlisted;default=true"`
}

// explainOut's members are in the order the result has always had.
type explainOut struct {
	ClassName   string         `json:"class_name"`
	Constraints map[string]any `json:"constraints"`
	Explanation explanation    `json:"explanation"`
}

type explanation struct {
	Fields        []string `json:"fields"`
	IndexedFields []string `json:"indexed_fields,omitempty"`
	// Plan is the summarized winning plan (settings.expose_explain).
	Plan    any    `json:"plan,omitempty"`
	Summary string `json:"summary"`
}

const explainOutSchema = `{"type":"object","properties":{` + osClass + `,"constraints":{"type":"object"},"explanation":{"type":"object","properties":{"summary":{"type":"string"},"fields":{"type":"array","items":{"type":"string"}},"indexed_fields":{"type":"array","items":{"type":"string"}},"plan":{}},"required":["summary"]}},"required":["class_name","explanation"]}`

func explainQuery(ctx context.Context, d *Deps, args explainIn) (*explainOut, error) {
	t, err := resolveRead(ctx, d, args.ClassName, args.Where, args.ApplyCanonical)
	if err != nil {
		return nil, err
	}
	cls := t.Class
	names := map[string]bool{}
	whereFieldNames(t.Shown, names)
	fields := slices.Sorted(maps.Keys(names))
	indexed := liveIndexedFields(ctx, d, cls)
	var idx []string
	var summary strings.Builder
	if len(fields) == 0 {
		fmt.Fprintf(&summary, "No constraints: every %s object is read.", cls.Name)
	} else {
		fmt.Fprintf(&summary, "Filters %s on %s.", cls.Name, strings.Join(fields, ", "))
		for _, f := range fields {
			if ix, ok := indexed[f]; ok {
				idx = append(idx, fmt.Sprintf("%s (%s)", f, ix))
			}
		}
		if len(idx) > 0 {
			fmt.Fprintf(&summary, " Indexed: %s; the database can use such an index instead of scanning the class.", strings.Join(idx, ", "))
		} else {
			summary.WriteString(" None of these fields leads an index, so the database scans the whole class.")
		}
	}
	expose := d.Policy.ExposeExplain()
	if !expose {
		summary.WriteString(" Plan details are not shown (the operator has not enabled settings.expose_explain).")
	}
	e := explanation{Summary: summary.String(), Fields: fields, IndexedFields: idx}
	if expose {
		e.Plan = explainPlan(ctx, d, cls, t.Filter)
	}
	return &explainOut{ClassName: cls.Name, Constraints: t.Shown, Explanation: e}, nil
}

// explainPlan runs the server's explain and summarizes the winning plan.
func explainPlan(ctx context.Context, d *Deps, cls *parsedb.Class, filter bson.D) any {
	class := cls.Name
	const none = "the database server returned no winningPlan (MongoDB does; FerretDB — the embedded demo database, and FerretDB 2 on PostgreSQL — reports its own SQL plan instead), so index use and COLLSCAN cannot be determined"
	raw, err := d.Store.Explain(ctx, class, filter)
	if err != nil {
		if parsedb.AsNotSupported(err) != nil {
			return map[string]any{"available": false, "note": none}
		}
		d.Log.Warn().Err(err).Str("tool", "explain_query").Msg("explain failed")
		return map[string]any{"available": false, "note": "the database server could not explain this query"}
	}
	sum := parsedb.SummarizeExplain(raw)
	if !sum.Available {
		return map[string]any{"available": false, "note": none}
	}
	// Only indexes whose keys are all readable are named.
	visible := visibleIndexNames(ctx, d, cls)
	var kept []string
	for _, ix := range sum.Indexes {
		if visible[ix] {
			kept = append(kept, ix)
		}
	}
	if len(kept) < len(sum.Indexes) {
		sum.Indexes = append(kept, "(an index this agent cannot see)")
	}
	return sum
}

// liveIndexedFields reads the collection's real indexes (listIndexes),
// falling back to _SCHEMA's when the server cannot list them.
// Only indexes whose keys are all readable by this session are named.
func liveIndexedFields(ctx context.Context, d *Deps, cls *parsedb.Class) map[string]string {
	out := map[string]string{}
	for _, ix := range classIndexes(ctx, d, cls) {
		if len(ix.fields) == 0 || ix.text || !indexVisible(d, cls, ix) {
			continue
		}
		if _, ok := out[ix.fields[0]]; !ok {
			out[ix.fields[0]] = ix.name
		}
	}
	return out
}

// indexedFields maps REST field names that lead an index (single-field or
// first key of a compound one, from _SCHEMA) to the index name.
func indexedFields(cls *parsedb.Class) map[string]string {
	out := map[string]string{}
	names := make([]string, 0, len(cls.Indexes))
	for n := range cls.Indexes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		first := ""
		switch k := cls.Indexes[n].(type) {
		case bson.D:
			if len(k) > 0 {
				first = k[0].Key
			}
		case bson.M:
			if len(k) == 1 {
				for key := range k {
					first = key
				}
			}
		case map[string]any:
			if len(k) == 1 {
				for key := range k {
					first = key
				}
			}
		}
		if first == "" {
			continue
		}
		field := restFieldName(first)
		if _, ok := out[field]; !ok {
			out[field] = n
		}
	}
	return out
}

// restFieldName maps a storage column to its REST name.
func restFieldName(storage string) string {
	switch storage {
	case "_id":
		return "objectId"
	case "_created_at":
		return "createdAt"
	case "_updated_at":
		return "updatedAt"
	}
	if strings.HasPrefix(storage, "_p_") {
		return storage[3:]
	}
	return storage
}
