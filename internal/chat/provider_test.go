package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// wireServer is a local server speaking a provider's wire format: each
// request is answered by the next step of a script, and every request is
// recorded (path, headers, decoded body).
type wireServer struct {
	*httptest.Server
	mu    sync.Mutex
	steps []func(w http.ResponseWriter, r *http.Request)
	reqs  []recorded
}

type recorded struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

func newWireServer(t *testing.T, steps ...func(w http.ResponseWriter, r *http.Request)) *wireServer {
	t.Helper()
	s := &wireServer{steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		s.mu.Lock()
		n := len(s.reqs)
		s.reqs = append(s.reqs, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		var step func(http.ResponseWriter, *http.Request)
		if n < len(s.steps) {
			step = s.steps[n]
		} else if len(s.steps) > 0 {
			step = s.steps[len(s.steps)-1]
		}
		s.mu.Unlock()
		if step == nil {
			http.Error(w, "no step", http.StatusTeapot)
			return
		}
		step(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *wireServer) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

// sse writes server-sent events, flushing each: "event: name\ndata: json\n\n"
// (name may be "" for OpenAI's data-only stream).
func sse(w http.ResponseWriter, events ...[2]string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		if e[0] != "" {
			fmt.Fprintf(w, "event: %s\n", e[0])
		}
		fmt.Fprintf(w, "data: %s\n\n", e[1])
		w.(http.Flusher).Flush()
	}
}

func data(s string) [2]string { return [2]string{"", s} }

// oaText streams an OpenAI answer in pieces, then usage and [DONE].
func oaText(pieces ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var ev [][2]string
		ev = append(ev, data(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`))
		for _, p := range pieces {
			b, _ := json.Marshal(p)
			ev = append(ev, data(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`+string(b)+`},"finish_reason":null}]}`))
		}
		ev = append(ev, data(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
			data(`{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}}`),
			data(`[DONE]`))
		sse(w, ev...)
	}
}

// oaCalls streams tool calls the way OpenAI does: the first chunk of each
// call has its index, id and name, later chunks argument fragments; calls
// of one reply are interleaved when parallel.
func oaCalls(calls ...ToolCall) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var ev [][2]string
		for i, c := range calls {
			ev = append(ev, data(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]},"finish_reason":null}]}`, i, c.ID, c.Name)))
		}
		// Fragments in three pieces per call, interleaved across calls.
		for part := range 3 {
			for i, c := range calls {
				a := string(c.Args)
				lo, hi := part*len(a)/3, (part+1)*len(a)/3
				frag, _ := json.Marshal(a[lo:hi])
				ev = append(ev, data(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"finish_reason":null}]}`, i, frag)))
			}
		}
		ev = append(ev, data(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			data(`{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20}}`), data(`[DONE]`))
		sse(w, ev...)
	}
}

