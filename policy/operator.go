package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Operator introspection: parse-mcp describe, would-permit and audit, and
// the start-up step that binds the policy to the database.

// SetupError is a start-up failure. Config is true for problems the
// operator fixes in the policy file or environment (exit 2), false for
// runtime failures (exit 1).
type SetupError struct {
	Config bool
	Msg    string
}

func (e *SetupError) Error() string { return e.Msg }

// Setup binds the engine to the database: it validates the policy file
// against _SCHEMA (every problem is a configuration error unless lenient,
// for `parse-mcp audit`, which reports them instead) and resolves the
// identity scope (an unknown or expired session token, an unknown user or
// role is a configuration error). Call Register first.
func (e *Engine) Setup(ctx context.Context, store *parsedb.Store, lenient bool) error {
	e.SetStore(store)
	if e.cfg.TenantID != "" && !e.anyTenantScope() {
		// A tenant id that scopes nothing would let an operator believe
		// reads are confined to one tenant when they are not.
		return &SetupError{Config: true, Msg: "PARSE_MCP_TENANT_ID: set, but no class in the policy has a tenant_scope, so it would scope nothing (declare classes.<Class>.tenant_scope in PARSE_MCP_POLICY_FILE, or unset PARSE_MCP_TENANT_ID)"}
	}
	schema, err := store.Schema.Get(ctx)
	if err != nil {
		return &SetupError{Msg: fmt.Sprintf("reading _SCHEMA: %v", err)}
	}
	if problems := e.Validate(ctx, schema); len(problems) > 0 && !lenient {
		// Named like the file's syntax errors (LoadFile): the variable, then
		// the file it points at, when there is one (--demo's is built in).
		msg := "PARSE_MCP_POLICY_FILE: " + problems[0].Error()
		if e.cfg.PolicyFile != "" {
			msg = "PARSE_MCP_POLICY_FILE " + e.cfg.PolicyFile + ": " + problems[0].Error()
		}
		if len(problems) > 1 {
			msg += fmt.Sprintf(" (and %d more problem(s); `parse-mcp audit` lists them all)", len(problems)-1)
		}
		return &SetupError{Config: true, Msg: msg}
	}
	var id *parsedb.Identity
	switch e.cfg.Identity() {
	case parsedb.IdentitySession:
		id, err = parsedb.ResolveSessionToken(ctx, store, e.cfg.SessionToken, e.now())
	case parsedb.IdentityUser:
		id, err = parsedb.ResolveUser(ctx, store, e.cfg.ACLUser)
	case parsedb.IdentityRole:
		id, err = parsedb.ResolveRole(ctx, store, e.cfg.ACLRole)
	default:
		id = &parsedb.Identity{Kind: parsedb.IdentityMaster}
	}
	if err != nil {
		if ie, ok := errors.AsType[*parsedb.IdentityError](err); ok {
			return &SetupError{Config: true, Msg: ie.Error()}
		}
		return &SetupError{Msg: "resolving the identity scope: " + err.Error()}
	}
	e.SetIdentity(id)
	if field := e.TenantFromUser(); field != "" && !id.Master() && id.UserID != "" {
		tenant, err := parsedb.UserTenant(ctx, store, id.UserID, field)
		if err != nil {
			return &SetupError{Msg: "reading the identity's tenant: " + err.Error()}
		}
		switch {
		case tenant == "":
			return &SetupError{Config: true, Msg: fmt.Sprintf("PARSE_MCP_POLICY_FILE: tenant_scope.from_user: the configured identity's _User row has no %s, so it belongs to no tenant", field)}
		case e.cfg.TenantID != "" && e.cfg.TenantID != tenant:
			return &SetupError{Config: true, Msg: fmt.Sprintf("PARSE_MCP_TENANT_ID: does not agree with the configured identity's _User.%s (tenant_scope.from_user)", field)}
		}
		e.tenant = tenant
	}
	return nil
}

