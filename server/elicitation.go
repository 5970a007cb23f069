package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
)

// Server-initiated requests (elicitation/create) in the session revisions.
// A tool asks (tools.Confirm → MCPServer.RequestElicitation → the request's
// session); the request goes out on the calling request's own channel, in
// order with its notifications (stdout, or the call's SSE stream over HTTP),
// and the client's response comes back as a message without a method, which
// the Dispatcher hands to the session's pending table. 2026-07-28 has no
// server-initiated requests: tools return input_required there instead.

// pendingReply is the client's answer to one server-initiated request.
type pendingReply struct {
	result json.RawMessage
	err    *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// errNoServerRequests: the transport cannot carry a request to the client
// (an HTTP client that does not accept an SSE answer).
var errNoServerRequests = errors.New("this connection cannot carry requests to the client")

// withoutServerRequests marks a request whose transport cannot carry a
// server-initiated request.
func withoutServerRequests(ctx context.Context) context.Context {
	info := callinfo.From(ctx)
	info.NoServerRequests = true
	return callinfo.With(ctx, info)
}

// RequestElicitation sends elicitation/create to the client on this
// request's channel and waits for the answer (or the call's cancellation).
func (r *requestSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if r.GetClientCapabilities().Elicitation == nil {
		return nil, mcpserver.ErrElicitationNotSupported
	}
	if callinfo.From(r.ctx).NoServerRequests {
		return nil, fmt.Errorf("%w: %w", mcpserver.ErrElicitationNotSupported, errNoServerRequests)
	}
	raw, err := r.roundTrip(ctx, string(mcp.MethodElicitationCreate), req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the client's elicitation result: %w", err)
	}
	return &res, nil
}

// roundTrip sends one request to the client and waits for its response.
func (r *requestSession) roundTrip(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := "parse-mcp-" + strconv.FormatUint(r.Session.nextRequestID.Add(1), 10)
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	ch := make(chan pendingReply, 1)
	key := strconv.Quote(id)
	r.Session.mu.Lock()
	if r.Session.pending == nil {
		r.Session.pending = map[string]chan pendingReply{}
	}
	r.Session.pending[key] = ch
	r.Session.mu.Unlock()
	defer func() {
		r.Session.mu.Lock()
		delete(r.Session.pending, key)
		r.Session.mu.Unlock()
	}()
	select {
	case r.requests <- msg:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case reply := <-ch:
		if reply.err != nil {
			return nil, fmt.Errorf("the client answered %s with error %d: %s", method, reply.err.Code, reply.err.Message)
		}
		return reply.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliverReply hands a client's response to the server-initiated request
// waiting for it; a response to nothing pending is ignored.
func (s *Session) deliverReply(env envelope) {
	s.mu.Lock()
	ch := s.pending[string(env.ID)]
	s.mu.Unlock()
	if ch == nil {
		return
	}
	var reply pendingReply
	reply.result = env.Result
	if len(env.Error) > 0 {
		_ = json.Unmarshal(env.Error, &reply.err)
		if reply.err == nil {
			reply.err = &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{codeInternalError, "malformed error"}
		}
	}
	select {
	case ch <- reply:
	default:
	}
}

var _ mcpserver.SessionWithElicitation = (*requestSession)(nil)
