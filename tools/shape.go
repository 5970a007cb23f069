package tools

// The row shape argument shared by every row-returning tool and the legend
// that goes with compact rows (docs/reading.md "Row shapes").

import (
	"context"

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

// decodeArg reads a shape argument: one of the field's enum (the multi-row
// tools: columns, objects, rest; get_object: objects, rest), its default
// when absent.
func (s *rowShape) decodeArg(_ context.Context, args Args, name string, f *argField) error {
	v, err := enumArg(args, name, f.def, f.enum...)
	*s = shapeOf(v)
	return err
}

func (*rowShape) schema() string { return `"type":"string"` }

func shapeOf(s string) rowShape {
	switch s {
	case "columns":
		return shapeColumns
	case "rest":
		return shapeREST
	}
	return shapeObjects
}

// RowLegend are the legend members of a typed result with compact rows
// (docs/reading.md "Row shapes"); an Out embeds it where its rows are.
type RowLegend struct {
	PointerClasses map[string]string `json:"pointer_classes,omitempty"`
	DateFields     []string          `json:"date_fields,omitempty"`
}

func rowLegendOf(l *parsedb.Legend) RowLegend {
	if l == nil {
		return RowLegend{}
	}
	return RowLegend{PointerClasses: l.PointerClasses, DateFields: l.Dates()}
}

// rowsArray is rows encoded straight from the stored documents
// (comma-separated JSON values), written as a JSON array without being
// decoded again.
type rowsArray []byte

func (r rowsArray) MarshalJSON() ([]byte, error) {
	return append(append(append(make([]byte, 0, len(r)+2), '['), r...), ']'), nil
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
