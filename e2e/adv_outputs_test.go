package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// revealed is text as a person or a program reads it back: JSON escapes
// (at any depth) and percent escapes decoded, and the characters a
// terminal shows as nothing removed.
func revealed(text string) string {
	text = regexp.MustCompile(`\\+u([0-9a-fA-F]{4})`).ReplaceAllStringFunc(text, func(m string) string {
		v, _ := strconv.ParseUint(m[len(m)-4:], 16, 32)
		return string(rune(v))
	})
	text = regexp.MustCompile(`\\+/`).ReplaceAllString(text, "/")
	if u, err := url.PathUnescape(text); err == nil {
		text = u
	}
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) || r < 0x20 && r != '\n' {
			return -1
		}
		return r
	}, text)
}

// TestEchoedKeyInAnyDisguiseNeverShown: an embeddings endpoint echoes the
// request's key in its error body disguised — a zero-width space or a
// variation selector inserted, a control character inserted (the log's
// JSON escapes it), every character JSON-escaped, percent-encoded in lower
// case. Neither `embed`'s stderr, `call`'s stderr nor the operator log file
// carries it in a form a reader can put back together (SECURITY.md
// "Secrets in output").
func TestEchoedKeyInAnyDisguiseNeverShown(t *testing.T) {
	const key = "emb-adv/secret-key-0001"
	disguises := map[string]func(string) string{
		"zero-width space":   func(k string) string { return k[:5] + "\u200b" + k[5:] },
		"variation selector": func(k string) string { return k[:5] + "\ufe0f" + k[5:] },
		"control character":  func(k string) string { return k[:5] + "\x01" + k[5:] },
		"json escapes": func(k string) string {
			var b strings.Builder
			for _, r := range k {
				b.WriteString(`\u00` + strconv.FormatInt(int64(r), 16))
			}
			return b.String()
		},
		"lower-case percent": func(k string) string { return strings.ReplaceAll(url.PathEscape(k), "%2F", "%2f") },
	}
	for name, disguise := range disguises {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"error":{"message":"bad key ` + disguise(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) + `"}}`))
			}))
			defer srv.Close()
			dir := t.TempDir()
			logFile := filepath.Join(dir, "operator.log")
			envv := []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "PARSE_MCP_LOG_FILE=" + logFile, "PARSE_MCP_LOG_LEVEL=info",
				"PARSE_MCP_EMBEDDINGS_URL=" + srv.URL + "/v1", "PARSE_MCP_EMBEDDINGS_MODEL=m", "PARSE_MCP_EMBEDDINGS_API_KEY=" + key}
			_, embedErr, _ := runCLI(t, envv, "--demo", "embed", "Song", "--all")
			_, callErr, _ := runCLI(t, envv, "--demo", "call", "semantic_search", `{"query":"harbor"}`)
			logged, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			for where, text := range map[string]string{"embed stderr": embedErr, "call stderr": callErr, "log file": string(logged)} {
				if !strings.Contains(text, "HTTP 401") {
					t.Errorf("%s lacks the endpoint's refusal:\n%s", where, text)
				}
				if strings.Contains(revealed(text), "secret-key") {
					t.Errorf("%s carries the key, disguised:\n%s", where, text)
				}
			}
		})
	}
}

// TestLLMBaseURLPasswordNeverShown: the password in LLM_BASE_URL's user
// info is a secret: a mistyped URL is refused without being repeated, and
// a server (sent that password as Basic auth, there being no key) that
// echoes it in its error shows it masked.
func TestLLMBaseURLPasswordNeverShown(t *testing.T) {
	const password = "llm-url-password-0123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pw, _ := r.BasicAuth()
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"wrong password ` + pw + `"}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	base := "http://me:" + password + "@" + strings.TrimPrefix(srv.URL, "http://") + "/v1?key=llm-query-key-0123"
	for _, tc := range []struct{ base, want string }{
		{"htps" + strings.TrimPrefix(base, "http"), "LLM_BASE_URL: is not an http(s) URL"},
		{base, "HTTP 401: wrong password ********"},
	} {
		envv := []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "LLM_PROVIDER=openai-compatible", "LLM_BASE_URL=" + tc.base, "LLM_MODEL=m", "LLM_API_KEY="}
		out, stderr, code := runCLI(t, envv, "--demo", "ask", "q")
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.base, code, stderr, tc.want)
		}
		if text := revealed(out + stderr); strings.Contains(text, "password-0123") || strings.Contains(text, "query-key") {
			t.Errorf("%s: the URL's secrets are shown:\n%s", tc.base, text)
		}
	}
}

// TestAnswerSmugglesNoHiddenBytes: a model answer that hides a byte after
// every visible letter (one of the 256 variation selectors each) reaches
// the terminal of `ask` and `chat` as the visible sentence only; an emoji's
// presentation selector stays.
func TestAnswerSmugglesNoHiddenBytes(t *testing.T) {
	visible, hidden := "Hello there, nothing to see", "send the vault"
	var answer strings.Builder
	for i, r := range visible {
		answer.WriteRune(r)
		if i < len(hidden) {
			answer.WriteRune(0xE0100 + rune(hidden[i]))
		}
	}
	answer.WriteString(" \u2764\ufe0f")
	srv := chunkedModel(t, answer.String())
	dir := t.TempDir()
	envv := []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "LLM_PROVIDER=openai-compatible", "LLM_BASE_URL=" + srv.URL + "/v1", "LLM_MODEL=m"}
	askOut, askErr, code := runCLI(t, envv, "--demo", "ask", "q")
	if code != 0 {
		t.Fatalf("ask: exit %d\n%s", code, askErr)
	}
	chatOut, chatErr, code := runWithStdin(t, envv, "q\n", "--demo", "chat")
	if code != 0 {
		t.Fatalf("chat: exit %d\n%s", code, chatErr)
	}
	for where, out := range map[string]string{"ask": askOut, "chat": chatOut} {
		if !strings.Contains(out, visible+" \u2764\ufe0f") || strings.ContainsFunc(out, func(r rune) bool { return r >= 0xE0100 && r <= 0xE01EF || r >= 0xFE00 && r < 0xFE0F }) {
			t.Errorf("%s printed %q", where, out)
		}
	}
}
