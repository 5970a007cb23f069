package app

import (
	"fmt"
	"net/http"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/identity"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/server"
)

// AuthModes builds the authenticators of PARSE_MCP_HTTP_AUTH's modes that
// need more than the configuration, keyed by mode; each registers from a
// file of its own (httpauth_jwt.go; oauth the same way). A listed mode
// without a constructor here is refused at start-up as not available in
// this build.
var AuthModes = map[string]func(cfg *config.Config, a *App) (authn.Authenticator, error){}

// HTTPAuth is the per-request authentication of PARSE_MCP_HTTP_AUTH (nil
// when unset: the API keys and the environment identity, as before). Its
// error is a configuration error naming the variable (exit 2).
func (a *App) HTTPAuth(cfg *config.Config) (*server.HTTPAuth, error) {
	modes := cfg.HTTPAuthModes()
	if len(modes) == 0 {
		return nil, nil
	}
	var chain []authn.Authenticator
	var challengers []authn.Challenger
	routes := http.NewServeMux()
	mounted := false
	for _, m := range modes {
		var auth authn.Authenticator
		switch m {
		case authn.ModeKeys:
			named, _ := cfg.NamedAPIKeys() // validated at start-up
			auth = authn.Keys(cfg.APIKey, named)
		case authn.ModeParseSession:
			auth = authn.ParseSession()
		default:
			build, ok := AuthModes[m]
			if !ok {
				return nil, fmt.Errorf("PARSE_MCP_HTTP_AUTH: mode %s is not available in this build", m)
			}
			var err error
			if auth, err = build(cfg, a); err != nil {
				return nil, fmt.Errorf("PARSE_MCP_HTTP_AUTH: mode %s: %w", m, err)
			}
		}
		chain = append(chain, auth)
		if c, ok := auth.(authn.Challenger); ok {
			challengers = append(challengers, c)
		}
		if r, ok := auth.(authn.Router); ok {
			r.Mount(routes)
			mounted = true
		}
	}
	h := a.IdentifyWith(cfg, authn.Chain(chain...))
	if len(challengers) > 0 {
		h.Challenge = func(r *http.Request) string {
			for _, c := range challengers {
				if s := c.Challenge(r); s != "" {
					return s
				}
			}
			return ""
		}
	}
	if mounted {
		h.Routes = routes
	}
	return h, nil
}

// IdentifyWith is per-request authentication by auth: each request's
// principal is resolved against the app's database (and bridge) into the
// identity the request acts as (internal/identity).
func (a *App) IdentifyWith(cfg *config.Config, auth authn.Authenticator) *server.HTTPAuth {
	resolver := identity.New(a.Store, a.Deps.Bridge, cfg, a.Deps.Policy.Identity())
	resolver.TenantFromUser = a.Deps.Policy.TenantFromUser()
	// Refused credentials count per address in the rate windows' store:
	// shared with PARSE_MCP_LIMITS_STORE=mongodb, else this process's.
	var refusals limits.Store = limits.NewMemory()
	if a.rates != nil {
		refusals = a.rates
	}
	resolver.SetRefusals(refusals)
	return &server.HTTPAuth{Identify: resolver.Authenticate(auth), Recheck: max(cfg.IdentityCache, time.Second)}
}
