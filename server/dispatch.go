package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// ResponseHoldBack is the least time between a request's last notification
// and its response (see Dispatcher.request).
const ResponseHoldBack = 100 * time.Millisecond

// JSON-RPC error codes used by the transports.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// Dispatcher runs JSON-RPC messages through mcp-go's MCPServer.HandleMessage
// for any transport. It exists because mcp-go's own transports fall short
// (docs/transports.md "Transports"): it writes a request's notifications before its response,
// keeps ping and lists from waiting behind slow tool calls, honours a cancel
// that arrives while a call is still queued, answers a cancelled call with
// nothing instead of -32603, maps security violations to -32602, and never
// lets an internal error message reach the client.
type Dispatcher struct {
	mcp *mcpserver.MCPServer
	log zerolog.Logger
	// workers bounds concurrent tools/call executions.
	workers chan struct{}
	// fair gives each HTTP session, fairClients each HTTP client, at most
	// a share of the workers.
	fair, fairClients fairSlots

	mu       sync.Mutex
	inflight map[string]*inflightCall // sessionID + "\x00" + request id
	// cancelledEarly holds the cancels that arrived before their request
	// was registered (same keys, with when): stdio hands every line to a
	// goroutine of its own, so a cancel read after its request can run
	// first. MCP forbids reusing a request id within a session, so a
	// request finding its key here was cancelled and is neither run nor
	// answered. Bounded: see noteEarlyCancel.
	cancelledEarly map[string]time.Time
}

// earlyCancelTTL and maxEarlyCancels bound cancelledEarly: a cancel for a
// request that already finished (or never existed) is kept this long, and
// at most this many are kept.
const (
	earlyCancelTTL  = 5 * time.Second
	maxEarlyCancels = 256
)

// noteEarlyCancel records a cancel for a request not (yet) in flight;
// d.mu is held.
func (d *Dispatcher) noteEarlyCancel(key string) {
	if len(d.cancelledEarly) >= maxEarlyCancels {
		now := time.Now()
		for k, at := range d.cancelledEarly {
			if now.Sub(at) > earlyCancelTTL {
				delete(d.cancelledEarly, k)
			}
		}
		for k := range d.cancelledEarly {
			if len(d.cancelledEarly) < maxEarlyCancels {
				break
			}
			delete(d.cancelledEarly, k)
		}
	}
	d.cancelledEarly[key] = time.Now()
}

type inflightCall struct {
	cancel    context.CancelFunc
	cancelled atomic.Bool
}

// NewDispatcher wraps an MCPServer. workers bounds concurrent tool calls.
func NewDispatcher(s *mcpserver.MCPServer, workers int, log zerolog.Logger) *Dispatcher {
	if workers < 1 {
		workers = 1
	}
	return &Dispatcher{mcp: s, log: log, workers: make(chan struct{}, workers), fair: fairSlots{share: sessionShare(workers)}, fairClients: fairSlots{share: clientShare(workers)}, inflight: map[string]*inflightCall{}, cancelledEarly: map[string]time.Time{}}
}

// MCPServer returns the wrapped server.
func (d *Dispatcher) MCPServer() *mcpserver.MCPServer { return d.mcp }

// envelope is the part of a JSON-RPC message the dispatcher needs to route it.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// ErrorResponse encodes a JSON-RPC error response. id may be nil.
func ErrorResponse(id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return b
}

// Handle processes one raw message from sess. Notifications the request emits
// are passed to emit, in order, before Handle returns; Handle returns the
// response to write, or nil when there is none (notifications, responses, a
// cancelled request). emit is never called concurrently for one Handle call.
func (d *Dispatcher) Handle(ctx context.Context, sess *Session, raw []byte, emit func([]byte)) []byte {
	raw = bytes.TrimSpace(raw)
	// json.Unmarshal checks the whole message before decoding any of it: a
	// syntax error is its answer to invalid JSON, so no json.Valid pass first.
	var env envelope
	err := json.Unmarshal(raw, &env)
	if _, invalid := errors.AsType[*json.SyntaxError](err); invalid {
		return ErrorResponse(nil, codeParseError, "Parse error")
	}
	if raw[0] != '{' {
		// Batches were removed from MCP in 2025-06-18; anything but an object is
		// not a request.
		return ErrorResponse(nil, codeInvalidRequest, "Invalid Request: expected a single JSON-RPC object")
	}
	if err != nil {
		return ErrorResponse(nil, codeInvalidRequest, "Invalid Request")
	}
	if env.JSONRPC != "2.0" {
		return ErrorResponse(env.ID, codeInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"")
	}
	isNull := len(env.ID) == 0 || string(env.ID) == "null"
	switch {
	case isNull && env.Method == "":
		if len(env.Result) > 0 || len(env.Error) > 0 {
			return nil // a response to nothing we asked: ignore
		}
		return ErrorResponse(nil, codeInvalidRequest, "Invalid Request: missing method")
	case isNull:
		d.notification(ctx, sess, env, raw)
		return nil
	case env.Method == "":
		// A response to a server-initiated request (elicitation).
		sess.deliverReply(env)
		return nil
	}
	if env.ID[0] != '"' && (env.ID[0] < '0' || env.ID[0] > '9') && env.ID[0] != '-' {
		return ErrorResponse(nil, codeInvalidRequest, "Invalid Request: id must be a string or number")
	}
	return d.observed(ctx, sess, env, raw, emit)
}