// TenantFromUser is the _User field the tenant is read from
// (tenant_scope.from_user; "" when the tenant is PARSE_MCP_TENANT_ID).
// Validate makes every class name the same field.
func (e *Engine) TenantFromUser() string {
	if e.file == nil {
		return ""
	}
	for _, name := range slices.Sorted(maps.Keys(e.file.Classes)) {
		if ts := e.file.Classes[name].TenantScope; ts != nil && ts.FromUser != "" {
			return ts.FromUser
		}
	}
	return ""
}

// anyTenantScope reports whether some class of the policy file has a
// tenant_scope.
func (e *Engine) anyTenantScope() bool {
	if e.file == nil {
		return false
	}
	for _, cp := range e.file.Classes {
		if cp.TenantScope != nil {
			return true
		}
	}
	return false
}

// Fingerprint is a short, non-reversible identifier of a secret.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

// Describe is the effective policy, for `parse-mcp describe`. Secrets
// (session token, API key, database password) are shown only as short
// SHA-256 fingerprints. schema may be nil.
func (e *Engine) Describe(schema *parsedb.Schema) map[string]any {
	out := map[string]any{
		"permissions": e.cfg.Permissions,
		"identity":    e.describeIdentity(),
		"env_gates": map[string]bool{
			GateWriteTools: e.cfg.Gates.WriteTools, GateRawCRUD: e.cfg.Gates.RawCRUD,
			GateSchemaOps: e.cfg.Gates.SchemaOps, GateRawSchema: e.cfg.Gates.RawSchema,
		},
		"tools":              e.describeTools(),
		"writes":             e.WriteSurface(),
		"rate_limit":         e.describeRateLimit(),
		"max_response_bytes": e.MaxResponseBytes(),
		"refuse_collscan":    e.RefuseCollscan(),
		"expose_explain":     e.ExposeExplain(),
		"policy_file":        e.describePolicyFile(),
	}
	if e.cfg.HTTPAddr != "" {
		out["http"] = e.describeHTTP()
	}
	if e.cfg.MongoDBURI != "" {
		out["database"] = map[string]any{"uri": config.RedactedURI(e.cfg.MongoDBURI), "name": e.cfg.DatabaseName(), "collection_prefix": e.cfg.CollectionPrefix}
	}
	if e.cfg.Bridge() {
		out["parse_server"] = e.describeParseServer()
	}
	if e.file != nil {
		if len(e.file.Agent.Tools.Only)+len(e.file.Agent.Tools.Except) > 0 {
			out["agent_tools"] = e.file.Agent.Tools
		}
		if len(e.file.Agent.Classes.Only)+len(e.file.Agent.Classes.Except) > 0 {
			out["agent_classes"] = e.file.Agent.Classes
		}
	}
	if tenant := e.describeTenant(); len(tenant) > 0 {
		out["tenant"] = tenant
	}
	e.describeClasses(out, schema)
	return out
}

// describeIdentity is the report's identity section.
func (e *Engine) describeIdentity() map[string]any {
	identity := map[string]any{"type": e.cfg.Identity()}
	if e.cfg.SessionToken != "" {
		identity["session_token"] = Fingerprint(e.cfg.SessionToken)
	}
	if id := e.Identity(); id != nil {
		if id.UserID != "" {
			identity["user_id"] = id.UserID
		}
		identity["roles"] = append([]string{}, id.Roles...)
		identity["acl_entries"] = id.Entries()
		if !id.ExpiresAt.IsZero() {
			identity["expires_at"] = id.ExpiresAt.Format(time.RFC3339)
		}
	} else if e.MasterPosture() {
		identity["note"] = "master posture: ACLs and class-level permissions do not restrict reads"
	}
	return identity
}

// describeTools is the report's tools section: every registered tool, and
// the gate that refuses it.
func (e *Engine) describeTools() []map[string]any {
	var tools []map[string]any
	for _, n := range e.toolNames() {
		t := e.tools[n]
		entry := map[string]any{"name": n, "category": t.Category, "tier": t.Tier, "allowed": true}
		if g := Gates(t); len(g) > 0 {
			entry["env_gates"] = g
		}
		if err, gate := e.permit(t); err != nil {
			entry["allowed"] = false
			entry["gate"] = gate
			entry["reason"] = err.Message
		}
		tools = append(tools, entry)
	}
	return tools
}

