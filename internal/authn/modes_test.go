package authn

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

func TestModes(t *testing.T) {
	named := []config.NamedAPIKey{
		{Name: "ops", Key: config.NewSecret("ops-key-0123456789"), Master: true},
		{Name: "eds", Key: config.NewSecret("eds-key-0123456789"), Role: "Editors", Tier: config.TierReadonly},
	}
	chain := Chain(Keys("shared-key-0123456789", named), ParseSession())
	tests := []struct {
		name    string
		headers map[string]string
		want    Principal
		wantErr error
	}{
		{"nothing", nil, Principal{}, ErrNoCredential},
		{"shared key", map[string]string{"X-MCP-API-Key": "shared-key-0123456789"}, Principal{Mode: ModeKeys}, nil},
		{"named master key as bearer", map[string]string{"Authorization": "Bearer ops-key-0123456789"}, Principal{Mode: ModeKeys, ClientID: "ops", Master: true}, nil},
		{"role key", map[string]string{"X-MCP-API-Key": "eds-key-0123456789"}, Principal{Mode: ModeKeys, ClientID: "eds", Role: "Editors", Tier: config.TierReadonly}, nil},
		{"unknown X-MCP-API-Key", map[string]string{"X-MCP-API-Key": "nope-0123456789abc"}, Principal{}, ErrUnauthorized},
		{"session bearer", map[string]string{"Authorization": "bearer r:abc"}, Principal{Mode: ModeParseSession, SessionToken: "r:abc"}, nil},
		{"session header", map[string]string{"X-Parse-Session-Token": "legacy-token"}, Principal{Mode: ModeParseSession, SessionToken: "legacy-token"}, nil},
		{"unknown bearer", map[string]string{"Authorization": "Bearer eyJhbGciOi"}, Principal{}, ErrNoCredential},
		// A bearer that looks like a session never reaches master, even
		// when a key of that text would.
		{"session token is not a key", map[string]string{"Authorization": "Bearer r:ops-key-0123456789"}, Principal{Mode: ModeParseSession, SessionToken: "r:ops-key-0123456789"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			got, err := chain.Authenticate(r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil && tt.headers != nil {
				for _, v := range tt.headers {
					if len(v) > 8 && strings.Contains(err.Error(), v[7:]) {
						t.Fatalf("the error quotes the credential: %v", err)
					}
				}
			}
		})
	}
}
