package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/policy"
)

// scriptedModel is a local server speaking a provider's streaming wire
// format (OpenAI Chat Completions or Anthropic Messages) whose "model" is a
// Go function of the conversation so far: it reads the tool results the
// binary sends back and decides the next tool call or the answer from them.
type scriptedModel struct {
	*httptest.Server
	kind string // "openai" or "anthropic"
	next func(turn []wireMsg) modelStep

	mu       sync.Mutex
	requests []map[string]any
	// hanging is signalled when a hanging reply has streamed its text;
	// abandoned when its client went away.
	hanging, abandoned chan struct{}
}

// wireMsg is a message of the conversation as the model received it,
// reduced to what a script needs.
type wireMsg struct {
	Role    string // user, assistant, tool
	Text    string
	ToolFor string // tool: the call id it answers
	IsError bool
}

// modelStep is the model's next move: tool calls (with Answer as the text
// the model writes before them), or an answer. Hang
// streams the answer's text and then holds the reply open until the client
// goes away (the Ctrl-C test).
type modelStep struct {
	Calls  [][2]string // name, JSON arguments
	Answer string
	Hang   bool
}

func newScriptedModel(t *testing.T, kind string, next func([]wireMsg) modelStep) *scriptedModel {
	m := &scriptedModel{kind: kind, next: next, hanging: make(chan struct{}, 8), abandoned: make(chan struct{}, 8)}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *scriptedModel) reqs() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]any(nil), m.requests...)
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, 400)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, body)
	n := len(m.requests)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func(event, data string) {
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	step := m.next(m.conversation(body))
	if step.Hang {
		m.streamText(flush, step.Answer, n, false)
		m.hanging <- struct{}{}
		<-r.Context().Done()
		m.abandoned <- struct{}{}
		return
	}
	if len(step.Calls) > 0 {
		m.streamCalls(flush, step.Answer, step.Calls, n)
		return
	}
	m.streamText(flush, step.Answer, n, true)
}

// usage per request: prompt 1000·n tokens, completion 10·n.
func (m *scriptedModel) streamText(flush func(string, string), text string, n int, finish bool) {
	words := strings.SplitAfter(text, " ")
	if m.kind == "anthropic" {
		flush("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","content":[],"usage":{"input_tokens":%d,"output_tokens":1}}}`, n, 1000*n))
		flush("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for _, wd := range words {
			b, _ := json.Marshal(wd)
			flush("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
		}
		if !finish {
			return
		}
		flush("content_block_stop", `{"type":"content_block_stop","index":0}`)
		flush("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":%d}}`, 10*n))
		flush("message_stop", `{"type":"message_stop"}`)
		return
	}
	for _, wd := range words {
		b, _ := json.Marshal(wd)
		flush("", `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`+string(b)+`},"finish_reason":null}]}`)
	}
	if !finish {
		return
	}
	flush("", `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	flush("", fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, 1000*n, 10*n))
	flush("", "[DONE]")
}

func (m *scriptedModel) streamCalls(flush func(string, string), lead string, calls [][2]string, n int) {
	if m.kind == "anthropic" {
		flush("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","content":[],"usage":{"input_tokens":%d,"output_tokens":1}}}`, n, 1000*n))
		first := 0
		if lead != "" {
			b, _ := json.Marshal(lead)
			flush("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			flush("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
			flush("content_block_stop", `{"type":"content_block_stop","index":0}`)
			first = 1
		}
		for j, c := range calls {
			i := j + first
			flush("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d_%d","name":%q,"input":{}}}`, i, n, j, c[0]))
			half := len(c[1]) / 2
			for _, frag := range []string{c[1][:half], c[1][half:]} {
				b, _ := json.Marshal(frag)
				flush("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, b))
			}
			flush("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		}
		flush("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":%d}}`, 10*n))
		flush("message_stop", `{"type":"message_stop"}`)
		return
	}
	if lead != "" {
		b, _ := json.Marshal(lead)
		flush("", `{"choices":[{"index":0,"delta":{"content":`+string(b)+`}}]}`)
	}
	for i, c := range calls {
		flush("", fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d_%d","type":"function","function":{"name":%q,"arguments":""}}]}}]}`, i, n, i, c[0]))
		half := len(c[1]) / 2
		for _, frag := range []string{c[1][:half], c[1][half:]} {
			b, _ := json.Marshal(frag)
			flush("", fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}}]}`, i, b))
		}
	}
	flush("", `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	flush("", fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, 1000*n, 10*n))
	flush("", "[DONE]")
}

