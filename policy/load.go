package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	yaml "go.yaml.in/yaml/v3"
)

// Loading is two passes. Parse (this file) decodes YAML or JSON into generic
// values and builds the File by hand, so that every problem — an unknown key,
// a wrong type, a bad value — is reported with its exact path
// ("classes.Song.agent_feilds: unknown key (did you mean agent_fields?)").
// Validate (validate.go) then checks the File against the live _SCHEMA and
// the tool catalog. A security policy is never half-applied: the first
// problem fails start-up.

// PathError is a policy problem at a path of the file.
type PathError struct {
	Path    string
	Problem string
}

func (e *PathError) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return e.Path + ": " + e.Problem
}

func perr(path, format string, args ...any) *PathError {
	return &PathError{Path: path, Problem: fmt.Sprintf(format, args...)}
}

// LoadFile reads a policy file (YAML, or JSON by extension or content).
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("PARSE_MCP_POLICY_FILE: %w", err)
	}
	f, err := Parse(b, strings.HasSuffix(strings.ToLower(path), ".json"))
	if err != nil {
		return nil, fmt.Errorf("PARSE_MCP_POLICY_FILE %s: %w", path, err)
	}
	return f, nil
}

// Parse decodes and structurally validates a policy document. Unknown keys
// are errors: a typo in a security policy must not be silently ignored.
func Parse(b []byte, isJSON bool) (*File, error) {
	trimmed := bytes.TrimSpace(b)
	var raw any
	if isJSON || (len(trimmed) > 0 && trimmed[0] == '{') {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&raw); err != nil {
			// The offset is into trimmed; the operator counts lines in b.
			lead := len(b) - len(bytes.TrimLeftFunc(b, unicode.IsSpace))
			return nil, fmt.Errorf("not valid JSON: %s", jsonErrorAt(b, lead, err))
		}
		if dec.More() {
			return nil, fmt.Errorf("not valid JSON: data after the top-level object")
		}
	} else {
		// Parse to the node tree and convert it by hand: yaml.v3's reflective
		// decoder would double the cost of a large policy file.
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("not valid YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if len(doc.Content) > 0 {
			budget := maxYAMLNodes
			var err error
			if raw, err = fromYAMLNode("", doc.Content[0], &budget); err != nil {
				return nil, err
			}
		}
	}
	if raw == nil {
		return &File{}, nil // an empty file is the built-in defaults
	}
	return decodeFile(raw)
}

// maxYAMLNodes bounds the values a policy file may expand to (aliases
// included: no billion laughs).
const maxYAMLNodes = 1_000_000

// fromYAMLNode converts a YAML node to the JSON shapes the rest of the code
// expects: map[string]any, []any, float64, string, bool, nil.
func fromYAMLNode(path string, n *yaml.Node, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, perr(path, "the policy file expands to too many values")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return fromYAMLNode(path, n.Content[0], budget)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, perr(path, "unknown alias")
		}
		return fromYAMLNode(path, n.Alias, budget)
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if kn.Kind != yaml.ScalarNode || (kn.ShortTag() != "!!str" && kn.ShortTag() != "!!int" && kn.ShortTag() != "!!bool" && kn.ShortTag() != "!!float") {
				return nil, perr(path, "line %d: keys must be plain strings", kn.Line)
			}
			k := kn.Value
			if _, dup := out[k]; dup {
				return nil, perr(join(path, k), "line %d: key defined twice", kn.Line)
			}
			v, err := fromYAMLNode(join(path, k), vn, budget)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := fromYAMLNode(index(path, i), c, budget)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return n.Value, nil
		case "!!null":
			return nil, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, perr(path, "line %d: %v", n.Line, err)
		}
		return fromYAML(path, v)
	}
	return nil, perr(path, "line %d: unsupported YAML value", n.Line)
}