func status(code int, header map[string]string, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func testProvider(t *testing.T, kind, base string, mod func(*Config)) Provider {
	t.Helper()
	c := Config{Kind: kind, APIKey: "sk-test-secret-123456", Model: "test-model", BaseURL: base, RetryBase: 10 * time.Millisecond, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&c)
	}
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var sampleTools = []ToolSpec{{Name: "count_objects", Description: "Count objects.", InputSchema: json.RawMessage(`{"type":"object","properties":{"class_name":{"type":"string"}},"required":["class_name"]}`)}}

func TestOpenAIStreamsText(t *testing.T) {
	srv := newWireServer(t, oaText("There are ", "600", " songs."))
	p := testProvider(t, KindOpenAI, srv.URL+"/v1", nil)
	var pieces []string
	reply, err := p.Stream(context.Background(), Request{System: "sys", Messages: []Message{{Role: RoleUser, Text: "how many songs?"}}, Tools: sampleTools},
		func(s string) { pieces = append(pieces, s) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pieces, "|") != "There are |600| songs." || reply.Text != "There are 600 songs." || len(reply.Calls) != 0 {
		t.Fatalf("pieces %q, reply %+v", pieces, reply)
	}
	if reply.Usage != (Usage{In: 100, Out: 7}) || reply.Stop != "stop" {
		t.Fatalf("usage %+v stop %q", reply.Usage, reply.Stop)
	}
	req := srv.requests()[0]
	if req.Path != "/v1/chat/completions" || req.Header.Get("Authorization") != "Bearer sk-test-secret-123456" {
		t.Fatalf("path %s, auth %q", req.Path, req.Header.Get("Authorization"))
	}
	if req.Body["model"] != "test-model" || req.Body["stream"] != true || req.Body["stream_options"].(map[string]any)["include_usage"] != true {
		t.Fatalf("body %v", req.Body)
	}
	msgs := req.Body["messages"].([]any)
	if m := msgs[0].(map[string]any); m["role"] != "system" || m["content"] != "sys" {
		t.Fatalf("system message %v", m)
	}
	tool := req.Body["tools"].([]any)[0].(map[string]any)
	fn := tool["function"].(map[string]any)
	if tool["type"] != "function" || fn["name"] != "count_objects" || fn["parameters"].(map[string]any)["required"] == nil {
		t.Fatalf("tool %v", tool)
	}
}

func TestOpenAIParallelToolCalls(t *testing.T) {
	want := []ToolCall{
		{ID: "call_a", Name: "count_objects", Args: json.RawMessage(`{"class_name":"Song","where":{"genre":"rock"}}`)},
		{ID: "call_b", Name: "count_objects", Args: json.RawMessage(`{"class_name":"Artist"}`)},
	}
	srv := newWireServer(t, oaCalls(want...))
	p := testProvider(t, KindOpenAICompatible, srv.URL+"/v1", nil)
	reply, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}, Tools: sampleTools}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Calls) != 2 || reply.Stop != "tool_calls" {
		t.Fatalf("reply %+v", reply)
	}
	for i, c := range reply.Calls {
		if c.ID != want[i].ID || c.Name != want[i].Name || string(c.Args) != string(want[i].Args) {
			t.Errorf("call %d = %+v (%s), want %+v (%s)", i, c, c.Args, want[i], want[i].Args)
		}
	}
}

// TestOpenAIToolHistoryWire: the assistant's calls go back as tool_calls
// and the results as role "tool" messages bound by tool_call_id.
func TestOpenAIToolHistoryWire(t *testing.T) {
	srv := newWireServer(t, oaText("done"))
	p := testProvider(t, KindOpenAI, srv.URL+"/v1", nil)
	msgs := []Message{
		{Role: RoleUser, Text: "q"},
		{Role: RoleAssistant, Calls: []ToolCall{{ID: "call_1", Name: "count_objects", Args: json.RawMessage(`{"class_name":"Song"}`)}, {ID: "call_2", Name: "get_schema", Args: json.RawMessage(`{}`)}}},
		{Role: RoleTool, Results: []ToolResult{{CallID: "call_1", Name: "count_objects", Text: `{"count":3}`}, {CallID: "call_2", Name: "get_schema", Text: "refused", IsError: true}}},
	}
	if _, err := p.Stream(context.Background(), Request{System: "s", Messages: msgs}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	got := srv.requests()[0].Body["messages"].([]any)
	if len(got) != 5 {
		t.Fatalf("messages %v", got)
	}
	am := got[2].(map[string]any)
	tcs := am["tool_calls"].([]any)
	if am["role"] != "assistant" || am["content"] != nil || len(tcs) != 2 {
		t.Fatalf("assistant message %v", am)
	}
	fn := tcs[0].(map[string]any)["function"].(map[string]any)
	if tcs[0].(map[string]any)["id"] != "call_1" || fn["name"] != "count_objects" || fn["arguments"] != `{"class_name":"Song"}` {
		t.Fatalf("tool call %v", tcs[0])
	}
	for i, id := range []string{"call_1", "call_2"} {
		m := got[3+i].(map[string]any)
		if m["role"] != "tool" || m["tool_call_id"] != id {
			t.Fatalf("tool message %v", m)
		}
	}
}

// TestOpenAIUnnumberedCalls: a server that numbers every call 0 (some
// local servers) still yields separate calls, told apart by their ids.
func TestOpenAIUnnumberedCalls(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w,
			data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"count_objects","arguments":"{\"class_name\":\"Song\"}"}}]}}]}`),
			data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"count_objects","arguments":"{\"class_name\":\"Album\"}"}}]}}]}`),
			data(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), data(`[DONE]`))
	})
	p := testProvider(t, KindOpenAICompatible, srv.URL, nil)
	reply, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Calls) != 2 || string(reply.Calls[1].Args) != `{"class_name":"Album"}` {
		t.Fatalf("calls %+v", reply.Calls)
	}
}

