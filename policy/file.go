package policy

// File is the policy file (YAML or JSON). Loading and structural validation
// live in load.go; validation against the live _SCHEMA in validate.go.
type File struct {
	Classes  map[string]*ClassPolicy `json:"classes,omitempty" yaml:"classes"`
	Agent    AgentPolicy             `json:"agent" yaml:"agent"`
	Settings Settings                `json:"settings" yaml:"settings"`
	// Prompts are operator-declared prompts (structure checked here; names,
	// types and placeholders validated by package prompts).
	Prompts []PromptSpec `json:"prompts,omitempty" yaml:"prompts,omitempty"`
	// Actions are the declared actions (call_action), sorted by name.
	Actions []*ActionSpec `json:"actions,omitempty" yaml:"-"`
	// Search holds the search tools' settings (policy/search.go).
	Search SearchSettings `json:"search" yaml:"search"`
}

// HiddenExceptMaster is the `hidden: except_master` value.
const HiddenExceptMaster = "except_master"

// ClassPolicy is per-class metadata and restrictions.
type ClassPolicy struct {
	// Hidden is false, true, or "except_master".
	Hidden          any                     `json:"hidden,omitempty" yaml:"hidden,omitempty"`
	Description     string                  `json:"description,omitempty" yaml:"description,omitempty"`
	Fields          map[string]*FieldPolicy `json:"fields,omitempty" yaml:"fields,omitempty"`
	AgentFields     []string                `json:"agent_fields,omitempty" yaml:"agent_fields,omitempty"`
	LargeFields     []string                `json:"large_fields,omitempty" yaml:"large_fields,omitempty"`
	JoinFields      []string                `json:"join_fields,omitempty" yaml:"join_fields,omitempty"`
	CanonicalFilter map[string]any          `json:"canonical_filter,omitempty" yaml:"canonical_filter,omitempty"`
	TenantScope     *TenantScope            `json:"tenant_scope,omitempty" yaml:"tenant_scope,omitempty"`
	AllowCollscan   bool                    `json:"allow_collscan,omitempty" yaml:"allow_collscan,omitempty"`
	// WritableFields are the fields writes may set (default: agent_fields;
	// neither: every field). "ACL" in it lets writes set the ACL.
	WritableFields []string `json:"writable_fields,omitempty" yaml:"writable_fields,omitempty"`
	// DefaultACL is the ACL of objects created without one (nil: none,
	// which Parse treats as public read and write).
	DefaultACL map[string]any `json:"default_acl,omitempty" yaml:"default_acl,omitempty"`
	// Search opts the class into the search tools (policy/search.go).
	Search *SearchPolicy `json:"search,omitempty" yaml:"search,omitempty"`
}

// IsHidden reports `hidden: true`.
func (cp *ClassPolicy) IsHidden() bool {
	b, ok := cp.Hidden.(bool)
	return ok && b
}

// IsHiddenExceptMaster reports `hidden: except_master`.
func (cp *ClassPolicy) IsHiddenExceptMaster() bool {
	s, ok := cp.Hidden.(string)
	return ok && s == HiddenExceptMaster
}

// FieldPolicy documents one field for the model.
type FieldPolicy struct {
	Description string            `json:"description,omitempty" yaml:"description,omitempty"`
	Enum        map[string]string `json:"enum,omitempty" yaml:"enum,omitempty"`
}

// TenantScope binds a class to the tenant through one field: the tenant is
// PARSE_MCP_TENANT_ID, or with FromUser the value of that field of the
// identity's own _User row (docs/team.md "Serve a team").
type TenantScope struct {
	Field    string `json:"field" yaml:"field"`
	FromUser string `json:"from_user,omitempty" yaml:"from_user,omitempty"`
}

// AgentPolicy narrows what this deployment's agent may use.
type AgentPolicy struct {
	Tools   OnlyExcept `json:"tools" yaml:"tools"`
	Classes OnlyExcept `json:"classes" yaml:"classes"`
	// Filters maps a class name (or "default", applied to every class that
	// has all of its top-level fields) to a where AND-ed to every read.
	Filters map[string]map[string]any `json:"filters,omitempty" yaml:"filters,omitempty"`
}

