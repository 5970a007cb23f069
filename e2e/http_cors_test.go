package e2e

import (
	"net/http"
	"testing"
)

// TestHTTPCORSForLoopbackBrowsers: a browser client on a loopback origin
// (MCP Inspector in direct mode) gets its preflight answered and can read
// Mcp-Session-Id; other origins are still refused before anything else.
func TestHTTPCORSForLoopbackBrowsers(t *testing.T) {
	h := startHTTP(t)
	origin := "http://localhost:6274"

	resp, _ := h.request(http.MethodOptions, "/mcp", "", map[string]string{
		"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,mcp-session-id",
	})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight: %d, want 204", resp.StatusCode)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != origin {
		t.Fatalf("Access-Control-Allow-Origin = %q", got)
	}
	if resp.Header.Get("Access-Control-Allow-Headers") == "" || resp.Header.Get("Access-Control-Allow-Methods") == "" {
		t.Fatalf("preflight lacks allow headers: %v", resp.Header)
	}

	resp, body := h.request(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"browser","version":"1"}}}`,
		map[string]string{"Origin": origin})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize from a loopback origin: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Access-Control-Expose-Headers") == "" || resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("response lacks CORS headers: %v", resp.Header)
	}

	resp, _ = h.request(http.MethodOptions, "/mcp", "", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign preflight: %d %v, want 403 without CORS headers", resp.StatusCode, resp.Header)
	}
}
