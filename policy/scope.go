package policy

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Filters and tenant scope (SECURITY.md "Filters and tenant scope"). Every read's REST-level where is, AND-ed
// in this order:
//
//	caller where → classes.C.canonical_filter → agent.filters.C →
//	agent.filters.default → tenant {field: PARSE_MCP_TENANT_ID}
//
// and at the storage level StorageScope adds the identity's _rperm
// constraint and CLP pointer permissions. Pipelines get the same parts as
// separate $match stages (PipelineScope), the tenant's first.

// scopePart is one AND-ed component of a read's where.
type scopePart struct {
	// Source names where the part comes from: where, canonical_filter,
	// agent.filters.<C>, agent.filters.default, tenant.
	Source string
	Where  map[string]any
}

// TenantField is the tenant_scope field of a class ("" when the class is
// not tenant-scoped).
func (e *Engine) TenantField(class string) string {
	if cp := e.Class(class); cp != nil && cp.TenantScope != nil {
		return cp.TenantScope.Field
	}
	return ""
}

// TenantActive reports whether a tenant scope governs a class: the class has
// a tenant_scope (with PARSE_MCP_TENANT_ID unset, reads of it are refused
// altogether). Joins touching such a class are refused (CheckJoin).
func (e *Engine) TenantActive(class string) bool { return e.TenantField(class) != "" }

// CheckJoin refuses a join ($lookup, $graphLookup, $unionWith, include)
// from one class to another while a tenant scope governs either: a joined
// sub-read would not carry the tenant filter (access_denied kind
// tenant_join_denied).
func (e *Engine) CheckJoin(from, to string) error {
	for _, c := range []string{from, to} {
		if e.TenantActive(c) {
			return toolerror.Denied("tenant_join_denied", "joins are refused on tenant-scoped classes (%s is scoped by %s); query each class separately", c, e.TenantField(c))
		}
	}
	return nil
}

func (e *Engine) checkTenantBound(class string) error {
	if f := e.TenantField(class); f != "" && e.tenant == "" {
		return toolerror.Denied("tenant_required", "class %s is tenant-scoped (by %s) but no tenant is bound to this server (PARSE_MCP_TENANT_ID); reads of it are refused", class, f)
	}
	return nil
}