func TestOpenAICompatibleDefaultModel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"qwen2.5-7b-instruct","object":"model"},{"id":"other"}]}`)
	}))
	defer srv.Close()
	p, err := New(Config{Kind: KindOpenAICompatible, BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Prepare(context.Background()); err != nil || p.Model() != "qwen2.5-7b-instruct" {
		t.Fatalf("model %q, %v", p.Model(), err)
	}
}

// anText streams an Anthropic answer: message_start, one text block, the
// usage in message_delta, message_stop (with a ping in between).
func anText(pieces ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		ev := [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"usage":{"input_tokens":200,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"ping", `{"type":"ping"}`},
		}
		for _, p := range pieces {
			b, _ := json.Marshal(p)
			ev = append(ev, [2]string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(b) + `}}`})
		}
		ev = append(ev, [2]string{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			[2]string{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}`},
			[2]string{"message_stop", `{"type":"message_stop"}`})
		sse(w, ev...)
	}
}

// anCalls streams a text block then tool_use blocks whose input arrives as
// input_json_delta fragments (several blocks: parallel tool use).
func anCalls(lead string, calls ...ToolCall) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		ev := [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[],"usage":{"input_tokens":300,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, lead)},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		}
		for i, c := range calls {
			idx := i + 1
			ev = append(ev, [2]string{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, idx, c.ID, c.Name)})
			a := string(c.Args)
			for _, frag := range []string{"", a[:len(a)/2], a[len(a)/2:]} {
				b, _ := json.Marshal(frag)
				ev = append(ev, [2]string{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, idx, b)})
			}
			ev = append(ev, [2]string{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx)})
		}
		ev = append(ev, [2]string{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":40}}`},
			[2]string{"message_stop", `{"type":"message_stop"}`})
		sse(w, ev...)
	}
}

