package tools

// Text formats of query_class and export_data: csv, markdown and table.
//
// Decisions (tests pin each one):
//   - CSV quotes a cell (RFC 4180: doubling inner quotes) only when it
//     contains a comma, a quote, CR or LF; lines end with "\n" (not CRLF:
//     the output travels inside a JSON string to a model, where "\r\n"
//     costs tokens and gains nothing). Values are not rewritten against
//     spreadsheet formula injection: exports keep the data exact.
//   - Markdown is a GitHub table: "|" is escaped as "\|", line breaks in a
//     cell become "<br>".
//   - table is fixed-width: columns padded to their widest cell, at most 60
//     characters (longer cells end with "…"), two spaces between columns,
//     a dashed line under the header, line breaks shown as spaces.
//   - Cells: strings as is; numbers exactly as stored; Dates their ISO
//     string; Pointers their objectId; Files their name; GeoPoints
//     "lat,lng"; redacted references "[redacted]"; null/missing empty; other
//     objects and arrays compact JSON.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// maxTableCell is the widest a fixed-width table column gets, in runes.
const maxTableCell = 60

// column is one output column: a dotted path into the REST row and its header.
type column struct {
	path, header string
}

func columnHeaders(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.header
	}
	return out
}

func pathRoot(path string) string {
	root, _, _ := strings.Cut(path, ".")
	return root
}

func withoutColumn(cols []column, field string) []column {
	var out []column
	for _, c := range cols {
		if pathRoot(c.path) != field {
			out = append(out, c)
		}
	}
	return out
}

// defaultColumns are the caller's keys, else objectId, createdAt, updatedAt
// and every visible field of the class (relations are not stored in rows).
func (p *readPlan) defaultColumns() []column {
	var cols []column
	if len(p.userKeys) > 0 {
		for _, k := range p.userKeys {
			cols = append(cols, column{k, k})
		}
		return cols
	}
	cols = []column{{"objectId", "objectId"}, {"createdAt", "createdAt"}, {"updatedAt", "updatedAt"}}
	for _, f := range p.d.Policy.VisibleFields(p.target.Class) {
		if f.Type == parsedb.TypeRelation || f.Type == parsedb.TypeACL || isIdentityField(f.Name) {
			continue
		}
		if p.enc.Drop != nil && p.enc.Drop(f.Name) {
			continue
		}
		cols = append(cols, column{f.Name, f.Name})
	}
	return cols
}

// decodeRow decodes an encoded REST row, numbers kept as written.
func decodeRow(row []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(row))
	dec.UseNumber()
	var m map[string]any
	err := dec.Decode(&m)
	return m, err
}

// columnValue walks a dotted path through objects, included objects and
// pointers.
func columnValue(row map[string]any, path string) any {
	var cur any = row
	for seg := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[seg]
	}
	return cur
}

// cellString renders one value as cell text.
func cellString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		return fmt.Sprint(x)
	case float64:
		b, _ := json.Marshal(x)
		return string(b)
	case map[string]any:
		if r, _ := x["__redacted"].(bool); r {
			return "[redacted]"
		}
		switch x["__type"] {
		case "Date":
			if s, ok := x["iso"].(string); ok {
				return s
			}
		case "Pointer":
			if s, ok := x["objectId"].(string); ok {
				return s
			}
		case "File":
			if s, ok := x["name"].(string); ok {
				return s
			}
		case "GeoPoint":
			return cellString(x["latitude"]) + "," + cellString(x["longitude"])
		}
	}
	b, err := jsonenc.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// jsonStringLen is the length of s once written as a JSON string's content.
func jsonStringLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20:
			n += 6
		default:
			n++
		}
	}
	return n
}

// textRows is one page of rows rendered as cells.
type textRows struct {
	rows    [][]string
	bytes   int
	n       int // rows of the page read (≤ limit)
	hasMore bool
	over    bool
	sizes   map[string]int // bytes per top-level field, first rows
}

