package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The instruments, in Prometheus's own client (linked into the binary
// already; docs/observability.md "Why no OTLP metrics, and metrics on
// Prometheus's client"), named as the OTel
// MCP conventions' metrics translate to Prometheus. Every label value is
// from a closed set the server defines (methods, tool names, protocol
// versions, error codes, refusal kinds, command names) or a class that
// exists and the caller may see, so a client cannot grow the label space.
type instruments struct {
	operation, session, db, bridge *prometheus.HistogramVec
	calls, refusals, resultBytes   *prometheus.CounterVec
	resultRows, embeddingsCalls    *prometheus.CounterVec
	activeSessions                 *prometheus.GaugeVec
	subscriptionPolls              *prometheus.CounterVec
	reg                            prometheus.Registerer
}

// The MCP conventions' buckets for operation and session durations.
var (
	mcpBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	dbBuckets  = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Label names: the OTel attribute names with dots as underscores.
const (
	lMethod    = "mcp_method_name"
	lTool      = "gen_ai_tool_name"
	lProtocol  = "mcp_protocol_version"
	lTransport = "network_transport"
	lErrorType = "error_type"
	lClass     = "parse_mcp_class"
)

func newInstruments(reg prometheus.Registerer) *instruments {
	f := promauto.With(reg)
	h := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return f.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return &instruments{
		operation: h("mcp_server_operation_duration_seconds", "MCP request duration as observed on the server, from receipt to the response (mcp.server.operation.duration).", mcpBuckets,
			lMethod, lTool, lProtocol, lTransport, lErrorType),
		session: h("mcp_server_session_duration_seconds", "The duration of an MCP session as observed on the server (mcp.server.session.duration).", mcpBuckets,
			lTransport, lProtocol),
		db: h("parse_mcp_db_operation_duration_seconds", "Duration of one database command.", dbBuckets,
			"db_operation_name", lErrorType),
		bridge: h("parse_mcp_bridge_request_duration_seconds", "Duration of one HTTP request to Parse Server or the embeddings endpoint.", dbBuckets,
			"parse_mcp_peer", "http_request_method", "http_response_status_code"),
		calls:           c("parse_mcp_tool_calls_total", "Tool calls by tool, class and outcome (ok or the error code).", lTool, lClass, "outcome"),
		refusals:        c("parse_mcp_policy_refusals_total", "Tool calls the policy refused, by kind (rate_limited among them).", lTool, "kind"),
		resultBytes:     c("parse_mcp_tool_result_bytes_total", "Bytes of tool results sent to the model.", lTool),
		resultRows:      c("parse_mcp_tool_result_rows_total", "Rows (objects, groups, distinct values) in successful tool results.", lTool),
		embeddingsCalls: c("parse_mcp_embeddings_calls_total", "Embeddings requests by outcome: ok, error, or budget_spent (refused by the call budget, not sent).", "outcome"),
		activeSessions: f.NewGaugeVec(prometheus.GaugeOpts{Name: "parse_mcp_sessions_active", Help: "Open MCP sessions (stdio counts as one)."},
			[]string{lTransport}),
		subscriptionPolls: c("parse_mcp_subscription_polls_total", "Subscription polls by what they read: probe (the cheap change token) or fingerprint (the scoped read).", "kind"),
		reg:               reg,
	}
}

// RequestInfo is what the dispatcher knows of a request; every value is
// already bounded by it (a method the server knows, a tool it has).
type RequestInfo struct {
	Method, Tool, Protocol, Transport string
	// SessionHash is the session id's fingerprint (as in the audit event).
	SessionHash string
	// TraceParent and TraceState are the client's params._meta values.
	TraceParent, TraceState string
}

// Request is one MCP request being observed.
type Request struct {
	start   time.Time
	span    trace.Span
	info    RequestInfo
	errType string
	rows    atomic.Int64
}

type requestKey struct{}

// StartRequest begins observing a request: its server span (a child of the
// client's traceparent when given) and the clock of its duration. Off, it
// returns ctx and nil, and every method of a nil *Request does nothing.
func StartRequest(ctx context.Context, ri RequestInfo) (context.Context, *Request) {
	if on == nil {
		return ctx, nil
	}
	r := &Request{start: time.Now(), info: ri}
	if on.tracer != nil {
		if ri.TraceParent != "" {
			carrier := propagation.MapCarrier{"traceparent": ri.TraceParent}
			if ts := boundedTraceState(ri.TraceState); ts != "" {
				carrier["tracestate"] = ts
			}
			ctx = propagator.Extract(ctx, carrier)
		}
		name := ri.Method
		if ri.Tool != "" {
			name += " " + ri.Tool
		}
		attrs := []attribute.KeyValue{attribute.String("mcp.method.name", ri.Method)}
		if ri.Tool != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", ri.Tool), attribute.String("gen_ai.operation.name", "execute_tool"))
		}
		if ri.Protocol != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", ri.Protocol))
		}
		if ri.SessionHash != "" {
			attrs = append(attrs, attribute.String("mcp.session.id", ri.SessionHash))
		}
		if ri.Transport != "" {
			attrs = append(attrs, attribute.String("network.transport", ri.Transport))
		}
		ctx, r.span = on.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	}
	return context.WithValue(ctx, requestKey{}, r), r
}

