package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/parse-mcp/parse-mcp/internal/embed"
)

// TestTelemetryRowsReturned: parse_mcp_tool_result_rows_total moves by
// exactly the rows the results held (JSON rows, a text format's rows, one
// object), and not for a call that returns no rows or fails.
func TestTelemetryRowsReturned(t *testing.T) {
	addr := freeAddr(t)
	c := stdioClient(t, "PARSE_MCP_METRICS_ADDR="+addr)
	rows := func(f map[string]float64) {
		t.Helper()
		_, fam := scrape(t, addr)
		for tool, want := range f {
			if got := counterValue(fam, "parse_mcp_tool_result_rows_total", map[string]string{"gen_ai_tool_name": tool}); got != want {
				t.Errorf("rows of %s: %v, want %v", tool, got, want)
			}
		}
	}
	rows(map[string]float64{"query_class": 0, "get_object": 0})

	out := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 3, "keys": []string{"title"}})
	jsonRows, _ := out["result_count"].(float64)
	out = callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 2, "format": "csv", "keys": []string{"title"}})
	csvRows, _ := out["row_count"].(float64)
	if jsonRows != 3 || csvRows != 2 {
		t.Fatalf("the results hold %v and %v rows, want 3 and 2", jsonRows, csvRows)
	}
	out = callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 1, "keys": []string{"title"}, "shape": "objects"})
	id, _ := out["results"].([]any)[0].(map[string]any)["objectId"].(string)
	callOK(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": id})
	callOK(t, c, "count_objects", map[string]any{"class_name": "Song"})
	for tool, args := range map[string]map[string]any{
		"get_object":  {"class_name": "Song", "object_id": "doesnotexist"},
		"query_class": {"class_name": "Song", "where": map[string]any{"$nope": 1}},
	} {
		if res := call(t, c, tool, args); !res.IsError {
			t.Fatalf("%s succeeded: %s", tool, text(res))
		}
	}

	rows(map[string]float64{"query_class": 3 + 2 + 1, "get_object": 1, "count_objects": 0})
}

// TestAskTracesTheModelRequests: `ask` with OTEL_* set exports one client
// span per model request, named by the model, with the provider kind, the
// model and the token counts; the exported bytes hold neither the
// question, the answer, the API key nor the provider's address.
func TestAskTracesTheModelRequests(t *testing.T) {
	rcv := newOTLPReceiver(t)
	const question = "which-jazz-song-is-secretly-first"
	const answer = "the-answer-is-confidential-xyzzy"
	m := newScriptedModel(t, "openai", func(msgs []wireMsg) modelStep {
		if len(toolResults(msgs)) == 0 {
			return modelStep{Calls: [][2]string{{"count_objects", `{"class_name":"Song"}`}}}
		}
		return modelStep{Answer: answer}
	})
	env := append(demoEnv(t.TempDir(), m), rcv.env()...)
	stdout, stderr, code := runCLI(t, env, "--demo", "ask", question)
	if code != 0 || !strings.Contains(stdout, answer) {
		t.Fatalf("ask: exit %d\n%s\n%s", code, stdout, stderr)
	}

	var llm []*tracepb.Span
	rcv.waitSpan(t, "chat scripted", func(s *tracepb.Span) bool { return s.Name == "chat scripted" })
	rcv.mu.Lock()
	for _, s := range rcv.spans {
		if s.Name == "chat scripted" {
			llm = append(llm, s)
		}
	}
	rcv.mu.Unlock()
	if len(llm) != 2 {
		t.Fatalf("%d model request spans, want 2 (the tool call, the answer)", len(llm))
	}
	for _, s := range llm {
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("model span kind %v, want client", s.Kind)
		}
		for key, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai-compatible", "gen_ai.request.model": "scripted"} {
			if got, _ := spanAttr(s, key); got != want {
				t.Errorf("model span %s = %q, want %q", key, got, want)
			}
		}
		in := int64(-1)
		for _, kv := range s.Attributes {
			if kv.Key == "gen_ai.usage.input_tokens" {
				in = kv.Value.GetIntValue()
			}
		}
		if in != 1000 && in != 2000 {
			t.Errorf("model span input tokens %d, want the provider's 1000 or 2000", in)
		}
	}
	rcv.waitSpan(t, "tools/call count_objects", func(s *tracepb.Span) bool { return s.Name == "tools/call count_objects" })

	u, _ := url.Parse(m.URL)
	raw := rcv.allBytes()
	for _, secret := range []string{question, answer, "sk-e2e-secret-key-0001", u.Host, "/v1/chat/completions"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the exported spans contain %q", secret)
		}
	}
}

// TestTelemetryEmbeddingsCalls: embeddings requests are counted by outcome
// and the budget's remaining calls are a gauge: a budget of 2 lets two
// requests reach the endpoint and refuses the next one unsent.
func TestTelemetryEmbeddingsCalls(t *testing.T) {
	sent := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in struct {
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(req.Body).Decode(&in)
		mu.Lock()
		sent++
		mu.Unlock()
		var data []map[string]any
		for i, s := range in.Input {
			data = append(data, map[string]any{"index": i, "embedding": embed.FixtureVector(s)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	addr := freeAddr(t)
	c := stdioClient(t, policyFile(t, "demo"), "PARSE_MCP_METRICS_ADDR="+addr, "PARSE_MCP_EMBEDDINGS_BUDGET=2",
		"PARSE_MCP_EMBEDDINGS_URL="+srv.URL+"/v1", "PARSE_MCP_EMBEDDINGS_MODEL=test-model")
	gauge := func() float64 {
		t.Helper()
		_, fam := scrape(t, addr)
		m := sample(fam, "parse_mcp_embeddings_budget_remaining", nil)
		if m == nil {
			t.Fatal("no parse_mcp_embeddings_budget_remaining")
		}
		return m.GetGauge().GetValue()
	}
	if got := gauge(); got != 2 {
		t.Fatalf("budget remaining before any call: %v, want 2", got)
	}
	// A call may embed more than its query (rows without vectors yet):
	// call until the budget refuses one.
	refused := false
	for i := 0; i < 4 && !refused; i++ {
		refused = call(t, c, "semantic_search", map[string]any{"query": fmt.Sprintf("harbor %d", i), "k": 1}).IsError
	}
	if !refused {
		t.Fatal("four semantic_search calls within a budget of 2 per minute all succeeded")
	}
	_, fam := scrape(t, addr)
	mu.Lock()
	defer mu.Unlock()
	for outcome, want := range map[string]float64{"ok": float64(sent), "budget_spent": 1, "error": 0} {
		if got := counterValue(fam, "parse_mcp_embeddings_calls_total", map[string]string{"outcome": outcome}); got != want {
			t.Errorf("embeddings calls %s: %v, want %v", outcome, got, want)
		}
	}
	if sent != 2 {
		t.Errorf("%d requests reached the endpoint, want the budget's 2", sent)
	}
	if got := gauge(); got != 0 {
		t.Errorf("budget remaining after two calls: %v, want 0", got)
	}
}