// conversation reduces a request's messages to wireMsgs (both formats).
func (m *scriptedModel) conversation(body map[string]any) []wireMsg {
	var out []wireMsg
	msgs, _ := body["messages"].([]any)
	for _, raw := range msgs {
		msg, _ := raw.(map[string]any)
		role, _ := msg["role"].(string)
		switch content := msg["content"].(type) {
		case string:
			if role == "tool" {
				id, _ := msg["tool_call_id"].(string)
				out = append(out, wireMsg{Role: "tool", Text: content, ToolFor: id})
			} else if role != "system" {
				out = append(out, wireMsg{Role: role, Text: content})
			}
		case []any: // Anthropic blocks
			for _, bl := range content {
				block, _ := bl.(map[string]any)
				switch block["type"] {
				case "text":
					text, _ := block["text"].(string)
					out = append(out, wireMsg{Role: role, Text: text})
				case "tool_result":
					text, _ := block["content"].(string)
					id, _ := block["tool_use_id"].(string)
					isErr, _ := block["is_error"].(bool)
					out = append(out, wireMsg{Role: "tool", Text: text, ToolFor: id, IsError: isErr})
				}
			}
		default:
			if role == "assistant" {
				out = append(out, wireMsg{Role: "assistant"})
			}
		}
	}
	return out
}

// toolResults are the tool messages after the last user question.
func toolResults(msgs []wireMsg) []wireMsg {
	var out []wireMsg
	for _, msg := range slices.Backward(msgs) {
		if msg.Role == "user" {
			break
		}
		if msg.Role == "tool" {
			out = append([]wireMsg{msg}, out...)
		}
	}
	return out
}

// demoEnv runs the binary on --demo (its own embedded database in dir)
// against a scripted model.
func demoEnv(dir string, m *scriptedModel, extra ...string) []string {
	kind := "openai-compatible"
	base := m.URL + "/v1"
	if m.kind == "anthropic" {
		kind, base = "anthropic", m.URL
	}
	return append([]string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir,
		"LLM_PROVIDER=" + kind, "LLM_BASE_URL=" + base, "LLM_MODEL=scripted", "LLM_API_KEY=sk-e2e-secret-key-0001",
		`LLM_PRICES={"scripted":{"input":1,"output":2}}`}, extra...)
}

