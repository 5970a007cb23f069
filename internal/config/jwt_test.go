package config

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateJWT(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	for _, tt := range []struct {
		name    string
		mutate  func(*Config)
		wantVar string // "" = valid
	}{
		{"JWKS over https", func(c *Config) { c.JWTJWKSURL = "https://id.example.com/.well-known/jwks.json" }, ""},
		{"JWKS over http on loopback", func(c *Config) { c.JWTJWKSURL = "http://127.0.0.1:9000/jwks" }, ""},
		{"JWKS over http elsewhere", func(c *Config) { c.JWTJWKSURL = "http://id.example.com/jwks" }, "PARSE_MCP_JWT_JWKS_URL"},
		{"JWKS with user info", func(c *Config) { c.JWTJWKSURL = "https://u:p@id.example.com/jwks" }, "PARSE_MCP_JWT_JWKS_URL"},
		{"JWKS not a URL", func(c *Config) { c.JWTJWKSURL = "id.example.com/jwks" }, "PARSE_MCP_JWT_JWKS_URL"},
		{"secret", func(c *Config) { c.JWTSecret = NewSecret(secret) }, ""},
		{"short secret", func(c *Config) { c.JWTSecret = NewSecret(secret[:31]) }, "PARSE_MCP_JWT_SECRET"},
		{"JWKS and secret", func(c *Config) {
			c.JWTJWKSURL = "https://id.example.com/jwks"
			c.JWTSecret = NewSecret(secret)
		}, "PARSE_MCP_JWT_SECRET"},
		{"user claim", func(c *Config) { c.JWTUserClaim = "https://app.example.com/parse_user" }, ""},
		{"user claim too long", func(c *Config) { c.JWTUserClaim = strings.Repeat("x", 257) }, "PARSE_MCP_JWT_USER_CLAIM"},
		{"auth provider", func(c *Config) { c.JWTAuthProvider = "google" }, ""},
		{"auth provider with a dot", func(c *Config) { c.JWTAuthProvider = "google.id" }, "PARSE_MCP_JWT_AUTH_PROVIDER"},
		{"auth provider with $", func(c *Config) { c.JWTAuthProvider = "$where" }, "PARSE_MCP_JWT_AUTH_PROVIDER"},
		{"auth provider of 64", func(c *Config) { c.JWTAuthProvider = strings.Repeat("g", 64) }, ""},
		{"auth provider too long", func(c *Config) { c.JWTAuthProvider = strings.Repeat("g", 65) }, "PARSE_MCP_JWT_AUTH_PROVIDER"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(c)
			err := c.Validate()
			var ce *Error
			switch {
			case tt.wantVar == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantVar != "" && (!errors.As(err, &ce) || ce.Variable != tt.wantVar):
				t.Fatalf("got %v, want an error naming %s", err, tt.wantVar)
			case err != nil && strings.Contains(err.Error(), secret[:16]):
				t.Fatalf("the error quotes the secret: %v", err)
			}
		})
	}
}
