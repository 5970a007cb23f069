package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/policy"
)

// TestToolContracts checks every tool's hand-written schemas against its
// typed contract (contract.go): the input schema states exactly the In
// struct's arguments, each with the JSON type of its field, the same
// required list, and no constraint (enum, default, minimum, maximum,
// maxItems) the decoder does not enforce identically; the output schema
// lists exactly the Out struct's members with matching types, and every
// member it requires is one the struct always writes.
func TestToolContracts(t *testing.T) {
	for _, tool := range Catalog() {
		in, out := tool.Handler.Contract()
		if in == argsType {
			t.Errorf("%s reads its Args itself (HandlerFunc): give it an In struct and Typed", tool.Name)
			continue
		}
		var schema map[string]any
		if err := json.Unmarshal([]byte(tool.InputSchema), &schema); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		for _, problem := range inputMismatches(in, schema) {
			t.Errorf("%s input: %s", tool.Name, problem)
		}
		if out == reflect.TypeFor[Rows]() || out == reflect.TypeFor[Dynamic]() {
			continue // documented at Rows and Dynamic
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

// TestContractMismatchesFound: the checks of TestToolContracts find what
// they are there to find.
func TestContractMismatchesFound(t *testing.T) {
	type in struct {
		ClassName string   `json:"class_name" arg:"class"`
		Limit     int      `json:"limit" arg:"default=5,min=1,max=20"`
		Format    string   `json:"format" arg:"enum=json|csv,default=json"`
		Keys      []string `json:"keys" arg:"fields,max=64"`
	}
	good := `{"type":"object","properties":{"class_name":{"type":"string"},"limit":{"type":"integer","default":5,"maximum":20},"format":{"type":"string","enum":["json","csv"]},"keys":{"type":"array","items":{"type":"string"}}},"required":["class_name"]}`
	for _, tc := range []struct{ schema, want string }{
		{good, ""},
		{strings.Replace(good, `"maximum":20`, `"maximum":21`, 1), "limit: maximum"},
		{strings.Replace(good, `"default":5`, `"default":6`, 1), "limit: default"},
		{strings.Replace(good, `"csv"]`, `"csv","md"]`, 1), "format: enum"},
		{strings.Replace(good, `"type":"integer"`, `"type":"string"`, 1), "limit: type"},
		{strings.Replace(good, `"required":["class_name"]`, `"required":["class_name","limit"]`, 1), "required"},
		{strings.Replace(good, `,"keys":{"type":"array","items":{"type":"string"}}`, ``, 1), "keys: no property"},
		{strings.Replace(good, `"keys":`, `"extra":{"type":"string"},"keys":`, 1), "extra: no field"},
	} {
		var schema map[string]any
		if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(inputMismatches(reflect.TypeFor[in](), schema), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("schema %s: got %q, want %q", tc.schema, got, tc.want)
		}
	}
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

// inputMismatches compares an input schema with the In struct t.
func inputMismatches(t reflect.Type, schema map[string]any) []string {
	fields, err := argFields(t)
	if err != nil {
		return []string{err.Error()}
	}
	props, _ := schema["properties"].(map[string]any)
	var out []string
	var required []string
	byName := map[string]bool{}
	for _, f := range fields {
		if f.kind == kindArgs {
			continue
		}
		byName[f.name] = true
		if f.required {
			required = append(required, f.name)
		}
		p, ok := props[f.name].(map[string]any)
		if f.unlisted {
			if ok {
				out = append(out, fmt.Sprintf("%s: listed in the schema, but tagged unlisted", f.name))
			}
			continue
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s: no property in the schema", f.name))
			continue
		}
		out = append(out, f.schemaMismatches(t.Field(f.index).Type, p)...)
	}
	for name := range props {
		if !byName[name] {
			out = append(out, fmt.Sprintf("%s: no field in the In struct", name))
		}
	}
	if want := stringSet(schema["required"]); !slices.Equal(want, sorted(required)) {
		out = append(out, fmt.Sprintf("required: schema %v, In %v", want, sorted(required)))
	}
	return out
}

func (f *argField) schemaMismatches(goType reflect.Type, p map[string]any) []string {
	var out []string
	want := ""
	switch f.kind {
	case kindString:
		want = "string"
	case kindInt:
		want = "integer"
	case kindBool:
		want = "boolean"
	case kindObject:
		want = "object"
	case kindStrings:
		want = "array"
		if items, ok := p["items"].(map[string]any); ok && items["type"] != "string" {
			out = append(out, fmt.Sprintf("%s: items are %v, the field is []string", f.name, items["type"]))
		}
	case kindDecoder:
		want = reflect.New(goType).Interface().(argDecoder).schemaType()
	}
	if got, _ := p["type"].(string); want != "" && got != want {
		out = append(out, fmt.Sprintf("%s: type %q, the field decodes %q", f.name, got, want))
	}
	if e, ok := p["enum"]; ok && !slices.Equal(stringList(e), f.enum) {
		out = append(out, fmt.Sprintf("%s: enum %v, the field takes %v", f.name, e, f.enum))
	}
	if d, ok := p["default"]; ok && (!f.hasDef || fmt.Sprint(d) != f.def) {
		out = append(out, fmt.Sprintf("%s: default %v, the field's is %q", f.name, d, f.def))
	}
	for key, bound := range map[string]struct {
		has bool
		n   int
	}{"maximum": {f.hasMax && want == "integer", f.max}, "minimum": {f.hasMin, f.min}, "maxItems": {f.hasMax && want == "array", f.max}} {
		if v, ok := p[key]; ok && (!bound.has || fmt.Sprint(v) != strconv.Itoa(bound.n)) {
			out = append(out, fmt.Sprintf("%s: %s %v, the field enforces %v", f.name, key, v, bound))
		}
	}
	return out
}

// outputMismatches compares an output (object) schema with the Out type t,
// recursing into struct members and arrays of structs.
func outputMismatches(t reflect.Type, schema map[string]any, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return []string{fmt.Sprintf("%s: Out %s is not a struct (use Rows or Dynamic and say why)", path, t)}
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
