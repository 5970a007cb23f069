package policy

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// Class-level permissions (SECURITY.md "Identity, ACL and CLP"): _SCHEMA's
// class_permissions read as Parse Server's SchemaController.validatePermission
// and DatabaseController addPointerPermissions / addProtectedFields do,
// enforced for scoped
// identities only — the master posture bypasses CLP as Parse's master key
// does.
//
//   - no class_permissions at all: everything public;
//   - class_permissions present but the operation missing: master only;
//   - {"*":true}, or an entry of the identity's aclGroup (user id,
//     "role:Name"): allowed;
//   - requiresAuthentication: allowed for an identity holding more than "*"
//     (a user, or a role);
//   - pointerFields of the operation, and readUserFields for find/count/get:
//     allowed, restricted to rows whose field points to the identity's user
//     (no user: no rows);
//   - otherwise denied.

type clpVerdict struct {
	allowed bool
	// pointer restricts rows (nil = no restriction).
	pointer bson.D
	why     string
}

func (e *Engine) clp(cls *parsedb.Class, op string) clpVerdict {
	if e.MasterPosture() || op == "" {
		return clpVerdict{allowed: true}
	}
	id := e.identity
	if id == nil {
		return clpVerdict{why: " (identity not resolved)"}
	}
	perms := cls.Permissions
	if perms == nil {
		return clpVerdict{allowed: true}
	}
	opPerms := asMap(perms[op])
	if opPerms == nil {
		return clpVerdict{why: " (the operation is master-only)"}
	}
	entries := id.Entries()
	for _, en := range entries {
		if b, ok := opPerms[en].(bool); ok && b {
			return clpVerdict{allowed: true}
		}
	}
	var fields []string
	fields = append(fields, asStrings(opPerms["pointerFields"])...)
	switch op {
	case OpFind, OpCount, OpGet:
		for _, f := range asStrings(perms["readUserFields"]) {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	default:
		for _, f := range asStrings(perms["writeUserFields"]) {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	if b, ok := opPerms["requiresAuthentication"].(bool); ok && b {
		if !id.Authenticated() {
			return clpVerdict{why: " (it requires an authenticated user)"}
		}
		v := clpVerdict{allowed: true}
		if len(fields) > 0 {
			v.pointer = pointerConstraint(cls, fields, id.UserID)
		}
		return v
	}
	if len(fields) > 0 {
		return clpVerdict{allowed: true, pointer: pointerConstraint(cls, fields, id.UserID)}
	}
	return clpVerdict{}
}

// matchNothing is a filter no document satisfies.
var matchNothing = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{}}}}}

// pointerConstraint restricts rows to those whose pointer (or array of
// pointers, or object) field references the user, OR-ed over fields.
func pointerConstraint(cls *parsedb.Class, fields []string, userID string) bson.D {
	if userID == "" {
		return matchNothing
	}
	ptr := bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "_User"}, {Key: "objectId", Value: userID}}
	var ors bson.A
	for _, f := range fields {
		fd := cls.Field(f)
		if fd == nil {
			continue
		}
		switch fd.Type {
		case parsedb.TypePointer:
			ors = append(ors, bson.D{{Key: "_p_" + f, Value: "_User$" + userID}})
		case parsedb.TypeArray:
			ors = append(ors, bson.D{{Key: f, Value: bson.D{{Key: "$all", Value: bson.A{ptr}}}}})
		case parsedb.TypeObject:
			ors = append(ors, bson.D{{Key: f, Value: ptr}})
		}
	}
	switch len(ors) {
	case 0:
		return matchNothing
	case 1:
		return ors[0].(bson.D)
	}
	return bson.D{{Key: "$or", Value: ors}}
}

// ProtectedFields are the class's protectedFields that apply to this
// identity (none in master posture): the intersection of the lists for
// "*", "authenticated" (with a user), each role held and the user id, as
// Parse Server computes it, over the class CLP merged with the server-level
// protectedFields (protectedFieldLists). "userField:" entries, which depend
// on the row, are not used to un-protect fields. A user's own _User row is
// shown whole anyway (RowEncoder).
func (e *Engine) ProtectedFields(cls *parsedb.Class) map[string]bool {
	if e.MasterPosture() || cls == nil {
		return nil
	}
	pf := e.protectedFieldLists(cls)
	if pf == nil {
		return nil
	}
	id := e.identity
	var sets [][]string
	if l, ok := pf["*"]; ok {
		sets = append(sets, l)
	}
	if id != nil {
		if id.UserID != "" {
			if l, ok := pf["authenticated"]; ok {
				sets = append(sets, l)
			}
			if l, ok := pf[id.UserID]; ok {
				sets = append(sets, l)
			}
		}
		for _, r := range id.Roles {
			if l, ok := pf["role:"+r]; ok {
				sets = append(sets, l)
			}
		}
	}
	if len(sets) == 0 {
		return nil
	}
	cur := map[string]bool{}
	for _, f := range sets[0] {
		cur[f] = true
	}
	for _, s := range sets[1:] {
		next := map[string]bool{}
		for _, f := range s {
			if cur[f] {
				next[f] = true
			}
		}
		cur = next
	}
	if len(cur) == 0 {
		return nil
	}
	return cur
}

// userFieldRules are the class's "userField:<field>" protectedFields
// audiences, for an identity with a user: on a row whose <field> points to
// that user, Parse intersects the protected fields with the audience's
// list (SECURITY.md "Fields").
func (e *Engine) userFieldRules(cls *parsedb.Class) []parsedb.UserFieldRule {
	if e.MasterPosture() || cls == nil || e.identity == nil || e.identity.UserID == "" {
		return nil
	}
	var out []parsedb.UserFieldRule
	pf := e.protectedFieldLists(cls)
	for _, aud := range slices.Sorted(maps.Keys(pf)) {
		field, ok := strings.CutPrefix(aud, "userField:")
		if !ok {
			continue
		}
		keep := map[string]bool{}
		for _, f := range pf[aud] {
			keep[f] = true
		}
		out = append(out, parsedb.UserFieldRule{Field: field, Keep: keep})
	}
	return out
}

// CLPSummary tells which read operations the identity may perform on a
// class (describe / would-permit).
func (e *Engine) CLPSummary(cls *parsedb.Class) map[string]string {
	out := map[string]string{}
	for _, op := range []string{OpFind, OpCount, OpGet} {
		v := e.clp(cls, op)
		switch {
		case !v.allowed:
			out[op] = "denied"
		case v.pointer != nil:
			out[op] = "own rows only (pointer permissions)"
		default:
			out[op] = "allowed"
		}
	}
	return out
}

// asMap reads a decoded BSON/JSON document of any of the driver's shapes.
func asMap(v any) map[string]any {
	switch t := v.(type) {
	case bson.M:
		return t
	case map[string]any:
		return t
	case bson.D:
		m := make(map[string]any, len(t))
		for _, e := range t {
			m[e.Key] = e.Value
		}
		return m
	}
	return nil
}

func asStrings(v any) []string {
	var list []any
	switch t := v.(type) {
	case bson.A:
		list = t
	case []any:
		list = t
	case []string:
		out := append([]string(nil), t...)
		sort.Strings(out)
		return out
	}
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
