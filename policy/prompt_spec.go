package policy

// PromptSpec is one prompt declared in the policy file's `prompts:` section:
//
//	prompts:
//	  - name: overdue_invoices
//	    description: "Overdue invoices of one customer"
//	    arguments:
//	      - {name: user_id, type: object_id, required: true, description: "_User objectId"}
//	      - {name: since, type: date}
//	    template: |
//	      List the Invoice objects with status overdue whose user is {{user_id}} …
//
// Placeholders {{argument}} are replaced by the validated values. Validation
// of the specs (names, types, placeholders) is done by package prompts at
// start-up.
type PromptSpec struct {
	Name        string          `json:"name" yaml:"name"`
	Title       string          `json:"title,omitempty" yaml:"title,omitempty"`
	Description string          `json:"description,omitempty" yaml:"description,omitempty"`
	Arguments   []PromptArgSpec `json:"arguments,omitempty" yaml:"arguments,omitempty"`
	Template    string          `json:"template" yaml:"template"`
}

// PromptArgSpec is one argument of a configured prompt. Type decides how the
// value is validated: class_name (a class this server may see), class_list
// (comma-separated class names), object_id, date (ISO 8601, normalised to
// RFC 3339 UTC), field (a field name), integer, string (default; at most 500
// characters, no control characters).
type PromptArgSpec struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	Type        string `json:"type,omitempty" yaml:"type,omitempty"`
	Required    bool   `json:"required,omitempty" yaml:"required,omitempty"`
	Default     string `json:"default,omitempty" yaml:"default,omitempty"`
}
