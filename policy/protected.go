package policy

import (
	"slices"
	"sort"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// Server-level protectedFields, as Parse Server's `protectedFields` option:
// per class, per audience ("*", "authenticated", "role:Name", a user id), the
// fields a scoped identity does not see. Parse's default is
// {_User: {"*": ["email"]}} and is not stored in _SCHEMA; Parse merges it
// into every class's CLP protectedFields (a union per audience) before
// computing what applies to the caller. settings.protected_fields in the
// policy file replaces the default (an empty map turns it off), exactly as
// the server option replaces Parse's default.

// DefaultServerProtectedFields is Parse Server's default protectedFields
// option.
var DefaultServerProtectedFields = map[string]map[string][]string{
	"_User": {"*": {"email"}},
}

// ServerProtectedFields is the server-level protectedFields in force: the
// policy file's settings.protected_fields when set, else Parse's default.
func (e *Engine) ServerProtectedFields() map[string]map[string][]string {
	if e.file != nil && e.file.Settings.ProtectedFields != nil {
		return e.file.Settings.ProtectedFields
	}
	return DefaultServerProtectedFields
}

// protectedFieldLists is a class's protectedFields per audience: the CLP's
// (from _SCHEMA) with the server-level lists added (nil = none).
func (e *Engine) protectedFieldLists(cls *parsedb.Class) map[string][]string {
	var out map[string][]string
	if cls.Permissions != nil {
		if pf := asMap(cls.Permissions["protectedFields"]); pf != nil {
			out = make(map[string][]string, len(pf)+1)
			for k, v := range pf {
				out[k] = asStrings(v)
			}
		}
	}
	server := e.ServerProtectedFields()[cls.Name]
	if len(server) == 0 {
		return out
	}
	if out == nil {
		out = make(map[string][]string, len(server))
	}
	for audience, fields := range server {
		merged := append([]string{}, out[audience]...)
		for _, f := range fields {
			if !slices.Contains(merged, f) {
				merged = append(merged, f)
			}
		}
		sort.Strings(merged)
		out[audience] = merged
	}
	return out
}
