package tools

// Typed tool contracts (ARCHITECTURE.md, "The tool contract"). Every tool's
// handler takes an In struct and returns an Out struct, both defined next to
// the handler in the tool's family file. Typed adapts such a handler to the
// erased Handler the server runs: it decodes and validates the call's
// arguments into In once, before the handler, with the Args getters — so a
// bad argument gets exactly the model-fixable message it always got. The
// policy middleware runs before all of this (Tool.Handle is what it wraps):
// rate limit, tool and class gates and the audit event come first.
//
// The input schema tools/list sends is generated from the same In struct
// and tags (inputSchema), so the arguments have one source; the snapshots
// hold its bytes.

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
)

// Handler runs one tool call from its decoded JSON arguments. It is built by
// Typed from a typed handler; Contract names that handler's In and Out
// types (TestToolContracts checks the output schema against Out) and
// InputSchema is the JSON Schema generated from In.
type Handler interface {
	// Call decodes args into the handler's In, validates them and runs
	// the handler. It returns the structured result (encoded as the
	// tool's JSON text and structuredContent) or an error:
	// *toolerror.Error for failures the model can fix,
	// *toolerror.Violation for security violations, anything else is
	// internal.
	Call(ctx context.Context, d *Deps, args Args) (any, error)
	Contract() (in, out reflect.Type)
	InputSchema() string
}

// Typed makes the Handler of a typed handler. In must be a struct whose
// fields carry json names and arg tags (see argField); a malformed tag
// panics when the catalog is built, which every test of the package does.
func Typed[In, Out any](h func(ctx context.Context, d *Deps, in In) (Out, error)) Handler {
	t := reflect.TypeFor[In]()
	fields := mustArgFields(t)
	return &typedHandler[In, Out]{h: h, fields: fields, schema: inputSchema(t, fields)}
}

type typedHandler[In, Out any] struct {
	h      func(context.Context, *Deps, In) (Out, error)
	fields []argField
	schema string
}

