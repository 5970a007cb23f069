package policy

import (
	"context"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// RequestScope is the identity one request acts as when the HTTP transport
// authenticates each request (PARSE_MCP_HTTP_AUTH, docs/team.md "Serve a team"):
// the resolved Parse identity, the tier and tenant it runs under, and the
// labels its audit events carry. The transport resolves it and puts it on
// the request's context (WithRequestScope); the policy reads it through For
// and never learns which transport or mode produced it. A context without
// one acts as the environment identity (stdio, the CLI, chat, HTTP without
// PARSE_MCP_HTTP_AUTH), exactly as before per-request identity existed.
type RequestScope struct {
	// Identity is the resolved scope; its master kind is master posture
	// (only an operator's named key resolves to it).
	Identity *parsedb.Identity
	// Tier is the permission tier, already capped: never above
	// PARSE_MCP_PERMISSIONS (see CapTier).
	Tier string
	// Tenant is the tenant bound to the identity: PARSE_MCP_TENANT_ID, or
	// the user's own with tenant_scope.from_user ("" = none: tenant-scoped
	// classes are refused).
	Tenant string
	// User labels the identity in audit events: master, user:<id>,
	// role:<name>. Never a token.
	User string
	// ClientID is the party presenting the credential (a named key's name,
	// an OAuth client, a JWT's azp), for audit events. Never a secret.
	ClientID string
	// Key identifies the identity for everything bound to it (HTTP
	// sessions, confirmations, rate windows and worker shares): requests
	// with equal keys are the same party.
	Key string
	// Environment: the credential named no identity (a key with a tier
	// only), so Identity is the environment's.
	Environment bool
	// SessionToken is the Parse session the request presented, for the
	// Parse Server bridge to act as (unset for an identity without one).
	SessionToken config.Secret
}

type requestScopeKey struct{}

// WithRequestScope returns ctx carrying the request's identity scope.
func WithRequestScope(ctx context.Context, s *RequestScope) context.Context {
	return context.WithValue(ctx, requestScopeKey{}, s)
}

// RequestScopeFrom is the request's identity scope (nil: the environment's).
func RequestScopeFrom(ctx context.Context) *RequestScope {
	s, _ := ctx.Value(requestScopeKey{}).(*RequestScope)
	return s
}

// For is the engine as the request in ctx sees it: e itself for a request
// without a scope of its own, else a view whose identity, posture, tier and
// tenant are the request's. Everything else (tools, classes, limiters,
// store) is shared: a view holds only references.
func (e *Engine) For(ctx context.Context) *Engine {
	s := RequestScopeFrom(ctx)
	if s == nil || e.request == s {
		return e
	}
	v := *e
	v.request = s
	v.identity = s.Identity
	v.master = s.Identity.Master()
	v.tier = CapTier(e.cfg.Permissions, s.Tier)
	v.tenant = s.Tenant
	if s.Environment {
		v.tenant = e.tenant
	}
	return &v
}

// CapTier is the lower of the configured tier and a credential's
// ("" or an unknown tier leaves the configured one): a credential only
// ever narrows what the server allows.
func CapTier(configured, requested string) string {
	r, ok := tierRank[requested]
	if !ok || r >= tierRank[configured] {
		return configured
	}
	return requested
}

// ValidTier reports whether tier names a permission tier.
func ValidTier(tier string) bool {
	_, ok := tierRank[tier]
	return ok
}

// tierSource says where the tier that refused a call comes from.
func (e *Engine) tierSource() string {
	if e.request != nil && e.tier != e.cfg.Permissions {
		return "this request's credential caps the tier at " + e.tier
	}
	return "this server runs with PARSE_MCP_PERMISSIONS=" + e.tier
}

// authType is the audit event's auth_type: the environment identity's kind,
// or the request's.
func (e *Engine) authType() string {
	if e.request == nil {
		return e.cfg.Identity()
	}
	if e.identity.Master() {
		return parsedb.IdentityMaster
	}
	return e.identity.Kind
}