func (d *Dispatcher) notification(ctx context.Context, sess *Session, env envelope, raw []byte) {
	if env.Method == string(mcp.MethodNotificationCancelled) {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(env.Params, &p)
		if len(p.RequestID) > 0 {
			key := inflightKey(sess, p.RequestID)
			d.mu.Lock()
			call := d.inflight[key]
			if call == nil {
				d.noteEarlyCancel(key)
			}
			d.mu.Unlock()
			if call != nil {
				call.cancelled.Store(true)
				call.cancel()
			}
		}
		return
	}
	d.mcp.HandleMessage(d.mcp.WithContext(ctx, sess), raw)
}

// takeWorker waits for a free worker; false when ctx ends first. The two
// debug events (queued, cancelled while queued) tell an operator why a call
// waits, and let tests order a cancel after the queueing without sleeping.
func (d *Dispatcher) takeWorker(ctx context.Context, id json.RawMessage) bool {
	select {
	case d.workers <- struct{}{}:
		return true
	default:
	}
	d.log.Debug().RawJSON("request_id", id).Msg("tool call queued: every worker is busy")
	select {
	case d.workers <- struct{}{}:
		return true
	case <-ctx.Done():
		d.log.Debug().RawJSON("request_id", id).Msg("tool call cancelled while queued")
		return false
	}
}

func inflightKey(sess *Session, id json.RawMessage) string {
	return sess.SessionID() + "\x00" + string(id)
}

// CancelSession cancels every in-flight request of a session (HTTP DELETE,
// transport shutdown).
func (d *Dispatcher) CancelSession(sess *Session) int {
	prefix := sess.SessionID() + "\x00"
	n := 0
	d.mu.Lock()
	for k, call := range d.inflight {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			call.cancelled.Store(true)
			call.cancel()
			n++
		}
	}
	d.mu.Unlock()
	return n
}

func (d *Dispatcher) request(ctx context.Context, sess *Session, env envelope, raw []byte, emit func([]byte)) []byte {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx, outcome := toolerror.WithRecorder(ctx)
	call := &inflightCall{cancel: cancel}
	key := inflightKey(sess, env.ID)
	d.mu.Lock()
	if _, dup := d.inflight[key]; dup {
		d.mu.Unlock()
		return ErrorResponse(env.ID, codeInvalidRequest, "Invalid Request: duplicate id of a request still in flight")
	}
	if at, early := d.cancelledEarly[key]; early {
		delete(d.cancelledEarly, key)
		if time.Since(at) <= earlyCancelTTL {
			d.mu.Unlock()
			return nil // cancelled before it was registered: not run, not answered
		}
	}
	d.inflight[key] = call
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inflight, key)
		d.mu.Unlock()
	}()

	ctx = withCallInfo(ctx, sess, env)
	if env.Method == string(mcp.MethodToolsCall) {
		// Only tool calls take a worker: ping, initialize and lists are cheap
		// and must never wait behind slow aggregates.
		release, ok := d.acquireWorker(ctx, sess, env)
		if !ok {
			return nil
		}
		defer release()
	}

	if env.Method == string(mcp.MethodSubscriptionsListen) && sess.SessionID() == StdioSessionID {
		// On stdio the listen stream is stdout itself: resource updates
		// written there while it is open carry its id.
		sess.setListenID(env.ID)
		defer sess.setListenID(nil)
	}
	resp := d.handle(ctx, sess, raw, emit)
	if call.cancelled.Load() {
		// MCP: the receiver of a cancellation should not answer the request.
		return nil
	}
	if resp == nil {
		return nil
	}
	if e, ok := resp.(mcp.JSONRPCError); ok {
		if b, mapped := d.mapError(ctx, sess, env, outcome, e, emit); mapped {
			return b
		}
	}
	b, err := encodeResponse(resp)
	if err != nil {
		d.log.Error().Err(err).Str("method", env.Method).Msg("encoding response")
		return ErrorResponse(env.ID, codeInternalError, "Internal error")
	}
	return b
}