// fromYAML converts YAML-decoded values to the JSON shapes the rest of the
// code expects: map[string]any, []any, float64, string, bool, nil.
func fromYAML(path string, v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			cv, err := fromYAML(join(path, k), c)
			if err != nil {
				return nil, err
			}
			out[k] = cv
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			ks, ok := k.(string)
			if !ok {
				return nil, perr(path, "key %v is not a string", k)
			}
			cv, err := fromYAML(join(path, ks), c)
			if err != nil {
				return nil, err
			}
			out[ks] = cv
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			cv, err := fromYAML(fmt.Sprintf("%s[%d]", path, i), c)
			if err != nil {
				return nil, err
			}
			out[i] = cv
		}
		return out, nil
	case int:
		return float64(t), nil
	case int64:
		return float64(t), nil
	case uint64:
		return float64(t), nil
	case float64:
		return t, nil
	case time.Time:
		// An unquoted YAML timestamp: keep it as the ISO string the where
		// translator accepts on date fields.
		return t.UTC().Format("2006-01-02T15:04:05.000Z"), nil
	case string, bool, nil:
		return t, nil
	}
	return nil, perr(path, "unsupported value %v", v)
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Keys accepted at each level.
var (
	topKeys       = []string{"classes", "agent", "settings", "prompts", "actions", "search"}
	promptKeys    = []string{"name", "title", "description", "arguments", "template"}
	promptArgKeys = []string{"name", "description", "type", "required", "default"}
	classKeys     = []string{"hidden", "description", "fields", "agent_fields", "large_fields", "join_fields", "canonical_filter", "tenant_scope", "allow_collscan", "writable_fields", "default_acl", "search"}
	fieldKeys     = []string{"description", "enum"}
	tenantKeys    = []string{"field", "from_user"}
	agentKeys     = []string{"tools", "classes", "filters"}
	onlyExceptKey = []string{"only", "except"}
	settingsKeys  = []string{"refuse_collscan", "expose_explain", "max_response_bytes", "rate_limit", "protected_fields", "confirm_writes", "direct_schema_changes"}
	rateLimitKeys = []string{"requests", "window"}
)

// object checks that v is an object whose keys are all in allowed.
func object(path string, v any, allowed []string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, perr(path, "must be a mapping (object), got %s", describeValue(v))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			msg := "unknown key"
			if s := Suggest(k, allowed, 1); len(s) > 0 {
				msg += " (did you mean " + s[0] + "?)"
			} else {
				msg += " (allowed: " + strings.Join(allowed, ", ") + ")"
			}
			return nil, perr(join(path, k), "%s", msg)
		}
	}
	return m, nil
}

func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func str(path string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", perr(path, "must be a string, got %s", describeValue(v))
	}
	return s, nil
}

func boolean(path string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, perr(path, "must be true or false, got %s", describeValue(v))
	}
	return b, nil
}

func integer(path string, v any, lo, hi int) (int, error) {
	f, ok := v.(float64)
	if !ok {
		return 0, perr(path, "must be a whole number, got %s", describeValue(v))
	}
	// 'f', -1: the number as the operator wrote it (1.5, 1000000000), not
	// "a number" or 1e+09.
	if f != math.Trunc(f) {
		return 0, perr(path, "must be a whole number, got %s", strconv.FormatFloat(f, 'f', -1, 64))
	}
	if f < float64(lo) || f > float64(hi) {
		return 0, perr(path, "must be between %d and %d, got %s", lo, hi, strconv.FormatFloat(f, 'f', -1, 64))
	}
	return int(f), nil
}

