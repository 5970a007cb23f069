package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/authn"
)

// TestHTTPAuthHooks: with per-request authentication a refused credential
// gets the fixed 401 and the mode's challenge, a failure to resolve one gets
// 503 (not 401), and the modes' own routes are served without /mcp's
// authentication.
func TestHTTPAuthHooks(t *testing.T) {
	routes := http.NewServeMux()
	routes.HandleFunc("GET /.well-known/oauth-protected-resource", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "metadata") })
	auth := &HTTPAuth{
		Identify: func(r *http.Request) (context.Context, error) {
			if r.Header.Get("Authorization") == "Bearer down" {
				return nil, errors.New("the database did not answer")
			}
			return nil, fmt.Errorf("%w: no credential", authn.ErrUnauthorized)
		},
		Challenge: func(*http.Request) string {
			return `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`
		},
		Routes: routes,
	}
	h := MountHTTP(t.Context(), nil, HTTPOptions{Log: zerolog.Nop(), Auth: auth}, false)
	do := func(method, path, bearer string) *http.Response {
		r := httptest.NewRequest(method, path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	resp := do("POST", "/mcp", "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 401 || string(body) != unauthorizedBody || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer resource_metadata=") {
		t.Fatalf("no credential: %d %s %q", resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := do("POST", "/mcp", "down"); resp.StatusCode != 503 || resp.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("resolution failed: %d, want 503 without a challenge", resp.StatusCode)
	}
	if resp := do("GET", "/.well-known/oauth-protected-resource", ""); resp.StatusCode != 200 {
		t.Fatalf("the mode's route: %d", resp.StatusCode)
	}
	if resp := do("GET", "/elsewhere", ""); resp.StatusCode != 404 {
		t.Fatalf("an unknown path: %d", resp.StatusCode)
	}
}