// maxTraceState is how much of a caller's tracestate is carried: the 512
// characters W3C trace context asks every vendor to propagate. More would be
// copied into every exported span of the request and every request to
// Parse Server and the embeddings endpoint (SECURITY.md "Telemetry").
const maxTraceState = 512

// boundedTraceState cuts a caller's tracestate to maxTraceState as W3C
// trace context says: members longer than 128 characters go first, then
// members from the end. An invalid tracestate is dropped.
func boundedTraceState(raw string) string {
	if raw == "" {
		return ""
	}
	ts, err := trace.ParseTraceState(raw)
	if err != nil {
		return ""
	}
	if s := ts.String(); len(s) <= maxTraceState {
		return s
	}
	var out []string
	n := 0
	ts.Walk(func(k, v string) bool {
		m := k + "=" + v
		if len(m) > 128 {
			return true
		}
		if n+len(m)+len(out) > maxTraceState { // len(out): the commas
			return false
		}
		out = append(out, m)
		n += len(m)
		return true
	})
	return strings.Join(out, ",")
}

// End records the request's duration and ends its span. rpcCode is the
// JSON-RPC error code of the answer, 0 for a result.
func (r *Request) End(rpcCode int) {
	if r == nil {
		return
	}
	// A tool call's own error code (security_violation among them) says
	// more than the JSON-RPC code it is answered with.
	errType := r.errType
	if rpcCode != 0 && errType == "" {
		errType = strconv.Itoa(rpcCode)
	}
	if r.span != nil {
		if rpcCode != 0 {
			r.span.SetAttributes(attribute.String("rpc.response.status_code", strconv.Itoa(rpcCode)))
		}
		if errType != "" {
			r.span.SetAttributes(attribute.String("error.type", errType))
			r.span.SetStatus(codes.Error, "")
		}
		r.span.End()
	}
	if in := on.inst; in != nil {
		in.operation.WithLabelValues(r.info.Method, r.info.Tool, r.info.Protocol, r.info.Transport, errType).Observe(time.Since(r.start).Seconds())
	}
}

// ToolCall is the policy's account of one tool call (the facts of its
// audit event that may leave the process).
type ToolCall struct {
	// Tool is a tool the server has ("" for an unknown name).
	Tool string
	// Class is the call's class once the class gate let it through (a class
	// that exists and the caller may see), "" otherwise.
	Class string
	// Code is the parse.error_code of a failed call ("" on success).
	Code string
	// Refusal is the policy's reason for refusing the call ("" when it did
	// not): a denial kind, a gate, rate_limited, security_violation,
	// hidden_class.
	Refusal     string
	ResultBytes int
}