func TestAnthropicStreamsTextAndParallelToolUse(t *testing.T) {
	calls := []ToolCall{
		{ID: "toolu_1", Name: "count_objects", Args: json.RawMessage(`{"class_name":"Song"}`)},
		{ID: "toolu_2", Name: "count_objects", Args: json.RawMessage(`{"class_name":"Artist","where":{"verified":true}}`)},
	}
	srv := newWireServer(t, anCalls("Let me count.", calls...), anText("600 songs", ", 12 verified artists."))
	p := testProvider(t, KindAnthropic, srv.URL, nil)
	var streamed strings.Builder
	reply, err := p.Stream(context.Background(), Request{System: "sys", Messages: []Message{{Role: RoleUser, Text: "q"}}, Tools: sampleTools}, func(s string) { streamed.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Let me count." || streamed.String() != reply.Text || reply.Stop != "tool_use" || reply.Usage != (Usage{300, 40}) {
		t.Fatalf("reply %+v", reply)
	}
	if len(reply.Calls) != 2 {
		t.Fatalf("calls %+v", reply.Calls)
	}
	for i, c := range reply.Calls {
		if c.ID != calls[i].ID || string(c.Args) != string(calls[i].Args) {
			t.Errorf("call %d = %+v %s", i, c, c.Args)
		}
	}
	req := srv.requests()[0]
	if req.Path != "/v1/messages" || req.Header.Get("x-api-key") != "sk-test-secret-123456" || req.Header.Get("anthropic-version") != anthropicVersion || req.Header.Get("Authorization") != "" {
		t.Fatalf("path %s headers %v", req.Path, req.Header)
	}
	if req.Body["system"] != "sys" || req.Body["stream"] != true || req.Body["max_tokens"] == nil {
		t.Fatalf("body %v", req.Body)
	}
	tool := req.Body["tools"].([]any)[0].(map[string]any)
	if tool["name"] != "count_objects" || tool["input_schema"] == nil {
		t.Fatalf("tool %v", tool)
	}

	// The next request carries the tool_use blocks back and the results as
	// tool_result blocks of one user message.
	history := []Message{{Role: RoleUser, Text: "q"}, {Role: RoleAssistant, Text: reply.Text, Calls: reply.Calls},
		{Role: RoleTool, Results: []ToolResult{{CallID: "toolu_1", Text: `{"count":600}`}, {CallID: "toolu_2", Text: "refused", IsError: true}}}}
	reply, err = p.Stream(context.Background(), Request{System: "sys", Messages: history, Tools: sampleTools}, func(string) {})
	if err != nil || reply.Text != "600 songs, 12 verified artists." || reply.Usage != (Usage{200, 12}) {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	msgs := srv.requests()[1].Body["messages"].([]any)
	am := msgs[1].(map[string]any)
	blocks := am["content"].([]any)
	if am["role"] != "assistant" || len(blocks) != 3 || blocks[1].(map[string]any)["type"] != "tool_use" || blocks[1].(map[string]any)["input"].(map[string]any)["class_name"] != "Song" {
		t.Fatalf("assistant message %v", am)
	}
	um := msgs[2].(map[string]any)
	res := um["content"].([]any)
	r1, r2 := res[0].(map[string]any), res[1].(map[string]any)
	if um["role"] != "user" || r1["type"] != "tool_result" || r1["tool_use_id"] != "toolu_1" || r1["content"] != `{"count":600}` || r2["is_error"] != true {
		t.Fatalf("tool results %v", um)
	}
}

// TestAnthropicErrorEvent: an error event in the middle of a stream
// (overloaded) ends the reply with the provider's message.
func TestAnthropicErrorEvent(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, [2]string{"message_start", `{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}`},
			[2]string{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	})
	p := testProvider(t, KindAnthropic, srv.URL, nil)
	_, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) {})
	var ae *APIError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "overloaded_error: Overloaded") {
		t.Fatalf("err %v", err)
	}
}

// TestRetryAfter429: a 429 is retried after the Retry-After the server
// asked for, and the answer then streams.
func TestRetryAfter429(t *testing.T) {
	srv := newWireServer(t, status(429, map[string]string{"Retry-After": "1"}, `{"error":{"message":"Rate limit reached","type":"requests"}}`), oaText("ok"))
	var waits []time.Duration
	p := testProvider(t, KindOpenAI, srv.URL, func(c *Config) {
		c.OnRetry = func(_ int, wait time.Duration, reason string) {
			waits = append(waits, wait)
			if reason != "HTTP 429" {
				t.Errorf("reason %q", reason)
			}
		}
	})
	began := time.Now()
	reply, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) {})
	if err != nil || reply.Text != "ok" {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	if len(waits) != 1 || waits[0] != time.Second || time.Since(began) < time.Second {
		t.Fatalf("waits %v after %v", waits, time.Since(began))
	}
}

