// Package callinfo carries what parse-mcp knows about the request it is
// serving: who sends it and, inside a tool call, which call it is. It is one
// struct under one context key, set where the fact is learnt and read
// through From (ARCHITECTURE.md "Request context"):
//
//   - the HTTP transport: the named API key the request presented, or with
//     PARSE_MCP_HTTP_AUTH the identity it acts as (Credential, Identity),
//     and whether its answer can carry a request to the client
//     (NoServerRequests);
//   - the dispatcher, for every request: the client and session it counts
//     against (Client, Session), the method, tools/list's category;
//   - tools.Tool.Handle, when a tool's handler starts: the call as the
//     client sent it (ToolCall).
//
// Every field is a plain fact; nothing here decides anything. The policy
// reads Client and Session as opaque rate-limit keys and Method to tell a
// tools/call from a tools/list; it never learns which transport set them.
package callinfo

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Info describes the request being served. The zero value is a request
// from nowhere in particular: stdio, the CLI, a test.
type Info struct {
	// Client is the opaque key of the party behind an HTTP request (its
	// named API key, else its address or the address a trusted proxy
	// forwards: server.clientOf); "" over stdio and in process. The rate
	// limit and the fair share of workers count per client.
	Client string
	// Session is the key of the HTTP session the request belongs to ("" for
	// a stateless request, stdio and in process): the rate limit's
	// per-session bucket.
	Session string
	// Credential is the name of the PARSE_MCP_API_KEYS key the request
	// presented ("" for none or the shared PARSE_MCP_API_KEY). A 2026-07-28
	// confirmation is bound to it.
	Credential string
	// Identity is the key of the identity the request acts as when the
	// HTTP transport authenticates each request (PARSE_MCP_HTTP_AUTH: a
	// named key's name, user:<id>, role:<name>, master, with a digest of
	// its posture, user and roles); "" for the environment identity. What
	// is shared per identity (subscription watchers) is keyed by it, so a
	// role change makes it another key.
	Identity string
	// Method is the JSON-RPC method ("tools/call", "tools/list", …); "" for
	// a call made in process (a resource read running its tool).
	Method string
	// ListCategory is tools/list's non-standard "category" param (nil when
	// absent).
	ListCategory *string
	// NoServerRequests: the transport cannot carry a request from the
	// server to the client (an HTTP client that does not accept an SSE
	// answer), so elicitation is not possible.
	NoServerRequests bool
	// ToolCall is the tool call being handled, as the client sent it: the
	// tool's name, its arguments with their raw JSON (key order intact),
	// the _meta progress token and a 2026-07-28 retry's input responses.
	// nil outside a tool handler.
	ToolCall *mcp.CallToolRequest
}

// RawArguments is the tool call's arguments as raw JSON (nil outside a
// tool call, or for a call made in process with decoded arguments).
func (i Info) RawArguments() json.RawMessage {
	if i.ToolCall == nil {
		return nil
	}
	return i.ToolCall.Params.RawArguments
}

type key struct{}

// With returns ctx carrying info. Callers amend what an outer layer set:
//
//	info := callinfo.From(ctx)
//	info.Method = method
//	ctx = callinfo.With(ctx, info)
func With(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, key{}, info)
}

// From returns the request's Info (the zero Info when none was set).
func From(ctx context.Context) Info {
	info, _ := ctx.Value(key{}).(Info)
	return info
}