// RecordToolCall counts a tool call and marks its request's span.
func RecordToolCall(ctx context.Context, c ToolCall) {
	if on == nil {
		return
	}
	tool := c.Tool
	if tool == "" {
		tool = "other"
	}
	outcome := "ok"
	if c.Code != "" {
		outcome = c.Code
	}
	if r, _ := ctx.Value(requestKey{}).(*Request); r != nil {
		if c.Code != "" {
			r.errType = c.Code
		}
		if r.span != nil {
			if c.Class != "" {
				r.span.SetAttributes(attribute.String("parse_mcp.class", c.Class))
			}
			if c.Refusal != "" {
				r.span.SetAttributes(attribute.String("parse_mcp.refusal", c.Refusal))
			}
		}
	}
	in := on.inst
	if in == nil {
		return
	}
	in.calls.WithLabelValues(tool, c.Class, outcome).Inc()
	if c.Refusal != "" {
		in.refusals.WithLabelValues(tool, c.Refusal).Inc()
	}
	if c.ResultBytes > 0 {
		in.resultBytes.WithLabelValues(tool).Add(float64(c.ResultBytes))
	}
	if r, _ := ctx.Value(requestKey{}).(*Request); r != nil && c.Code == "" {
		if n := r.rows.Swap(0); n > 0 {
			in.resultRows.WithLabelValues(tool).Add(float64(n))
		}
	}
}

// ToolRows notes the rows a tool call's result holds (objects, groups,
// distinct values), counted with the call by RecordToolCall when it
// succeeds.
func ToolRows(ctx context.Context, n int) {
	if on == nil || on.inst == nil {
		return
	}
	if r, _ := ctx.Value(requestKey{}).(*Request); r != nil {
		r.rows.Add(int64(n))
	}
}

// EmbeddingsCall counts one embeddings request: outcome "ok", "error" or
// "budget_spent" (the call budget refused it before it was sent).
func EmbeddingsCall(outcome string) {
	if on == nil || on.inst == nil {
		return
	}
	on.inst.embeddingsCalls.WithLabelValues(outcome).Inc()
}

// ObserveEmbeddingsBudget reports the embeddings calls the budget still
// allows in its current window, as counted by remaining at scrape time.
func ObserveEmbeddingsBudget(remaining func() int) {
	if on == nil || on.inst == nil {
		return
	}
	_ = on.inst.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "parse_mcp_embeddings_budget_remaining", Help: "Embeddings requests the call budget still allows in its sliding window."},
		func() float64 { return float64(remaining()) }))
}

// ClientSpan is a client span of an outgoing call that is not one of the
// bridge's HTTP requests: an LLM request of chat/ask, a LiveQuery
// connect. Every method of a nil *ClientSpan does nothing.
type ClientSpan struct{ span trace.Span }

// StartClient starts a client span named name, a child of ctx's span or
// a root span without one; nil when tracing is off. attrs must be bounded
// operator configuration or the server's own names: never a prompt, an
// answer, a key, a URL or row data.
func StartClient(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, *ClientSpan) {
	if on == nil || on.tracer == nil {
		return ctx, nil
	}
	ctx, span := on.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, &ClientSpan{span: span}
}

// End ends the span; errType non-empty marks it failed with that
// error.type (one of the caller's own bounded kinds).
func (s *ClientSpan) End(errType string, attrs ...attribute.KeyValue) {
	if s == nil {
		return
	}
	s.span.SetAttributes(attrs...)
	if errType != "" {
		s.span.SetAttributes(attribute.String("error.type", errType))
		s.span.SetStatus(codes.Error, "")
	}
	s.span.End()
}

// SessionStarted counts an open session; the returned function, called
// when it closes, records its duration.
func SessionStarted(transport string) func(protocol string) {
	if on == nil || on.inst == nil {
		return func(string) {}
	}
	start := time.Now()
	active := on.inst.activeSessions.WithLabelValues(transport)
	active.Inc()
	return func(protocol string) {
		active.Dec()
		on.inst.session.WithLabelValues(transport, protocol).Observe(time.Since(start).Seconds())
	}
}