// acquireWorker waits for the session's and the client's fair share (over
// HTTP), then a worker; ok is false when the request was cancelled (or the
// transport is shutting down) while waiting. release gives all back.
func (d *Dispatcher) acquireWorker(ctx context.Context, sess *Session, env envelope) (release func(), ok bool) {
	var releases []func()
	release = func() {
		for _, r := range slices.Backward(releases) {
			r()
		}
	}
	if id := sess.SessionID(); id != StdioSessionID {
		r, ok := d.fair.acquire(ctx, id)
		if !ok {
			return nil, false // cancelled while waiting for the session's share
		}
		releases = append(releases, r)
		if sess.client != "" {
			r, ok := d.fairClients.acquire(ctx, sess.client)
			if !ok {
				release()
				return nil, false // cancelled while waiting for the client's share
			}
			releases = append(releases, r)
		}
	}
	if !d.takeWorker(ctx, env.ID) {
		// Cancelled while queued (or the transport is shutting down).
		release()
		return nil, false
	}
	releases = append(releases, func() { <-d.workers })
	return release, true
}

// handle runs the request through mcp-go, forwarding its notifications
// (and requests to the client) while it runs; every one precedes the
// response.
func (d *Dispatcher) handle(ctx context.Context, sess *Session, raw []byte, emit func([]byte)) mcp.JSONRPCMessage {
	rs := &requestSession{Session: sess, ch: make(chan mcp.JSONRPCNotification, 64), requests: make(chan []byte), ctx: ctx}
	hctx := d.mcp.WithContext(ctx, rs)

	// The request's notifications are forwarded while it runs by a
	// goroutine started only once it has run for forwardAfter: most calls
	// end well before, and then what they queued (at most the channel's 64)
	// is written here, in order, before the response — without a goroutine
	// started and joined on every call. A request to the client (an
	// elicitation) waits for the forwarder, at most forwardAfter.
	var lastEmit time.Time // written by the forwarder, read after it ended
	stop := make(chan struct{})
	drained := make(chan struct{})
	forwarder := time.AfterFunc(forwardAfter, func() {
		defer close(drained)
		for {
			select {
			case n := <-rs.ch:
				d.emitNotification(n, emit)
				lastEmit = time.Now()
			case m := <-rs.requests:
				emit(m)
				lastEmit = time.Now()
			case <-stop:
				lastEmit = d.drainNotifications(rs, emit, lastEmit)
				return
			}
		}
	})
	resp := d.mcp.HandleMessage(hctx, raw)
	if forwarder.Stop() {
		lastEmit = d.drainNotifications(rs, emit, lastEmit)
	} else {
		close(stop)
		<-drained
	}
	// A response right behind a notification can reach the client in the
	// same read, and some clients handle the notification only after the
	// response (retiring its progress token first, or tearing the
	// connection down over an unknown token): hold the response back
	// briefly so the two arrive apart.
	if !lastEmit.IsZero() {
		if wait := ResponseHoldBack - time.Since(lastEmit); wait > 0 {
			time.Sleep(wait)
		}
	}
	return resp
}