// nameList decodes a list of unique names matching re.
func nameList(path string, v any, re *parsedb.NamePattern, what string) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, perr(path, "must be a list of %s names, got %s", what, describeValue(v))
	}
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, el := range list {
		p := index(path, i)
		s, err := str(p, el)
		if err != nil {
			return nil, err
		}
		if !re.MatchString(s) {
			return nil, perr(p, "%q is not a valid %s name", truncateText(s, 60), what)
		}
		if seen[s] {
			return nil, perr(p, "%s is listed twice", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

var toolNameRe = parsedb.NewNamePattern("", "a-z", "a-z0-9_", 64)

func decodeFile(raw any) (*File, error) {
	top, err := object("", raw, topKeys)
	if err != nil {
		var pe *PathError
		if ok := asPathError(err, &pe); ok && pe.Path == "" {
			pe.Problem = "the policy file " + pe.Problem
		}
		return nil, err
	}
	f := &File{Classes: map[string]*ClassPolicy{}}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		v := top[k]
		switch k {
		case "classes":
			if v == nil {
				continue
			}
			if err := decodeClasses(v, f.Classes); err != nil {
				return nil, err
			}
		case "agent":
			if v == nil {
				continue
			}
			if err := decodeAgent(v, &f.Agent); err != nil {
				return nil, err
			}
		case "settings":
			if v == nil {
				continue
			}
			if err := decodeSettings(v, &f.Settings); err != nil {
				return nil, err
			}
		case "actions":
			if v == nil {
				continue
			}
			if f.Actions, err = decodeActions(v); err != nil {
				return nil, err
			}
		case "search":
			if v == nil {
				continue
			}
			if err := decodeSearchSettings(v, &f.Search); err != nil {
				return nil, err
			}
		case "prompts":
			if v == nil {
				continue
			}
			if f.Prompts, err = decodePrompts(v); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// decodeClasses reads the classes mapping into classes.
func decodeClasses(v any, classes map[string]*ClassPolicy) error {
	m, ok := v.(map[string]any)
	if !ok {
		return perr("classes", "must be a mapping of class names, got %s", describeValue(v))
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p := join("classes", name)
		if !parsedb.ClassNameRe.MatchString(name) {
			return perr(p, "not a valid Parse class name")
		}
		cp, err := decodeClass(p, m[name])
		if err != nil {
			return err
		}
		classes[name] = cp
	}
	return nil
}

func asPathError(err error, target **PathError) bool {
	pe, ok := err.(*PathError)
	if ok {
		*target = pe
	}
	return ok
}

func decodeClass(path string, v any) (*ClassPolicy, error) {
	cp := &ClassPolicy{}
	if v == nil {
		return cp, nil
	}
	m, err := object(path, v, classKeys)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if decode := classFields[k]; decode != nil {
			if err := decode(cp, join(path, k), m[k]); err != nil {
				return nil, err
			}
		}
	}
	return cp, nil
}

// classFields decode a class policy's keys, one function per key.
var classFields = map[string]func(cp *ClassPolicy, p string, val any) error{
	"hidden": func(cp *ClassPolicy, p string, val any) error {
		switch h := val.(type) {
		case bool:
			cp.Hidden = h
		case string:
			if h != HiddenExceptMaster {
				return perr(p, "must be true, false or %q, got %q", HiddenExceptMaster, truncateText(h, 40))
			}
			cp.Hidden = h
		default:
			return perr(p, "must be true, false or %q, got %s", HiddenExceptMaster, describeValue(val))
		}
		return nil
	},
	"description": func(cp *ClassPolicy, p string, val any) error {
		s, err := str(p, val)
		cp.Description = CleanText(s)
		return err
	},
	"fields": func(cp *ClassPolicy, p string, val any) error {
		fm, ok := val.(map[string]any)
		if !ok {
			return perr(p, "must be a mapping of field names, got %s", describeValue(val))
		}
		cp.Fields = map[string]*FieldPolicy{}
		for _, fname := range slices.Sorted(maps.Keys(fm)) {
			fp := join(p, fname)
			if !parsedb.FieldNameRe.MatchString(fname) {
				return perr(fp, "not a valid field name")
			}
			fpol, err := decodeField(fp, fm[fname])
			if err != nil {
				return err
			}
			cp.Fields[fname] = fpol
		}
		return nil
	},
	"writable_fields": func(cp *ClassPolicy, p string, val any) error {
		list, err := nameList(p, val, parsedb.FieldNameRe, "field")
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return perr(p, "must not be empty (omit it to make agent_fields the writable set)")
		}
		cp.WritableFields = list
		return nil
	},
	"default_acl": func(cp *ClassPolicy, p string, val any) (err error) {
		cp.DefaultACL, err = decodeACL(p, val)
		return err
	},
	"agent_fields": func(cp *ClassPolicy, p string, val any) error {
		list, err := nameList(p, val, parsedb.FieldNameRe, "field")
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return perr(p, "must not be empty (omit it to allow every field)")
		}
		cp.AgentFields = list
		return nil
	},
	"large_fields": func(cp *ClassPolicy, p string, val any) (err error) {
		cp.LargeFields, err = nameList(p, val, parsedb.FieldNameRe, "field")
		return err
	},
	"join_fields": func(cp *ClassPolicy, p string, val any) (err error) {
		cp.JoinFields, err = nameList(p, val, parsedb.FieldNameRe, "field")
		return err
	},
	"canonical_filter": func(cp *ClassPolicy, p string, val any) error {
		fm, ok := val.(map[string]any)
		if !ok {
			return perr(p, "must be a where object, got %s", describeValue(val))
		}
		cp.CanonicalFilter = fm
		return nil
	},
	"tenant_scope": func(cp *ClassPolicy, p string, val any) (err error) {
		cp.TenantScope, err = decodeTenantScope(p, val)
		return err
	},
	"search": func(cp *ClassPolicy, p string, val any) (err error) {
		cp.Search, err = decodeSearch(p, val)
		return err
	},
	"allow_collscan": func(cp *ClassPolicy, p string, val any) (err error) {
		cp.AllowCollscan, err = boolean(p, val)
		return err
	},
}

func decodeTenantScope(p string, val any) (*TenantScope, error) {
	tm, err := object(p, val, tenantKeys)
	if err != nil {
		return nil, err
	}
	fv, ok := tm["field"]
	if !ok {
		return nil, perr(p, "needs field: the name of the field holding the tenant id")
	}
	s, err := str(join(p, "field"), fv)
	if err != nil {
		return nil, err
	}
	if !parsedb.FieldNameRe.MatchString(s) {
		return nil, perr(join(p, "field"), "%q is not a valid field name", truncateText(s, 60))
	}
	ts := &TenantScope{Field: s}
	if fu, ok := tm["from_user"]; ok {
		u, err := str(join(p, "from_user"), fu)
		if err != nil {
			return nil, err
		}
		if !parsedb.FieldNameRe.MatchString(u) {
			return nil, perr(join(p, "from_user"), "%q is not a valid field name", truncateText(u, 60))
		}
		ts.FromUser = u
	}
	return ts, nil
}

func decodeField(path string, v any) (*FieldPolicy, error) {
	fp := &FieldPolicy{}
	if v == nil {
		return fp, nil
	}
	m, err := object(path, v, fieldKeys)
	if err != nil {
		return nil, err
	}
	if d, ok := m["description"]; ok {
		s, err := str(join(path, "description"), d)
		if err != nil {
			return nil, err
		}
		fp.Description = CleanText(s)
	}
	if ev, ok := m["enum"]; ok {
		p := join(path, "enum")
		em, ok := ev.(map[string]any)
		if !ok {
			return nil, perr(p, "must be a mapping of value: description, got %s", describeValue(ev))
		}
		fp.Enum = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(em)) {
			switch d := em[k].(type) {
			case string:
				fp.Enum[k] = CleanText(d)
			case nil:
				fp.Enum[k] = ""
			default:
				return nil, perr(join(p, k), "must be a description string, got %s", describeValue(d))
			}
		}
	}
	return fp, nil
}

func decodeAgent(v any, a *AgentPolicy) error {
	m, err := object("agent", v, agentKeys)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p, val := join("agent", k), m[k]
		switch k {
		case "tools", "classes":
			om, err := object(p, val, onlyExceptKey)
			if err != nil {
				return err
			}
			re, what := toolNameRe, "tool"
			target := &a.Tools
			if k == "classes" {
				re, what, target = parsedb.ClassNameRe, "class", &a.Classes
			}
			if ov, ok := om["only"]; ok {
				if target.Only, err = nameList(join(p, "only"), ov, re, what); err != nil {
					return err
				}
				if len(target.Only) == 0 {
					return perr(join(p, "only"), "must not be empty (an empty allowlist allows nothing; omit it instead)")
				}
			}
			if ev, ok := om["except"]; ok {
				if target.Except, err = nameList(join(p, "except"), ev, re, what); err != nil {
					return err
				}
			}
			for i, x := range target.Except {
				if slices.Contains(target.Only, x) {
					return perr(fmt.Sprintf("%s.except[%d]", p, i), "%s is in both only and except", x)
				}
			}
		case "filters":
			fm, ok := val.(map[string]any)
			if !ok {
				return perr(p, "must be a mapping of class name: where, got %s", describeValue(val))
			}
			a.Filters = map[string]map[string]any{}
			for _, cn := range slices.Sorted(maps.Keys(fm)) {
				cp := join(p, cn)
				if cn != DefaultFilterKey && !parsedb.ClassNameRe.MatchString(cn) {
					return perr(cp, "not a valid Parse class name")
				}
				w, ok := fm[cn].(map[string]any)
				if !ok {
					return perr(cp, "must be a where object, got %s", describeValue(fm[cn]))
				}
				if len(w) == 0 {
					return perr(cp, "must not be empty")
				}
				a.Filters[cn] = w
			}
		}
	}
	return nil
}