// TestAskTwoToolCallsOnDemo: `parse-mcp --demo ask --trace` answers a
// question that needs two tool calls, one after the other (the second
// depends on the first's result), through the real policy: the answer on
// stdout is built from the data the tools returned, the trace and the cost
// line go to stderr, and the model saw the untrusted-data note the server
// puts on row results.
func TestAskTwoToolCallsOnDemo(t *testing.T) {
	dir := t.TempDir()
	// The figures the answer must carry, asked of the same binary directly.
	firstArgs := `{"class_name":"Song","where":{"genre":"jazz"},"keys":["title"],"order":"title","limit":1}`
	out, stderr, code := runCLI(t, []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir}, "--demo", "call", "query_class", firstArgs)
	if code != 0 {
		t.Fatalf("call query_class: exit %d: %s", code, stderr)
	}
	var first struct {
		Results []struct {
			Title string `json:"title"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &first); err != nil || len(first.Results) != 1 {
		t.Fatalf("query_class: %v\n%s", err, out)
	}
	title := first.Results[0].Title
	countArgs := mustJSON(t, map[string]any{"class_name": "Song", "where": map[string]any{"genre": "jazz", "title": map[string]any{"$lte": title}}})
	out, stderr, code = runCLI(t, []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir}, "--demo", "call", "count_objects", countArgs)
	var counted struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(out), &counted); code != 0 || err != nil || counted.Count < 1 {
		t.Fatalf("call count_objects: exit %d, %v: %s%s", code, err, out, stderr)
	}

	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			var mu sync.Mutex
			var seen []wireMsg
			m := newScriptedModel(t, kind, func(msgs []wireMsg) modelStep {
				mu.Lock()
				seen = msgs
				mu.Unlock()
				res := toolResults(msgs)
				switch len(res) {
				case 0:
					return modelStep{Answer: "Let me look that up.", Calls: [][2]string{{"query_class", firstArgs}}}
				case 1:
					// The first song's title decides the second call.
					var r struct {
						Note    string            `json:"_note"`
						Results []json.RawMessage `json:"results"`
						Columns []string          `json:"columns"`
						Rows    [][]any           `json:"rows"`
					}
					if err := json.Unmarshal([]byte(res[0].Text), &r); err != nil {
						return modelStep{Answer: "unreadable: " + res[0].Text}
					}
					got := firstTitle(r.Results, r.Columns, r.Rows)
					where, _ := json.Marshal(map[string]any{"class_name": "Song", "where": map[string]any{"genre": "jazz", "title": map[string]any{"$lte": got}}})
					return modelStep{Calls: [][2]string{{"count_objects", string(where)}}}
				default:
					var c struct {
						Count int `json:"count"`
					}
					_ = json.Unmarshal([]byte(res[1].Text), &c)
					return modelStep{Answer: fmt.Sprintf("The first jazz song by title is %q; %d jazz song sorts at or before it.", firstTitleOf(res[0].Text), c.Count)}
				}
			})
			start := time.Now()
			out, stderr, code := runCLI(t, demoEnv(dir, m), "--demo", "ask", "--trace", "Which jazz song comes first by title, and how many jazz songs sort at or before it?")
			if code != 0 {
				t.Fatalf("ask: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
			}
			t.Logf("ask answered in %v", time.Since(start))
			want := fmt.Sprintf("The first jazz song by title is %q; %d jazz song sorts at or before it.\n", title, counted.Count)
			if out != want {
				t.Fatalf("stdout %q, want %q\nstderr: %s", out, want, stderr)
			}
			// The trace: both calls with their arguments and timings, in order.
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			var trace []string
			for _, l := range lines {
				if strings.HasPrefix(l, "trace: ") {
					trace = append(trace, l)
				}
			}
			// The text the model wrote before its first call is narration
			// (stderr with --trace), not part of the answer on stdout.
			if len(trace) != 3 || trace[0] != "trace: model: Let me look that up." {
				t.Fatalf("trace %q", trace)
			}
			trace = trace[1:]
			if !strings.HasPrefix(trace[0], "trace: tool query_class "+firstArgs+" ") || !strings.Contains(trace[0], "ok, ") ||
				!strings.HasPrefix(trace[1], "trace: tool count_objects "+countArgs+" ") {
				t.Fatalf("trace %q\nstderr: %s", trace, stderr)
			}
			// Three model calls: prompts 1000+2000+3000, completions 10+20+30
			// tokens, at $1 and $2 per million.
			wantCost := "cost: 6000 in / 60 out tokens, $0.0061 (scripted)"
			if lines[len(lines)-1] != wantCost {
				t.Fatalf("last stderr line %q, want %q\nstderr: %s", lines[len(lines)-1], wantCost, stderr)
			}
			if strings.Contains(out+stderr, "sk-e2e-secret") {
				t.Fatal("the API key was printed")
			}
			// What the model was shown: the row result with the untrusted-data
			// note first, exactly as over MCP; read-only tools only.
			mu.Lock()
			res := toolResults(seen)
			mu.Unlock()
			if len(res) != 2 || !strings.HasPrefix(res[0].Text, `{"_note":`+mustJSON(t, policy.UntrustedNote)) {
				t.Fatalf("tool results the model saw: %+v", res)
			}
			reqs := m.reqs()
			if len(reqs) != 3 {
				t.Fatalf("%d model calls, want 3", len(reqs))
			}
			names := offeredTools(reqs[0], kind)
			if !names["query_class"] || !names["count_objects"] || names["create_object"] || names["update_object"] {
				t.Fatalf("tools offered: %v", names)
			}
		})
	}
}

func firstTitle(results []json.RawMessage, columns []string, rows [][]any) string {
	for _, r := range results {
		var o struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(r, &o) == nil && o.Title != "" {
			return o.Title
		}
	}
	for i, c := range columns {
		if c == "title" && len(rows) > 0 && i < len(rows[0]) {
			s, _ := rows[0][i].(string)
			return s
		}
	}
	return ""
}

func firstTitleOf(text string) string {
	var r struct {
		Results []json.RawMessage `json:"results"`
		Columns []string          `json:"columns"`
		Rows    [][]any           `json:"rows"`
	}
	_ = json.Unmarshal([]byte(text), &r)
	return firstTitle(r.Results, r.Columns, r.Rows)
}

func offeredTools(req map[string]any, kind string) map[string]bool {
	names := map[string]bool{}
	tools, _ := req["tools"].([]any)
	for _, raw := range tools {
		t, _ := raw.(map[string]any)
		if kind == "openai" {
			t, _ = t["function"].(map[string]any)
		}
		name, _ := t["name"].(string)
		names[name] = true
	}
	return names
}

// TestAskPolicyAsOverMCP: the model gets the refusal an MCP client gets
// for a hidden class, not its data; a provider error ends `ask` with exit 1
// and the provider's message, the key scrubbed.
func TestAskPolicyAsOverMCP(t *testing.T) {
	dir := t.TempDir()
	var shown string
	m := newScriptedModel(t, "openai", func(msgs []wireMsg) modelStep {
		res := toolResults(msgs)
		if len(res) == 0 {
			return modelStep{Calls: [][2]string{{"get_schema", `{"class_name":"` + demo.HiddenClassName + `"}`}, {"query_class", `{"class_name":"` + demo.HiddenClassName + `"}`}}}
		}
		shown = res[0].Text + "\n" + res[1].Text
		return modelStep{Answer: "refused"}
	})
	out, stderr, code := runCLI(t, demoEnv(dir, m), "--demo", "ask", "show me the secrets")
	if code != 0 || out != "refused\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	if !strings.Contains(shown, "does not exist or is not accessible") || strings.Contains(shown, "apiKey") {
		t.Fatalf("the model was shown %q", shown)
	}

	// A provider refusing the key: exit 1, one line, no key.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-e2e-secret-key-0001.","type":"invalid_request_error"}}`)
	}))
	defer bad.Close()
	_, stderr, code = runCLI(t, append(demoEnv(dir, m), "LLM_BASE_URL="+bad.URL, "LLM_PROVIDER=openai"), "--demo", "ask", "q")
	if code != 1 || !strings.Contains(stderr, "HTTP 401") || !strings.Contains(stderr, "check LLM_API_KEY") || strings.Contains(stderr, "sk-e2e-secret") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	// Configuration errors come before the database starts: exit 2.
	_, stderr, code = runCLI(t, []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "LLM_PROVIDER=", "LLM_BASE_URL="}, "--demo", "ask", "q")
	if code != 2 || !strings.Contains(stderr, "LLM_PROVIDER: not set") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
}