// mapError is the JSON-RPC error the client gets for e (ARCHITECTURE.md
// "Errors"); mapped is false when e goes out as mcp-go wrote it.
func (d *Dispatcher) mapError(ctx context.Context, sess *Session, env envelope, outcome *toolerror.Recorder, e mcp.JSONRPCError, emit func([]byte)) (b []byte, mapped bool) {
	switch {
	case outcome.Violation() != nil:
		telemetry.Log(ctx, d.log.Warn()).Str("method", env.Method).Str("reason", outcome.Violation().Reason).Msg("security violation refused")
		d.logViolation(sess, env, emit)
		return ErrorResponse(env.ID, codeInvalidParams, toolerror.ViolationMessage), true
	case outcome.Err() != nil:
		return ErrorResponse(env.ID, codeInvalidParams, outcome.Err().Message), true
	case e.Error.Code == mcp.RESOURCE_NOT_FOUND,
		e.Error.Code == codeInvalidParams && strings.HasPrefix(e.Error.Message, "handler not found for resource URI"):
		// mcp-go answers a URI no resource or template matches with
		// -32002 for clients before 2026-07-28 and with -32602 and its
		// own wording ("handler not found …") in 2026-07-28; docs/resources.md
		// "Prompts and resources" promises -32602, and both eras get
		// the same message saying what a URI looks like.
		return ErrorResponse(env.ID, codeInvalidParams, "Unknown resource URI: expected parse://{className}/schema, /count or /samples"), true
	case e.Error.Code == codeInternalError:
		if ctx.Err() != nil {
			return nil, true // shutting down
		}
		telemetry.Log(ctx, d.log.Error()).Str("method", env.Method).Str("error", e.Error.Message).Msg("internal error")
		return ErrorResponse(env.ID, codeInternalError, "Internal error"), true
	}
	return nil, false
}

// forwardAfter is how long a request runs before its notifications are
// forwarded while it runs (see handle).
const forwardAfter = time.Millisecond

// drainNotifications writes the notifications rs has queued, in order, and
// returns when the last one was written (last if none).
func (d *Dispatcher) drainNotifications(rs *requestSession, emit func([]byte), last time.Time) time.Time {
	for {
		select {
		case n := <-rs.ch:
			d.emitNotification(n, emit)
			last = time.Now()
		default:
			return last
		}
	}
}

// encodeResponse is json.Marshal(resp), written in one pass for a tool
// result: mcp-go's CallToolResult.MarshalJSON builds a map, encodes it with
// reflection and scans its json.RawMessage structuredContent to validate and
// compact it, and json.Marshal would scan and copy those bytes once more —
// for a page of rows the largest part of a response's cost. The bytes are
// the same (TestEncodeResponseAsMarshal).
func encodeResponse(resp mcp.JSONRPCMessage) ([]byte, error) {
	r, ok := resp.(mcp.JSONRPCResponse)
	if !ok {
		return json.Marshal(resp)
	}
	var res *mcp.CallToolResult
	switch t := r.Result.(type) {
	case *mcp.CallToolResult:
		res = t
	case mcp.CallToolResult:
		res = &t
	default:
		return json.Marshal(resp)
	}
	head, err := json.Marshal(struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      mcp.RequestId `json:"id"`
	}{r.JSONRPC, r.ID})
	if err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, len(head)+toolResultSize(res)), head[:len(head)-1]...)
	out = append(out, `,"result":`...)
	if b, ok := appendToolResult(out, res); ok {
		return append(b, '}'), nil
	}
	result, err := res.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out = append(out, result...)
	return append(out, '}'), nil
}

// toolResultSize is room for a tool result's encoding: its texts and
// structured content with a little for escapes.
func toolResultSize(res *mcp.CallToolResult) int {
	n := 64 + len(res.RawStructuredContent)
	if raw, ok := res.StructuredContent.(json.RawMessage); ok {
		n += len(raw)
	}
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			n += len(tc.Text) + 32
		}
	}
	return n + n/8
}

