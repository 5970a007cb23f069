package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/policy"
)

// TestToolContracts checks every tool's hand-written output schema against
// its typed contract (contract.go; the input schema is generated from In):
// the output schema lists exactly the Out struct's members with matching
// types, and every member it requires is one the struct always writes.
func TestToolContracts(t *testing.T) {
	for _, tool := range Catalog() {
		_, out := tool.Handler.Contract()
		if out == reflect.TypeFor[Dynamic]() {
			continue // documented at Dynamic
		}
		var outSchema map[string]any
		if err := json.Unmarshal([]byte(tool.OutputSchema), &outSchema); err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		// The policy envelope, not the handler, adds the untrusted-data
		// note to the results of tools marked untrusted.
		props, _ := outSchema["properties"].(map[string]any)
		if _, noted := props["_note"]; noted != policy.MarksUntrusted(tool.ToolInfo) {
			t.Errorf("%s output: the schema lists _note: %v, the envelope adds it: %v", tool.Name, noted, policy.MarksUntrusted(tool.ToolInfo))
		}
		delete(props, "_note")
		for _, problem := range outputMismatches(out, outSchema, "") {
			t.Errorf("%s output: %s", tool.Name, problem)
		}
	}
}

// TestContractMismatchesFound: the check of TestToolContracts finds what
// it is there to find.
func TestContractMismatchesFound(t *testing.T) {
	type out struct {
		Name  string `json:"name"`
		Count int    `json:"count,omitempty"`
	}
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer"}},"required":["name"]}`, ""},
		{`{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer"}},"required":["count"]}`, "count: required"},
		{`{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"string"}}}`, "count: type"},
		{`{"type":"object","properties":{"name":{"type":"string"}}}`, "count: no property"},
	} {
		var schema map[string]any
		if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(outputMismatches(reflect.TypeFor[out](), schema, ""), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("output schema %s: got %q, want %q", tc.schema, got, tc.want)
		}
	}
}

// TestTypedDecodeErrors: a typed handler answers a bad argument with the
// Args getters' messages, in the order of the In fields.
func TestTypedDecodeErrors(t *testing.T) {
	type in struct {
		ClassName string         `json:"class_name" arg:"class"`
		Where     map[string]any `json:"where"`
		Limit     int            `json:"limit" arg:"default=5,min=1,max=20"`
		Format    string         `json:"format" arg:"enum=json|csv,default=json"`
		Canonical bool           `json:"apply_canonical_filter" arg:"default=true"`
		Raw       Args           `json:"-"`
	}
	var got in
	h := Typed(func(_ context.Context, _ *Deps, i in) (Dynamic, error) { got = i; return nil, nil })
	for _, tc := range []struct {
		args Args
		err  string
	}{
		{Args{}, "class_name is required"},
		{Args{"class_name": ""}, "class_name must not be empty"},
		{Args{"class_name": "9x"}, `class_name "9x" is not a valid Parse class name`},
		{Args{"class_name": "Song", "where": "x", "limit": 0}, "where must be a JSON object, got a string"},
		{Args{"class_name": "Song", "limit": 21}, "limit must be between 1 and 20, got 21"},
		{Args{"class_name": "Song", "format": "xml"}, `format must be one of json, csv, got "xml"`},
		{Args{"class_name": "Song", "apply_canonical_filter": "no"}, "apply_canonical_filter must be true or false, got a string"},
		{Args{"class_name": "Song", "format": "CSV"}, ""},
	} {
		_, err := h.Call(context.Background(), nil, tc.args)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if (tc.err == "") != (msg == "") || !strings.Contains(msg, tc.err) {
			t.Errorf("%v: got %q, want %q", tc.args, msg, tc.err)
		}
	}
	if got.Limit != 5 || got.Format != "csv" || !got.Canonical || got.Raw["format"] != "CSV" {
		t.Errorf("decoded %+v: want the defaults, the canonical enum value and the raw arguments", got)
	}
}

// outputMismatches compares an output (object) schema with the Out type t,
// recursing into struct members and arrays of structs.
func outputMismatches(t reflect.Type, schema map[string]any, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return []string{fmt.Sprintf("%s: Out %s is not a struct (use Dynamic and say why)", path, t)}
	}
	props, _ := schema["properties"].(map[string]any)
	var out []string
	members := outMembers(t)
	for name, m := range members {
		p, ok := props[name].(map[string]any)
		if !ok {
			out = append(out, fmt.Sprintf("%s%s: no property in the schema", path, name))
			continue
		}
		if !typeAllows(p["type"], jsonTypeOf(m.typ)) {
			out = append(out, fmt.Sprintf("%s%s: type %v, the field is %s", path, name, p["type"], m.typ))
		}
		sub := m.typ
		for sub.Kind() == reflect.Pointer {
			sub = sub.Elem()
		}
		if sub.Kind() == reflect.Struct && p["properties"] != nil {
			out = append(out, outputMismatches(sub, p, path+name+".")...)
		}
		if sub.Kind() == reflect.Slice && sub.Elem().Kind() == reflect.Struct {
			if items, ok := p["items"].(map[string]any); ok && items["properties"] != nil {
				out = append(out, outputMismatches(sub.Elem(), items, path+name+"[].")...)
			}
		}
	}
	for name := range props {
		if _, ok := members[name]; !ok {
			out = append(out, fmt.Sprintf("%s%s: no field in the Out struct", path, name))
		}
	}
	for _, r := range stringSet(schema["required"]) {
		if m, ok := members[r]; ok && m.omitempty {
			out = append(out, fmt.Sprintf("%s%s: required by the schema, but omitempty in the Out struct", path, r))
		}
	}
	return out
}

