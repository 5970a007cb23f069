package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Args are a tool call's arguments as decoded JSON. The getters return
// invalid_argument errors that say exactly what was wrong, so the model can
// fix its call. Unknown extra arguments are ignored. Numbers arrive as
// float64 from JSON; Go callers (resources, the group fallback, tests) may
// put Go integers or json.Number in an Args, and the getters take those too.
type Args map[string]any

// MaxKeys and MaxIncludes cap keys/include lists (docs/tools.md "Tools").
const (
	MaxKeys     = 64
	MaxIncludes = 20
)

func invalid(format string, a ...any) error {
	return toolerror.New(toolerror.InvalidArgument, format, a...)
}

// String returns a string argument; required ones must be present and non-empty.
func (a Args) String(name string, required bool) (string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		if required {
			return "", invalid("%s is required", name)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", invalid("%s must be a string, got %s", name, jsonType(v))
	}
	if required && s == "" {
		return "", invalid("%s must not be empty", name)
	}
	return s, nil
}

// ClassName returns class_name after checking its syntax (not its existence:
// that is the class gate's job).
func (a Args) ClassName() (string, error) {
	s, err := a.String("class_name", true)
	if err != nil {
		return "", err
	}
	if !parsedb.ClassNameRe.MatchString(s) {
		return "", invalid("class_name %q is not a valid Parse class name (letters, digits and _, starting with a letter or _, at most 128 characters)", truncate(s, 40))
	}
	return s, nil
}

// ObjectID validates an object id argument.
func (a Args) ObjectID(name string) (string, error) {
	s, err := a.String(name, true)
	if err != nil {
		return "", err
	}
	if !parsedb.ObjectIDRe.MatchString(s) {
		return "", invalid("%s %q is not a valid objectId (1-32 of A-Z a-z 0-9 _ -)", name, truncate(s, 40))
	}
	return s, nil
}

// Int returns an integer argument with a default, checked against [min,max].
func (a Args) Int(name string, def, min, max int) (int, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return def, nil
	}
	f, ok := number(v)
	if !ok {
		return 0, invalid("%s must be a number, got %s", name, jsonType(v))
	}
	if f != math.Trunc(f) {
		return 0, invalid("%s must be a whole number", name)
	}
	if f < float64(min) || f > float64(max) {
		return 0, invalid("%s must be between %d and %d, got %v", name, min, max, f)
	}
	return int(f), nil
}

// number is v as a float64 when it is a JSON number (float64), a Go
// integer or a json.Number; a Go int used to be refused as "not a number".
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Bool returns a boolean argument with a default.
func (a Args) Bool(name string, def bool) (bool, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, invalid("%s must be true or false, got %s", name, jsonType(v))
	}
	return b, nil
}

// Object returns a JSON object argument (nil if absent).
func (a Args) Object(name string) (map[string]any, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("%s must be a JSON object, got %s", name, jsonType(v))
	}
	return m, nil
}

// StringList returns a list of strings; a comma-separated string is accepted
// too, because models often send "a,b" for keys.
func (a Args) StringList(name string) ([]string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return nil, nil
	}
	switch t := v.(type) {
	case string:
		return splitComma(t), nil
	case []any:
		out := make([]string, 0, len(t))
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, invalid("%s[%d] must be a string, got %s", name, i, jsonType(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, invalid("%s must be an array of strings, got %s", name, jsonType(v))
}

// FieldList returns keys/include-style field paths, checked for syntax and
// count.
func (a Args) FieldList(name string, max int) ([]string, error) {
	list, err := a.StringList(name)
	if err != nil {
		return nil, err
	}
	if len(list) > max {
		return nil, invalid("%s has %d entries; at most %d are allowed", name, len(list), max)
	}
	seen := map[string]bool{}
	out := list[:0]
	for _, k := range list {
		if !parsedb.FieldPathRe.MatchString(k) {
			return nil, invalid("%s entry %q is not a valid field path (letters, digits and _, each dotted segment starting with a letter)", name, truncate(k, 40))
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}

func splitComma(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any, bson.A:
		return "an array"
	case map[string]any, bson.D, bson.M:
		// bson.D: arguments decoded in key order (pipelines, where).
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
