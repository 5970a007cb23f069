package policy

import (
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/parsedb"
	"github.com/parse-mcp/parse-mcp/toolerror"
)

// VisibleFields are the class's fields this session may see: never the
// internal-field floor, never ACL, and only allowlisted ones when the class
// has agent_fields (objectId/createdAt/updatedAt always).
func (e *Engine) VisibleFields(cls *parsedb.Class) []*parsedb.Field {
	var allow map[string]bool
	if cp := e.Class(cls.Name); cp != nil && len(cp.AgentFields) > 0 {
		allow = map[string]bool{"objectId": true, "createdAt": true, "updatedAt": true}
		for _, f := range cp.AgentFields {
			allow[f] = true
		}
	}
	var out []*parsedb.Field
	for _, name := range cls.FieldNames() {
		if name == "ACL" || name == "password" || parsedb.IsInternalField(name) {
			continue
		}
		if allow != nil && !allow[name] {
			continue
		}
		out = append(out, cls.Fields[name])
	}
	return out
}

// DisplayType is a field's type as shown in get_all_schemas: Pointer<X>,
// Relation<X>, with hidden targets masked.
func (e *Engine) DisplayType(f *parsedb.Field) string {
	if f.Type != parsedb.TypePointer && f.Type != parsedb.TypeRelation {
		return f.Type
	}
	target := f.TargetClass
	if e.Hidden(target) {
		target = "<targetClass>"
	}
	return f.Type + "<" + target + ">"
}

// DisplayPermissions is the class's CLP as shown to the model (nil = public).
func (e *Engine) DisplayPermissions(cls *parsedb.Class) bson.M {
	return cls.Permissions
}

// CleanText makes operator-written text safe to show the model: control
// characters removed, at most 200 characters.
func CleanText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			if r == '\n' || r == '\t' {
				return ' '
			}
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200])
	}
	return s
}

// CheckReadField refuses a field a read may not reference: the internal
// floor always, and fields outside agent_fields when the class has an
// allowlist.
func (e *Engine) CheckReadField(cls *parsedb.Class, field string) error {
	root := field
	if i := strings.IndexByte(field, '.'); i >= 0 {
		root = field[:i]
	}
	if parsedb.IsInternalField(root) || parsedb.IsInternalField(field) {
		return toolerror.Violationf("internal field %q referenced on %s", field, cls.Name)
	}
	if cp := e.Class(cls.Name); cp != nil && len(cp.AgentFields) > 0 {
		switch root {
		case "objectId", "createdAt", "updatedAt":
			return nil
		}
		for _, a := range cp.AgentFields {
			if a == root {
				return nil
			}
		}
		allowed := cp.AgentFields
		if len(allowed) > 20 {
			allowed = allowed[:20]
		}
		return &toolerror.Error{Code: toolerror.AccessDenied, Message: "field " + root + " of " + cls.Name + " is not available to this agent",
			Details: &toolerror.Details{Kind: "field_not_allowed", DeniedField: root, AllowedFields: allowed}}
	}
	return nil
}
