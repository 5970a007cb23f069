package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// openAI speaks OpenAI Chat Completions (POST {base}/chat/completions with
// stream: true), which LM Studio, Ollama and vLLM serve too.
type openAI struct {
	kind  string
	model string
	base  string
	http  *httpClient
}

func (p *openAI) Name() string  { return p.kind }
func (p *openAI) Model() string { return p.model }

func (p *openAI) header() http.Header {
	h := http.Header{}
	if p.http.key != "" {
		h.Set("Authorization", "Bearer "+p.http.key)
	}
	return h
}

// Prepare picks an OpenAI-compatible server's first listed model when
// LLM_MODEL is unset.
func (p *openAI) Prepare(ctx context.Context) error {
	if p.model != "" {
		return nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := p.http.get(ctx, p.base+"/models", p.header(), &list); err != nil {
		return fmt.Errorf("LLM_MODEL is unset and the server's model list is unavailable: %w", err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return &ConfigError{"LLM_MODEL", "not set and the server at LLM_BASE_URL lists no model", "load a model in the server, or set LLM_MODEL"}
	}
	p.model = list.Data[0].ID
	return nil
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// openAIBody is the request body of a streamed Chat Completions call.
func openAIBody(model string, req Request) ([]byte, error) {
	msgs := []oaMessage{{Role: "system", Content: new(req.System)}}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			msgs = append(msgs, oaMessage{Role: "user", Content: new(m.Text)})
		case RoleAssistant:
			am := oaMessage{Role: "assistant"}
			if m.Text != "" || len(m.Calls) == 0 {
				am.Content = new(m.Text)
			}
			for _, c := range m.Calls {
				var tc oaToolCall
				tc.ID, tc.Type = c.ID, "function"
				tc.Function.Name, tc.Function.Arguments = c.Name, string(c.Args)
				am.ToolCalls = append(am.ToolCalls, tc)
			}
			msgs = append(msgs, am)
		case RoleTool:
			for _, r := range m.Results {
				msgs = append(msgs, oaMessage{Role: "tool", ToolCallID: r.CallID, Content: new(r.Text)})
			}
		}
	}
	body := map[string]any{
		"model":          model,
		"messages":       msgs,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	if len(req.Tools) > 0 {
		tools := make([]oaTool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i].Type = "function"
			tools[i].Function.Name, tools[i].Function.Description, tools[i].Function.Parameters = t.Name, t.Description, t.InputSchema
		}
		body["tools"] = tools
	}
	return json.Marshal(body)
}

// Stream runs one streamed completion. The stream's chunks carry
// choices[0].delta.content (answer text) and choices[0].delta.tool_calls
// (each call's id and name in its first chunk, then argument fragments by
// index; several indexes are parallel calls); the last chunk carries usage.
func (p *openAI) Stream(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	body, err := openAIBody(p.model, req)
	if err != nil {
		return Reply{}, err
	}
	s, err := p.http.post(ctx, p.base+"/chat/completions", p.header(), body)
	if err != nil {
		return Reply{}, err
	}
	defer s.Close()
	if strings.HasPrefix(s.ctype, "application/json") {
		// A server that ignores stream: true answers in one document.
		return p.whole(s, onText)
	}
	st := &oaStream{p: p, onText: onText, calls: map[int]*ToolCall{}, args: map[int]*strings.Builder{}}
	err = readSSE(s, st.event)
	if err == nil && !st.complete {
		err = errors.New("the stream ended before the reply was complete")
	}
	if err != nil {
		return st.reply, streamErr(ctx, p.kind, err)
	}
	return st.finish(), nil
}

// oaStream is one Chat Completions stream being read: the reply so far and
// the tool calls by index.
type oaStream struct {
	p        *openAI
	onText   func(string)
	reply    Reply
	text     strings.Builder
	calls    map[int]*ToolCall
	args     map[int]*strings.Builder
	next     int // index of a call whose chunk names none
	complete bool
}

// oaChunk is one chunk of a streamed completion.
type oaChunk struct {
	Choices []struct {
		Delta struct {
			Content   *string      `json:"content"`
			ToolCalls []oaToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// event reads one SSE event: a chunk, the [DONE] marker or nothing.
func (st *oaStream) event(ev sseEvent) error {
	data := strings.TrimSpace(string(ev.Data))
	if data == "[DONE]" {
		st.complete = true
		return nil
	}
	if data == "" {
		return nil
	}
	var chunk oaChunk
	if err := json.Unmarshal(ev.Data, &chunk); err != nil {
		return fmt.Errorf("%s: unreadable stream chunk: %v", st.p.kind, err)
	}
	if chunk.Error != nil {
		return &APIError{Provider: st.p.kind, Message: st.p.http.scrub(chunk.Error.Message)}
	}
	if chunk.Usage != nil {
		st.reply.Usage = Usage{In: chunk.Usage.PromptTokens, Out: chunk.Usage.CompletionTokens}
	}
	for _, ch := range chunk.Choices {
		if ch.Delta.Content != nil && *ch.Delta.Content != "" {
			st.text.WriteString(*ch.Delta.Content)
			st.onText(*ch.Delta.Content)
		}
		for _, tc := range ch.Delta.ToolCalls {
			st.toolCall(tc)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			st.reply.Stop = *ch.FinishReason
			st.complete = true
		}
	}
	return nil
}

// toolCall adds one tool-call fragment to its call.
func (st *oaStream) toolCall(tc oaToolCall) {
	i := st.next
	if tc.Index != nil {
		i = *tc.Index
	}
	c := st.calls[i]
	// A server that numbers every call 0 (or none) starts a new call with a
	// new id.
	if c != nil && tc.ID != "" && c.ID != "" && tc.ID != c.ID {
		i = len(st.calls) + 1000
		for st.calls[i] != nil {
			i++
		}
		c = nil
	}
	if c == nil {
		c = &ToolCall{}
		st.calls[i] = c
		st.args[i] = &strings.Builder{}
		if tc.Index == nil {
			st.next++
		}
	}
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Function.Name != "" {
		c.Name += tc.Function.Name
	}
	st.args[i].WriteString(tc.Function.Arguments)
}

// finish returns the complete reply: the text and the calls in index order,
// each with an id.
func (st *oaStream) finish() Reply {
	reply := st.reply
	reply.Text = st.text.String()
	idx := make([]int, 0, len(st.calls))
	for i := range st.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for n, i := range idx {
		c := st.calls[i]
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", n)
		}
		c.Args = objectArgs(st.args[i].String())
		reply.Calls = append(reply.Calls, *c)
	}
	return reply
}

// whole reads a non-streamed completion.
func (p *openAI) whole(r io.Reader, onText func(string)) (Reply, error) {
	var doc struct {
		Choices []struct {
			Message struct {
				Content   *string      `json:"content"`
				ToolCalls []oaToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *oaUsage `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(r, maxSSELine)).Decode(&doc); err != nil {
		return Reply{}, fmt.Errorf("%s: unreadable response: %v", p.kind, err)
	}
	var reply Reply
	if doc.Usage != nil {
		reply.Usage = Usage{In: doc.Usage.PromptTokens, Out: doc.Usage.CompletionTokens}
	}
	if len(doc.Choices) == 0 {
		return reply, fmt.Errorf("%s: the response has no choices", p.kind)
	}
	m := doc.Choices[0].Message
	if m.Content != nil {
		reply.Text = *m.Content
		onText(reply.Text)
	}
	for n, tc := range m.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", n)
		}
		reply.Calls = append(reply.Calls, ToolCall{ID: id, Name: tc.Function.Name, Args: objectArgs(tc.Function.Arguments)})
	}
	reply.Stop = doc.Choices[0].FinishReason
	return reply, nil
}

// streamErr prefers the context's error (Ctrl-C) over the read error it
// caused; a provider's own error is passed on as it is.
func streamErr(ctx context.Context, kind string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, ok := errors.AsType[*APIError](err); ok {
		return err
	}
	return fmt.Errorf("%s: the stream broke off: %w", kind, err)
}
