package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// funcTools is a Toolbox of Go functions: the session's loop is under test
// here; the real toolbox (the dispatcher and policy) is exercised by the e2e
// tests through the binary.
type funcTools struct {
	fns     map[string]func(ctx context.Context, args json.RawMessage) ToolResult
	running atomic.Int32
	peak    atomic.Int32
}

func (f *funcTools) Tools(context.Context) ([]ToolSpec, string, error) {
	var out []ToolSpec
	for name := range f.fns {
		out = append(out, ToolSpec{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return out, "server instructions here", nil
}

func (f *funcTools) Call(ctx context.Context, name string, args json.RawMessage) ToolResult {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	fn, ok := f.fns[name]
	if !ok {
		return ToolResult{IsError: true, Text: "error: tool '" + name + "' not found"}
	}
	return fn(ctx, args)
}

func TestAskRunsParallelCallsAndAnswers(t *testing.T) {
	calls := []ToolCall{
		{ID: "c1", Name: "count", Args: json.RawMessage(`{"class_name":"Song"}`)},
		{ID: "c2", Name: "count", Args: json.RawMessage(`{"class_name":"Artist"}`)},
	}
	srv := newWireServer(t, oaCalls(calls...), oaText("600 songs, 40 artists."))
	var wg sync.WaitGroup
	wg.Add(2)
	tools := &funcTools{fns: map[string]func(context.Context, json.RawMessage) ToolResult{
		"count": func(_ context.Context, args json.RawMessage) ToolResult {
			wg.Done()
			wg.Wait() // both calls run at once, or this never returns
			if strings.Contains(string(args), "Song") {
				return ToolResult{Text: `{"count":600}`}
			}
			return ToolResult{Text: `{"count":40}`}
		},
	}}
	var out strings.Builder
	var traced []TraceEntry
	s := &Session{Provider: testProvider(t, KindOpenAI, srv.URL, nil), Toolbox: tools, Out: &out, OnTool: func(e TraceEntry) { traced = append(traced, e) }}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ans, err := s.Ask(context.Background(), "how many songs and artists?")
	if err != nil {
		t.Fatal(err)
	}
	if ans.Text != "600 songs, 40 artists." || ans.Rounds != 1 || out.String() != "600 songs, 40 artists.\n" {
		t.Fatalf("answer %+v, out %q", ans, out.String())
	}
	if tools.peak.Load() != 2 || len(traced) != 2 || traced[0].Name != "count" || string(traced[1].Args) != `{"class_name":"Artist"}` {
		t.Fatalf("peak %d, trace %+v", tools.peak.Load(), traced)
	}
	if s.Last != (Usage{150, 27}) || s.Total != s.Last {
		t.Fatalf("usage last %+v total %+v", s.Last, s.Total)
	}
	// The second request carries the results in call order; the system
	// prompt carries the server's instructions and the untrusted-data rule.
	req := srv.requests()[1].Body
	msgs := req["messages"].([]any)
	if !strings.Contains(msgs[0].(map[string]any)["content"].(string), "server instructions here") ||
		!strings.Contains(msgs[0].(map[string]any)["content"].(string), "untrusted data") {
		t.Fatalf("system prompt %v", msgs[0])
	}
	if m := msgs[3].(map[string]any); m["tool_call_id"] != "c1" || m["content"] != `{"count":600}` {
		t.Fatalf("first result %v", m)
	}
	if len(s.History()) != 4 {
		t.Fatalf("history %+v", s.History())
	}
}

// TestAskRoundLimit: a model that keeps asking for tools is stopped after
// the cap, with a clear error, and the history stays well-formed (every call
// answered) for the next question.
func TestAskRoundLimit(t *testing.T) {
	srv := newWireServer(t, oaCalls(ToolCall{ID: "c", Name: "count", Args: json.RawMessage(`{"n":1}`)}))
	var ran atomic.Int32
	tools := &funcTools{fns: map[string]func(context.Context, json.RawMessage) ToolResult{
		"count": func(context.Context, json.RawMessage) ToolResult { ran.Add(1); return ToolResult{Text: "1"} },
	}}
	s := &Session{Provider: testProvider(t, KindOpenAI, srv.URL, nil), Toolbox: tools, MaxRounds: 3}
	_, err := s.Ask(context.Background(), "loop forever")
	if !errors.Is(err, ErrRoundLimit) || !strings.Contains(err.Error(), "after 3 rounds") {
		t.Fatalf("err %v", err)
	}
	if ran.Load() != 3 || len(srv.requests()) != 4 {
		t.Fatalf("%d tool runs, %d model calls", ran.Load(), len(srv.requests()))
	}
	h := s.History()
	last := h[len(h)-1]
	if last.Role != RoleTool || !last.Results[0].IsError || !strings.Contains(last.Results[0].Text, "limit of 3") {
		t.Fatalf("last history entry %+v", last)
	}
	// Default cap.
	s = &Session{Provider: testProvider(t, KindOpenAI, srv.URL, nil), Toolbox: tools}
	if _, err := s.Ask(context.Background(), "again"); !errors.Is(err, ErrRoundLimit) || !strings.Contains(err.Error(), "after 8 rounds") {
		t.Fatalf("err %v", err)
	}
}

// TestAskCancelDuringTool: cancelling while a tool runs cancels the tool's
// context (its database work) and drops the question from the history.
func TestAskCancelDuringTool(t *testing.T) {
	srv := newWireServer(t, oaText("first answer"), oaCalls(ToolCall{ID: "c", Name: "slow", Args: json.RawMessage(`{}`)}))
	ctx, cancel := context.WithCancel(context.Background())
	toolCancelled := make(chan struct{})
	tools := &funcTools{fns: map[string]func(context.Context, json.RawMessage) ToolResult{
		"slow": func(tctx context.Context, _ json.RawMessage) ToolResult {
			cancel()
			select {
			case <-tctx.Done():
				close(toolCancelled)
			case <-time.After(5 * time.Second):
			}
			return ToolResult{IsError: true, Text: "cancelled"}
		},
	}}
	s := &Session{Provider: testProvider(t, KindOpenAI, srv.URL, nil), Toolbox: tools}
	if _, err := s.Ask(context.Background(), "one"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Ask(ctx, "two")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	select {
	case <-toolCancelled:
	default:
		t.Fatal("the tool's context was not cancelled")
	}
	if h := s.History(); len(h) != 2 || h[1].Text != "first answer" {
		t.Fatalf("history after cancel %+v", h)
	}
}

func TestCompactAndReset(t *testing.T) {
	srv := newWireServer(t, oaText("600 songs."), oaText("The user asked for the song count: 600."))
	s := &Session{Provider: testProvider(t, KindOpenAI, srv.URL, nil), Toolbox: &funcTools{}}
	if _, err := s.Ask(context.Background(), "how many songs?"); err != nil {
		t.Fatal(err)
	}
	before, after, err := s.Compact(context.Background())
	if err != nil || before != 100 || after != 7 {
		t.Fatalf("compact %d → %d, %v", before, after, err)
	}
	if len(s.History()) != 0 || !strings.Contains(s.Summary(), "600") || !strings.Contains(s.systemPrompt(), "Summary of the conversation so far:\nThe user asked") {
		t.Fatalf("after compact: history %v, summary %q", s.History(), s.Summary())
	}
	if s.Total != (Usage{200, 14}) {
		t.Fatalf("total %+v", s.Total)
	}
	s.Reset()
	if s.Summary() != "" || s.Total != (Usage{200, 14}) {
		t.Fatalf("after reset: summary %q total %+v", s.Summary(), s.Total)
	}
}

// TestTruncatedStream: a stream that ends without its terminator is an
// error, not a short answer.
func TestTruncatedStream(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request) {
			if kind == KindOpenAI {
				sse(w, data(`{"choices":[{"index":0,"delta":{"content":"The answer is"}}]}`))
				return
			}
			sse(w, [2]string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The answer is"}}`})
		})
		p := testProvider(t, kind, srv.URL, nil)
		if _, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "q"}}}, func(string) {}); err == nil || !strings.Contains(err.Error(), "ended before") {
			t.Errorf("%s: err %v", kind, err)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	for in, want := range map[string]string{
		"Count objects. More text.":                    "Count objects.",
		"Count per value of a field, e.g. genre. More": "Count per value of a field, e.g. genre.",
		"One line\nsecond":                             "One line",
		"No stop":                                      "No stop",
	} {
		if got := firstSentence(in); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAskFinalOnly: for a script, only the reply that ends the question
// reaches Out; the model's text before a tool call is narration.
func TestAskFinalOnly(t *testing.T) {
	srv := newWireServer(t, anCalls("Let me count.", ToolCall{ID: "t1", Name: "count", Args: json.RawMessage(`{}`)}), anText("600 ", "songs."))
	tools := &funcTools{fns: map[string]func(context.Context, json.RawMessage) ToolResult{
		"count": func(context.Context, json.RawMessage) ToolResult { return ToolResult{Text: `{"count":600}`} },
	}}
	var out strings.Builder
	var narrated []string
	s := &Session{Provider: testProvider(t, KindAnthropic, srv.URL, nil), Toolbox: tools, Out: &out, FinalOnly: true, Narrate: func(s string) { narrated = append(narrated, s) }}
	ans, err := s.Ask(context.Background(), "how many songs?")
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "600 songs.\n" || len(narrated) != 1 || narrated[0] != "Let me count." || ans.CutOff {
		t.Fatalf("out %q, narrated %q, answer %+v", out.String(), narrated, ans)
	}
}

// TestAskCallsPerRoundCapped: a reply asking for more calls than
// MaxCallsPerRound runs the first ones; the rest are answered "not run".
func TestAskCallsPerRoundCapped(t *testing.T) {
	var calls []ToolCall
	for i := range MaxCallsPerRound + 4 {
		calls = append(calls, ToolCall{ID: fmt.Sprintf("c%d", i), Name: "count", Args: json.RawMessage(`{}`)})
	}
	srv := newWireServer(t, oaCalls(calls...), oaText("done"))
	var ran atomic.Int32
	tools := &funcTools{fns: map[string]func(context.Context, json.RawMessage) ToolResult{
		"count": func(context.Context, json.RawMessage) ToolResult { ran.Add(1); return ToolResult{Text: "1"} },
	}}
	s := &Session{Provider: testProvider(t, KindOpenAI, srv.URL, nil), Toolbox: tools}
	if _, err := s.Ask(context.Background(), "q"); err != nil {
		t.Fatal(err)
	}
	res := s.History()[2].Results
	if ran.Load() != MaxCallsPerRound || len(res) != len(calls) || len(s.Trace()) != MaxCallsPerRound {
		t.Fatalf("ran %d, %d results, %d traced", ran.Load(), len(res), len(s.Trace()))
	}
	for i, r := range res {
		if r.CallID != calls[i].ID || r.IsError != (i >= MaxCallsPerRound) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
}