// describeRateLimit is the report's rate_limit section.
func (e *Engine) describeRateLimit() map[string]any {
	if e.rateLimit <= 0 {
		return map[string]any{"disabled": true}
	}
	rl := map[string]any{"requests": e.rateLimit, "window": e.rateWindow.String(), "scope": "process"}
	if e.cfg.HTTPAddr != "" {
		_, _, clientFactor, processFactor := e.cfg.HTTPCaps()
		rl["scope"] = "per HTTP session"
		rl["per_client"] = e.rateLimit * clientFactor
		rl["per_process"] = e.rateLimit * processFactor
		if e.rates != nil {
			rl["store"] = "mongodb"
		}
	}
	return rl
}

// describePolicyFile names the policy in force.
func (e *Engine) describePolicyFile() string {
	switch {
	case e.cfg.Demo && e.cfg.PolicyFile == "":
		return "(built-in demo policy)"
	case e.file == nil:
		return "(none: built-in safe defaults)"
	}
	return e.cfg.PolicyFile
}

// describeHTTP is the report's http section; API keys appear as
// fingerprints only.
func (e *Engine) describeHTTP() map[string]any {
	maxSessions, perClient, _, _ := e.cfg.HTTPCaps()
	h := map[string]any{"addr": e.cfg.HTTPAddr, "max_sessions": maxSessions, "sessions_per_client": perClient}
	if nets, err := e.cfg.TrustedProxyNets(); err == nil && len(nets) > 0 {
		proxies := make([]string, len(nets))
		for i, n := range nets {
			proxies[i] = n.String()
		}
		h["trusted_proxies"] = proxies
	}
	if e.cfg.APIKey != "" {
		h["api_key"] = Fingerprint(e.cfg.APIKey)
	}
	if named, err := e.cfg.NamedAPIKeys(); err == nil && len(named) > 0 {
		keys := map[string]string{}
		for _, k := range named {
			keys[k.Name] = Fingerprint(k.Key.Reveal())
		}
		h["api_keys"] = keys
	}
	return h
}

// describeParseServer is the report's parse_server section. The master
// key is never shown, not even as a fingerprint.
func (e *Engine) describeParseServer() map[string]any {
	ps := map[string]any{"url": e.cfg.ServerURL, "application_id": e.cfg.ApplicationID, "master_key_set": e.cfg.MasterKey.IsSet()}
	if e.cfg.LiveQueryURL != "" {
		ps["livequery_url"] = e.cfg.LiveQueryURL
	}
	return ps
}

// describeTenant is the report's tenant section: the bound tenant and the
// classes scoped by it.
func (e *Engine) describeTenant() map[string]any {
	tenant := map[string]any{}
	if e.cfg.TenantID != "" {
		tenant["id"] = e.cfg.TenantID
	}
	scoped := map[string]string{}
	if e.file != nil {
		for n, cp := range e.file.Classes {
			if cp.TenantScope != nil {
				scoped[n] = cp.TenantScope.Field
			}
		}
	}
	if len(scoped) > 0 {
		tenant["scoped_classes"] = scoped
	}
	return tenant
}

// describeClasses adds the report's class sections: hidden_classes and,
// with a schema, visible_classes, filtered_classes and each visible
// class's policy.
func (e *Engine) describeClasses(out map[string]any, schema *parsedb.Schema) {
	hidden := map[string]bool{"_Join:*": true}
	for c := range e.hidden {
		hidden[c] = true
	}
	for c := range e.exceptMaster {
		if e.Hidden(c) {
			hidden[c] = true
		}
	}
	if schema == nil {
		out["hidden_classes"] = sortedSet(hidden)
		return
	}
	var visible, filtered []string
	classes := map[string]any{}
	for _, n := range schema.Names() {
		switch {
		case e.Hidden(n):
			hidden[n] = true
			continue
		case e.ClassFiltered(n):
			filtered = append(filtered, n)
			continue
		}
		visible = append(visible, n)
		if c := e.describeClass(n, schema.Class(n)); len(c) > 0 {
			classes[n] = c
		}
	}
	out["hidden_classes"] = sortedSet(hidden)
	out["visible_classes"] = visible
	if len(filtered) > 0 {
		out["filtered_classes"] = filtered
	}
	out["classes"] = classes
}

