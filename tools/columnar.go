package tools

// Columnar rows (docs/reading.md "Row shapes"): a run of JSON row objects becomes
// one list of column names and one array of values per row, so field names
// are not repeated on every row — the largest share of what a model reads
// in a multi-row answer. Values are copied byte for byte from the encoded
// rows (compact or REST values alike); only the object framing changes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
)

// errNotRowObject is returned when a row is not a JSON object (the encoders
// never produce one; the caller then keeps the object rows).
var errNotRowObject = errors.New("columnar: row is not a JSON object")

// columnarRows turns comma-separated JSON objects (as the row encoders
// write them) into columns and the comma-separated row arrays. Columns are
// the union of the rows' keys in first-seen order, so objectId (first in
// every row) leads; a row without a column has null there. n is the number
// of rows.
func columnarRows(objects []byte) (columns []string, rows []byte, n int, err error) {
	type cell struct{ col, start, end int }
	index := map[string]int{}
	var cells []cell
	var rowEnds []int // len(cells) after each row
	i := 0
	for {
		i = skipSpace(objects, i)
		if i >= len(objects) {
			break
		}
		if objects[i] == ',' {
			i++
			continue
		}
		if objects[i] != '{' {
			return nil, nil, 0, errNotRowObject
		}
		i++
		for {
			i = skipSpace(objects, i)
			if i >= len(objects) {
				return nil, nil, 0, errNotRowObject
			}
			if objects[i] == '}' {
				i++
				break
			}
			if objects[i] == ',' {
				i++
				continue
			}
			kStart := i
			kEnd, err := skipValue(objects, i)
			if err != nil || objects[kStart] != '"' {
				return nil, nil, 0, errNotRowObject
			}
			key, err := unquoteKey(objects[kStart:kEnd])
			if err != nil {
				return nil, nil, 0, errNotRowObject
			}
			i = skipSpace(objects, kEnd)
			if i >= len(objects) || objects[i] != ':' {
				return nil, nil, 0, errNotRowObject
			}
			vStart := skipSpace(objects, i+1)
			vEnd, err := skipValue(objects, vStart)
			if err != nil {
				return nil, nil, 0, errNotRowObject
			}
			col, ok := index[key]
			if !ok {
				col = len(columns)
				index[key] = col
				columns = append(columns, key)
			}
			cells = append(cells, cell{col, vStart, vEnd})
			i = vEnd
		}
		if len(rowEnds) == 0 {
			// Room for every row's cells at the first row's count and size.
			cells = slices.Grow(cells, len(cells)*(len(objects)/max(i, 1)+1))
		}
		rowEnds = append(rowEnds, len(cells))
	}
	// Each row: its cells in column order, null where it has none.
	vals := make([][2]int, len(columns))
	rows = make([]byte, 0, len(objects))
	first := 0
	for r, end := range rowEnds {
		for c := range vals {
			vals[c] = [2]int{-1, -1}
		}
		for _, c := range cells[first:end] {
			vals[c.col] = [2]int{c.start, c.end}
		}
		first = end
		if r > 0 {
			rows = append(rows, ',')
		}
		rows = append(rows, '[')
		for c, v := range vals {
			if c > 0 {
				rows = append(rows, ',')
			}
			if v[0] < 0 {
				rows = append(rows, "null"...)
				continue
			}
			rows = append(rows, objects[v[0]:v[1]]...)
		}
		rows = append(rows, ']')
	}
	return columns, rows, len(rowEnds), nil
}

// columnsOf is the columns and rows of objects (comma-separated JSON
// objects) for shape columns, unless the columns would cost more than the
// objects under objectsKey (very sparse rows): then ok is false.
func columnsOf(shape rowShape, objectsKey string, objects []byte) (cols json.RawMessage, rows rowsArray, ok bool) {
	if shape != shapeColumns {
		return nil, nil, false
	}
	names, rows, _, err := columnarRows(objects)
	if err != nil {
		return nil, nil, false
	}
	cols, _ = jsonenc.Marshal(append([]string{}, names...))
	if len(cols)+len(rows)+len(`,"columns":,"rows":[]`) <= len(objects)+len(objectsKey)+len(`"":[]`) || len(names) == 0 {
		return cols, rows, true
	}
	return nil, nil, false
}

// unquoteKey decodes a JSON string; field names rarely hold escapes.
func unquoteKey(q []byte) (string, error) {
	if !bytes.ContainsRune(q, '\\') {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}

// columnsByID is get_objects' rows as columns + rows, or — when the columns
// would cost more than the objects keyed by id (byID; very sparse rows) —
// ok false, as columnsOf falls back for the other tools.
func columnsByID(objects, byID []byte) (cols json.RawMessage, rows rowsArray, ok bool, err error) {
	names, rows, _, err := columnarRows(objects)
	if err != nil {
		return nil, nil, false, err
	}
	cols, _ = jsonenc.Marshal(append([]string{}, names...))
	if len(names) > 0 && len(cols)+len(rows)+len(`,"columns":,"rows":[]`) > len(byID)+len(`"objects":`) {
		return nil, nil, false, nil
	}
	return cols, rows, true, nil
}

// rowsMember sets the rows of a result built as a map: columns + rows, or
// the objects under objectsKey (see columnsOf).
func rowsMember(out map[string]any, shape rowShape, objectsKey string, objects []byte) {
	if cols, rows, ok := columnsOf(shape, objectsKey, objects); ok {
		out["columns"], out["rows"] = cols, rows
		return
	}
	out[objectsKey] = rowsArray(objects)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

var errBadJSON = errors.New("columnar: malformed JSON")

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errBadJSON
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errBadJSON
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errBadJSON
	default: // number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		if j == i {
			return 0, errBadJSON
		}
		return j, nil
	}
}