func decodeSettings(v any, s *Settings) error {
	m, err := object("settings", v, settingsKeys)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p, val := join("settings", k), m[k]
		switch k {
		case "refuse_collscan":
			if s.RefuseCollscan, err = boolean(p, val); err != nil {
				return err
			}
		case "expose_explain":
			if s.ExposeExplain, err = boolean(p, val); err != nil {
				return err
			}
		case "max_response_bytes":
			if s.MaxResponseBytes, err = integer(p, val, MinMaxResponseBytes, DefaultMaxResponseBytes); err != nil {
				return err
			}
		case "direct_schema_changes":
			if s.DirectSchemaChanges, err = boolean(p, val); err != nil {
				return err
			}
		case "confirm_writes":
			cw, err := str(p, val)
			if err != nil {
				return err
			}
			switch cw {
			case ConfirmDestructive, ConfirmAlways, ConfirmNever:
			default:
				return perr(p, "must be destructive, always or never, got %q", truncateText(cw, 40))
			}
			s.ConfirmWrites = cw
		case "rate_limit":
			if s.RateLimit, err = decodeRateLimit(p, val); err != nil {
				return err
			}
		case "protected_fields":
			if s.ProtectedFields, err = decodeProtectedFields(p, val); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeRateLimit reads settings.rate_limit: requests per window, each
// defaulted.
func decodeRateLimit(p string, val any) (*RateLimit, error) {
	rm, err := object(p, val, rateLimitKeys)
	if err != nil {
		return nil, err
	}
	rl := &RateLimit{Requests: DefaultRateLimitRequests, Window: DefaultRateLimitWindow.String()}
	if rv, ok := rm["requests"]; ok {
		if rl.Requests, err = integer(join(p, "requests"), rv, 0, 1_000_000); err != nil {
			return nil, err
		}
	}
	if wv, ok := rm["window"]; ok {
		ws, err := str(join(p, "window"), wv)
		if err != nil {
			// A bare number of seconds is accepted too.
			if f, ok := wv.(float64); ok && f > 0 && f == math.Trunc(f) {
				ws = fmt.Sprintf("%ds", int(f))
			} else {
				return nil, perr(join(p, "window"), "must be a duration like 60s or 5m, got %s", describeValue(wv))
			}
		}
		d, perrr := time.ParseDuration(ws)
		// Under a second a window resets faster than a model can
		// call, so the limit would limit nothing.
		if perrr != nil || d < time.Second || d > 24*time.Hour {
			return nil, perr(join(p, "window"), "must be a duration between 1s and 24h like 60s or 5m, got %q", truncateText(ws, 40))
		}
		rl.Window = ws
	}
	return rl, nil
}

// protectedAudienceRe matches the audiences of Parse's protectedFields: "*",
// "authenticated", "role:Name", "userField:field" or a user objectId
// (^(\*|authenticated|role:[A-Za-z0-9_ -]{1,128}|userField:[A-Za-z][A-Za-z0-9_]{0,127}|[A-Za-z0-9]{1,64})$).
var protectedAudienceRe = parsedb.NameChoice{Literals: []string{"*", "authenticated"}, Patterns: []*parsedb.NamePattern{
	roleEntry, parsedb.NewNamePattern("userField:", "A-Za-z", "A-Za-z0-9_", 128), parsedb.NewNamePattern("", "A-Za-z0-9", "A-Za-z0-9", 64)}}

// roleEntry is "role:Name" in an ACL or an audience.
var roleEntry = parsedb.NewNamePattern("role:", "A-Za-z0-9_ -", "A-Za-z0-9_ -", 128)

// decodeProtectedFields reads settings.protected_fields: class → audience →
// field names, as Parse Server's protectedFields option.
func decodeProtectedFields(path string, v any) (map[string]map[string][]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, perr(path, "must be a mapping of class → {audience: [fields]} like {_User: {\"*\": [email]}}, got %s", describeValue(v))
	}
	out := make(map[string]map[string][]string, len(m))
	for _, cn := range slices.Sorted(maps.Keys(m)) {
		cp := join(path, cn)
		if !parsedb.ClassNameRe.MatchString(cn) {
			return nil, perr(cp, "%q is not a valid class name", truncateText(cn, 60))
		}
		am, ok := m[cn].(map[string]any)
		if !ok {
			return nil, perr(cp, "must be a mapping of audience (\"*\", authenticated, role:Name, a user id) → list of fields, got %s", describeValue(m[cn]))
		}
		out[cn] = make(map[string][]string, len(am))
		for _, aud := range slices.Sorted(maps.Keys(am)) {
			ap := join(cp, aud)
			if !protectedAudienceRe.MatchString(aud) {
				return nil, perr(ap, "%q is not an audience (\"*\", authenticated, role:Name, userField:field or a user id)", truncateText(aud, 60))
			}
			fields, err := nameList(ap, am[aud], parsedb.FieldNameRe, "field")
			if err != nil {
				return nil, err
			}
			out[cn][aud] = fields
		}
	}
	return out, nil
}

func decodePrompts(v any) ([]PromptSpec, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, perr("prompts", "must be a list of prompts, got %s", describeValue(v))
	}
	out := make([]PromptSpec, 0, len(list))
	for i, el := range list {
		p := fmt.Sprintf("prompts[%d]", i)
		m, err := object(p, el, promptKeys)
		if err != nil {
			return nil, err
		}
		var ps PromptSpec
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kp := join(p, k)
			switch k {
			case "name", "title", "description", "template":
				s, err := str(kp, m[k])
				if err != nil {
					return nil, err
				}
				switch k {
				case "name":
					ps.Name = s
				case "title":
					ps.Title = CleanText(s)
				case "description":
					ps.Description = CleanText(s)
				case "template":
					ps.Template = s
				}
			case "arguments":
				args, ok := m[k].([]any)
				if !ok {
					return nil, perr(kp, "must be a list of arguments, got %s", describeValue(m[k]))
				}
				for j, a := range args {
					arg, err := decodePromptArg(fmt.Sprintf("%s[%d]", kp, j), a)
					if err != nil {
						return nil, err
					}
					ps.Arguments = append(ps.Arguments, arg)
				}
			}
		}
		if ps.Name == "" {
			return nil, perr(p, "needs a name")
		}
		if ps.Template == "" {
			return nil, perr(join(p, "template"), "is required")
		}
		out = append(out, ps)
	}
	return out, nil
}