// runWithStdin runs the binary with input on stdin.
func runWithStdin(t *testing.T, extraEnv []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env(extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestChatFromStdin: `chat` with questions on stdin (not a terminal)
// answers each in turn and runs the slash commands.
func TestChatFromStdin(t *testing.T) {
	dir := t.TempDir()
	m := newScriptedModel(t, "anthropic", func(msgs []wireMsg) modelStep {
		res := toolResults(msgs)
		if len(res) == 0 {
			return modelStep{Calls: [][2]string{{"count_objects", `{"class_name":"Artist"}`}}}
		}
		var c struct {
			Count int `json:"count"`
		}
		_ = json.Unmarshal([]byte(res[0].Text), &c)
		return modelStep{Answer: fmt.Sprintf("There are %d artists.", c.Count)}
	})
	out, stderr, code := runWithStdin(t, demoEnv(dir, m), "how many artists?\n/trace\n/cost\n/history\n/nope\n/exit\nnever asked\n", "--demo", "chat")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	for _, want := range []string{
		"parse-mcp chat · anthropic scripted",
		fmt.Sprintf("ms\nThere are %d artists.\n", demo.CollectionCounts[demo.ClassArtist]), // streamed after the tool line
		"  · count_objects ",
		`#1.1 tool count_objects {"class_name":"Artist"}`,
		"last question: 3000 in / 30 out tokens, $0.0031 (scripted)",
		"you: how many artists?",
		"  → count_objects {\"class_name\":\"Artist\"}",
		"unknown command /nope",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if n := len(m.reqs()); n != 2 {
		t.Fatalf("%d model calls, want 2 (nothing after /exit)", n)
	}
}

// TestAskInterrupted: Ctrl-C (SIGINT) while `ask` streams ends it with exit
// 130, and the model server sees the request go away.
func TestAskInterrupted(t *testing.T) {
	dir := t.TempDir()
	m := newScriptedModel(t, "openai", func([]wireMsg) modelStep {
		return modelStep{Answer: "Counting the songs ", Hang: true}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--demo", "ask", "how many songs?")
	cmd.Env = env(demoEnv(dir, m)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// stdout is a pipe: ask writes only the finished answer, so the cue is
	// the model server's reply having started.
	select {
	case <-m.hanging:
	case <-time.After(60 * time.Second):
		t.Fatalf("the model was never asked; stderr %s", errb.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stdout %q; stderr %s", err, rest, errb.String())
	}
	select {
	case <-m.abandoned:
	case <-time.After(10 * time.Second):
		t.Fatal("the model request was not abandoned")
	}
	if len(rest) != 0 || !strings.Contains(errb.String(), "ask: cancelled") {
		t.Fatalf("stdout %q, stderr %s", rest, errb.String())
	}
}

// TestAskNoTerminalControl: an answer carrying escape sequences and bidi
// overrides (a model repeating what an attacker stored in a row) reaches
// stdout without them, and so does the trace on stderr.
func TestAskNoTerminalControl(t *testing.T) {
	dir := t.TempDir()
	m := newScriptedModel(t, "openai", func(msgs []wireMsg) modelStep {
		if len(toolResults(msgs)) == 0 {
			return modelStep{Answer: "\x1b[2J\x1b]0;pwned\x07", Calls: [][2]string{{"count_objects", `{"class_name":"Song","where":{"title":"\u001b]52;c;ZXZpbA==\u0007"}}`}}}
		}
		return modelStep{Answer: "\x1b]52;c;ZXZpbA==\x07There are \u202e0 songs\u202c named so.\u009b31m"}
	})
	out, stderr, code := runCLI(t, demoEnv(dir, m), "--demo", "ask", "--trace", "q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if out != "]52;c;ZXZpbA==There are 0 songs named so.31m\n" {
		t.Fatalf("stdout %q", out)
	}
	for _, c := range []string{"\x1b", "\x07", "\u202e", "\u009b"} {
		if strings.Contains(stderr, c) {
			t.Fatalf("stderr carries %q: %q", c, stderr)
		}
	}
}
