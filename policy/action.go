package policy

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Declared actions (docs/writes.md "Declared actions"): intent-based writes the
// operator names in the policy file's actions: section, which the model
// calls by name through call_action. An action either writes one class
// (create, or update of one object by id) with the arguments its params
// JSON Schema admits, only the keys it permits and its fixed values, or
// names a Parse Cloud Code function (run through the Parse Server bridge).

// ActionSpec is one declared action.
type ActionSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Class is the class a class action writes.
	Class string `json:"class,omitempty"`
	// CloudFunction is the Cloud Code function a function action runs.
	CloudFunction string `json:"cloud_function,omitempty"`
	// Operation is update (default: needs object_id) or create.
	Operation string `json:"operation,omitempty"`
	// Params is the JSON Schema of call_action's arguments (an object).
	Params map[string]any `json:"params"`
	// Keys are the arguments written as fields of the same name.
	Keys []string `json:"keys,omitempty"`
	// Fixed are values every call sets.
	Fixed map[string]any `json:"fixed,omitempty"`
	// Tier is the permission tier the action needs (default write).
	Tier string `json:"tier"`
	// SupportsDryRun allows dry_run (default true for class actions).
	SupportsDryRun bool `json:"supports_dry_run"`
	// Confirm asks the person before every call (as confirm_writes: always
	// does for every write).
	Confirm bool `json:"confirm,omitempty"`

	schema *jsonschema.Schema
}

var (
	actionNameRe = parsedb.NewNamePattern("", "a-z", "a-z0-9_", 64)
	actionKeys   = []string{"description", "class", "cloud_function", "operation", "params", "keys", "fixed", "tier", "supports_dry_run", "confirm"}
	cloudFuncRe  = parsedb.NewNamePattern("", "A-Za-z", "A-Za-z0-9_", 128)
)

// Validate checks arguments against the action's params schema. Extra
// arguments the schema does not name are refused.
func (a *ActionSpec) Validate(args map[string]any) error {
	props, _ := a.Params["properties"].(map[string]any)
	for k := range args {
		if _, ok := props[k]; !ok {
			return toolerror.New(toolerror.InvalidArgument, "action %s takes no argument %q (its params: %s)", a.Name, truncateText(k, 40), paramNames(props))
		}
	}
	if a.schema == nil {
		return nil
	}
	if err := a.schema.Validate(map[string]any(args)); err != nil {
		return toolerror.New(toolerror.InvalidArgument, "arguments of action %s do not match its params: %s", a.Name, truncateText(err.Error(), 400))
	}
	return nil
}

func paramNames(props map[string]any) string {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}

// Actions are the declared actions, sorted by name.
func (e *Engine) Actions() []*ActionSpec {
	if e.file == nil {
		return nil
	}
	return e.file.Actions
}

