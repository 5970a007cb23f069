package tools

// The row shape argument shared by every row-returning tool and the legend
// that goes with compact rows (docs/reading.md "Row shapes").

import (
	"context"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// rowShape is how rows are laid out and rendered (docs/reading.md "Row shapes").
type rowShape int

const (
	// shapeColumns: compact values, one list of column names and one
	// array per row (the default of the multi-row tools).
	shapeColumns rowShape = iota
	// shapeObjects: compact values, one object per row (get_object's
	// default).
	shapeObjects
	// shapeREST: Parse's REST JSON, one object per row.
	shapeREST
)

// compact reports whether values are rendered compactly.
func (s rowShape) compact() bool { return s != shapeREST }

// The input-schema property of the shape argument of the multi-row tools
// and of get_object (query_class's description says what the shapes are;
// tools/list stays small).
const (
	rowsShapeProperty   = `"shape":{"type":"string","enum":["columns","objects","rest"]}`
	objectShapeProperty = `"shape":{"type":"string","enum":["objects","rest"]}`
)

// withShape adds the multi-row shape property as the last property of a
// tool's input schema (an object schema ending with its "required" list).
func withShape(schema string) string { return withProperty(schema, rowsShapeProperty) }

// withObjectShape adds get_object's shape property.
func withObjectShape(schema string) string { return withProperty(schema, objectShapeProperty) }

func withProperty(schema, property string) string {
	i := strings.LastIndex(schema, `},"required":`)
	if i < 0 {
		panic("withProperty: unexpected input schema " + schema)
	}
	return schema[:i] + "," + property + schema[i:]
}

// decodeArg reads a shape argument: one of the field's enum (the multi-row
// tools: columns, objects, rest; get_object: objects, rest), its default
// when absent.
func (s *rowShape) decodeArg(_ context.Context, args Args, name string, f *argField) error {
	v, err := enumArg(args, name, f.def, f.enum...)
	*s = shapeOf(v)
	return err
}

func (*rowShape) schemaType() string { return "string" }

func shapeOf(s string) rowShape {
	switch s {
	case "columns":
		return shapeColumns
	case "rest":
		return shapeREST
	}
	return shapeObjects
}

// addLegend writes pointer_classes and date_fields, when there are any.
func addLegend(o *jsonObject, l *parsedb.Legend) {
	if l == nil {
		return
	}
	if len(l.PointerClasses) > 0 {
		o.val("pointer_classes", l.PointerClasses)
	}
	if d := l.Dates(); len(d) > 0 {
		o.val("date_fields", d)
	}
}

// legendMap adds the legend to a map result.
func legendMap(out map[string]any, l *parsedb.Legend) {
	if l == nil {
		return
	}
	if len(l.PointerClasses) > 0 {
		out["pointer_classes"] = l.PointerClasses
	}
	if d := l.Dates(); len(d) > 0 {
		out["date_fields"] = d
	}
}
