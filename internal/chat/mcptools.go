package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/parse-mcp/parse-mcp/internal/version"
	"strings"
	"sync/atomic"

	"github.com/parse-mcp/parse-mcp/server"
)

// MCPToolbox runs tools through the server's Dispatcher as an in-process MCP
// client: initialize, tools/list and tools/call as JSON-RPC messages, so the
// model sees exactly the tools, results, refusals and untrusted-data notes an
// MCP client would, behind the same policy middleware.
type MCPToolbox struct {
	d    *server.Dispatcher
	sess *server.Session
	id   atomic.Int64
}

// mcpProtocolVersion is the session revision the toolbox speaks (the one
// Claude Desktop uses: initialize handshake, results with content blocks).
const mcpProtocolVersion = "2025-06-18"

// NewMCPToolbox opens a session on d.
func NewMCPToolbox(d *server.Dispatcher) *MCPToolbox {
	return &MCPToolbox{d: d, sess: server.NewSession("chat")}
}

type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (m *MCPToolbox) rpc(ctx context.Context, method string, params any) (json.RawMessage, error) {
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.id.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if len(req) > server.MaxMessageBytes {
		// The stdio transport's cap, so the model in-process can send no
		// more than a client over stdio.
		return nil, &rpcError{Code: -32600, Message: fmt.Sprintf("Invalid Request: message exceeds %d MiB", server.MaxMessageBytes>>20)}
	}
	raw := m.d.Handle(ctx, m.sess, req, func([]byte) {})
	if raw == nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: no response", method)
	}
	var resp rpcResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("%s: unreadable response", method)
	}
	if resp.Error != nil {
		return nil, &rpcError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	return resp.Result, nil
}

type rpcError struct {
	Code    int
	Message string
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (JSON-RPC %d)", e.Message, e.Code) }

// Tools initializes the session and lists the tools this configuration
// offers, with the server's instructions.
func (m *MCPToolbox) Tools(ctx context.Context) ([]ToolSpec, string, error) {
	res, err := m.rpc(ctx, "initialize", map[string]any{
		"protocolVersion": mcpProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "parse-mcp-chat", "version": version.Version},
	})
	if err != nil {
		return nil, "", fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		Instructions string `json:"instructions"`
	}
	_ = json.Unmarshal(res, &init)
	note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	m.d.Handle(ctx, m.sess, note, func([]byte) {})

	var tools []ToolSpec
	cursor := ""
	for range 100 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := m.rpc(ctx, "tools/list", params)
		if err != nil {
			return nil, "", fmt.Errorf("tools/list: %w", err)
		}
		var page struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, "", fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range page.Tools {
			schema := t.InputSchema
			if len(schema) == 0 || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			tools = append(tools, ToolSpec{Name: t.Name, Description: t.Description, InputSchema: schema})
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return tools, init.Instructions, nil
}

// Call runs one tool. The model is shown what an MCP client shows it: the
// result's text content (the untrusted-data note first where the server adds
// it), the error text of an isError result, or the message of a JSON-RPC
// error (an unknown tool, a refused security violation).
func (m *MCPToolbox) Call(ctx context.Context, name string, args json.RawMessage) ToolResult {
	res, err := m.rpc(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		var re *rpcError
		switch {
		case errors.As(err, &re):
			return ToolResult{IsError: true, Text: "error: " + re.Message}
		case ctx.Err() != nil:
			return ToolResult{IsError: true, Text: "cancelled"}
		}
		return ToolResult{IsError: true, Text: "error: " + err.Error()}
	}
	var out struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return ToolResult{IsError: true, Text: "error: unreadable tool result"}
	}
	var texts []string
	for _, c := range out.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return ToolResult{Text: strings.Join(texts, "\n"), IsError: out.IsError}
}