// Action returns a declared action by name, or nil.
func (e *Engine) Action(name string) *ActionSpec {
	for _, a := range e.Actions() {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// PermitAction reports whether the session may call an action: its tier
// within PARSE_MCP_PERMISSIONS (the broad write gate was already checked
// for call_action itself), its class neither hidden nor filtered nor a
// system class.
func (e *Engine) PermitAction(a *ActionSpec) *toolerror.Error {
	rank, ok := tierRank[a.Tier]
	if !ok || rank > tierRank[e.tier] {
		return toolerror.New(toolerror.PermissionDenied, "action %s needs the %s tier; %s", a.Name, a.Tier, e.tierSource())
	}
	if a.Class != "" && (e.Hidden(a.Class) || e.ClassFiltered(a.Class)) {
		return toolerror.Denied("class_filter", "action %s is not available to this agent", a.Name)
	}
	return nil
}

func decodeActions(v any) ([]*ActionSpec, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, perr("actions", "must be a mapping of action names to declarations, got %s", describeValue(v))
	}
	var out []*ActionSpec
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p := join("actions", name)
		if !actionNameRe.MatchString(name) {
			return nil, perr(p, "action names are lower_snake_case (a-z, 0-9, _), at most 64 characters")
		}
		a, err := decodeAction(p, name, m[name])
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func decodeAction(p, name string, v any) (*ActionSpec, error) {
	m, err := object(p, v, actionKeys)
	if err != nil {
		return nil, err
	}
	a := &ActionSpec{Name: name, Tier: config.TierWrite, Operation: OpUpdate}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if decode := actionFields[k]; decode != nil {
			if err := decode(a, join(p, k), m[k]); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case a.Class == "" && a.CloudFunction == "":
		return nil, perr(p, "needs class (a class write) or cloud_function (a Cloud Code function)")
	case a.Class != "" && a.CloudFunction != "":
		return nil, perr(p, "has both class and cloud_function; declare one")
	case a.CloudFunction != "" && (len(a.Keys) > 0 || len(a.Fixed) > 0 || m["operation"] != nil):
		return nil, perr(p, "keys, fixed and operation are for class actions; a cloud_function action passes its arguments to the function")
	case a.Class != "" && len(a.Keys) == 0 && len(a.Fixed) == 0:
		return nil, perr(p, "sets nothing: declare keys (arguments written as fields) and/or fixed values")
	}
	if _, set := m["supports_dry_run"]; !set {
		a.SupportsDryRun = a.Class != ""
	}
	// supports_dry_run on a cloud_function action declares that the
	// function takes dryRun: true and then changes nothing (call_action's
	// dry_run sends it so).
	if err := compileActionParams(p, a); err != nil {
		return nil, err
	}
	return a, nil
}

// actionFields decode an action's keys, one function per key.
var actionFields = map[string]func(a *ActionSpec, kp string, val any) error{
	"description": func(a *ActionSpec, kp string, val any) error {
		s, err := str(kp, val)
		a.Description = CleanText(s)
		return err
	},
	"class": func(a *ActionSpec, kp string, val any) error {
		s, err := str(kp, val)
		if err != nil {
			return err
		}
		if !parsedb.ClassNameRe.MatchString(s) {
			return perr(kp, "not a valid Parse class name")
		}
		if IsSystemClass(s) {
			return perr(kp, "%s is a Parse system class; direct writes refuse system classes (declare a cloud_function action for it instead)", s)
		}
		a.Class = s
		return nil
	},
	"cloud_function": func(a *ActionSpec, kp string, val any) error {
		s, err := str(kp, val)
		if err != nil {
			return err
		}
		if !cloudFuncRe.MatchString(s) {
			return perr(kp, "not a valid Cloud Code function name")
		}
		a.CloudFunction = s
		return nil
	},
	"operation": func(a *ActionSpec, kp string, val any) error {
		s, err := str(kp, val)
		if err != nil {
			return err
		}
		if s != OpUpdate && s != OpCreate {
			return perr(kp, "must be update or create, got %q", truncateText(s, 40))
		}
		a.Operation = s
		return nil
	},
	"params": func(a *ActionSpec, kp string, val any) error {
		pm, ok := val.(map[string]any)
		if !ok {
			return perr(kp, "must be a JSON Schema object, got %s", describeValue(val))
		}
		a.Params = pm
		return nil
	},
	"keys": func(a *ActionSpec, kp string, val any) error {
		list, err := nameList(kp, val, parsedb.FieldNameRe, "field")
		a.Keys = list
		return err
	},
	"fixed": func(a *ActionSpec, kp string, val any) error {
		fm, ok := val.(map[string]any)
		if !ok {
			return perr(kp, "must be a mapping of field names to values, got %s", describeValue(val))
		}
		for _, f := range slices.Sorted(maps.Keys(fm)) {
			if !parsedb.FieldNameRe.MatchString(f) {
				return perr(join(kp, f), "not a valid field name")
			}
		}
		a.Fixed = fm
		return nil
	},
	"tier": func(a *ActionSpec, kp string, val any) error {
		s, err := str(kp, val)
		if err != nil {
			return err
		}
		if _, ok := tierRank[s]; !ok || s == config.TierReadonly {
			return perr(kp, "must be write or admin, got %q", truncateText(s, 40))
		}
		a.Tier = s
		return nil
	},
	"supports_dry_run": func(a *ActionSpec, kp string, val any) (err error) {
		a.SupportsDryRun, err = boolean(kp, val)
		return err
	},
	"confirm": func(a *ActionSpec, kp string, val any) (err error) {
		a.Confirm, err = boolean(kp, val)
		return err
	},
}

// compileActionParams checks an action's params schema (an object by
// default) against its keys and fixed values, and compiles it.
func compileActionParams(p string, a *ActionSpec) error {
	if a.Params == nil {
		a.Params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	if t, _ := a.Params["type"].(string); t != "object" {
		return perr(join(p, "params"), "must be a JSON Schema of type object")
	}
	props, _ := a.Params["properties"].(map[string]any)
	for _, k := range a.Keys {
		if _, ok := props[k]; !ok {
			return perr(join(p, "keys"), "%s is not a property of params", k)
		}
		if _, ok := a.Fixed[k]; ok {
			return perr(join(p, "keys"), "%s is both a key and a fixed value", k)
		}
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("action.json", a.Params); err != nil {
		return perr(join(p, "params"), "not a valid JSON Schema: %v", err)
	}
	sch, err := c.Compile("action.json")
	if err != nil {
		return perr(join(p, "params"), "not a valid JSON Schema: %s", truncateText(err.Error(), 200))
	}
	a.schema = sch
	return nil
}
