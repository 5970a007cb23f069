package tools

// The row shape argument shared by every row-returning tool and the legend
// that goes with compact rows (README "Row shapes").

import (
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// shapeProperty is the input-schema property of the shape argument
// (query_class's description says what the shapes are; tools/list stays
// small).
const shapeProperty = `"shape":{"type":"string","enum":["compact","rest"]}`

// withShape adds the shape property as the last property of a tool's input
// schema (an object schema ending with its "required" list).
func withShape(schema string) string {
	i := strings.LastIndex(schema, `},"required":`)
	if i < 0 {
		panic("withShape: unexpected input schema " + schema)
	}
	return schema[:i] + "," + shapeProperty + schema[i:]
}

// shapeArg reports whether rows are compact (the default) or REST.
func shapeArg(args Args) (compact bool, err error) {
	s, err := enumArg(args, "shape", "compact", "compact", "rest")
	if err != nil {
		return false, err
	}
	return s == "compact", nil
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
