package config

import (
	"fmt"
	"net/url"
	"regexp"
)

// jwtAuthProviderRe is an auth provider name as Parse keys authData by it
// (no dots or $: it becomes one field path), at most 64 characters: the
// bound is checked apart, as a counted repetition ({1,64}) compiles into a
// program of hundreds of instructions kept for the life of the process.
var jwtAuthProviderRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validateJWT checks the jwt mode's variables whenever they are set (docs/team.md
// "Serve a team" → "jwt"); which of them the mode requires is checked with
// PARSE_MCP_HTTP_AUTH.
func (c *Config) validateJWT() error {
	if c.JWTJWKSURL != "" {
		u, err := url.Parse(c.JWTJWKSURL)
		if err != nil || u.Host == "" || u.User != nil || !(u.Scheme == "https" || u.Scheme == "http" && IsLoopbackHost(u.Hostname())) {
			return &Error{"PARSE_MCP_JWT_JWKS_URL", "is not an https URL (http only on loopback) without user info", "use your identity provider's jwks_uri, e.g. https://id.example.com/.well-known/jwks.json"}
		}
		if c.JWTSecret.IsSet() {
			return &Error{"PARSE_MCP_JWT_SECRET", "is set next to PARSE_MCP_JWT_JWKS_URL", "set one of them: the JWKS for RS/PS/ES/EdDSA tokens, or the secret for HS256"}
		}
	}
	if c.JWTSecret.IsSet() && len(c.JWTSecret.Reveal()) < 32 {
		return &Error{"PARSE_MCP_JWT_SECRET", "is shorter than 32 characters", "use the identity provider's HS256 signing secret; HS256 needs at least 32 bytes"}
	}
	if len(c.JWTUserClaim) > 256 {
		return &Error{"PARSE_MCP_JWT_USER_CLAIM", "is longer than 256 characters", "name the claim holding the user, e.g. sub"}
	}
	if c.JWTAuthProvider != "" && (len(c.JWTAuthProvider) > 64 || !jwtAuthProviderRe.MatchString(c.JWTAuthProvider)) {
		return &Error{"PARSE_MCP_JWT_AUTH_PROVIDER", fmt.Sprintf("%q is not an auth provider name", c.JWTAuthProvider), "use the provider's key in _User.authData (letters, digits, _ and -), e.g. google"}
	}
	return nil
}
