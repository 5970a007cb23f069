package app

import (
	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/oauth"
)

// The oauth mode (docs/team.md "Serve a team" → "oauth"): the grants live in the
// app's database, logins go through the bridge, every scope is capped at
// PARSE_MCP_PERMISSIONS, and the login limits share the rate-window store.
func init() {
	AuthModes[authn.ModeOAuth] = func(cfg *config.Config, a *App) (authn.Authenticator, error) {
		return oauth.New(oauth.Config{
			PublicURL: cfg.PublicURL,
			Tier:      cfg.Permissions,
			Store:     a.Store,
			Parse:     a.Deps.Bridge,
			Log:       a.Deps.Log,
			Limits:    a.rates,
		})
	}
}
