package parsedb

// Include support for the read tools: the include tree (paths resolved
// through pointer targets), pointer references read straight from stored
// documents, and splicing of included objects into rows already encoded by
// RowEncoder (the codec stays a single streaming pass; includes replace the
// pointer value afterwards).

import (
	"bytes"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// IncludeNode is one pointer field to expand.
type IncludeNode struct {
	Path   string // REST path from the queried class, e.g. "album.artist"
	Field  string // the pointer field on the parent class, e.g. "artist"
	Level  int    // 0 for pointers of the queried class
	Source *Class
	Target *Class
	// Keys restrict the included object's fields (REST paths relative to
	// Target); empty = every visible field.
	Keys     []string
	Children []*IncludeNode
}

// IncludeResolver checks one step of an include path (policy: the pointer
// field may be read, the target class is visible and joins are allowed) and
// returns the target class.
type IncludeResolver func(from *Class, field *Field, path string) (*Class, error)

// BuildIncludeTree resolves include paths from cls. Every segment of a path
// must be a pointer field of the class reached so far.
func BuildIncludeTree(cls *Class, paths []string, resolve IncludeResolver) ([]*IncludeNode, error) {
	var roots []*IncludeNode
	for _, p := range paths {
		from := cls
		level := &roots
		segs := strings.Split(p, ".")
		for i, seg := range segs {
			var node *IncludeNode
			for _, n := range *level {
				if n.Field == seg {
					node = n
					break
				}
			}
			if node == nil {
				f := from.Field(seg)
				if f == nil || f.Type != TypePointer {
					return nil, notPointer(p, from, seg, f)
				}
				target, err := resolve(from, f, strings.Join(segs[:i+1], "."))
				if err != nil {
					return nil, err
				}
				node = &IncludeNode{Path: strings.Join(segs[:i+1], "."), Field: seg, Level: i, Source: from, Target: target}
				*level = append(*level, node)
			}
			from = node.Target
			level = &node.Children
		}
	}
	return roots, nil
}

func notPointer(path string, from *Class, seg string, f *Field) error {
	var ptrs []string
	for _, name := range from.FieldNames() {
		if from.Fields[name].Type == TypePointer {
			ptrs = append(ptrs, name)
		}
	}
	what := "is not a field"
	if f != nil {
		what = "is a " + f.Type + ", not a Pointer"
	}
	hint := from.Name + " has no pointer fields"
	if len(ptrs) > 0 {
		hint = "pointer fields of " + from.Name + ": " + strings.Join(ptrs, ", ")
	}
	return toolerror.New(toolerror.InvalidArgument, "include %q: %s.%s %s (%s)", path, from.Name, seg, what, hint)
}

// WalkIncludes calls fn for every node, parents before children.
func WalkIncludes(nodes []*IncludeNode, fn func(*IncludeNode)) {
	for _, n := range nodes {
		fn(n)
		WalkIncludes(n.Children, fn)
	}
}

// PointerRef reads a stored pointer column `_p_<field>` ("Class$id").
func PointerRef(doc bson.Raw, field string) (class, id string, ok bool) {
	v, err := doc.LookupErr("_p_" + field)
	if err != nil {
		return "", "", false
	}
	s, isStr := v.StringValueOK()
	if !isStr {
		return "", "", false
	}
	class, id, ok = strings.Cut(s, "$")
	if !ok || class == "" || id == "" {
		return "", "", false
	}
	return class, id, true
}

// DocID is a stored document's _id as a string ("" when not a string).
func DocID(doc bson.Raw) string {
	s, _ := doc.Lookup("_id").StringValueOK()
	return s
}

// RowField is one top-level member of an encoded JSON row: Key is the
// unquoted name, Start/End delimit the value in the row, KeyStart is the
// index of the key's opening quote.
type RowField struct {
	Key        []byte
	Start, End int
	KeyStart   int
}

// RowFields lists the top-level members of a JSON object produced by
// RowEncoder (compact, no whitespace). It returns nil for anything else.
func RowFields(row []byte) []RowField {
	var out []RowField
	if !eachRowField(row, func(f RowField) { out = append(out, f) }) {
		return nil
	}
	return out
}

// eachRowField calls f with each top-level member of row, in order; false
// when row is not a JSON object produced by RowEncoder (f may have been
// called for the members before the fault).
func eachRowField(row []byte, f func(RowField)) bool {
	if len(row) < 2 || row[0] != '{' {
		return false
	}
	i := 1
	for i < len(row) && row[i] != '}' {
		if row[i] == ',' {
			i++
		}
		if i >= len(row) || row[i] != '"' {
			return false
		}
		ks := i + 1
		ke := skipString(row, i)
		if ke < 0 || ke >= len(row) || row[ke] != ':' {
			return false
		}
		vs := ke + 1
		ve := skipValue(row, vs)
		if ve < 0 {
			return false
		}
		f(RowField{Key: row[ks : ke-1], Start: vs, End: ve, KeyStart: i})
		i = ve
	}
	return true
}

// skipString returns the index after the JSON string starting at b[i]=='"'.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				k := skipString(b, j)
				if k < 0 {
					return -1
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']':
			return j
		}
	}
	return len(b)
}

// SpliceRow appends row to dst with the values of the named top-level
// members replaced (members not in the row are not added); a member whose
// replacement is nil is removed.
func SpliceRow(dst, row []byte, repl map[string][]byte) []byte {
	if len(repl) == 0 {
		return append(dst, row...)
	}
	fields := RowFields(row)
	if fields == nil {
		return append(dst, row...)
	}
	last := 0
	for _, f := range fields {
		v, ok := repl[string(f.Key)]
		if !ok {
			continue
		}
		if v == nil {
			// Remove the member with one of its separating commas.
			start, end := f.KeyStart, f.End
			if start-1 >= last && row[start-1] == ',' {
				start--
			} else if end < len(row) && row[end] == ',' {
				end++
			}
			dst = append(dst, row[last:start]...)
			last = end
			continue
		}
		dst = append(dst, row[last:f.Start]...)
		dst = append(dst, v...)
		last = f.End
	}
	return append(dst, row[last:]...)
}

// FieldSize is a top-level field and its encoded size.
type FieldSize struct {
	Field string `json:"field"`
	Bytes int    `json:"bytes"`
}

// AddFieldSizes adds the encoded size of each top-level member of row
// (name + value) to sizes.
// Rows come from RowEncoder; of a row that was not an object, the members
// before the fault would be counted. Nothing is allocated per row.
func AddFieldSizes(sizes map[string]int, row []byte) {
	eachRowField(row, func(f RowField) {
		sizes[string(f.Key)] += len(f.Key) + 3 + f.End - f.Start
	})
}

// HeaviestFields sorts sizes by bytes, heaviest first (ties by name).
func HeaviestFields(sizes map[string]int) []FieldSize {
	out := make([]FieldSize, 0, len(sizes))
	for k, v := range sizes {
		out = append(out, FieldSize{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Field < out[j].Field
	})
	return out
}

// ObjectPrefix turns an encoded row into an included object: the row with
// "__type":"Object" and "className" in front.
func ObjectPrefix(dst []byte, className string, row []byte) []byte {
	dst = append(dst, `{"__type":"Object","className":`...)
	dst = jsonenc.AppendString(dst, className)
	if bytes.Equal(row, []byte("{}")) || len(row) < 2 {
		return append(dst, '}')
	}
	dst = append(dst, ',')
	return append(dst, row[1:]...)
}
