package parsedb

import "strings"

// internalFields is the internal-field floor (SECURITY.md "Fields"): storage
// columns that hold credentials, tokens, lockout state or ACL internals. They
// are never returned, never queryable and never referenced in a pipeline, on
// any class and at any depth, whatever the policy says.
var internalFields = map[string]struct{}{
	"_hashed_password":               {},
	"_password_history":              {},
	"_session_token":                 {},
	"sessionToken":                   {},
	"_email_verify_token":            {},
	"_email_verify_token_expires_at": {},
	"_perishable_token":              {},
	"_perishable_token_expires_at":   {},
	"_failed_login_count":            {},
	"_account_lockout_expires_at":    {},
	"_rperm":                         {},
	"_wperm":                         {},
	"_acl":                           {},
	"_tombstone":                     {},
	"authData":                       {},
}

// internalFieldPrefix covers Parse's per-provider auth columns
// (_auth_data_facebook, _auth_data_apple, …).
const internalFieldPrefix = "_auth_data"

// IsInternalField reports whether name is on the internal-field floor:
// _hashed_password _password_history _session_token sessionToken
// _email_verify_token _email_verify_token_expires_at _perishable_token
// _perishable_token_expires_at _failed_login_count _account_lockout_expires_at
// _rperm _wperm _acl _tombstone authData and any _auth_data* name.
//
// name is a single field name (one segment of a dotted path); callers that
// hold a dotted path should use IsInternalPath.
func IsInternalField(name string) bool {
	if _, ok := internalFields[name]; ok {
		return true
	}
	return strings.HasPrefix(name, internalFieldPrefix)
}

// IsInternalPath reports whether any segment of a dotted field path is an
// internal field ("authData.facebook.id", "meta._rperm").
func IsInternalPath(path string) bool {
	for {
		seg, rest, more := strings.Cut(path, ".")
		if IsInternalField(seg) {
			return true
		}
		if !more {
			return false
		}
		path = rest
	}
}

// InternalFieldNames returns the exact names on the internal-field floor,
// sorted (the _auth_data* prefix is reported as "_auth_data*").
func InternalFieldNames() []string {
	return []string{
		"_account_lockout_expires_at", "_acl", "_auth_data*", "_email_verify_token",
		"_email_verify_token_expires_at", "_failed_login_count", "_hashed_password",
		"_password_history", "_perishable_token", "_perishable_token_expires_at",
		"_rperm", "_session_token", "_tombstone", "_wperm", "authData", "sessionToken",
	}
}
