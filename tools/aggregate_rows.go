package tools

// The rows of a pipeline's result (aggregate, export_data's pipeline
// mode): each storage document converted to the row the model sees —
// Parse Server's field names, compact or REST values, hidden-class
// references redacted at any depth, top-level pointers compacted — and
// the rows' size checked against the response cap (aggregate.go has the
// decisions).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// rowField is one field of an output row: a json.RawMessage straight from
// the codec, a *restPointer, or another JSON-encodable value.
type rowField struct {
	k string
	v any
}

// outRow is an output row with its key order.
type outRow struct {
	fields []rowField
	// ptrCols are the indexes of fields that came from `_p_` columns and
	// may be compacted.
	ptrCols []int
}

// restPointer is a pointer shown in REST shape.
type restPointer struct {
	Type      string `json:"__type"`
	ClassName string `json:"className"`
	ObjectID  string `json:"objectId"`
}

func (r *outRow) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, f := range r.fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		kb, err := jsonenc.Marshal(f.k)
		if err != nil {
			return nil, err
		}
		buf = append(append(buf, kb...), ':')
		if raw, ok := f.v.(json.RawMessage); ok {
			buf = append(buf, raw...)
			continue
		}
		b, err := jsonenc.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	return append(buf, '}'), nil
}

// addSizes adds the encoded size of each field to sizes and returns the
// row's size.
func (r *outRow) addSizes(sizes map[string]int) (int, error) {
	total := 2
	for _, f := range r.fields {
		n := len(f.k) + 4
		if raw, ok := f.v.(json.RawMessage); ok {
			n += len(raw)
		} else {
			b, err := jsonenc.Marshal(f.v)
			if err != nil {
				return 0, err
			}
			n += len(b)
		}
		sizes[f.k] += n
		total += n
	}
	return total, nil
}

// rowsTooLarge refuses a result over the byte cap, naming the heaviest
// fields by bytes and the fields to keep (names only, never values).
func rowsTooLarge(d *Deps, tool string, sizes map[string]int) error {
	names := make([]string, 0, len(sizes))
	total := 0
	for k, n := range sizes {
		names = append(names, k)
		total += n
	}
	sort.Slice(names, func(i, j int) bool {
		if sizes[names[i]] != sizes[names[j]] {
			return sizes[names[i]] > sizes[names[j]]
		}
		return names[i] < names[j]
	})
	var heavy []string
	for i, k := range names {
		if i == 3 {
			break
		}
		heavy = append(heavy, fmt.Sprintf("%s (%s)", k, humanBytes(sizes[k])))
	}
	// Leave out the heaviest fields until at most half of the bytes remain.
	drop := map[string]bool{}
	left := total
	for _, k := range names {
		if left <= total/2 && len(drop) > 0 {
			break
		}
		if k == "objectId" {
			continue
		}
		drop[k] = true
		left -= sizes[k]
	}
	var keep []string
	for _, k := range names {
		if !drop[k] {
			keep = append(keep, k)
		}
	}
	sort.Strings(keep)
	kj, _ := jsonenc.Marshal(keep)
	return toolerror.New(toolerror.InvalidArgument, "%s: the result exceeds the %d-byte response cap. Heaviest fields: %s. Retry with keys: %s — add a {\"$project\":{…}} stage that keeps only those fields (or summarize with $group/$count).",
		tool, d.Policy.MaxResponseBytes(), strings.Join(heavy, ", "), kj)
}

// splitJSONObject splits a JSON object into its keys and raw values, in
// order.
func splitJSONObject(b []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals, nil
}

// toMap is the row as decoded JSON (integral numbers int64, others
// float64), for callers that post-process rows.
func (r *outRow) toMap() (map[string]any, error) {
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return parsedb.DecodeJSONObject(b)
}

// rowConverter turns pipeline output documents into REST-shaped rows.
type rowConverter struct {
	enc    parsedb.RowEncoder
	hidden func(string) bool
	// missing reports classes absent from the schema: references by type
	// to them are redacted like hidden ones (RowEncoder.MissingClass).
	missing func(string) bool
	// compact renders values in the compact shape; legend collects the
	// paths of the dates shown as strings (rows) when non-nil.
	compact bool
	legend  *parsedb.Legend
	// joined: top-level fields holding objects of a joined class.
	joined map[string]*parsedb.Class
	// isClass, when set (rows no longer have a class's shape: after $group
	// and other schema-replacing stages), makes computed top-level values
	// that are pointers in storage form ("Class$id" of a class in the
	// schema) — group keys included — pointer columns, compacted like
	// group_by keys.
	isClass func(string) bool
}

// storagePointerID is the shape of an objectId inside a "Class$id" value.
var storagePointerID = parsedb.NewNamePattern("", "A-Za-z0-9_-", "A-Za-z0-9_-", 64)