// decodePromptArg reads one of a prompt's arguments.
func decodePromptArg(ap string, a any) (PromptArgSpec, error) {
	var arg PromptArgSpec
	am, err := object(ap, a, promptArgKeys)
	if err != nil {
		return arg, err
	}
	for _, ak := range slices.Sorted(maps.Keys(am)) {
		akp := join(ap, ak)
		if ak == "required" {
			if arg.Required, err = boolean(akp, am[ak]); err != nil {
				return arg, err
			}
			continue
		}
		if ak == "default" {
			switch d := am[ak].(type) {
			case float64:
				arg.Default = strconv.FormatFloat(d, 'f', -1, 64)
				continue
			case bool:
				arg.Default = strconv.FormatBool(d)
				continue
			}
		}
		s, err := str(akp, am[ak])
		if err != nil {
			return arg, err
		}
		switch ak {
		case "name":
			arg.Name = s
		case "description":
			arg.Description = CleanText(s)
		case "type":
			arg.Type = s
		case "default":
			arg.Default = s
		}
	}
	return arg, nil
}

// aclEntryRe is an ACL entry: ^(\*|[A-Za-z0-9_-]{1,32}|role:[A-Za-z0-9_ -]{1,128})$.
var aclEntryRe = parsedb.NameChoice{Literals: []string{"*"}, Patterns: []*parsedb.NamePattern{parsedb.ObjectIDRe, roleEntry}}

