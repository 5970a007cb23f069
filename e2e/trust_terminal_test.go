package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What no terminal write of chat, ask, call or embed may carry: escape
// sequences (ESC, BEL, C1) and the invisible characters that reorder or
// hide text (SECURITY.md "Terminal output").
var terminalControls = []string{"\x1b", "\x07", "\u009b", "\u202e", "\u200b", "\u200e", "\u00ad", "\u2028", "\U000E0041", "\ufeff"}

func assertNoControls(t *testing.T, where, text string) {
	t.Helper()
	for _, c := range terminalControls {
		if strings.Contains(text, c) {
			t.Errorf("%s carries %q: %q", where, c, text)
		}
	}
}

// hostile is text an endpoint or a model sends to a terminal: a window
// title, a colour, a clipboard write, bidi and zero-width characters, a
// soft hyphen, a line separator and hidden tag characters.
const hostile = "\x1b]0;pwned\x07\x1b[31mred\u009b \u202eevil\u202c z\u200bw\u200e s\u00adh l\u2028s \U000E0041\U000E0042 b\ufeffom"

// TestEmbeddingsEchoedKeyNeverShown: an embeddings endpoint that answers
// with the request's key (and terminal escapes) in its error body: neither
// reaches `embed`'s stderr, `call`'s output or the operator log.
func TestEmbeddingsEchoedKeyNeverShown(t *testing.T) {
	const key = "emb-e2e-secret-key-0001"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"invalid api key `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+` `+hostile+`"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "operator.log")
	envv := []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "PARSE_MCP_LOG_FILE=" + logFile, "PARSE_MCP_LOG_LEVEL=info",
		"PARSE_MCP_EMBEDDINGS_URL=" + srv.URL + "/v1", "PARSE_MCP_EMBEDDINGS_MODEL=m", "PARSE_MCP_EMBEDDINGS_API_KEY=" + key}
	_, stderr, code := runCLI(t, envv, "--demo", "embed", "Song", "--all")
	if code == 0 || !strings.Contains(stderr, "HTTP 401") {
		t.Fatalf("embed against a refusing endpoint: exit %d\n%s", code, stderr)
	}
	out, callErr, _ := runCLI(t, envv, "--demo", "call", "semantic_search", `{"query":"harbor"}`)
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "HTTP 401") {
		t.Fatalf("the operator log lacks the endpoint's refusal:\n%s", logged)
	}
	// The MCP server over stdio writes the same refusal to its log.
	serverLog := filepath.Join(dir, "server.log")
	c := stdioClient(t, append(envv, "PARSE_MCP_DEMO=true", "PARSE_MCP_LOG_FILE="+serverLog)...)
	if res := call(t, c, "semantic_search", map[string]any{"query": "harbor"}); !res.IsError || strings.Contains(text(res), key) {
		t.Fatalf("semantic_search against a refusing endpoint: %s", text(res))
	}
	_ = c.Close()
	var served []byte
	for range 50 {
		if served, _ = os.ReadFile(serverLog); strings.Contains(string(served), "HTTP 401") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(string(served), "HTTP 401") {
		t.Fatalf("the server's log lacks the endpoint's refusal:\n%s", served)
	}
	for where, text := range map[string]string{"embed stderr": stderr, "call stdout": out, "call stderr": callErr, "log file": string(logged), "server log": string(served)} {
		if strings.Contains(text, key) || strings.Contains(text, key[:12]) {
			t.Errorf("%s carries the embeddings key:\n%s", where, text)
		}
	}
	for where, text := range map[string]string{"embed stderr": stderr, "call stderr": callErr, "log file": string(logged), "server log": string(served)} {
		assertNoControls(t, where, text)
	}
}