// describeClass is one visible class's entry: its policy-file settings,
// the filters scoping it, its CLP and protected fields.
func (e *Engine) describeClass(n string, cls *parsedb.Class) map[string]any {
	c := map[string]any{}
	if cp := e.Class(n); cp != nil {
		if cp.Description != "" {
			c["description"] = cp.Description
		}
		if len(cp.AgentFields) > 0 {
			c["agent_fields"] = cp.AgentFields
		}
		if len(cp.JoinFields) > 0 {
			c["join_fields"] = cp.JoinFields
		}
		if len(cp.LargeFields) > 0 {
			c["large_fields"] = cp.LargeFields
		}
		if cp.AllowCollscan {
			c["allow_collscan"] = true
		}
		if cp.Search != nil {
			c["search"] = cp.Search
		}
	}
	var filters []map[string]any
	for _, p := range e.scopeParts(cls, true) {
		filters = append(filters, map[string]any{"source": p.Source, "where": p.Where})
	}
	if len(filters) > 0 {
		c["filters"] = filters
	}
	if !e.MasterPosture() {
		c["clp"] = e.CLPSummary(cls)
		if pf := e.ProtectedFields(cls); len(pf) > 0 {
			c["protected_fields"] = sortedSet(pf)
		}
	}
	return c
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Verdict answers `parse-mcp would-permit TOOL CLASS`.
type Verdict struct {
	Tool    string `json:"tool"`
	Class   string `json:"class,omitempty"`
	Allowed bool   `json:"allowed"`
	// Gate is the dispatch step that refuses: tool_filter, permission_tier,
	// env_gate or class_gate.
	Gate   string `json:"gate,omitempty"`
	Code   string `json:"error_code,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// WouldPermit runs the tool and class gates of the dispatch order without
// calling anything.
func (e *Engine) WouldPermit(ctx context.Context, schema *parsedb.Schema, tool, class string) Verdict {
	e = e.For(ctx)
	v := Verdict{Tool: tool, Class: class}
	info, ok := e.tools[tool]
	if !ok {
		v.Gate, v.Code, v.Reason = gateToolFilter, string(toolerror.ToolFiltered), "no such tool"
		if s := Suggest(tool, e.toolNames(), 1); len(s) > 0 {
			v.Reason += " (did you mean " + s[0] + "?)"
		}
		return v
	}
	if err, gate := e.permit(info); err != nil {
		v.Gate, v.Code, v.Reason = gate, string(err.Code), err.Message
		if err.Details != nil {
			v.Kind = err.Details.Kind
		}
		return v
	}
	if class != "" && schema != nil {
		ci := &callState{tool: info, op: Operation(info), class: class}
		ctx = context.WithValue(ctx, callStateKey{}, ci)
		if _, err := e.ResolveClass(ctx, schema, class); err != nil {
			v.Gate, v.Reason = "class_gate", err.Error()
			if te, ok := toolerror.As(err); ok {
				v.Code = string(te.Code)
				if te.Details != nil {
					v.Kind = te.Details.Kind
				}
			}
			if ci.hiddenRefused {
				// The operator is told why; the model gets a missing
				// class's answer.
				v.Kind = "hidden_class"
			}
			return v
		}
	}
	v.Allowed = true
	return v
}

func (e *Engine) toolNames() []string {
	var out []string
	for n := range e.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Audit lists metadata gaps for `parse-mcp audit`: classes without
// descriptions, fields without descriptions, policy entries that match no
// _SCHEMA field (and every other validation problem), and the filters
// declared.
func (e *Engine) Audit(ctx context.Context, schema *parsedb.Schema) map[string]any {
	undocumented := []string{}
	fieldsUndocumented := map[string][]string{}
	for _, n := range e.VisibleClassNames(schema) {
		cp := e.Class(n)
		if cp == nil || cp.Description == "" {
			undocumented = append(undocumented, n)
		}
		var missing []string
		for _, f := range e.VisibleFields(schema.Class(n)) {
			if alwaysVisible(f.Name) {
				continue
			}
			if cp == nil || cp.Fields[f.Name] == nil || cp.Fields[f.Name].Description == "" {
				missing = append(missing, f.Name)
			}
		}
		if len(missing) > 0 {
			fieldsUndocumented[n] = missing
		}
	}
	problems := []string{}
	unmatched := []string{}
	for _, p := range e.Validate(ctx, schema) {
		problems = append(problems, p.Error())
		if strings.Contains(p.Problem, "_SCHEMA") {
			unmatched = append(unmatched, p.Error())
		}
	}
	canonical := map[string]any{}
	filters := map[string]any{}
	tenant := map[string]string{}
	if e.file != nil {
		for n, cp := range e.file.Classes {
			if len(cp.CanonicalFilter) > 0 {
				canonical[n] = cp.CanonicalFilter
			}
			if cp.TenantScope != nil {
				tenant[n] = cp.TenantScope.Field
			}
		}
		for n, f := range e.file.Agent.Filters {
			entry := map[string]any{"where": f}
			if n == DefaultFilterKey {
				var applies []string
				for _, c := range e.VisibleClassNames(schema) {
					if e.defaultFilterApplies(schema.Class(c)) {
						applies = append(applies, c)
					}
				}
				entry["applies_to"] = applies
			}
			filters[n] = entry
		}
	}
	hiddenMissing := []string{}
	for _, n := range e.HiddenClassesNotInSchema(schema) {
		hiddenMissing = append(hiddenMissing, n.String())
	}
	out := map[string]any{
		"hidden_classes_not_in_schema": hiddenMissing,
		"classes_without_description":  undocumented,
		"fields_without_description":   fieldsUndocumented,
		"entries_not_in_schema":        unmatched,
		"policy_problems":              problems,
		"canonical_filters":            canonical,
		"agent_filters":                filters,
		"ok":                           len(problems) == 0,
		"writes":                       e.WriteSurface(),
	}
	if len(tenant) > 0 {
		out["tenant_scoped_classes"] = tenant
	}
	return out
}

// MissingHiddenClass is a class the policy file hides that _SCHEMA does not
// have: harmless when the class is still to be created, a leak when the
// name is a typo (`VaultScret: {hidden: true}` hides nothing, and the real
// VaultSecret stays readable). Start-up warns and `audit` lists them.
type MissingHiddenClass struct {
	Name string
	// Visible is the closest class in _SCHEMA that the policy leaves
	// visible, when the name is close enough to be its typo, or "".
	Visible string
}

func (m MissingHiddenClass) String() string {
	s := "classes." + m.Name + ": hidden, but _SCHEMA has no class " + m.Name
	if m.Visible != "" {
		s += " (did you mean " + m.Visible + "? it is not hidden)"
	}
	return s
}

// HiddenClassesNotInSchema lists, in name order, the classes the policy
// file hides (hidden: true or except_master) that are not in _SCHEMA.
func (e *Engine) HiddenClassesNotInSchema(schema *parsedb.Schema) []MissingHiddenClass {
	if e.file == nil {
		return nil
	}
	var visible []string
	for _, n := range schema.Names() {
		if cp := e.file.Classes[n]; !parsedb.IsInternalCollection(n) && (cp == nil || !(cp.IsHidden() || cp.IsHiddenExceptMaster())) {
			visible = append(visible, n)
		}
	}
	var out []MissingHiddenClass
	for _, n := range slices.Sorted(maps.Keys(e.file.Classes)) {
		cp := e.file.Classes[n]
		if !(cp.IsHidden() || cp.IsHiddenExceptMaster()) || parsedb.IsInternalCollection(n) || schema.Class(n) != nil {
			continue
		}
		m := MissingHiddenClass{Name: n}
		if s := Suggest(n, visible, 1); len(s) > 0 {
			m.Visible = s[0]
		}
		out = append(out, m)
	}
	return out
}