// appendToolResult appends res as MarshalJSON writes it — keys in sorted
// order (_meta, content, isError, resultType, structuredContent), strings HTML
// escaped — for the shape every tool answers: text content without
// annotations, structured content already encoded (tools.Result encodes it
// compact with jsonenc; it is copied, not validated again). ok is false for
// any other shape (other content, annotations, multi-round-trip fields), which
// MarshalJSON writes.
func appendToolResult(dst []byte, res *mcp.CallToolResult) ([]byte, bool) {
	if len(res.InputRequests) > 0 || res.RequestState != "" {
		return nil, false
	}
	raw := res.RawStructuredContent
	if len(raw) == 0 && res.StructuredContent != nil {
		sc, ok := res.StructuredContent.(json.RawMessage)
		if !ok {
			return nil, false
		}
		raw = sc
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
	}
	dst = append(dst, '{')
	if res.Meta != nil {
		// Every result of the 2026-07-28 era has one (the server's
		// identity), as has every error result (its error code).
		meta, err := json.Marshal(res.Meta)
		if err != nil {
			return nil, false
		}
		dst = append(dst, `"_meta":`...)
		dst = append(dst, meta...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"content":[`...)
	for i, c := range res.Content {
		tc, ok := c.(mcp.TextContent)
		if !ok || tc.Annotations != nil || tc.Meta != nil {
			return nil, false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":`...)
		dst = jsonenc.AppendHTMLString(dst, tc.Type)
		dst = append(dst, `,"text":`...)
		dst = jsonenc.AppendHTMLString(dst, tc.Text)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if res.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if res.ResultType != "" {
		dst = append(dst, `,"resultType":`...)
		dst = jsonenc.AppendHTMLString(dst, res.ResultType)
	}
	if raw != nil {
		dst = append(dst, `,"structuredContent":`...)
		dst = jsonenc.AppendHTMLEscaped(dst, raw)
	}
	return append(dst, '}'), true
}

func (d *Dispatcher) emitNotification(n mcp.JSONRPCNotification, emit func([]byte)) {
	b, err := json.Marshal(n)
	if err != nil {
		d.log.Error().Err(err).Msg("encoding notification")
		return
	}
	emit(b)
}

// EncodeNotification encodes an unsolicited notification for a transport.
func EncodeNotification(n mcp.JSONRPCNotification) ([]byte, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encoding notification: %w", err)
	}
	return b, nil
}

// withCallInfo records who sends the request and how (callinfo.Info), on
// top of what the transport recorded (the credential, whether the answer
// can carry server requests). The policy's rate limit counts per client and
// per session, knowing them only as opaque keys; the method tells the
// policy's tool filter that a tools/call passes through to the middleware,
// which refuses a tool this session may not call with its precise error
// code; a tools/list may ask for one category.
func withCallInfo(ctx context.Context, sess *Session, env envelope) context.Context {
	info := callinfo.From(ctx)
	info.Method = env.Method
	if sess.client != "" {
		info.Client = sess.client
		if !sess.oneRequest {
			info.Session = sess.SessionID()
		}
	}
	if sess.credential != "" {
		info.Credential = sess.credential
	}
	if env.Method == string(mcp.MethodToolsList) {
		var p struct {
			Category *string `json:"category"`
		}
		if json.Unmarshal(env.Params, &p) == nil {
			info.ListCategory = p.Category
		}
	}
	return callinfo.With(ctx, info)
}

// categoryFilter keeps only the tools of the requested category
// (case-insensitive; an unknown category yields an empty list).
func categoryFilter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	category := callinfo.From(ctx).ListCategory
	if category == nil {
		return tools
	}
	cat := *category
	out := tools[:0:0]
	for _, t := range tools {
		if t.Meta != nil {
			if c, _ := t.Meta.AdditionalFields["category"].(string); strings.EqualFold(c, cat) {
				out = append(out, t)
			}
		}
	}
	return out
}

// logViolation tells the client's log about a refused security violation,
// like every other denial (notifications/message, level warning, on the
// request's own channel before its -32602), if the request's log level
// admits it: the 2026-07-28 request's _meta logLevel, else the session's
// logging/setLevel. Like the response, it names no reason: that stays in
// the operator's log.
func (d *Dispatcher) logViolation(sess *Session, env envelope, emit func([]byte)) {
	level := sess.GetLogLevel()
	var p struct {
		Name string    `json:"name"`
		Meta *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(env.Params, &p)
	if mcp.IsModernProtocol(p.Meta.ProtocolVersion()) {
		level = p.Meta.LogLevel()
	}
	if !mcp.LoggingLevelWarning.ShouldSendTo(level) {
		return
	}
	data := map[string]any{"event": "security_violation", "method": env.Method, "error_code": "security_violation"}
	if env.Method == string(mcp.MethodToolsCall) && FindToolName(d.mcp, p.Name) {
		data["tool"] = p.Name
	}
	n := mcp.NewLoggingMessageNotification(mcp.LoggingLevelWarning, loggerName, data)
	b, err := json.Marshal(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: n.Method,
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"level": n.Params.Level, "logger": n.Params.Logger, "data": n.Params.Data}},
	}})
	if err != nil {
		return
	}
	emit(b)
	time.Sleep(ResponseHoldBack)
}

// FindToolName reports whether the server has a tool of that name (so that
// only real tool names, never arbitrary client text, reach a log message).
func FindToolName(s *mcpserver.MCPServer, name string) bool {
	return name != "" && s.GetTool(name) != nil
}
