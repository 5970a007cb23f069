package policy

// File is the policy file (YAML or JSON). Loading and complete validation
// live in load.go.
type File struct {
	Classes  map[string]*ClassPolicy `json:"classes" yaml:"classes"`
	Agent    AgentPolicy             `json:"agent" yaml:"agent"`
	Settings Settings                `json:"settings" yaml:"settings"`
}

// ClassPolicy is per-class metadata and restrictions.
type ClassPolicy struct {
	// Hidden is false, true, or "except_master" (decoded into HiddenMode).
	Hidden          any                     `json:"hidden,omitempty" yaml:"hidden,omitempty"`
	Description     string                  `json:"description,omitempty" yaml:"description,omitempty"`
	Fields          map[string]*FieldPolicy `json:"fields,omitempty" yaml:"fields,omitempty"`
	AgentFields     []string                `json:"agent_fields,omitempty" yaml:"agent_fields,omitempty"`
	LargeFields     []string                `json:"large_fields,omitempty" yaml:"large_fields,omitempty"`
	JoinFields      []string                `json:"join_fields,omitempty" yaml:"join_fields,omitempty"`
	CanonicalFilter map[string]any          `json:"canonical_filter,omitempty" yaml:"canonical_filter,omitempty"`
	TenantScope     *TenantScope            `json:"tenant_scope,omitempty" yaml:"tenant_scope,omitempty"`
	AllowCollscan   bool                    `json:"allow_collscan,omitempty" yaml:"allow_collscan,omitempty"`
}

// FieldPolicy documents one field for the model.
type FieldPolicy struct {
	Description string            `json:"description,omitempty" yaml:"description,omitempty"`
	Enum        map[string]string `json:"enum,omitempty" yaml:"enum,omitempty"`
}

// TenantScope binds a class to PARSE_MCP_TENANT_ID through one field.
type TenantScope struct {
	Field string `json:"field" yaml:"field"`
}

// AgentPolicy narrows what this deployment's agent may use.
type AgentPolicy struct {
	Tools   OnlyExcept                `json:"tools" yaml:"tools"`
	Classes OnlyExcept                `json:"classes" yaml:"classes"`
	Filters map[string]map[string]any `json:"filters,omitempty" yaml:"filters,omitempty"`
}

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
}

// RateLimit is a sliding-window limit.
type RateLimit struct {
	Requests int    `json:"requests" yaml:"requests"`
	Window   string `json:"window" yaml:"window"`
}

// DefaultMaxResponseBytes caps every tool result (§4.2).
const DefaultMaxResponseBytes = 4 << 20

// Class returns the policy of a class, or nil.
func (e *Engine) Class(name string) *ClassPolicy {
	if e.file == nil {
		return nil
	}
	return e.file.Classes[name]
}

// MaxResponseBytes is the configured result cap.
func (e *Engine) MaxResponseBytes() int {
	if e.file != nil && e.file.Settings.MaxResponseBytes > 0 && e.file.Settings.MaxResponseBytes < DefaultMaxResponseBytes {
		return e.file.Settings.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}