func TestRetryStatuses(t *testing.T) {
	fail500 := status(500, nil, `{"error":{"message":"server error"}}`)
	cases := []struct {
		name      string
		steps     []func(http.ResponseWriter, *http.Request)
		wantErr   string
		wantCalls int
	}{
		{"5xx then ok", []func(http.ResponseWriter, *http.Request){status(503, nil, "upstream down"), status(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), oaText("ok")}, "", 3},
		{"5xx every time", []func(http.ResponseWriter, *http.Request){fail500}, "HTTP 500: server error", 4},
		{"401 not retried, key scrubbed", []func(http.ResponseWriter, *http.Request){status(401, nil, `{"error":{"message":"Incorrect API key provided: sk-test-secret-123456. You can find your API key at https://platform.openai.com/account/api-keys."}}`)}, "HTTP 401: Incorrect API key provided: [redacted]", 1},
		{"400 not retried", []func(http.ResponseWriter, *http.Request){status(400, nil, `{"error":{"message":"Invalid schema for function 'x'"}}`)}, "HTTP 400: Invalid schema", 1},
		{"429 with a long Retry-After is not waited for", []func(http.ResponseWriter, *http.Request){status(429, map[string]string{"Retry-After": "3600"}, `{"error":{"message":"quota"}}`)}, "retry after 1h0m0s", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newWireServer(t, tc.steps...)
			p := testProvider(t, KindOpenAI, srv.URL, nil)
			reply, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) {})
			if tc.wantErr == "" {
				if err != nil || reply.Text != "ok" {
					t.Fatalf("reply %+v, %v", reply, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "sk-test-secret") {
				t.Fatalf("the key reached the error: %v", err)
			}
			if n := len(srv.requests()); n != tc.wantCalls {
				t.Fatalf("%d requests, want %d", n, tc.wantCalls)
			}
		})
	}
}

// TestStreamIdleTimeout: a server that stops sending mid-stream is given up
// on after the timeout.
func TestStreamIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, data(`{"choices":[{"index":0,"delta":{"content":"par"}}]}`))
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	p := testProvider(t, KindOpenAI, srv.URL, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	began := time.Now()
	_, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "LLM_TIMEOUT") || time.Since(began) > 3*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(began))
	}
}

// TestStreamCancel: cancelling the context ends the stream at once and the
// server sees its request go away.
func TestStreamCancel(t *testing.T) {
	gone := make(chan struct{})
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, data(`{"choices":[{"index":0,"delta":{"content":"thinking"}}]}`))
		<-r.Context().Done()
		close(gone)
	})
	p := testProvider(t, KindOpenAI, srv.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := p.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's request was not cancelled")
	}
}

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		env     map[string]string
		wantErr string
		kind    string
		model   string
		base    string
	}{
		{env: map[string]string{}, wantErr: "LLM_PROVIDER: not set"},
		{env: map[string]string{"LLM_PROVIDER": "openai"}, wantErr: "LLM_API_KEY: not set"},
		{env: map[string]string{"LLM_PROVIDER": "openai", "LLM_API_KEY": "k"}, kind: KindOpenAI, model: DefaultOpenAIModel, base: "https://api.openai.com/v1"},
		{env: map[string]string{"LLM_PROVIDER": "Anthropic", "LLM_API_KEY": "k"}, kind: KindAnthropic, model: DefaultAnthropicModel, base: "https://api.anthropic.com"},
		{env: map[string]string{"LLM_PROVIDER": "openai-compatible"}, wantErr: "LLM_BASE_URL: not set"},
		{env: map[string]string{"LLM_BASE_URL": "http://127.0.0.1:9/v1/"}, kind: KindOpenAICompatible, base: "http://127.0.0.1:9/v1"},
		{env: map[string]string{"LLM_PROVIDER": "ollama", "LLM_MODEL": "llama3.1"}, kind: KindOpenAICompatible, model: "llama3.1", base: "http://localhost:11434/v1"},
		{env: map[string]string{"LLM_PROVIDER": "lmstudio"}, kind: KindOpenAICompatible, base: "http://localhost:1234/v1"},
		{env: map[string]string{"LLM_PROVIDER": "gemini"}, wantErr: `unknown provider "gemini"`},
		{env: map[string]string{"LLM_PROVIDER": "vllm", "LLM_BASE_URL": "localhost:8000"}, wantErr: "not an http(s) URL"},
		{env: map[string]string{"LLM_PROVIDER": "vllm", "LLM_TIMEOUT": "soon"}, wantErr: "LLM_TIMEOUT"},
		{env: map[string]string{"LLM_PROVIDER": "vllm", "LLM_BASE_URL": "htps://u:pw-secret@h/v1?key=q-secret"}, wantErr: "not an http(s) URL"},
	}
	for _, tc := range cases {
		c, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%v: err %v, want %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.Kind != tc.kind || c.Model != tc.model || c.BaseURL != tc.base {
			t.Errorf("%v: %+v, %v", tc.env, c, err)
		}
	}
}

