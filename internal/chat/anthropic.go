package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// anthropicVersion is the Messages API version header.
const anthropicVersion = "2023-06-01"

// anthropicMaxTokens bounds one reply (the API requires a bound).
const anthropicMaxTokens = 4096

// anthropic speaks the Anthropic Messages API (POST {base}/v1/messages with
// stream: true).
type anthropic struct {
	model string
	base  string
	http  *httpClient
}

func (p *anthropic) Name() string                  { return KindAnthropic }
func (p *anthropic) Model() string                 { return p.model }
func (p *anthropic) Prepare(context.Context) error { return nil }

func (p *anthropic) url() string {
	if strings.HasSuffix(p.base, "/v1") {
		return p.base + "/messages"
	}
	return p.base + "/v1/messages"
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// anthropicBody is the request body of a streamed Messages call: tool calls
// are tool_use blocks of the assistant message; their results, tool_result
// blocks of the next user message.
func anthropicBody(model string, req Request) ([]byte, error) {
	var msgs []anMessage
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			msgs = append(msgs, anMessage{Role: "user", Content: []anBlock{{Type: "text", Text: m.Text}}})
		case RoleAssistant:
			am := anMessage{Role: "assistant"}
			if m.Text != "" {
				am.Content = append(am.Content, anBlock{Type: "text", Text: m.Text})
			}
			for _, c := range m.Calls {
				input := c.Args
				var obj map[string]json.RawMessage
				if json.Unmarshal(input, &obj) != nil {
					input = json.RawMessage("{}") // the API takes an object only
				}
				am.Content = append(am.Content, anBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
			}
			if len(am.Content) == 0 {
				am.Content = []anBlock{{Type: "text", Text: "(no answer)"}}
			}
			msgs = append(msgs, am)
		case RoleTool:
			um := anMessage{Role: "user"}
			for _, r := range m.Results {
				text := r.Text
				if text == "" {
					text = "(empty result)"
				}
				um.Content = append(um.Content, anBlock{Type: "tool_result", ToolUseID: r.CallID, Content: text, IsError: r.IsError})
			}
			msgs = append(msgs, um)
		}
	}
	body := map[string]any{
		"model":      model,
		"max_tokens": anthropicMaxTokens,
		"system":     req.System,
		"messages":   msgs,
		"stream":     true,
	}
	if len(req.Tools) > 0 {
		tools := make([]anTool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = anTool(t)
		}
		body["tools"] = tools
	}
	return json.Marshal(body)
}

// Stream runs one streamed Messages call. Events: message_start (input
// tokens), content_block_start (a text or tool_use block), content_block_delta
// (text_delta, input_json_delta), content_block_stop, message_delta (stop
// reason, output tokens), message_stop, ping, and error.
func (p *anthropic) Stream(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	body, err := anthropicBody(p.model, req)
	if err != nil {
		return Reply{}, err
	}
	h := http.Header{}
	h.Set("x-api-key", p.http.key)
	h.Set("anthropic-version", anthropicVersion)
	s, err := p.http.post(ctx, p.url(), h, body)
	if err != nil {
		return Reply{}, err
	}
	defer s.Close()
	st := &anStream{p: p, onText: onText, blocks: map[int]*anStreamBlock{}}
	err = readSSE(s, st.event)
	if err == nil && !st.complete {
		err = errors.New("the stream ended before message_stop")
	}
	if err != nil {
		return st.reply, streamErr(ctx, KindAnthropic, err)
	}
	return st.finish(), nil
}

// anStream is one Messages stream being read: the reply so far and the
// content blocks by index, in the order they started.
type anStream struct {
	p        *anthropic
	onText   func(string)
	reply    Reply
	text     strings.Builder
	blocks   map[int]*anStreamBlock
	order    []int
	complete bool
}

// anStreamBlock is one content block of a streamed reply.
type anStreamBlock struct {
	kind string
	call ToolCall
	args strings.Builder
}

// anEvent is one event of a streamed Messages call.
type anEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Usage struct {
			InputTokens              int `json:"input_tokens"`
			OutputTokens             int `json:"output_tokens"`
			CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
			CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// event reads one SSE event, by its type; content_block_stop and ping carry
// nothing the reply needs.
func (st *anStream) event(ev sseEvent) error {
	if len(ev.Data) == 0 {
		return nil
	}
	var e anEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return fmt.Errorf("anthropic: unreadable stream event: %v", err)
	}
	switch e.Type {
	case "message_start":
		u := e.Message.Usage
		st.reply.Usage.In = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		st.reply.Usage.Out = u.OutputTokens
	case "content_block_start":
		st.blockStart(&e)
	case "content_block_delta":
		st.blockDelta(&e)
	case "message_delta":
		if e.Delta.StopReason != "" {
			st.reply.Stop = e.Delta.StopReason
		}
		if e.Usage.OutputTokens > 0 {
			st.reply.Usage.Out = e.Usage.OutputTokens // cumulative
		}
	case "message_stop":
		st.complete = true
	case "error":
		msg := e.Error.Message
		if e.Error.Type != "" {
			msg = e.Error.Type + ": " + msg
		}
		return &APIError{Provider: KindAnthropic, Message: st.p.http.scrub(msg)}
	}
	return nil
}

// blockStart opens a text or tool_use block.
func (st *anStream) blockStart(e *anEvent) {
	b := &anStreamBlock{kind: e.ContentBlock.Type}
	if b.kind == "tool_use" {
		b.call = ToolCall{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name}
	}
	if e.ContentBlock.Text != "" {
		st.text.WriteString(e.ContentBlock.Text)
		st.onText(e.ContentBlock.Text)
	}
	st.blocks[e.Index] = b
	st.order = append(st.order, e.Index)
}

// blockDelta adds answer text, or a fragment of a tool call's input.
func (st *anStream) blockDelta(e *anEvent) {
	switch e.Delta.Type {
	case "text_delta":
		st.text.WriteString(e.Delta.Text)
		st.onText(e.Delta.Text)
	case "input_json_delta":
		if b := st.blocks[e.Index]; b != nil {
			b.args.WriteString(e.Delta.PartialJSON)
		}
	}
}

// finish returns the complete reply: the text and the tool_use blocks as
// calls, in the order they started.
func (st *anStream) finish() Reply {
	reply := st.reply
	reply.Text = st.text.String()
	for _, i := range st.order {
		b := st.blocks[i]
		if b.kind != "tool_use" {
			continue
		}
		b.call.Args = objectArgs(b.args.String())
		reply.Calls = append(reply.Calls, b.call)
	}
	return reply
}
