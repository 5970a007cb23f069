package mcphandler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/parse-mcp/parse-mcp/mcphandler"
)

// A Go service mounts the MCP endpoint beside its own routes and says who
// each request acts as; here a role name its own middleware would have set
// in X-Role. Each request then sees what that Parse identity may see.
func Example() {
	// The same environment the binary reads; here the demo database.
	dir, _ := os.MkdirTemp("", "mcphandler-example-")
	defer os.RemoveAll(dir)
	os.Setenv("PARSE_MCP_DEMO", "true")
	os.Setenv("PARSE_MCP_DEMO_DIR", dir)

	identify := func(r *http.Request) (mcphandler.Identity, error) {
		role := r.Header.Get("X-Role")
		if role == "" {
			return mcphandler.Identity{}, mcphandler.ErrUnauthorized
		}
		return mcphandler.Identity{Role: role, ClientID: "example-service"}, nil
	}
	h, err := mcphandler.New(context.Background(), mcphandler.Options{Identify: identify, Log: io.Discard})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// One MCP request (protocol 2026-07-28: no session to open first).
	count := func(role string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Invoice"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"example","version":"1"}}}}`
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "count_objects")
		if role != "" {
			req.Header.Set("X-Role", role)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		i := strings.Index(string(b), `\"count\":`)
		return "count " + strings.TrimRight(strings.SplitN(string(b)[i+10:], "}", 2)[0], `\`)
	}
	fmt.Println("no identity:", count(""))
	fmt.Println("role Admin:", count("Admin"))
	fmt.Println("role Moderator:", count("Moderator"))
	// Output:
	// no identity: 401 Unauthorized
	// role Admin: count 120
	// role Moderator: count 0
}
