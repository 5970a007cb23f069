package app

import (
	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/jwtauth"
)

// The jwt mode (docs/team.md "Serve a team" → "jwt"): the app's identity
// provider's JWTs, the user matched to _User in this app's database.
func init() {
	AuthModes[authn.ModeJWT] = func(cfg *config.Config, a *App) (authn.Authenticator, error) {
		return jwtauth.FromConfig(cfg, a.Store, a.Deps.Log)
	}
}
