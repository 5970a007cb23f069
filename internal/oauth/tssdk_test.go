package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

type principalKey struct{}

// TestTypeScriptSDKClient: the official TypeScript MCP SDK's own OAuth
// client completes the flow against this package — metadata discovery
// from the 401, dynamic registration, PKCE, the code exchange, a refresh —
// with a scripted person at the login and consent pages, and its calls
// reach the MCP endpoint as the Parse user who signed in. (The SDK asks for
// the scope the 401's challenge names, as the 2025-11-25 revision says.) The MCP server
// here is the Go SDK's, behind Authenticate and Challenge; e2e runs the
// same script against the binary.
func TestTypeScriptSDKClient(t *testing.T) {
	node, modules := parsetest.TSSDK(t)
	f := newFixture(t)
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	srv, err := New(Config{PublicURL: hs.URL, Tier: config.TierWrite, Store: f.store, Parse: f.bridge, Log: zerolog.New(f.log)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Mount(mux)
	mcpServer := mcp.NewServer(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	mcp.AddTool(mcpServer, &mcp.Tool{Name: "whoami", Description: "the Parse user this call acts as"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p, _ := ctx.Value(principalKey{}).(authn.Principal)
		_, me, err := f.ps.Do("GET", "/users/me", nil, parsetest.AsSession(p.SessionToken))
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: me["username"].(string) + " " + p.Tier}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := srv.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", srv.Challenge(r))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}))

	script, _ := filepath.Abs("../../e2e/testdata/tssdk/oauth_client.mjs")
	out := parsetest.RunNode(t, node, script, "SDK_MODULES="+modules, "MCP_URL="+hs.URL+"/mcp",
		"PARSE_USER=alice", "PARSE_PASSWORD="+alicePassword, "TOOL=whoami", "TOOL_ARGS={}")
	var facts struct {
		Steps           []string
		Registered      bool
		AuthorizeParams map[string]string
		ConsentScopes   []string
		Iss, Scope      string
		Refresh         string
		Rotated         bool
		First, Second   struct {
			IsError bool
			Text    string
		}
	}
	if err := json.Unmarshal(out, &facts); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("facts: %s", out)
	if !facts.Registered || !slices.Contains(facts.Steps, "401") || !slices.Contains(facts.Steps, "browser") {
		t.Errorf("the SDK did not discover and register: %+v", facts)
	}
	ap := facts.AuthorizeParams
	if ap["code_challenge_method"] != "S256" || ap["resource"] != hs.URL+"/mcp" || ap["scope"] != "parse:read parse:write" || !strings.HasPrefix(ap["client_id"], clientPrefix) {
		t.Errorf("authorization request: %v", ap)
	}
	if facts.Iss != hs.URL || facts.Scope != "parse:read parse:write" || !slices.Equal(facts.ConsentScopes, []string{"parse:read", "parse:write"}) {
		t.Errorf("iss %q scope %q consent %v", facts.Iss, facts.Scope, facts.ConsentScopes)
	}
	if facts.Refresh != "AUTHORIZED" || !facts.Rotated {
		t.Errorf("refresh: %q rotated %v", facts.Refresh, facts.Rotated)
	}
	for _, r := range []struct {
		IsError bool
		Text    string
	}{facts.First, facts.Second} {
		if r.IsError || r.Text != "alice write" {
			t.Errorf("tool call: %+v", r)
		}
	}
	f.checkLog()
}
