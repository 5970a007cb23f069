// Package identity resolves the principal an HTTP request presents
// (internal/authn) into the identity scope the policy enforces for that
// request (policy.RequestScope), against Parse's own data: _Session (or the
// Parse Server bridge's GET /users/me), _User and the _Role graph. Resolved
// scopes are cached for at most PARSE_MCP_IDENTITY_CACHE, keyed by a digest
// of the credential, never the credential (SECURITY.md "Per-request
// identity").
package identity

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/policy"
)

// maxCached bounds the cache; past it expired entries are dropped, and if
// that is not enough the cache starts over.
const maxCached = 10000

// Resolver turns principals into request scopes.
type Resolver struct {
	store  *parsedb.Store
	bridge *parseserver.Client
	cfg    *config.Config
	// env is the environment identity (nil: master posture), what a key
	// naming no identity acts as.
	env *parsedb.Identity
	ttl time.Duration
	now func() time.Time
	// TenantFromUser is tenant_scope.from_user (policy.Engine.
	// TenantFromUser): a user's tenant is that field of its _User row,
	// and a user without one is refused.
	TenantFromUser string

	// refusals counts refused credentials per client address (refusals.go).
	refusals limits.Store

	mu    sync.Mutex
	cache map[[32]byte]cached
}

type cached struct {
	scope *policy.RequestScope
	until time.Time
}

// New builds a resolver. bridge may be nil (session tokens are then
// resolved through _Session directly); env is the environment identity
// (policy.Engine.Identity).
func New(store *parsedb.Store, bridge *parseserver.Client, cfg *config.Config, env *parsedb.Identity) *Resolver {
	return &Resolver{store: store, bridge: bridge, cfg: cfg, env: env, ttl: cfg.IdentityCache, now: time.Now, cache: map[[32]byte]cached{}}
}

// SetClock replaces the clock (tests).
func (r *Resolver) SetClock(now func() time.Time) { r.now = now }

// unauthorized wraps authn.ErrUnauthorized with a reason for the operator
// log (never the credential).
func unauthorized(format string, args ...any) error {
	return fmt.Errorf("%w: %s", authn.ErrUnauthorized, fmt.Sprintf(format, args...))
}