// textPage reads skip/limit rows (limit+1 fetched to learn has_more) into
// cells of cols, within budget bytes (as they will be escaped in the JSON
// result). With stopAtOver the read stops at the first row that does not fit.
func (p *readPlan) textPage(ctx context.Context, cols []column, skip, limit, budget int, stopAtOver bool) (*textRows, error) {
	tp := &textRows{sizes: map[string]int{}}
	prog := ProgressFrom(ctx)
	err := p.rows(ctx, p.findSpec(skip, limit+1), func(i int) bool { return i < limit && !tp.over }, func(i int, _ bson.Raw, row []byte) (bool, error) {
		if i >= limit {
			tp.hasMore = true
			return false, nil
		}
		tp.n++
		if tp.n%progressEvery == 0 {
			prog.Report(float64(tp.n), float64(limit), fmt.Sprintf("%d rows read", tp.n))
		}
		if row == nil {
			return true, nil
		}
		m, err := decodeRow(row)
		if err != nil {
			return false, err
		}
		cells := make([]string, len(cols))
		size := 1
		for j, c := range cols {
			cells[j] = cellString(columnValue(m, c.path))
			l := jsonStringLen(cells[j]) + 3
			size += l
			if i < judgeRows {
				tp.sizes[pathRoot(c.path)] += l
			}
		}
		if tp.bytes+size > budget {
			tp.over = true
			return !stopAtOver, nil
		}
		tp.rows = append(tp.rows, cells)
		tp.bytes += size
		return true, nil
	})
	return tp, err
}

// fitText renders rows, dropping trailing rows until the output fits budget
// (table padding can outgrow the per-cell estimate); it reports whether rows
// were dropped.
func fitText(format string, headers []string, rows [][]string, budget int) (string, [][]string, bool) {
	out := renderText(format, headers, rows)
	trimmed := false
	for len(rows) > 0 && jsonStringLen(out) > budget {
		rows = rows[:len(rows)*9/10]
		trimmed = true
		out = renderText(format, headers, rows)
	}
	return out, rows, trimmed
}

// renderText renders a table in csv, markdown or table format.
func renderText(format string, headers []string, rows [][]string) string {
	var b strings.Builder
	switch format {
	case "markdown":
		writeMarkdownRow(&b, headers)
		b.WriteByte('|')
		for range headers {
			b.WriteString(" --- |")
		}
		b.WriteByte('\n')
		for _, r := range rows {
			writeMarkdownRow(&b, r)
		}
	case "table":
		writeFixedWidth(&b, headers, rows)
	default:
		writeCSVRow(&b, headers)
		for _, r := range rows {
			writeCSVRow(&b, r)
		}
	}
	return b.String()
}

func writeCSVRow(b *strings.Builder, cells []string) {
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(csvField(c))
	}
	b.WriteByte('\n')
}

// csvField quotes a cell per RFC 4180 when needed.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func writeMarkdownRow(b *strings.Builder, cells []string) {
	b.WriteByte('|')
	for _, c := range cells {
		b.WriteByte(' ')
		b.WriteString(markdownCell(c))
		b.WriteString(" |")
	}
	b.WriteByte('\n')
}

var markdownReplacer = strings.NewReplacer("|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

func markdownCell(s string) string { return markdownReplacer.Replace(s) }

var flatReplacer = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// tableCell flattens a cell to one line of at most maxTableCell runes.
func tableCell(s string) string {
	s = flatReplacer.Replace(s)
	if utf8.RuneCountInString(s) <= maxTableCell {
		return s
	}
	r := []rune(s)
	return string(r[:maxTableCell-1]) + "…"
}

func writeFixedWidth(b *strings.Builder, headers []string, rows [][]string) {
	widths := make([]int, len(headers))
	hs := make([]string, len(headers))
	for i, h := range headers {
		hs[i] = tableCell(h)
		widths[i] = utf8.RuneCountInString(hs[i])
	}
	cells := make([][]string, len(rows))
	for r, row := range rows {
		cells[r] = make([]string, len(row))
		for i, c := range row {
			cells[r][i] = tableCell(c)
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(cells[r][i]))
			}
		}
	}
	line := func(row []string) {
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteByte('\n')
	}
	line(hs)
	dashes := make([]string, len(widths))
	for i, w := range widths {
		dashes[i] = strings.Repeat("-", w)
	}
	line(dashes)
	for _, row := range cells {
		line(row)
	}
}