// ObserveListenStreams reports the open listening streams (a session's GET
// stream, a 2026-07-28 subscriptions/listen) as counted by n at scrape
// time.
func ObserveListenStreams(n func() int) {
	if on == nil || on.inst == nil {
		return
	}
	_ = on.inst.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "parse_mcp_listen_streams_active", Help: "Open listening streams over HTTP."},
		func() float64 { return float64(n()) }))
}

// SubscriptionPoll counts one poll of a subscribed class: kind "probe" or
// "fingerprint".
func SubscriptionPoll(kind string) {
	if on == nil || on.inst == nil {
		return
	}
	on.inst.subscriptionPolls.WithLabelValues(kind).Inc()
}

// CommandMonitor is the MongoDB driver's monitor for database spans and
// the database duration metric; nil when telemetry is off. It records the
// command's name only: never its body, database or collection (a
// collection is a class name, possibly a hidden one).
func CommandMonitor() *event.CommandMonitor {
	if on == nil {
		return nil
	}
	m := &dbMonitor{}
	return &event.CommandMonitor{Started: m.started, Succeeded: m.succeeded, Failed: m.failed}
}

type dbMonitor struct {
	spans sync.Map // dbKey → trace.Span
}

type dbKey struct {
	conn string
	id   int64
}

func (m *dbMonitor) started(ctx context.Context, e *event.CommandStartedEvent) {
	if on.tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return // no span of its own for a command outside a request
	}
	_, span := on.tracer.Start(ctx, e.CommandName, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("db.system.name", "mongodb"), attribute.String("db.operation.name", e.CommandName)))
	m.spans.Store(dbKey{e.ConnectionID, e.RequestID}, span)
}

func (m *dbMonitor) finish(e *event.CommandFinishedEvent, failed bool) {
	if v, ok := m.spans.LoadAndDelete(dbKey{e.ConnectionID, e.RequestID}); ok {
		span := v.(trace.Span)
		if failed {
			span.SetAttributes(attribute.String("error.type", "db_error"))
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
	if in := on.inst; in != nil {
		errType := ""
		if failed {
			errType = "db_error"
		}
		in.db.WithLabelValues(e.CommandName, errType).Observe(e.Duration.Seconds())
	}
}

func (m *dbMonitor) succeeded(_ context.Context, e *event.CommandSucceededEvent) {
	m.finish(&e.CommandFinishedEvent, false)
}

func (m *dbMonitor) failed(_ context.Context, e *event.CommandFailedEvent) {
	m.finish(&e.CommandFinishedEvent, true)
}

// Transport wraps an outgoing HTTP client's transport (the Parse Server
// bridge, the embeddings endpoint) with a client span and the bridge
// duration metric, named by peer ("parse_server", "embeddings"); rt itself
// when telemetry is off. The LLM provider's requests get their own span
// (StartClient), with no trace context sent to the provider. The span carries
// the method and status only: a URL holds class names, object ids and
// where clauses.
func Transport(peer string, rt http.RoundTripper) http.RoundTripper {
	if on == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &observedTransport{peer: peer, next: rt}
}

type observedTransport struct {
	peer string
	next http.RoundTripper
}

func (t *observedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	ctx := req.Context()
	var span trace.Span
	if on.tracer != nil && trace.SpanContextFromContext(ctx).IsValid() {
		ctx, span = on.tracer.Start(ctx, t.peer+" "+req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("http.request.method", req.Method), attribute.String("parse_mcp.peer", t.peer)))
		req = req.Clone(ctx)
		propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := t.next.RoundTrip(req)
	status := ""
	switch {
	case err != nil:
		status = "error"
	default:
		status = strconv.Itoa(resp.StatusCode)
	}
	if span != nil {
		if resp != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		}
		if err != nil || resp.StatusCode >= 500 {
			span.SetAttributes(attribute.String("error.type", status))
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
	if in := on.inst; in != nil {
		in.bridge.WithLabelValues(t.peer, req.Method, status).Observe(time.Since(start).Seconds())
	}
	return resp, err
}