func (t *typedHandler[In, Out]) Call(ctx context.Context, d *Deps, args Args) (any, error) {
	var in In
	if err := decodeArgs(ctx, args, t.fields, reflect.ValueOf(&in).Elem()); err != nil {
		return nil, err
	}
	out, err := t.h(ctx, d, in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (t *typedHandler[In, Out]) Contract() (in, out reflect.Type) {
	return reflect.TypeFor[In](), reflect.TypeFor[Out]()
}

func (t *typedHandler[In, Out]) InputSchema() string { return t.schema }

// Dynamic is the Out of a tool whose result's members depend on its mode: a
// dry run answers the pipeline or the change instead of the result (the
// aggregate family, the writes), a declined confirmation written:false, an
// action the result of the Cloud function it ran. Its output schema lists
// every mode's members; e2e/schema_test.go validates real results of each
// mode against it.
type Dynamic = any

// argDecoder is an In field type that reads its own argument (a shape, an
// order list, ids, a pipeline — ctx carries the call's raw arguments, see
// OrderedArgument): it returns the same model-fixable errors as the Args
// getters. schema is the JSON Schema members the input schema states for
// it ("type" and, for an array, "items"); the tags add the rest.
type argDecoder interface {
	decodeArg(ctx context.Context, a Args, name string, f *argField) error
	schema() string
}

// argField is one In field: its argument name (json tag), its description
// in the input schema (jsonschema tag) and the constraints of its arg tag,
// comma-separated:
//
//	required     string: present and non-empty; other kinds: present
//	class        a Parse class name (Args.ClassName; the field is class_name),
//	             required unless optional follows
//	objectid     an objectId (Args.ObjectID); without required, absent is ""
//	fields       a []string of field paths (Args.FieldList, with max)
//	enum=a|b     one of the values, matched case-insensitively (enumArg)
//	default=v    the value when the argument is absent
//	unlisted     accepted, but not in the input schema (an old exception)
//	min=n,max=n  the bounds of an int, the entry cap of a list; n is a
//	             number or one of the limits named in argLimits
//
// The input schema states enum, default (unless the zero value), min and
// max as enum, default, minimum and maximum (maxItems for a list). Options
// after a semicolon are enforced without being stated: tools/list is sent
// to the model, and bounds that only refuse nonsense (limit 0, a 65th key)
// are left out of it (docs/performance.md "Performance").
//
// A field of type Args tagged json:"-" receives the arguments as sent (for
// a next_call that repeats them).
type argField struct {
	index       int
	name        string
	description string
	kind        argKind
	required    bool
	class       bool
	objectID    bool
	fields      bool
	enum        []string
	def         string
	hasDef      bool
	min, max    int
	hasMin      bool
	hasMax      bool
	// unstated are the options after the semicolon (default, min, max).
	unstated map[string]bool
	// unlisted: accepted although the input schema does not list it (a
	// compatibility exception).
	unlisted bool
}

type argKind int

const (
	kindString argKind = iota
	kindInt
	kindBool
	kindObject
	kindStrings
	kindArgs
	kindDecoder
)

var (
	argsType    = reflect.TypeFor[Args]()
	objectType  = reflect.TypeFor[map[string]any]()
	stringsType = reflect.TypeFor[[]string]()
	decoderType = reflect.TypeFor[argDecoder]()
)

func mustArgFields(t reflect.Type) []argField {
	fields, err := argFields(t)
	if err != nil {
		panic(fmt.Sprintf("tool contract %s: %v", t, err))
	}
	return fields
}

// argFields reads the decoding plan of an In struct.
func argFields(t reflect.Type) ([]argField, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is not a struct: a contract's In is one", t)
	}
	var out []argField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		f := argField{index: i, name: name, description: sf.Tag.Get("jsonschema")}
		switch {
		case sf.Type == argsType:
			if name != "-" {
				return nil, fmt.Errorf("%s: an Args field is tagged json:\"-\"", sf.Name)
			}
			f.kind = kindArgs
		case name == "" || name == "-":
			return nil, fmt.Errorf("%s has no json name", sf.Name)
		case reflect.PointerTo(sf.Type).Implements(decoderType):
			f.kind = kindDecoder
		case sf.Type == objectType:
			f.kind = kindObject
		case sf.Type == stringsType:
			f.kind = kindStrings
		case sf.Type.Kind() == reflect.String:
			f.kind = kindString
		case sf.Type.Kind() == reflect.Int:
			f.kind = kindInt
		case sf.Type.Kind() == reflect.Bool:
			f.kind = kindBool
		default:
			return nil, fmt.Errorf("%s: unsupported type %s", sf.Name, sf.Type)
		}
		if err := f.parseTag(sf.Tag.Get("arg")); err != nil {
			return nil, fmt.Errorf("%s: %v", sf.Name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func (f *argField) parseTag(tag string) error {
	stated, unstated, _ := strings.Cut(tag, ";")
	if err := f.parseOptions(stated, false); err != nil {
		return err
	}
	if err := f.parseOptions(unstated, true); err != nil {
		return err
	}
	switch {
	case f.kind == kindInt && !(f.hasMin && f.hasMax):
		return fmt.Errorf("an int argument states min and max")
	case f.kind == kindInt && f.hasDef:
		n, err := argLimit(f.def)
		if err != nil {
			return fmt.Errorf("default %q is not an int", f.def)
		}
		f.def = strconv.Itoa(n)
	case f.kind == kindBool && f.hasDef && f.def != "true" && f.def != "false":
		return fmt.Errorf("default %q is not a bool", f.def)
	case f.fields && (f.kind != kindStrings || !f.hasMax):
		return fmt.Errorf("fields is a []string with max")
	}
	return nil
}

func (f *argField) parseOptions(options string, unstated bool) error {
	if options == "" {
		return nil
	}
	for opt := range strings.SplitSeq(options, ",") {
		key, val, hasVal := strings.Cut(opt, "=")
		var err error
		switch key {
		case "required":
			f.required = true
		case "class":
			f.class, f.required = true, true
		case "optional":
			f.required = false
		case "objectid":
			f.objectID = true
		case "fields":
			f.fields = true
		case "unlisted":
			f.unlisted = true
		case "enum":
			f.enum = strings.Split(val, "|")
		case "default":
			f.def, f.hasDef = val, true
		case "min":
			f.min, err = argLimit(val)
			f.hasMin = true
		case "max":
			f.max, err = argLimit(val)
			f.hasMax = true
		default:
			return fmt.Errorf("unknown arg option %q", opt)
		}
		if err != nil || (hasVal != (key == "enum" || key == "default" || key == "min" || key == "max")) {
			return fmt.Errorf("malformed arg option %q", opt)
		}
		if unstated {
			if !hasVal || key == "enum" {
				return fmt.Errorf("arg option %q after the semicolon: only default, min and max can be unstated", opt)
			}
			if f.unstated == nil {
				f.unstated = map[string]bool{}
			}
			f.unstated[key] = true
		}
	}
	return nil
}

// inputSchema is the JSON Schema of an In struct's arguments, as tools/list
// sends it: the listed fields in struct order, each with the members its
// kind and tags state, in a fixed order (type, items, description, enum,
// default, minimum, maximum or maxItems).
func inputSchema(t reflect.Type, fields []argField) string {
	var props, required []string
	for _, f := range fields {
		if f.kind == kindArgs || f.unlisted {
			continue
		}
		props = append(props, quoteJSON(f.name)+":{"+f.schema(t.Field(f.index).Type)+"}")
		if f.required {
			required = append(required, quoteJSON(f.name))
		}
	}
	s := `{"type":"object","properties":{` + strings.Join(props, ",") + "}"
	if required != nil {
		s += `,"required":[` + strings.Join(required, ",") + "]"
	}
	return s + "}"
}

// schema is the members of the field's property in the input schema.
func (f *argField) schema(goType reflect.Type) string {
	var s string
	switch f.kind {
	case kindString:
		s = `"type":"string"`
	case kindInt:
		s = `"type":"integer"`
	case kindBool:
		s = `"type":"boolean"`
	case kindObject:
		s = `"type":"object"`
	case kindStrings:
		s = `"type":"array","items":{"type":"string"}`
	case kindDecoder:
		s = reflect.New(goType).Interface().(argDecoder).schema()
	}
	if f.description != "" {
		s += `,"description":` + quoteJSON(f.description)
	}
	if f.enum != nil {
		values := make([]string, len(f.enum))
		for i, v := range f.enum {
			values[i] = quoteJSON(v)
		}
		s += `,"enum":[` + strings.Join(values, ",") + "]"
	}
	if f.hasDef && !f.unstated["default"] && f.def != "" && f.def != "0" && f.def != "false" {
		def := f.def
		if f.kind != kindInt && f.kind != kindBool {
			def = quoteJSON(def)
		}
		s += `,"default":` + def
	}
	if f.hasMin && !f.unstated["min"] {
		s += `,"minimum":` + strconv.Itoa(f.min)
	}
	if f.hasMax && !f.unstated["max"] {
		if strings.HasPrefix(s, `"type":"array"`) {
			s += `,"maxItems":` + strconv.Itoa(f.max)
		} else {
			s += `,"maximum":` + strconv.Itoa(f.max)
		}
	}
	return s
}

func quoteJSON(s string) string {
	b, err := jsonenc.Marshal(s)
	if err != nil {
		panic(err) // a Go string always encodes
	}
	return string(b)
}

// decodeArgs fills the fields of in (a struct value) from args, in field
// order: the first bad argument in that order is the one reported.
func decodeArgs(ctx context.Context, args Args, fields []argField, in reflect.Value) error {
	for i := range fields {
		f := &fields[i]
		v := in.Field(f.index)
		switch f.kind {
		case kindArgs:
			v.Set(reflect.ValueOf(args))
		case kindDecoder:
			if err := v.Addr().Interface().(argDecoder).decodeArg(ctx, args, f.name, f); err != nil {
				return err
			}
		case kindString:
			s, err := f.decodeString(args)
			if err != nil {
				return err
			}
			v.SetString(s)
		case kindInt:
			def, _ := strconv.Atoi(f.def)
			n, err := args.Int(f.name, def, f.min, f.max)
			if err != nil {
				return err
			}
			v.SetInt(int64(n))
		case kindBool:
			b, err := args.Bool(f.name, f.def == "true")
			if err != nil {
				return err
			}
			v.SetBool(b)
		case kindObject:
			if f.required && args[f.name] == nil {
				return invalid("%s is required", f.name)
			}
			m, err := args.Object(f.name)
			if err != nil {
				return err
			}
			v.Set(reflect.ValueOf(m))
		case kindStrings:
			var list []string
			var err error
			if f.fields {
				list, err = args.FieldList(f.name, f.max)
			} else {
				list, err = args.StringList(f.name)
			}
			if err != nil {
				return err
			}
			v.Set(reflect.ValueOf(list))
		}
	}
	return nil
}

func (f *argField) decodeString(args Args) (string, error) {
	switch {
	case f.class && !f.required && args[f.name] == nil:
		return "", nil
	case f.class:
		return args.ClassName()
	case f.objectID && !f.required && args[f.name] == nil:
		return "", nil
	case f.objectID:
		return args.ObjectID(f.name)
	case f.enum != nil:
		s, err := enumArg(args, f.name, f.def, f.enum...)
		if err == nil && s == "" && f.required {
			last := len(f.enum) - 1
			return "", invalid("%s is required: %s or %s", f.name, strings.Join(f.enum[:last], ", "), f.enum[last])
		}
		return s, err
	}
	s, err := args.String(f.name, f.required)
	if err == nil && s == "" && f.hasDef {
		s = f.def
	}
	return s, err
}

// argLimits are the named limits an arg tag may use (max=MaxQueryLimit), so
// that a limit has one definition, which the tool reference cites.
var argLimits = map[string]int{
	"MaxQueryLimit":        MaxQueryLimit,
	"DefaultQueryLimit":    DefaultQueryLimit,
	"MaxSkip":              MaxSkip,
	"MaxKeys":              MaxKeys,
	"MaxIncludes":          MaxIncludes,
	"MaxGetObjects":        MaxGetObjects,
	"DefaultSampleLimit":   DefaultSampleLimit,
	"MaxSampleLimit":       MaxSampleLimit,
	"DefaultRowCap":        DefaultRowCap,
	"MaxRowCap":            MaxRowCap,
	"DefaultGroupLimit":    DefaultGroupLimit,
	"MaxGroupLimit":        MaxGroupLimit,
	"DefaultDistinctLimit": DefaultDistinctLimit,
	"MaxDistinctLimit":     MaxDistinctLimit,
}

// decodeInto decodes args into in as Typed does, for Go callers that hold
// Args (GroupInGo).
func decodeInto[In any](ctx context.Context, args Args, in *In) error {
	return decodeArgs(ctx, args, mustArgFields(reflect.TypeFor[In]()), reflect.ValueOf(in).Elem())
}

func argLimit(s string) (int, error) {
	if n, ok := argLimits[s]; ok {
		return n, nil
	}
	return strconv.Atoi(s)
}
