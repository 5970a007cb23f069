package mcphandler_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/mcphandler"
)

// lockedBuffer is a log a test reads while the handler writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogScrubbedAndFiltered: the operator log of an embedding service
// passes the same scrubber and JSON terminal filter as the binary's: an
// embeddings endpoint's error body quoting a secret of the configuration
// and terminal controls is logged with the secret masked and the controls
// as \u escapes (SECURITY.md "Secrets in output", "Terminal output").
func TestLogScrubbedAndFiltered(t *testing.T) {
	const confirm = "confirm-lib-secret-0123456789abcdef"
	emb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("refused " + confirm + " \u009b31m \u202eevil\u202c \u200b"))
	}))
	defer emb.Close()
	t.Setenv("PARSE_MCP_DEMO", "true")
	t.Setenv("PARSE_MCP_DEMO_DIR", t.TempDir())
	t.Setenv("PARSE_MCP_CONFIRM_SECRET", confirm)
	t.Setenv("PARSE_MCP_LOG_LEVEL", "info")
	t.Setenv("PARSE_MCP_EMBEDDINGS_URL", emb.URL+"/v1")
	t.Setenv("PARSE_MCP_EMBEDDINGS_MODEL", "m")
	var log lockedBuffer
	h, err := mcphandler.New(context.Background(), mcphandler.Options{Log: &log,
		Identify: func(*http.Request) (mcphandler.Identity, error) { return mcphandler.Identity{Role: "Admin"}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"semantic_search","arguments":{"class_name":"Song","query":"harbor"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "semantic_search"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var logged string
	for range 50 {
		if logged = log.String(); strings.Contains(logged, "HTTP 400") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logged, `refused ******** \u009b31m \u202eevil\u202c \u200b`) {
		t.Fatalf("the endpoint's refusal is not logged masked and escaped:\n%s", logged)
	}
	for _, s := range []string{confirm, "\u009b", "\u202e", "\u200b"} {
		if strings.Contains(logged, s) {
			t.Errorf("the log carries %q:\n%s", s, logged)
		}
	}
}