// DefaultFilterKey is the agent.filters entry applied to every class.
const DefaultFilterKey = "default"

// OnlyExcept is an allowlist and/or denylist of names.
type OnlyExcept struct {
	Only   []string `json:"only,omitempty" yaml:"only,omitempty"`
	Except []string `json:"except,omitempty" yaml:"except,omitempty"`
}

// Settings are deployment-wide knobs.
type Settings struct {
	RefuseCollscan   bool       `json:"refuse_collscan" yaml:"refuse_collscan"`
	ExposeExplain    bool       `json:"expose_explain" yaml:"expose_explain"`
	MaxResponseBytes int        `json:"max_response_bytes,omitempty" yaml:"max_response_bytes,omitempty"`
	RateLimit        *RateLimit `json:"rate_limit,omitempty" yaml:"rate_limit,omitempty"`
	// ProtectedFields is Parse Server's server-level protectedFields option
	// (class → audience → fields), merged with every class's CLP; unset =
	// Parse's default {_User: {"*": [email]}}, {} = none.
	ProtectedFields map[string]map[string][]string `json:"protected_fields,omitempty" yaml:"protected_fields,omitempty"`
	// ConfirmWrites is destructive (default), always or never.
	ConfirmWrites string `json:"confirm_writes,omitempty" yaml:"confirm_writes,omitempty"`
	// DirectSchemaChanges lets the direct write path change _SCHEMA (add a
	// class or a field, delete a class). Off by default: a running Parse
	// Server caches its schema and does not see such a change until it
	// reloads (docs/writes.md "Writes", "Schema changes and a running Parse
	// Server"); with the bridge, Parse makes the change itself.
	DirectSchemaChanges bool `json:"direct_schema_changes,omitempty" yaml:"direct_schema_changes,omitempty"`
}

// confirm_writes values.
const (
	ConfirmDestructive = "destructive"
	ConfirmAlways      = "always"
	ConfirmNever       = "never"
)

// ConfirmWrites is settings.confirm_writes (default destructive).
func (e *Engine) ConfirmWrites() string {
	if e.file != nil && e.file.Settings.ConfirmWrites != "" {
		return e.file.Settings.ConfirmWrites
	}
	return ConfirmDestructive
}

// DirectSchemaChanges is settings.direct_schema_changes (default false).
func (e *Engine) DirectSchemaChanges() bool {
	return e.file != nil && e.file.Settings.DirectSchemaChanges
}

// RateLimit is a sliding-window limit. Requests 0 disables the limiter.
type RateLimit struct {
	Requests int    `json:"requests" yaml:"requests"`
	Window   string `json:"window" yaml:"window"`
}

// DefaultMaxResponseBytes caps every tool result (SECURITY.md "Limits and guards").
const DefaultMaxResponseBytes = 4 << 20

// MinMaxResponseBytes is the smallest max_response_bytes accepted.
const MinMaxResponseBytes = 1024

// Class returns the policy of a class, or nil.
func (e *Engine) Class(name string) *ClassPolicy {
	if e.file == nil {
		return nil
	}
	return e.file.Classes[name]
}

// File returns the loaded policy file (nil = built-in defaults). Callers
// must not modify it.
func (e *Engine) File() *File { return e.file }

// MaxResponseBytes is the configured result cap.
func (e *Engine) MaxResponseBytes() int {
	if e.file != nil && e.file.Settings.MaxResponseBytes > 0 && e.file.Settings.MaxResponseBytes < DefaultMaxResponseBytes {
		return e.file.Settings.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// ExposeExplain reports settings.expose_explain.
func (e *Engine) ExposeExplain() bool { return e.file != nil && e.file.Settings.ExposeExplain }

// RefuseCollscan reports settings.refuse_collscan.
func (e *Engine) RefuseCollscan() bool { return e.file != nil && e.file.Settings.RefuseCollscan }
