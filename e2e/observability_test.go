package e2e

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/policy"
)

// otlpReceiver is a local OTLP/HTTP trace receiver: it keeps every request
// body as sent (for the leak checks) and the spans decoded from it.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	raw   [][]byte
	spans []*tracepb.Span
}

func newOTLPReceiver(t testing.TB) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		var ex coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &ex); err != nil {
			t.Errorf("OTLP body is not an ExportTraceServiceRequest: %v", err)
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.raw = append(r.raw, body)
		for _, rs := range ex.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// env is the OTEL_* environment that exports to the receiver quickly.
func (r *otlpReceiver) env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=50"}
}

// waitSpan waits for a span matching ok.
func (r *otlpReceiver) waitSpan(t testing.TB, what string, ok func(*tracepb.Span) bool) *tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, s := range r.spans {
			if ok(s) {
				r.mu.Unlock()
				return s
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s span received", what)
	return nil
}

func (r *otlpReceiver) children(parent *tracepb.Span) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if bytes.Equal(s.ParentSpanId, parent.SpanId) && bytes.Equal(s.TraceId, parent.TraceId) {
			out = append(out, s)
		}
	}
	return out
}

func (r *otlpReceiver) allBytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Join(r.raw, nil)
}

func spanAttr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue(), true
		}
	}
	return "", false
}