// cacheKey digests what names the identity: the session token, or the kind
// and name of a user or role, with the narrowing fields.
func cacheKey(p authn.Principal) [32]byte {
	h := sha256.New()
	for _, part := range []string{p.Mode, p.SessionToken, p.UserID, p.Role, fmt.Sprint(p.Master), p.Tier, p.Tenant, p.ClientID} {
		fmt.Fprintf(h, "%d:%s|", len(part), part)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Resolve is p's request scope, from the cache when it holds a fresh one.
// An error wrapping authn.ErrUnauthorized means the credential does not hold
// (unknown or expired session, unknown user or role, a tenant that does not
// agree, master asked for by anything but an operator's key); any other
// error is the database or Parse Server failing.
func (r *Resolver) Resolve(ctx context.Context, p authn.Principal) (*policy.RequestScope, error) {
	if s, ok := r.fromCache(p); ok {
		return s, nil
	}
	k, now := cacheKey(p), r.now()
	s, until, err := r.resolve(ctx, p, now)
	if err != nil {
		return nil, err
	}
	if r.ttl > 0 {
		if d := now.Add(r.ttl); until.IsZero() || d.Before(until) {
			until = d
		}
		r.mu.Lock()
		if len(r.cache) >= maxCached {
			for key, e := range r.cache {
				if !now.Before(e.until) {
					delete(r.cache, key)
				}
			}
			if len(r.cache) >= maxCached {
				r.cache = map[[32]byte]cached{}
			}
		}
		r.cache[k] = cached{scope: s, until: until}
		r.mu.Unlock()
	}
	return s, nil
}

// fromCache is p's request scope when the cache holds a fresh one.
func (r *Resolver) fromCache(p authn.Principal) (*policy.RequestScope, bool) {
	k, now := cacheKey(p), r.now()
	r.mu.Lock()
	c, ok := r.cache[k]
	r.mu.Unlock()
	return c.scope, ok && now.Before(c.until)
}

func (r *Resolver) resolve(ctx context.Context, p authn.Principal, now time.Time) (*policy.RequestScope, time.Time, error) {
	if p.Tier != "" && !policy.ValidTier(p.Tier) {
		return nil, time.Time{}, unauthorized("unknown tier %q", p.Tier)
	}
	named := 0
	for _, set := range []bool{p.SessionToken != "", p.UserID != "", p.Role != "", p.Master} {
		if set {
			named++
		}
	}
	if named > 1 {
		return nil, time.Time{}, unauthorized("the credential names more than one identity")
	}
	id, envOnly, err := r.principalIdentity(ctx, p, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	if envOnly {
		// A key naming neither an identity nor a tier: exactly the
		// environment identity, as without PARSE_MCP_HTTP_AUTH.
		return nil, time.Time{}, nil
	}
	tenant, err := r.tenantOf(ctx, p, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	s := &policy.RequestScope{Identity: id, Tier: policy.CapTier(r.cfg.Permissions, p.Tier), ClientID: p.ClientID, User: policy.IdentityLabel(id), Environment: named == 0, Tenant: tenant}
	s.Key = s.User
	if p.Mode == authn.ModeKeys && p.ClientID != "" {
		// A named key is its own party (as without PARSE_MCP_HTTP_AUTH);
		// key names contain no ':', so they never equal a label.
		s.Key = p.ClientID
	}
	if p.SessionToken != "" {
		s.SessionToken = config.NewSecret(p.SessionToken)
	}
	until := p.ExpiresAt
	if id != nil && !id.ExpiresAt.IsZero() && (until.IsZero() || id.ExpiresAt.Before(until)) {
		until = id.ExpiresAt
	}
	return s, until, nil
}

// principalIdentity is the identity the principal names; envOnly when it
// names none and asks for nothing else (the environment identity as is).
func (r *Resolver) principalIdentity(ctx context.Context, p authn.Principal, now time.Time) (id *parsedb.Identity, envOnly bool, err error) {
	switch {
	case p.Master:
		// SECURITY.md "Per-request identity": no token reaches master
		// posture; only an operator's named key may say master.
		if p.Mode != authn.ModeKeys || p.ClientID == "" {
			return nil, false, unauthorized("master posture asked for by a %s credential", p.Mode)
		}
		id = &parsedb.Identity{Kind: parsedb.IdentityMaster}
	case p.SessionToken != "":
		id, err = r.session(ctx, p.SessionToken, now)
	case p.UserID != "":
		id, err = parsedb.ResolveUser(ctx, r.store, p.UserID)
	case p.Role != "":
		id, err = parsedb.ResolveRole(ctx, r.store, p.Role)
	case p.Mode == authn.ModeParseSession || p.Mode == authn.ModeJWT || p.Mode == authn.ModeOAuth:
		// A token names a person; one that names nobody must not fall
		// through to the environment identity (master posture when unset).
		return nil, false, unauthorized("a %s credential names no identity", p.Mode)
	default:
		if p.Tier == "" && p.Tenant == "" {
			return nil, true, nil
		}
		id = r.env
	}
	if err != nil {
		if ie, ok := errors.AsType[*parsedb.IdentityError](err); ok {
			return nil, false, unauthorized("%s", ie.Problem)
		}
		return nil, false, err
	}
	return id, false, nil
}

// tenantOf is the tenant of the request: the user's own with
// tenant_scope.from_user, else the bound one; a credential naming another
// is refused.
func (r *Resolver) tenantOf(ctx context.Context, p authn.Principal, id *parsedb.Identity) (string, error) {
	tenant := r.cfg.TenantID
	if r.TenantFromUser != "" && id != nil && !id.Master() && id.UserID != "" {
		var err error
		if tenant, err = parsedb.UserTenant(ctx, r.store, id.UserID, r.TenantFromUser); err != nil {
			return "", err
		}
		if tenant == "" {
			return "", unauthorized("the user has no %s, so it belongs to no tenant (tenant_scope.from_user)", r.TenantFromUser)
		}
	}
	if p.Tenant != "" && p.Tenant != tenant {
		return "", unauthorized("the credential's tenant does not agree with the tenant bound to this identity")
	}
	return tenant, nil
}

// session resolves a Parse session token: through _Session directly, or
// through the bridge's GET /users/me (Parse Server then decides whether the
// session holds) with the user's roles read from the _Role graph.
func (r *Resolver) session(ctx context.Context, token string, now time.Time) (*parsedb.Identity, error) {
	if r.bridge == nil {
		return parsedb.ResolveSessionToken(ctx, r.store, token, now)
	}
	me, err := r.bridge.Do(ctx, parseserver.Request{Method: http.MethodGet, Path: "/users/me"}, parseserver.Identity{SessionToken: config.NewSecret(token)})
	if err != nil {
		if pe, ok := errors.AsType[*parseserver.Error](err); ok && pe.Status/100 == 4 {
			return nil, &parsedb.IdentityError{Variable: "session token", Problem: "Parse Server does not accept the session (" + pe.Message + ")"}
		}
		return nil, err
	}
	uid, _ := me["objectId"].(string)
	if uid == "" {
		return nil, &parsedb.IdentityError{Variable: "session token", Problem: "Parse Server's /users/me named no user"}
	}
	id, err := parsedb.ResolveUser(ctx, r.store, uid)
	if err != nil {
		return nil, err
	}
	id.Kind = parsedb.IdentitySession
	// /users/me does not say when the session expires; the cache must not
	// outlive it (docs/team.md "Serve a team").
	if id.ExpiresAt, err = parsedb.SessionExpiry(ctx, r.store, token); err != nil {
		return nil, err
	}
	return id, nil
}

// Bind is ctx acting as s: the policy's request scope, the identity the
// Parse Server bridge acts as, and the callinfo Credential every binding
// keys on (HTTP sessions, confirmations, the rate limit's client).
func Bind(ctx context.Context, s *policy.RequestScope) context.Context {
	ctx = policy.WithRequestScope(ctx, s)
	switch {
	case s.Environment:
		// The bridge acts as the configured identity.
	case s.SessionToken.IsSet():
		ctx = parseserver.WithRequestIdentity(ctx, &parseserver.Identity{SessionToken: s.SessionToken}, "")
	case s.Identity.Master():
		ctx = parseserver.WithRequestIdentity(ctx, &parseserver.Identity{Master: true}, "")
	default:
		ctx = parseserver.WithRequestIdentity(ctx, nil, "this request's identity ("+s.User+") cannot act through Parse Server: its REST API acts as a user only with that user's session token; authenticate with a Parse session instead")
	}
	info := callinfo.From(ctx)
	info.Credential, info.Identity = s.Key, s.Key+"\x00"+scopeDigest(s)
	return callinfo.With(ctx, info)
}

// scopeDigest names what an identity may read as resolved now (posture,
// user, roles, tenant), so that what is shared per identity and outlives a
// request (subscription watchers, listen streams) is not reused once a role
// or the tenant changes: the same person after such a change is another key.
func scopeDigest(s *policy.RequestScope) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s|", len(s.Tenant), s.Tenant)
	if id := s.Identity; id.Master() {
		h.Write([]byte("master"))
	} else {
		fmt.Fprintf(h, "%d:%s|", len(id.UserID), id.UserID)
		for _, r := range id.Roles {
			fmt.Fprintf(h, "%d:%s|", len(r), r)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

// ErrUnavailable wraps a failure to resolve a credential that is not the
// credential's fault (the database or Parse Server did not answer): the
// transport answers 503, not 401.
var ErrUnavailable = errors.New("identity could not be resolved")

// Authenticate is the transport's per-request step: auth recognises the
// request's credential, the resolver resolves it, and the result is the
// request's context bound to that identity (Bind). A key naming no identity
// keeps the environment identity and only records its name, as without
// PARSE_MCP_HTTP_AUTH. Errors wrap authn.ErrUnauthorized (answer 401) or
// ErrUnavailable (answer 503); their text is for the operator log and never
// quotes a credential.
func (r *Resolver) Authenticate(auth authn.Authenticator) func(*http.Request) (context.Context, error) {
	return func(req *http.Request) (context.Context, error) {
		ctx := req.Context()
		// The transport's client key, set for this call (SECURITY.md
		// "Per-request identity": refused credentials per address).
		client := callinfo.From(ctx).Client
		p, err := auth.Authenticate(req)
		switch {
		case errors.Is(err, authn.ErrNoCredential):
			return nil, fmt.Errorf("%w: no credential of any configured mode", authn.ErrUnauthorized)
		case err != nil && !errors.Is(err, authn.ErrUnauthorized):
			return nil, r.refused(ctx, client, fmt.Errorf("%w: %v", authn.ErrUnauthorized, err))
		case err != nil:
			return nil, r.refused(ctx, client, err)
		}
		s, ok := r.fromCache(p)
		if !ok {
			if limited := r.limited(ctx, client); limited != nil {
				return nil, limited
			}
			s, err = r.Resolve(ctx, p)
		}
		switch {
		case err != nil && !errors.Is(err, authn.ErrUnauthorized):
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		case err != nil:
			return nil, r.refused(ctx, client, err)
		case s == nil:
			info := callinfo.From(req.Context())
			info.Credential = p.ClientID
			return callinfo.With(req.Context(), info), nil
		}
		return Bind(req.Context(), s), nil
	}
}