// normalizeFieldName folds case and separators, so that orgId, org_id,
// OrgID and ORG-ID compare equal (tenant spoofing through a variant name).
func normalizeFieldName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == '-':
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// checkCallerWhere checks the model's where before anything is composed:
// field references against agent_fields and protectedFields, and the tenant
// field, which the caller may only name with the bound tenant's value. It
// does not enter sub-queries ($inQuery, $select, $relatedTo…), whose class
// is composed separately through the same policy.
func (e *Engine) checkCallerWhere(cls *parsedb.Class, where map[string]any, depth int) error {
	if depth > parsedb.MaxWhereDepth {
		return toolerror.Violationf("where nesting deeper than %d levels", parsedb.MaxWhereDepth)
	}
	tf := e.TenantField(cls.Name)
	for k, v := range where {
		switch k {
		case "$or", "$and", "$nor":
			arr, _ := v.([]any)
			for _, el := range arr {
				if m, ok := el.(map[string]any); ok {
					if err := e.checkCallerWhere(cls, m, depth+1); err != nil {
						return err
					}
				}
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue // $relatedTo, $text; unknown operators are the translator's
		}
		root, _, _ := strings.Cut(k, ".")
		if tf != "" && normalizeFieldName(root) == normalizeFieldName(tf) {
			if root != tf || k != root || !e.tenantValueOK(cls, v) {
				return toolerror.Denied("tenant_scope", "%s is this deployment's tenant field: where may only name it with the bound tenant's value (the tenant filter is applied anyway; remove it from where)", tf)
			}
			continue
		}
		if strings.HasPrefix(root, "_") {
			continue // storage names: the translator refuses them with a hint
		}
		if err := e.CheckReadField(cls, k); err != nil {
			return err
		}
	}
	return nil
}

// tenantValueOK accepts exactly the bound tenant: a plain value, {$eq: v},
// or for a pointer tenant field a Pointer object to it.
func (e *Engine) tenantValueOK(cls *parsedb.Class, v any) bool {
	tenant := e.tenant
	switch t := v.(type) {
	case string:
		return t == tenant
	case map[string]any:
		if len(t) == 1 {
			if eq, ok := t["$eq"]; ok {
				if _, nested := eq.(map[string]any); !nested {
					return e.tenantValueOK(cls, eq)
				}
			}
		}
		if len(t) == 3 && t["__type"] == "Pointer" && t["objectId"] == tenant {
			f := cls.Field(e.TenantField(cls.Name))
			return f != nil && f.Type == parsedb.TypePointer && t["className"] == f.TargetClass
		}
	}
	return false
}

// defaultFilterApplies reports whether agent.filters.default applies to a
// class: it does when the class has every field the filter names.
func (e *Engine) defaultFilterApplies(cls *parsedb.Class) bool {
	if e.file == nil {
		return false
	}
	def := e.file.Agent.Filters[DefaultFilterKey]
	if len(def) == 0 {
		return false
	}
	for _, f := range whereFields(def) {
		if cls.Field(f) == nil {
			switch f {
			case "objectId", "createdAt", "updatedAt":
				continue
			}
			return false
		}
	}
	return true
}

// whereFields lists the root field names a where references (through
// $or/$and/$nor, not into sub-queries).
func whereFields(w map[string]any) []string {
	var out []string
	for k, v := range w {
		switch k {
		case "$or", "$and", "$nor":
			arr, _ := v.([]any)
			for _, el := range arr {
				if m, ok := el.(map[string]any); ok {
					out = append(out, whereFields(m)...)
				}
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue
		}
		root, _, _ := strings.Cut(k, ".")
		out = append(out, root)
	}
	return out
}

// scopeParts are the policy parts of a class's where, in composition order
// (the caller's where excluded).
func (e *Engine) scopeParts(cls *parsedb.Class, applyCanonical bool) []scopePart {
	var parts []scopePart
	if cp := e.Class(cls.Name); cp != nil && applyCanonical && len(cp.CanonicalFilter) > 0 {
		parts = append(parts, scopePart{"canonical_filter", cp.CanonicalFilter})
	}
	if e.file != nil {
		if f := e.file.Agent.Filters[cls.Name]; len(f) > 0 {
			parts = append(parts, scopePart{"agent.filters." + cls.Name, f})
		}
		if e.defaultFilterApplies(cls) {
			parts = append(parts, scopePart{"agent.filters.default", e.file.Agent.Filters[DefaultFilterKey]})
		}
	}
	if tf := e.TenantField(cls.Name); tf != "" && e.tenant != "" {
		parts = append(parts, scopePart{"tenant", map[string]any{tf: e.tenant}})
	}
	return parts
}

// ComposeWhere AND-merges, in order, the caller's where, the class's
// canonical filter (when applyCanonical), the per-agent filters and the
// tenant scope, all at the REST level, so the result can be shown to the
// model as the constraints actually applied and translated once. Before
// composing it refuses a where that names fields outside agent_fields or
// protectedFields, or spoofs the tenant field.
func (e *Engine) ComposeWhere(ctx context.Context, cls *parsedb.Class, where map[string]any, applyCanonical bool) (map[string]any, error) {
	e = e.For(ctx)
	if err := e.checkTenantBound(cls.Name); err != nil {
		return nil, err
	}
	if err := e.checkCallerWhere(cls, where, 1); err != nil {
		return nil, err
	}
	// The tenant filter is one of these parts: a lookup by id of another
	// tenant's object finds nothing and answers exactly as a missing id
	// (SECURITY.md "Filters and tenant scope"); refusing it would confirm
	// that the id exists and belongs to another tenant.
	parts := e.scopeParts(cls, applyCanonical)
	all := make([]map[string]any, 0, len(parts)+1)
	if len(where) > 0 {
		all = append(all, where)
	}
	for _, p := range parts {
		all = append(all, p.Where)
	}
	switch len(all) {
	case 0:
		return map[string]any{}, nil
	case 1:
		return all[0], nil
	}
	and := make([]any, len(all))
	for i, p := range all {
		and[i] = p
	}
	return map[string]any{"$and": and}, nil
}

// StorageScope is the part of every read's filter that cannot be expressed
// in REST terms: the identity's _rperm constraint
// ({_rperm: {$in: [null, "*", userId, "role:…"]}}) and CLP pointer
// permissions. Empty in master posture. AND it to the translated where.
func (e *Engine) StorageScope(ctx context.Context, cls *parsedb.Class) (bson.D, error) {
	e = e.For(ctx)
	if e.MasterPosture() {
		return nil, nil
	}
	if err := e.checkSession(); err != nil {
		return nil, err
	}
	op := operationFor(ctx, cls.Name)
	switch op {
	case OpFind, OpCount, OpGet:
	default:
		op = OpFind
	}
	v := e.clp(cls, clpOperation(ctx, cls.Name, op))
	if !v.allowed {
		return nil, toolerror.Denied("clp_denied", "the class-level permissions of %s do not allow %s for this identity%s", cls.Name, op, v.why)
	}
	scope := e.identity.ReadACLFilter()
	if v.pointer != nil {
		scope = append(scope, v.pointer...)
	}
	return scope, nil
}

// PipelineScope returns the $match stages every pipeline on cls starts
// with (SECURITY.md "Pipelines"): the tenant $match at index 0, then the canonical filter
// (when applyCanonical), agent.filters.C and agent.filters.default as
// separate stages, then the identity scope (_rperm, CLP pointer
// permissions). shown lists the REST-level parts, for reporting.
func (e *Engine) PipelineScope(ctx context.Context, schema *parsedb.Schema, cls *parsedb.Class, applyCanonical bool) (stages []any, shown []map[string]any, err error) {
	e = e.For(ctx)
	if err := e.checkTenantBound(cls.Name); err != nil {
		return nil, nil, err
	}
	parts := e.scopeParts(cls, applyCanonical)
	// The tenant part is last in composition order but first in a pipeline.
	if n := len(parts); n > 0 && parts[n-1].Source == "tenant" {
		parts = append([]scopePart{parts[n-1]}, parts[:n-1]...)
	}
	for _, p := range parts {
		f, err := parsedb.WhereToFilter(ctx, cls, p.Where, parsedb.WhereOptions{Schema: schema})
		if err != nil {
			return nil, nil, err
		}
		stages = append(stages, bson.D{{Key: "$match", Value: f}})
		shown = append(shown, p.Where)
	}
	scope, err := e.StorageScope(ctx, cls)
	if err != nil {
		return nil, nil, err
	}
	if len(scope) > 0 {
		stages = append(stages, bson.D{{Key: "$match", Value: scope}})
	}
	return stages, shown, nil
}

// JoinScope is the filter a joined class's rows must satisfy inside a
// $lookup / $graphLookup / $unionWith sub-pipeline: its canonical filter,
// agent filters and identity scope (the class gate and CheckJoin must have
// passed). nil when nothing restricts it.
func (e *Engine) JoinScope(ctx context.Context, schema *parsedb.Schema, cls *parsedb.Class) (bson.D, error) {
	e = e.For(ctx)
	if err := e.CheckJoin(cls.Name, cls.Name); err != nil {
		return nil, err
	}
	var and bson.A
	for _, p := range e.scopeParts(cls, true) {
		f, err := parsedb.WhereToFilter(ctx, cls, p.Where, parsedb.WhereOptions{Schema: schema})
		if err != nil {
			return nil, err
		}
		and = append(and, f)
	}
	scope, err := e.StorageScope(ctx, cls)
	if err != nil {
		return nil, err
	}
	if len(scope) > 0 {
		and = append(and, scope)
	}
	switch len(and) {
	case 0:
		return nil, nil
	case 1:
		return and[0].(bson.D), nil
	}
	return bson.D{{Key: "$and", Value: and}}, nil
}
