package app

import (
	"maps"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
)

// TestHTTPAuthRefusesModesNotInThisBuild: a listed mode whose constructor is
// not registered in AuthModes stops the start with a configuration error
// naming the variable, instead of being skipped.
func TestHTTPAuthRefusesModesNotInThisBuild(t *testing.T) {
	saved := maps.Clone(AuthModes)
	t.Cleanup(func() { AuthModes = saved })
	AuthModes = map[string]func(*config.Config, *App) (authn.Authenticator, error){}
	for _, mode := range []string{"jwt", "oauth"} {
		_, err := (&App{}).HTTPAuth(&config.Config{HTTPAuth: "parse-session," + mode})
		if err == nil || !strings.HasPrefix(err.Error(), "PARSE_MCP_HTTP_AUTH: mode "+mode+" is not available in this build") {
			t.Errorf("%s: %v", mode, err)
		}
	}
	if a, err := (&App{}).HTTPAuth(&config.Config{}); a != nil || err != nil {
		t.Errorf("unset: %v, %v; want no per-request authentication", a, err)
	}
}