// storagePointer recognises a computed "Class$id" value of a visible class
// (a hidden one is redacted by the codec instead).
func (c *rowConverter) storagePointer(rv bson.RawValue) (*restPointer, bool) {
	if c.isClass == nil {
		return nil, false
	}
	s, ok := rv.StringValueOK()
	if !ok {
		return nil, false
	}
	cls, id, ok := strings.Cut(s, "$")
	if !ok || !c.isClass(cls) || c.hidden(cls) || !storagePointerID.MatchString(id) {
		return nil, false
	}
	return &restPointer{Type: "Pointer", ClassName: cls, ObjectID: id}, true
}

// joinedFields maps the `as` of the caller's top-level joins that put the
// joined rows in an `as` array ($lookup, $graphLookup:
// pipelinestage.Join.As) to their class.
func joinedFields(stages []any, schema *parsedb.Schema) map[string]*parsedb.Class {
	out := map[string]*parsedb.Class{}
	for _, st := range stages {
		var name string
		var body any
		switch x := st.(type) {
		case bson.D:
			if len(x) == 1 {
				name, body = x[0].Key, x[0].Value
			}
		case map[string]any:
			for k, v := range x {
				name, body = k, v
			}
		}
		spec, ok := pipelinestage.Of(name)
		if !ok || !spec.Join.As {
			continue
		}
		var from, as any
		switch b := body.(type) {
		case bson.D:
			for _, e := range b {
				switch e.Key {
				case spec.Join.From:
					from = e.Value
				case "as":
					as = e.Value
				}
			}
		case map[string]any:
			from, as = b[spec.Join.From], b["as"]
		}
		f, _ := from.(string)
		a, _ := as.(string)
		if c := schema.Class(f); c != nil && a != "" && !strings.Contains(a, ".") && !strings.HasPrefix(a, "_") {
			out[a] = c
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// joinedValue renders a joined object (or an array of them) with the
// joined class's codec.
func (c *rowConverter) joinedValue(as string, cls *parsedb.Class, rv bson.RawValue) (json.RawMessage, error) {
	enc := parsedb.RowEncoder{Class: cls, HiddenClass: c.hidden, MissingClass: c.missing, Compact: c.compact}
	if c.legend != nil {
		enc.Legend = &parsedb.Legend{}
		defer func() { c.legend.Merge(as, enc.Legend) }()
	}
	switch rv.Type {
	case bson.TypeEmbeddedDocument:
		return enc.AppendRow(nil, rv.Document())
	case bson.TypeArray:
		vals, err := rv.Array().Values()
		if err != nil {
			return nil, err
		}
		buf := []byte{'['}
		for i, v := range vals {
			if i > 0 {
				buf = append(buf, ',')
			}
			var item json.RawMessage
			if v.Type == bson.TypeEmbeddedDocument {
				item, err = enc.AppendRow(nil, v.Document())
			} else {
				item, err = c.rawValue(v)
			}
			if err != nil {
				return nil, err
			}
			buf = append(buf, item...)
		}
		return append(buf, ']'), nil
	}
	return c.rawValue(rv)
}

func newRowConverter(ctx context.Context, d *Deps, cls *parsedb.Class) *rowConverter {
	var missing func(string) bool
	if schema, err := d.Store.Schema.Get(ctx); err == nil {
		missing = policy.MissingIn(schema)
	}
	// A pipeline computes strings and keys ($concat with a "$" taken from
	// a literal or a stored text, $arrayToObject): a computed "Class$id"
	// is redacted when the class is missing as when it is hidden, or one
	// call would tell hidden class names from missing ones (SECURITY.md
	// "Pipelines"). Stored free strings naming a missing class are redacted
	// here too: the conservative side of the free-string decision.
	invisible := d.Policy.Hidden
	if missing != nil {
		invisible = func(class string) bool { return d.Policy.Hidden(class) || missing(class) }
	}
	return &rowConverter{enc: parsedb.RowEncoder{Class: cls, HiddenClass: invisible, MissingClass: missing}, hidden: invisible, missing: missing}
}

// compactRows switches the converter to the compact shape, collecting a
// legend.
func (c *rowConverter) compactRows() {
	c.compact, c.legend = true, &parsedb.Legend{}
	c.enc.Compact, c.enc.Legend = true, c.legend
}

// rawValue renders one BSON value the way the codec renders a nested value
// (dates, floor, redaction), as JSON.
func (c *rowConverter) rawValue(rv bson.RawValue) (json.RawMessage, error) {
	raw, err := bson.Marshal(bson.D{{Key: "v", Value: rv}})
	if err != nil {
		return nil, err
	}
	enc := parsedb.RowEncoder{HiddenClass: c.hidden, MissingClass: c.missing, Compact: c.compact}
	row, err := enc.AppendRow(nil, raw)
	if err != nil {
		return nil, err
	}
	_, vals, err := splitJSONObject(row)
	if err != nil || len(vals) != 1 {
		return json.RawMessage("null"), err
	}
	return vals[0], nil
}

// value is rawValue decoded (maps, []any, int64/float64, strings…).
func (c *rowConverter) value(rv bson.RawValue) (any, error) {
	raw, err := c.rawValue(rv)
	if err != nil {
		return nil, err
	}
	m, err := parsedb.DecodeJSONObject(append(append([]byte(`{"v":`), raw...), '}'))
	if err != nil {
		return nil, err
	}
	return m["v"], nil
}

// convert renders one output document: the codec renders everything but
// the top-level `_p_` columns, which are rendered here so that they can be
// compacted (and kept under their storage name when the bare name is
// taken).
func (c *rowConverter) convert(doc bson.Raw) (*outRow, error) {
	elems, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	b := &rowBuilder{c: c, out: &outRow{}, emitted: map[string]bool{}}
	codecOrder, err := b.encode(elems)
	if err != nil {
		return nil, err
	}
	// Key order: as stored, with the codec's renames.
	for _, el := range elems {
		if err := b.add(el.Key(), el.Value()); err != nil {
			return nil, err
		}
	}
	for _, k := range codecOrder {
		b.emit(k)
	}
	return b.out, nil
}

// rowBuilder lays out one output row for convert.
type rowBuilder struct {
	c       *rowConverter
	codec   map[string]json.RawMessage // the codec's rendering by output name
	names   map[string]bool            // the document's keys, `_p_` columns out
	out     *outRow
	emitted map[string]bool
}

// encode renders the document's fields but the `_p_` columns and the
// joined fields through the codec, and returns the codec's key order.
func (b *rowBuilder) encode(elems []bson.RawElement) ([]string, error) {
	rest := make(bson.D, 0, len(elems))
	b.names = map[string]bool{}
	nullID := false
	for _, el := range elems {
		k := el.Key()
		if strings.HasPrefix(k, "_p_") && len(k) > 3 {
			continue
		}
		v := el.Value()
		if k == "_id" && v.Type == bson.TypeNull {
			nullID = true
		}
		b.names[k] = true
		if b.c.joined[k] != nil {
			continue
		}
		rest = append(rest, bson.E{Key: k, Value: v})
	}
	raw, err := bson.Marshal(rest)
	if err != nil {
		return nil, err
	}
	row, err := b.c.enc.AppendRow(nil, raw)
	if err != nil {
		return nil, err
	}
	codecOrder, vals, err := splitJSONObject(row)
	if err != nil {
		return nil, err
	}
	b.codec = make(map[string]json.RawMessage, len(vals))
	for i, k := range codecOrder {
		b.codec[k] = vals[i]
	}
	if nullID {
		b.codec["objectId"] = json.RawMessage("null")
	}
	return codecOrder, nil
}

// storageRenames are the stored keys the codec renders under another name.
var storageRenames = map[string]string{
	"_id":         "objectId",
	"_created_at": "createdAt",
	"createdAt":   "createdAt",
	"_updated_at": "updatedAt",
	"updatedAt":   "updatedAt",
	"_expiresAt":  "expiresAt",
	"_last_used":  "lastUsed",
}

// add lays out the stored field k.
func (b *rowBuilder) add(k string, v bson.RawValue) error {
	c := b.c
	if p, ok := c.storagePointer(v); ok && c.joined[k] == nil && (k == "_id" || !strings.HasPrefix(k, "_")) {
		name := k
		if k == "_id" {
			name = "objectId"
		}
		if !b.emitted[name] {
			b.pointerField(name, p)
			return nil
		}
	}
	if name, ok := storageRenames[k]; ok {
		b.emit(name)
		return nil
	}
	switch {
	case strings.HasPrefix(k, "_p_") && len(k) > 3:
		return b.pointerColumn(k, v)
	case c.joined[k] != nil:
		jv, err := c.joinedValue(k, c.joined[k], v)
		if err != nil {
			return err
		}
		b.field(k, jv)
	default:
		b.emit(k)
	}
	return nil
}

// pointerColumn lays out a top-level `_p_` column: under its bare name,
// compactable, unless that name is taken; then under its storage name, raw.
func (b *rowBuilder) pointerColumn(k string, val bson.RawValue) error {
	if val.Type == bson.TypeNull {
		return nil
	}
	name := k[3:]
	if _, taken := b.codec[name]; taken || b.names[name] || b.emitted[name] {
		// The bare name is taken: keep the storage column, raw.
		v, ok := b.c.invisiblePointer(val)
		if !ok {
			var err error
			if v, err = b.c.rawValue(val); err != nil {
				return err
			}
		}
		b.field(k, v)
		return nil
	}
	v, err := b.c.pointer(val)
	if err != nil {
		return err
	}
	b.pointerField(name, v)
	return nil
}

// emit lays out the codec's rendering of k, once.
func (b *rowBuilder) emit(k string) {
	if v, ok := b.codec[k]; ok && !b.emitted[k] {
		b.field(k, v)
	}
}

func (b *rowBuilder) field(k string, v any) {
	b.out.fields = append(b.out.fields, rowField{k, v})
	b.emitted[k] = true
}

// pointerField lays out a pointer column pointer compaction may rewrite.
func (b *rowBuilder) pointerField(k string, v any) {
	b.out.ptrCols = append(b.out.ptrCols, len(b.out.fields))
	b.field(k, v)
}

// pointer renders a top-level `_p_` value: a REST pointer, a redaction, or
// (not a "Class$id" string) the plain value.
func (c *rowConverter) pointer(rv bson.RawValue) (any, error) {
	if red, ok := c.invisiblePointer(rv); ok {
		return red, nil
	}
	if s, ok := rv.StringValueOK(); ok {
		if cls, id, ok := strings.Cut(s, "$"); ok && cls != "" && id != "" && !c.hidden(cls) {
			return &restPointer{Type: "Pointer", ClassName: cls, ObjectID: id}, nil
		}
	}
	return c.rawValue(rv)
}

// invisiblePointer is the redaction marker for a `_p_` value that refers
// to a hidden class or to one missing from the schema: a pointer column is
// a reference by type, so hidden and missing read the same (SECURITY.md
// "Hidden references").
func (c *rowConverter) invisiblePointer(rv bson.RawValue) (json.RawMessage, bool) {
	s, ok := rv.StringValueOK()
	if !ok {
		return nil, false
	}
	cls, _, ok := strings.Cut(s, "$")
	if !ok || cls == "" || !(c.hidden(cls) || c.missing != nil && c.missing(cls)) {
		return nil, false
	}
	return json.RawMessage(parsedb.RedactedMarker), true
}

// compactPointers replaces pointer columns that hold pointers of a single
// class by their objectIds and returns {column: class}. A column with a
// redacted, non-pointer or differently-classed value stays as it is.
func compactPointers(rows []*outRow) map[string]string {
	classes := map[string]string{}
	mixed := map[string]bool{}
	for _, r := range rows {
		for _, i := range r.ptrCols {
			f := r.fields[i]
			p, ok := f.v.(*restPointer)
			if !ok {
				mixed[f.k] = true
				continue
			}
			if prev, seen := classes[f.k]; seen && prev != p.ClassName {
				mixed[f.k] = true
			}
			classes[f.k] = p.ClassName
		}
	}
	out := map[string]string{}
	for k, cls := range classes {
		if !mixed[k] {
			out[k] = cls
		}
	}
	if len(out) == 0 {
		return nil
	}
	for _, r := range rows {
		for _, i := range r.ptrCols {
			if _, ok := out[r.fields[i].k]; ok {
				r.fields[i].v = r.fields[i].v.(*restPointer).ObjectID
			}
		}
	}
	return out
}

// readRows runs a plan and converts its rows, stopping at maxRows rows or
// when the rows' JSON exceeds budget bytes (then it fails with the
// heaviest fields).
func readRows(ctx context.Context, d *Deps, tool string, plan *pipelinePlan, maxRows, budget int, legend *parsedb.Legend) ([]*outRow, error) {
	cur, err := d.Store.Aggregate(ctx, plan.cls.Name, plan.pipeline)
	if err != nil {
		return nil, pipelineRunError(d, tool, err)
	}
	defer cur.Close(ctx)
	conv := newRowConverter(ctx, d, plan.endClass)
	conv.joined = plan.joined
	if plan.endClass == nil {
		if schema, err := d.Store.Schema.Get(ctx); err == nil {
			conv.isClass = func(n string) bool { return schema.Class(n) != nil }
		}
	}
	if legend != nil {
		conv.compactRows()
		defer func() { legend.Merge("", conv.legend) }()
	}
	var rows []*outRow
	sizes := map[string]int{}
	total := 0
	p := ProgressFrom(ctx)
	for cur.Next(ctx) {
		r, err := conv.convert(cur.Current)
		if err != nil {
			return nil, err
		}
		n, err := r.addSizes(sizes)
		if err != nil {
			return nil, err
		}
		total += n + 1
		if total > budget {
			return nil, rowsTooLarge(d, tool, sizes)
		}
		rows = append(rows, r)
		if len(rows)%500 == 0 {
			p.Report(float64(len(rows)), 0, fmt.Sprintf("%d rows read", len(rows)))
		}
		if len(rows) >= maxRows {
			break
		}
	}
	if err := cur.Err(); err != nil {
		return nil, pipelineRunError(d, tool, err)
	}
	return rows, nil
}
