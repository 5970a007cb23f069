package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The instruments. Every label value is from a closed set the server
// defines (methods, tool names, error codes, refusal kinds, command names)
// or a class that exists and the caller may see (docs/observability.md
// "Labels"), so a client cannot grow the label space.
type instruments struct {
	operation, session, db, bridge metric.Float64Histogram
	calls, refusals, resultBytes   metric.Int64Counter
	activeSessions                 metric.Int64UpDownCounter
}

// The MCP conventions' buckets for operation and session durations.
var (
	mcpBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	dbBuckets  = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var err error
	h := func(name, desc string, buckets []float64) metric.Float64Histogram {
		if err != nil {
			return nil
		}
		var x metric.Float64Histogram
		x, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		return x
	}
	c := func(name, unit, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var x metric.Int64Counter
		x, err = m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return x
	}
	in.operation = h("mcp.server.operation.duration", "MCP request duration as observed on the server, from receipt to the response.", mcpBuckets)
	in.session = h("mcp.server.session.duration", "The duration of an MCP session as observed on the server.", mcpBuckets)
	in.db = h("parse_mcp.db.operation.duration", "Duration of one database command.", dbBuckets)
	in.bridge = h("parse_mcp.bridge.request.duration", "Duration of one HTTP request to Parse Server, the embeddings endpoint or the LLM provider.", dbBuckets)
	in.calls = c("parse_mcp.tool.calls", "{call}", "Tool calls by tool, class and outcome.")
	in.refusals = c("parse_mcp.policy.refusals", "{call}", "Tool calls the policy refused, by kind (rate_limited among them).")
	in.resultBytes = c("parse_mcp.tool.result.size", "By", "Bytes of tool results sent to the model.")
	if err == nil {
		in.activeSessions, err = m.Int64UpDownCounter("parse_mcp.sessions.active", metric.WithUnit("{session}"), metric.WithDescription("Open MCP sessions (stdio counts as one)."))
	}
	if err != nil {
		return nil, err
	}
	return &in, nil
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
	class   string
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
			if ri.TraceState != "" {
				carrier["tracestate"] = ri.TraceState
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

// End records the request's duration and ends its span. rpcCode is the
// JSON-RPC error code of the answer, 0 for a result.
func (r *Request) End(rpcCode int) {
	if r == nil {
		return
	}
	errType := r.errType
	if rpcCode != 0 {
		errType = strconv.Itoa(rpcCode)
	}
	if r.span != nil {
		if rpcCode != 0 {
			r.span.SetAttributes(attribute.String("rpc.response.status_code", errType))
		}
		if errType != "" {
			r.span.SetAttributes(attribute.String("error.type", errType))
			r.span.SetStatus(codes.Error, "")
		}
		r.span.End()
	}
	if in := on.inst; in != nil {
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, attribute.String("mcp.method.name", r.info.Method))
		if r.info.Tool != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", r.info.Tool))
		}
		if r.info.Protocol != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", r.info.Protocol))
		}
		if r.info.Transport != "" {
			attrs = append(attrs, attribute.String("network.transport", r.info.Transport))
		}
		if errType != "" {
			attrs = append(attrs, attribute.String("error.type", errType))
		}
		in.operation.Record(context.Background(), time.Since(r.start).Seconds(), metric.WithAttributes(attrs...))
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
	bg := context.Background()
	toolAttr := attribute.String("gen_ai.tool.name", tool)
	in.calls.Add(bg, 1, metric.WithAttributes(toolAttr, attribute.String("parse_mcp.class", c.Class), attribute.String("outcome", outcome)))
	if c.Refusal != "" {
		in.refusals.Add(bg, 1, metric.WithAttributes(toolAttr, attribute.String("kind", c.Refusal)))
	}
	if c.ResultBytes > 0 {
		in.resultBytes.Add(bg, int64(c.ResultBytes), metric.WithAttributes(toolAttr))
	}
}

// SessionStarted counts an open session; the returned function, called
// when it closes, records its duration.
func SessionStarted(transport string) func(protocol string) {
	if on == nil || on.inst == nil {
		return func(string) {}
	}
	start := time.Now()
	t := attribute.String("network.transport", transport)
	on.inst.activeSessions.Add(context.Background(), 1, metric.WithAttributes(t))
	return func(protocol string) {
		on.inst.activeSessions.Add(context.Background(), -1, metric.WithAttributes(t))
		attrs := []attribute.KeyValue{t}
		if protocol != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", protocol))
		}
		on.inst.session.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
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
		attrs := []attribute.KeyValue{attribute.String("db.operation.name", e.CommandName)}
		if failed {
			attrs = append(attrs, attribute.String("error.type", "db_error"))
		}
		in.db.Record(context.Background(), e.Duration.Seconds(), metric.WithAttributes(attrs...))
	}
}

func (m *dbMonitor) succeeded(_ context.Context, e *event.CommandSucceededEvent) {
	m.finish(&e.CommandFinishedEvent, false)
}

func (m *dbMonitor) failed(_ context.Context, e *event.CommandFailedEvent) {
	m.finish(&e.CommandFinishedEvent, true)
}

// Transport wraps an outgoing HTTP client's transport (the Parse Server
// bridge, the embeddings endpoint, the LLM provider) with a client span
// and the bridge duration metric, named by peer ("parse_server",
// "embeddings", "llm"); rt itself when telemetry is off. The span carries
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
		in.bridge.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(
			attribute.String("parse_mcp.peer", t.peer), attribute.String("http.request.method", req.Method),
			attribute.String("http.response.status_code", status)))
	}
	return resp, err
}