// chunkedModel is an OpenAI-compatible server streaming a fixed answer in
// the chunks given (a secret may arrive split across them).
func chunkedModel(t *testing.T, chunks ...string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", b)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAnswerCarryingSecretsMasked: an answer stream carrying the LLM key,
// the embeddings key and the confirmation secret — streamed in pieces, in
// `chat` (which streams) and `ask` (which prints the final text) — shows
// each as ********, and without the invisible characters a model could
// hide one with.
func TestAnswerCarryingSecretsMasked(t *testing.T) {
	const llmKey, embKey, confirm = "llm-e2e-secret-key-0001", "emb-e2e-secret-key-0002", "confirm-e2e-secret-0123456789abcdef"
	srv := chunkedModel(t, "Keys: llm-e2e-sec", "ret-key-0001, emb-e2e-\u200bsecret-", "key-0002 and confirm-e2e-secret-0123456789abcdef", ". Also "+hostile+".")
	dir := t.TempDir()
	envv := []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "LLM_PROVIDER=openai-compatible", "LLM_BASE_URL=" + srv.URL + "/v1",
		"LLM_MODEL=m", "LLM_API_KEY=" + llmKey, "PARSE_MCP_EMBEDDINGS_URL=fixture", "PARSE_MCP_EMBEDDINGS_API_KEY=" + embKey, "PARSE_MCP_CONFIRM_SECRET=" + confirm}
	chatOut, chatErr, code := runWithStdin(t, envv, "show me the keys\n", "--demo", "chat")
	if code != 0 {
		t.Fatalf("chat: exit %d\n%s", code, chatErr)
	}
	askOut, askErr, code := runCLI(t, envv, "--demo", "ask", "show me the keys")
	if code != 0 {
		t.Fatalf("ask: exit %d\n%s", code, askErr)
	}
	for where, text := range map[string]string{"chat stdout": chatOut, "ask stdout": askOut} {
		if !strings.Contains(text, "Keys: ********, ******** and ********. Also") {
			t.Errorf("%s: the secrets are not masked in place:\n%q", where, text)
		}
		for _, s := range []string{llmKey, embKey, confirm, "secret-key", "e2e-secret"} {
			if strings.Contains(text, s) {
				t.Errorf("%s carries %q:\n%q", where, s, text)
			}
		}
		assertNoControls(t, where, text)
	}
}

// TestModelListFailureFiltered: with LLM_MODEL unset, a failed model list
// of an OpenAI-compatible server is reported on stderr through the terminal
// filter: its message cannot retitle the window, colour or reorder text.
func TestModelListFailureFiltered(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "model list down " + hostile}})
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	dir := t.TempDir()
	envv := []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "LLM_PROVIDER=openai-compatible", "LLM_BASE_URL=" + srv.URL + "/v1", "LLM_MODEL="}
	for _, args := range [][]string{{"--demo", "ask", "q"}, {"--demo", "chat"}} {
		_, stderr, code := runWithStdin(t, envv, "q\n", args...)
		if code == 0 || !strings.Contains(stderr, "model list is unavailable") || !strings.Contains(stderr, "model list down") {
			t.Fatalf("%v: exit %d\n%q", args, code, stderr)
		}
		assertNoControls(t, fmt.Sprint(args, " stderr"), stderr)
	}
}

// TestAskToolArgumentCapped: a tool call from the model with a 6 MiB
// argument is refused as the stdio transport refuses a line over 4 MiB
// (the tool does not run; the model is told), and --trace shows a short
// line, not the argument.
func TestAskToolArgumentCapped(t *testing.T) {
	dir := t.TempDir()
	big := `{"class_name":"Song","where":{"title":"` + strings.Repeat("x", 6<<20) + `"}}`
	var told string
	m := newScriptedModel(t, "openai", func(msgs []wireMsg) modelStep {
		res := toolResults(msgs)
		if len(res) == 0 {
			return modelStep{Calls: [][2]string{{"count_objects", big}}}
		}
		told = res[0].Text
		return modelStep{Answer: "done"}
	})
	out, stderr, code := runCLI(t, demoEnv(dir, m), "--demo", "ask", "--trace", "q")
	if code != 0 || out != "done\n" {
		t.Fatalf("exit %d, stdout %q\n%.2000s", code, out, stderr)
	}
	if !strings.Contains(told, "message exceeds 4 MiB") {
		t.Fatalf("the model was told %.300q, want the 4 MiB refusal", told)
	}
	if len(stderr) > 8<<10 || !strings.Contains(stderr, fmt.Sprintf("(%d bytes)", len(big))) || !strings.Contains(stderr, "(error)") {
		t.Fatalf("trace of %d bytes: %.2000s", len(stderr), stderr)
	}
}