func TestPrices(t *testing.T) {
	p, err := LoadPrices(`{"my-model":{"input":1,"output":2},"gpt-4.1-mini":{"input":0.5,"output":2}}`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		kind, model string
		want        Price
		ok          bool
	}{
		{KindOpenAI, "gpt-4.1-mini", Price{0.5, 2}, true}, // overridden
		{KindOpenAI, "gpt-4.1-mini-2025-04-14", Price{0.5, 2}, true},
		{KindOpenAI, "gpt-4.1-2025-04-14", Price{2, 8}, true},
		{KindAnthropic, "claude-sonnet-4-5-20250929", Price{3, 15}, true},
		{KindOpenAICompatible, "my-model", Price{1, 2}, true},
		{KindOpenAICompatible, "qwen2.5-7b", Price{}, true}, // local: free
		{KindOpenAI, "gpt-99", Price{}, false},
	}
	for _, tc := range cases {
		got, ok := p.Lookup(tc.kind, tc.model)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: %v %v, want %v %v", tc.kind, tc.model, got, ok, tc.want, tc.ok)
		}
	}
	if c := (Price{0.4, 1.6}).Cost(Usage{In: 1_000_000, Out: 500_000}); c != 1.2 {
		t.Errorf("cost %v", c)
	}
	for _, bad := range []string{`{"m":{"input":-1}}`, `[1]`, "/nonexistent/prices.json"} {
		if _, err := LoadPrices(bad); err == nil || !strings.Contains(err.Error(), "LLM_PRICES") {
			t.Errorf("LoadPrices(%s): %v", bad, err)
		}
	}
}

func TestReadSSE(t *testing.T) {
	in := ": keep-alive\n\nevent: a\ndata: 1\ndata: 2\n\ndata: {\"x\":3}\r\n\r\nevent: end\ndata: last"
	var got []string
	err := readSSE(strings.NewReader(in), func(ev sseEvent) error {
		got = append(got, ev.Event+"="+string(ev.Data))
		return nil
	})
	if err != nil || strings.Join(got, "|") != `a=1
2|={"x":3}|end=last` {
		t.Fatalf("%q %v", got, err)
	}
}

// TestErrorEchoingKeyDisguised: a provider error echoing the key with a
// zero-width space inserted, placed where the 300-byte cut would halve it,
// leaves no part of it in the message (the process scrubber could not
// recognise half a key).
func TestErrorEchoingKeyDisguised(t *testing.T) {
	for name, key := range map[string]string{"zero-width": "sk-test\u200b-secret-123456", "json escapes": `s\u006b-test-secret-123456`} {
		t.Run(name, func(t *testing.T) {
			body := `{"error":{"message":"` + strings.Repeat("x", 290) + ` ` + key + `"}}`
			srv := newWireServer(t, status(401, nil, body))
			p := testProvider(t, KindOpenAI, srv.URL, func(c *Config) { c.APIKey = "sk-test-secret-123456" })
			_, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) {})
			if err == nil || strings.Contains(err.Error(), "test") {
				t.Fatalf("err %v", err)
			}
		})
	}
}