// decodeACL reads a Parse ACL object: entries "*", a user objectId or
// "role:Name", each {read: bool, write: bool}.
func decodeACL(path string, v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, perr(path, "must be a Parse ACL like {\"*\": {read: true}, \"role:Admin\": {read: true, write: true}}, got %s", describeValue(v))
	}
	out := make(map[string]any, len(m))
	for _, en := range slices.Sorted(maps.Keys(m)) {
		p := join(path, en)
		if !aclEntryRe.MatchString(en) {
			return nil, perr(p, "not an ACL entry (use \"*\", a user objectId or \"role:Name\")")
		}
		pm, err := object(p, m[en], []string{"read", "write"})
		if err != nil {
			return nil, err
		}
		perm := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(pm)) {
			b, err := boolean(join(p, k), pm[k])
			if err != nil {
				return nil, err
			}
			perm[k] = b
		}
		out[en] = perm
	}
	return out, nil
}

// jsonErrorAt words a JSON decoding error with the line and column it
// happened at in b (encoding/json gives only a byte offset, relative to the
// document that starts lead bytes into b).
func jsonErrorAt(b []byte, lead int, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the document ends early (an unclosed { or [ or string?)"
	}
	if off < 0 {
		return err.Error()
	}
	// Offset counts the bytes read, the offending one included.
	pos := min(lead+max(int(off)-1, 0), len(b))
	line := 1 + bytes.Count(b[:pos], []byte("\n"))
	col := pos - bytes.LastIndexByte(b[:pos], '\n')
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}