// freeAddr is a loopback address nothing listens on (for
// PARSE_MCP_METRICS_ADDR).
func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// scrape reads /metrics, waiting for the listener, and returns the raw
// text and the parsed families.
func scrape(t testing.TB, addr string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	var resp *http.Response
	var err error
	for range 200 {
		if resp, err = http.Get("http://" + addr + "/metrics"); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return string(body), families
}

// sample finds the metric of family name whose labels include want.
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := families[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.Metric {
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	return nil
}

func histogramCount(families map[string]*dto.MetricFamily, name string, labels map[string]string) uint64 {
	if m := sample(families, name, labels); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

func counterValue(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	if m := sample(families, name, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

// TestTelemetryTraceAndMetrics: a call with a traceparent in params._meta
// yields a server span continuing that trace, with the MCP attribute names
// and database child spans; the audit event carries the trace id; the
// operation histogram moves by exactly the calls made.
func TestTelemetryTraceAndMetrics(t *testing.T) {
	rcv := newOTLPReceiver(t)
	addr := freeAddr(t)
	srv := startRaw(t, append(rcv.env(), "PARSE_MCP_METRICS_ADDR="+addr, "PARSE_MCP_LOG_LEVEL=info")...)
	srv.initialize()
	opLabels := map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "count_objects", "mcp_protocol_version": ProtocolVersion, "network_transport": "pipe"}
	_, before := scrape(t, addr)
	callsBefore := histogramCount(before, "mcp_server_operation_duration_seconds", opLabels)

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	const calls = 3
	for i := range calls {
		meta := ""
		if i == 0 {
			meta = `,"_meta":{"traceparent":"00-` + traceID + `-` + parentID + `-01"}`
		}
		srv.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"}%s}}`, i+1, meta))
		if m := srv.next(); m["result"] == nil {
			t.Fatalf("count_objects: %v", m)
		}
	}

	span := rcv.waitSpan(t, "tools/call count_objects", func(s *tracepb.Span) bool {
		return hex.EncodeToString(s.TraceId) == traceID && s.Name == "tools/call count_objects"
	})
	if got := hex.EncodeToString(span.ParentSpanId); got != parentID {
		t.Errorf("server span parent %s, want the client's %s", got, parentID)
	}
	if span.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span kind %v, want server", span.Kind)
	}
	for key, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "count_objects",
		"mcp.protocol.version": ProtocolVersion, "gen_ai.operation.name": "execute_tool", "network.transport": "pipe", "parse_mcp.class": "Song"} {
		if got, ok := spanAttr(span, key); !ok || got != want {
			t.Errorf("server span %s = %q, want %q", key, got, want)
		}
	}
	if _, ok := spanAttr(span, "error.type"); ok {
		t.Errorf("a successful call has error.type")
	}
	var db []string
	deadline := time.Now().Add(10 * time.Second)
	for len(db) == 0 && time.Now().Before(deadline) {
		for _, c := range rcv.children(span) {
			if sys, _ := spanAttr(c, "db.system.name"); sys == "mongodb" && c.Kind == tracepb.Span_SPAN_KIND_CLIENT {
				op, _ := spanAttr(c, "db.operation.name")
				db = append(db, op)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(db) == 0 {
		t.Fatalf("no database child span under the server span")
	}
	t.Logf("database spans: %v", db)

	if !strings.Contains(srv.stderr.String(), `"trace_id":"`+traceID+`"`) {
		t.Errorf("the audit event does not carry the trace id:\n%s", srv.stderr.String())
	}

	srv.send(`{"jsonrpc":"2.0","id":"sub","method":"resources/subscribe","params":{"uri":"parse://Artist/count"}}`)
	if m := srv.next(); m["result"] == nil {
		t.Fatalf("resources/subscribe: %v", m)
	}
	_, after := scrape(t, addr)
	if got := counterValue(after, "parse_mcp_subscription_polls_total", map[string]string{"kind": "fingerprint"}); got < 1 {
		t.Errorf("the subscription's first fingerprint is not counted: %v", got)
	}
	if got := histogramCount(after, "mcp_server_operation_duration_seconds", opLabels) - callsBefore; got != calls {
		t.Errorf("operation histogram moved by %d, want %d", got, calls)
	}
	if got := counterValue(after, "parse_mcp_tool_calls_total", map[string]string{"gen_ai_tool_name": "count_objects", "parse_mcp_class": "Song", "outcome": "ok"}); got != calls {
		t.Errorf("tool calls counter %v, want %d", got, calls)
	}
	if sample(after, "parse_mcp_db_operation_duration_seconds", map[string]string{"db_operation_name": "aggregate"}) == nil {
		t.Errorf("no database duration for aggregate")
	}
	if m := sample(after, "parse_mcp_sessions_active", map[string]string{"network_transport": "pipe"}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("active stdio sessions: %v", m)
	}
}

// TestTelemetryRefusals: a policy refusal and a rate-limit refusal are
// counted under their kinds, and their operations carry the error type.
func TestTelemetryRefusals(t *testing.T) {
	addr := freeAddr(t)
	c := stdioClient(t, "PARSE_MCP_METRICS_ADDR="+addr, policyFile(t, "rate_limit_2_per_minute"))
	res := call(t, c, "create_object", map[string]any{"class_name": "Song", "fields": map[string]any{"title": "x"}})
	code, _ := res.Meta.AdditionalFields["parse.error_code"].(string)
	if !res.IsError || code == "" {
		t.Fatalf("create_object in the readonly tier: %s", text(res))
	}
	callOK(t, c, "count_objects", map[string]any{"class_name": "Song"})
	callErr(t, c, "count_objects", map[string]any{"class_name": "Song"}, "rate_limited")

	_, m := scrape(t, addr)
	for _, tc := range []struct {
		tool, kind string
	}{{"create_object", code}, {"count_objects", "rate_limited"}} {
		if got := counterValue(m, "parse_mcp_policy_refusals_total", map[string]string{"gen_ai_tool_name": tc.tool, "kind": tc.kind}); got != 1 {
			t.Errorf("refusals{%s, %s} = %v, want 1", tc.tool, tc.kind, got)
		}
	}
	if got := histogramCount(m, "mcp_server_operation_duration_seconds", map[string]string{"gen_ai_tool_name": "count_objects", "error_type": "rate_limited"}); got != 1 {
		t.Errorf("operations with error_type rate_limited: %d, want 1", got)
	}
}

// TestTelemetryLeaksNothing attacks the telemetry: arguments carrying a
// secret, object ids, where values and a hidden class's name; made-up tool
// and method names and protocol versions. None of it may appear in any
// exported span, metric or log line, and the hidden class is counted as
// no class at all.
func TestTelemetryLeaksNothing(t *testing.T) {
	rcv := newOTLPReceiver(t)
	addr := freeAddr(t)
	srv := startRaw(t, append(rcv.env(), "PARSE_MCP_METRICS_ADDR="+addr, "PARSE_MCP_LOG_LEVEL=debug", policyFile(t, "demo"))...)
	srv.initialize()
	const secret = "sk-live-TELEMETRYLEAK0123456789"
	const madeUp = "MadeUpLabelValue7731"
	objectID := demo.VaultSecretIDs[0]
	requests := []string{
		`{"name":"count_objects","arguments":{"class_name":"Song","where":{"title":"` + secret + `"}}}`,
		`{"name":"get_object","arguments":{"class_name":"Song","object_id":"` + objectID + `"}}`,
		`{"name":"count_objects","arguments":{"class_name":"VaultSecret","where":{"objectId":"` + objectID + `"}}}`,
		`{"name":"query_class","arguments":{"class_name":"VaultSecret"}}`,
		`{"name":"count_objects","arguments":{"class_name":"Song","where":{"artist":{"$inQuery":{"className":"VaultSecret","where":{"key":"` + secret + `"}}}}}}`,
		`{"name":"aggregate","arguments":{"class_name":"Song","pipeline":[{"$lookup":{"from":"VaultSecret","localField":"title","foreignField":"key","as":"` + madeUp + `"}}]}}`,
		`{"name":"` + madeUp + `","arguments":{"x":"` + secret + `"}}`,
		`{"name":"count_objects","arguments":{"class_name":"` + madeUp + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + madeUp + `","traceparent":"` + secret + `"}}`,
	}
	for i, params := range requests {
		srv.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, params))
		srv.next()
	}
	srv.send(`{"jsonrpc":"2.0","id":"x","method":"` + madeUp + `/` + secret + `","params":{}}`)
	srv.next()
	// The last call's span marks the end of what is exported.
	srv.send(`{"jsonrpc":"2.0","id":"end","method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`)
	srv.next()
	rcv.waitSpan(t, "last call", func(s *tracepb.Span) bool { return hex.EncodeToString(s.TraceId) == "0af7651916cd43dd8448eb211c80319c" })
	metrics, families := scrape(t, addr)

	exported := map[string][]byte{"spans": rcv.allBytes(), "metrics": []byte(metrics), "log": []byte(srv.stderr.String())}
	for where, b := range exported {
		for _, leak := range []string{secret, objectID, "VaultSecret", madeUp} {
			if i := bytes.Index(b, []byte(leak)); i >= 0 {
				t.Errorf("%s carry %q: …%q…", where, leak, b[max(0, i-200):min(len(b), i+100)])
			}
		}
	}
	// The hidden class's call is counted without a class, like a missing one.
	if got := counterValue(families, "parse_mcp_policy_refusals_total", map[string]string{"gen_ai_tool_name": "count_objects", "kind": "hidden_class"}); got < 1 {
		t.Errorf("the hidden class's refusal is not counted as hidden_class")
	}
	if got := histogramCount(families, "mcp_server_operation_duration_seconds", map[string]string{"mcp_method_name": "other"}); got != 1 {
		t.Errorf("the made-up method is not counted as other: %d", got)
	}
}

// TestTelemetryBridgeSpan: a write through the real Parse Server has a
// client span for the REST request under its server span, carrying the
// method and status only (no path: it holds the class and object id).
func TestTelemetryBridgeSpan(t *testing.T) {
	ps := startParse(t)
	rcv := newOTLPReceiver(t)
	addr := freeAddr(t)
	benv := append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, bridgePolicy), "PARSE_MCP_METRICS_ADDR="+addr), writeEnv...)
	srv := startRaw(t, append(benv, rcv.env()...)...)
	srv.initialize()
	const traceID = "5bf92f3577b34da6a3ce929d0e0e4736"
	srv.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_object","arguments":{"class_name":"Note","fields":{"title":"traced"}},"_meta":{"traceparent":"00-` + traceID + `-00f067aa0ba902b7-01"}}}`)
	m := srv.next()
	res, _ := m["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		t.Fatalf("create_object through Parse Server: %v", m)
	}
	span := rcv.waitSpan(t, "tools/call create_object", func(s *tracepb.Span) bool {
		return hex.EncodeToString(s.TraceId) == traceID && s.Name == "tools/call create_object"
	})
	var bridge *tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for bridge == nil && time.Now().Before(deadline) {
		for _, c := range rcv.children(span) {
			if peer, _ := spanAttr(c, "parse_mcp.peer"); peer == "parse_server" {
				bridge = c
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bridge == nil {
		t.Fatal("no Parse Server span under the server span")
	}
	if method, _ := spanAttr(bridge, "http.request.method"); method != "POST" || bridge.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("bridge span %s: method %q kind %v", bridge.Name, method, bridge.Kind)
	}
	if b := rcv.allBytes(); bytes.Contains(b, []byte("/classes/")) || bytes.Contains(b, []byte(ps.MasterKey)) {
		t.Errorf("the exported spans carry a REST path or the master key")
	}
	_, fams := scrape(t, addr)
	if sample(fams, "parse_mcp_bridge_request_duration_seconds", map[string]string{"parse_mcp_peer": "parse_server", "http_request_method": "POST"}) == nil {
		t.Errorf("no bridge duration for the POST")
	}
}

// TestTelemetryHTTPSession: over HTTP the server span names the session
// only by the audit event's fingerprint, never its id, and an ended
// session's duration is recorded.
func TestTelemetryHTTPSession(t *testing.T) {
	rcv := newOTLPReceiver(t)
	addr := freeAddr(t)
	h := startHTTP(t, append(rcv.env(), "PARSE_MCP_METRICS_ADDR="+addr)...)
	s := h.session(nil)
	const traceID = "6bf92f3577b34da6a3ce929d0e0e4736"
	s.rpc("1", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Artist"},"_meta":{"traceparent":"00-`+traceID+`-00f067aa0ba902b7-01"}}`)
	span := rcv.waitSpan(t, "tools/call count_objects", func(sp *tracepb.Span) bool {
		return hex.EncodeToString(sp.TraceId) == traceID && sp.Name == "tools/call count_objects"
	})
	if got, _ := spanAttr(span, "mcp.session.id"); got != policy.Fingerprint(s.id) {
		t.Errorf("mcp.session.id %q, want the fingerprint %q", got, policy.Fingerprint(s.id))
	}
	if audit := `"session_id":"` + policy.Fingerprint(s.id) + `"`; !strings.Contains(h.stderr.String(), audit) {
		t.Errorf("the audit event does not name the session as the span does (%s):\n%s", audit, h.stderr.String())
	}
	if got, _ := spanAttr(span, "network.transport"); got != "tcp" {
		t.Errorf("network.transport %q, want tcp", got)
	}
	if bytes.Contains(rcv.allBytes(), []byte(s.id)) {
		t.Errorf("the exported spans carry the session id")
	}
	if resp, _ := h.request("DELETE", "/mcp", "", s.headers); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	text, m := scrape(t, addr)
	if got := histogramCount(m, "mcp_server_session_duration_seconds", map[string]string{"network_transport": "tcp", "mcp_protocol_version": ProtocolVersion}); got != 1 {
		t.Errorf("ended sessions recorded: %d, want 1", got)
	}
	if m := sample(m, "parse_mcp_sessions_active", map[string]string{"network_transport": "tcp"}); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("open HTTP sessions after DELETE: %v", m)
	}
	if m["parse_mcp_listen_streams_active"] == nil {
		t.Errorf("no listen stream gauge over HTTP")
	}
	if strings.Contains(text, s.id) {
		t.Errorf("/metrics carries the session id")
	}
}