type outMember struct {
	typ       reflect.Type
	omitempty bool
}

// outMembers are the JSON members of a struct, embedded structs flattened.
func outMembers(t reflect.Type) map[string]outMember {
	m := map[string]outMember{}
	for sf := range t.Fields() {
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			maps.Copy(m, outMembers(sf.Type))
			continue
		}
		if name == "" {
			name = sf.Name
		}
		m[name] = outMember{typ: sf.Type, omitempty: strings.Contains(opts, "omitempty")}
	}
	return m
}

// jsonTypeOf is the JSON Schema type a Go value encodes as ("" = any).
func jsonTypeOf(t reflect.Type) string {
	if t == reflect.TypeFor[json.RawMessage]() {
		return ""
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeOf(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return ""
}

// typeAllows: the schema's type (absent, a name or a list) admits a value
// of JSON type got ("" = a Go type that does not constrain it: any, a raw
// message).
func typeAllows(schemaType any, got string) bool {
	if got == "" {
		return true
	}
	switch st := schemaType.(type) {
	case nil:
		return true
	case string:
		return st == got || (st == "number" && got == "integer")
	case []any:
		for _, s := range st {
			if typeAllows(s, got) {
				return true
			}
		}
	}
	return false
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func stringSet(v any) []string { return sorted(stringList(v)) }

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	if s == nil {
		s = []string{}
	}
	return s
}

// TestToolExamples: every tool but the writes has an Example (e2e runs it
// on the demo app), and it decodes through the tool's In without error.
func TestToolExamples(t *testing.T) {
	for _, tool := range Catalog() {
		if tool.Example == "" {
			if tool.Category != policy.CategoryMutation {
				t.Errorf("%s has no Example", tool.Name)
			}
			continue
		}
		var args Args
		if err := json.Unmarshal([]byte(strings.ReplaceAll(tool.Example, "$objectId", "abc123")), &args); err != nil {
			t.Errorf("%s: Example is not a JSON object: %v", tool.Name, err)
			continue
		}
		in, _ := tool.Handler.Contract()
		fields, err := argFields(in)
		if err != nil {
			t.Fatal(err)
		}
		ctx := withRawArguments(context.Background(), json.RawMessage(tool.Example))
		if err := decodeArgs(ctx, args, fields, reflect.New(in).Elem()); err != nil {
			t.Errorf("%s: Example %s: %v", tool.Name, tool.Example, err)
		}
	}
}

// TestInputSchemaGenerated: the input schema states the tags' constraints
// in a fixed member order, leaves out what follows the semicolon, a zero
// default, unlisted fields and the raw Args; a malformed tag is refused.
func TestInputSchemaGenerated(t *testing.T) {
	type in struct {
		ClassName string         `json:"class_name" arg:"class"`
		Where     map[string]any `json:"where" jsonschema:"a \"where\""`
		Limit     int            `json:"limit" arg:"default=5,max=20;min=1"`
		Skip      int            `json:"skip" arg:"min=0,max=9"`
		Format    string         `json:"format" arg:"enum=json|csv;default=json"`
		Keys      []string       `json:"keys" arg:"fields,max=3"`
		Old       bool           `json:"old" arg:"unlisted"`
		Raw       Args           `json:"-"`
	}
	want := `{"type":"object","properties":{"class_name":{"type":"string"},"where":{"type":"object","description":"a \"where\""},"limit":{"type":"integer","default":5,"maximum":20},"skip":{"type":"integer","minimum":0,"maximum":9},"format":{"type":"string","enum":["json","csv"]},"keys":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["class_name"]}`
	if got := Typed(func(context.Context, *Deps, in) (Dynamic, error) { return nil, nil }).InputSchema(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, tag := range []string{"max=20;enum=a|b", "min=1;required", "default=1,min=1", "bogus"} {
		f := argField{kind: kindInt}
		if err := f.parseTag(tag); err == nil {
			t.Errorf("tag %q accepted", tag)
		}
	}
}
