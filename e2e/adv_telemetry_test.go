package e2e

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/parse-mcp/parse-mcp/internal/embed"
)

// TestTelemetryCallerCannotSteerSampling attacks the sampling decision
// through params._meta.traceparent: a caller's sampled flag (or a trace id
// chosen to fall under the ratio) must neither hide its requests from the
// operator's traces nor force the export of requests the operator's
// sampler drops (SECURITY.md "Telemetry").
func TestTelemetryCallerCannotSteerSampling(t *testing.T) {
	for _, tc := range []struct {
		name, sampler, arg, traceparent string
		exported                        bool
	}{
		// Default sampler (every request): an unsampled parent hides nothing.
		{"unsampled parent hides the request", "", "", "00-7bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		// The operator samples next to nothing; the caller forces its request in.
		{"sampled flag forces export", "parentbased_traceidratio", "0.000000001", "00-8bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"low trace id forces export", "traceidratio", "0.000000001", "00-9bf92f3577b34da60000000000000000-00f067aa0ba902b7-01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newOTLPReceiver(t)
			env := rcv.env()
			if tc.sampler != "" {
				env = append(env, "OTEL_TRACES_SAMPLER="+tc.sampler, "OTEL_TRACES_SAMPLER_ARG="+tc.arg)
			}
			srv := startRaw(t, env...)
			srv.initialize()
			srv.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"},"_meta":{"traceparent":"` + tc.traceparent + `"}}}`)
			if m := srv.next(); m["result"] == nil {
				t.Fatalf("count_objects: %v", m)
			}
			// Shutting down flushes every span the server kept.
			_ = srv.stdin.Close()
			select {
			case <-srv.done:
			case <-time.After(15 * time.Second):
				t.Fatal("server did not exit")
			}
			traceID := tc.traceparent[3:35]
			rcv.mu.Lock()
			var got *tracepb.Span
			for _, s := range rcv.spans {
				if hex.EncodeToString(s.TraceId) == traceID && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
					got = s
				}
			}
			rcv.mu.Unlock()
			if (got != nil) != tc.exported {
				t.Errorf("server span exported: %v, want %v", got != nil, tc.exported)
			}
			if got != nil && hex.EncodeToString(got.ParentSpanId) != tc.traceparent[36:52] {
				t.Errorf("the server span does not continue the caller's trace: parent %x", got.ParentSpanId)
			}
		})
	}
}

// TestTelemetryExportErrorsAreLogLines: a collector that refuses the
// export and echoes the request's credentials back. The exporter's error
// goes to stderr as a JSON log line through the scrubber, never as the
// SDK's plain-text line, and never with the OTEL_EXPORTER_OTLP_HEADERS
// credential.
func TestTelemetryExportErrorsAreLogLines(t *testing.T) {
	const secret = "HEADERSECRET3xyz"
	refused := make(chan struct{}, 16)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "bad credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
		select {
		case refused <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(collector.Close)
	srv := startRaw(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20"+secret)
	srv.initialize()
	srv.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"}}}`)
	srv.next()
	select {
	case <-refused:
	case <-time.After(20 * time.Second):
		t.Fatal("the collector was never called")
	}
	_ = srv.stdin.Close()
	select {
	case <-srv.done:
	case <-time.After(15 * time.Second):
		t.Fatal("server did not exit")
	}
	logged := srv.stderr.String()
	if strings.Contains(logged, secret) {
		t.Errorf("stderr carries the OTLP header credential:\n%s", logged)
	}
	sawExport := false
	for line := range strings.Lines(logged) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !json.Valid([]byte(line)) {
			t.Errorf("stderr line is not a JSON log line: %q", line)
		}
		sawExport = sawExport || strings.Contains(line, "401")
	}
	if !sawExport {
		t.Errorf("the refused export is not logged:\n%s", logged)
	}
}

// TestTelemetryTraceStateBounded: a caller's tracestate (32 members of 250
// characters, valid) would be copied into every exported span of the
// request, database spans included, and into the requests to Parse Server
// and the embeddings endpoint. It is cut to the 512 characters W3C trace
// context asks to be carried, dropping long members first.
func TestTelemetryTraceStateBounded(t *testing.T) {
	rcv := newOTLPReceiver(t)
	srv := startRaw(t, rcv.env()...)
	srv.initialize()
	members := []string{"short=kept"}
	for i := range 31 {
		members = append(members, fmt.Sprintf("v%d=%s", i, strings.Repeat("x", 250)))
	}
	const traceID = "abf92f3577b34da6a3ce929d0e0e4736"
	srv.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"},"_meta":{"traceparent":"00-` + traceID + `-00f067aa0ba902b7-01","tracestate":"` + strings.Join(members, ",") + `"}}}`)
	if m := srv.next(); m["result"] == nil {
		t.Fatalf("count_objects: %v", m)
	}
	span := rcv.waitSpan(t, "tools/call count_objects", func(s *tracepb.Span) bool {
		return hex.EncodeToString(s.TraceId) == traceID && s.Kind == tracepb.Span_SPAN_KIND_SERVER
	})
	if len(span.TraceState) > 512 {
		t.Errorf("server span carries a %d-character tracestate", len(span.TraceState))
	}
	if span.TraceState != "short=kept" {
		t.Errorf("tracestate %q, want the short member kept", span.TraceState[:min(len(span.TraceState), 80)])
	}
}

// TestTelemetryHTTPTraceHeadersIgnored: over HTTP only params._meta
// carries trace context; traceparent, tracestate and baggage HTTP headers
// from a stranger's request change nothing and are exported nowhere.
func TestTelemetryHTTPTraceHeadersIgnored(t *testing.T) {
	rcv := newOTLPReceiver(t)
	h := startHTTP(t, rcv.env()...)
	s := h.session(nil)
	const headerTrace, metaTrace = "cbf92f3577b34da6a3ce929d0e0e4736", "dbf92f3577b34da6a3ce929d0e0e4736"
	s.headers["traceparent"] = "00-" + headerTrace + "-00f067aa0ba902b7-01"
	s.headers["tracestate"] = "hdr=HEADERSTATE77"
	s.headers["baggage"] = "user=HEADERBAGGAGE77"
	s.rpc("1", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Artist"}}`)
	s.rpc("2", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Artist"},"_meta":{"traceparent":"00-`+metaTrace+`-00f067aa0ba902b7-01"}}`)
	rcv.waitSpan(t, "the _meta call", func(sp *tracepb.Span) bool { return hex.EncodeToString(sp.TraceId) == metaTrace })
	raw := rcv.allBytes()
	id, _ := hex.DecodeString(headerTrace)
	for _, leak := range [][]byte{id, []byte("HEADERSTATE77"), []byte("HEADERBAGGAGE77")} {
		if bytes.Contains(raw, leak) {
			t.Errorf("the exported spans carry the HTTP header's %q", leak)
		}
	}
}

// TestTelemetryEmbeddingsSpanLeaksNothing: a semantic_search traced to
// the embeddings endpoint has its client span, but neither the spans nor
// /metrics carry the endpoint's URL, its API key or the search text.
func TestTelemetryEmbeddingsSpanLeaksNothing(t *testing.T) {
	const key, text = "sk-e2e-telemetry-KEY0042", "harbor SEARCHTEXT0042"
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in struct {
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(req.Body).Decode(&in)
		var data []map[string]any
		for i, s := range in.Input {
			data = append(data, map[string]any{"index": i, "embedding": embed.FixtureVector(s)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	t.Cleanup(endpoint.Close)
	rcv := newOTLPReceiver(t)
	addr := freeAddr(t)
	srv := startRaw(t, append(rcv.env(), policyFile(t, "demo"), "PARSE_MCP_METRICS_ADDR="+addr,
		"PARSE_MCP_EMBEDDINGS_URL="+endpoint.URL+"/v1", "PARSE_MCP_EMBEDDINGS_MODEL=test-model", "PARSE_MCP_EMBEDDINGS_API_KEY="+key)...)
	srv.initialize()
	const traceID = "fbf92f3577b34da6a3ce929d0e0e4736"
	srv.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"semantic_search","arguments":{"query":"` + text + `","k":2},"_meta":{"traceparent":"00-` + traceID + `-00f067aa0ba902b7-01"}}}`)
	if m := srv.next(); m["result"] == nil {
		t.Fatalf("semantic_search: %v", m)
	}
	rcv.waitSpan(t, "embeddings", func(s *tracepb.Span) bool {
		peer, _ := spanAttr(s, "parse_mcp.peer")
		return hex.EncodeToString(s.TraceId) == traceID && peer == "embeddings"
	})
	metrics, _ := scrape(t, addr)
	host := strings.TrimPrefix(endpoint.URL, "http://")
	for where, b := range map[string][]byte{"spans": rcv.allBytes(), "metrics": []byte(metrics)} {
		for _, leak := range []string{key, "SEARCHTEXT0042", host, "/v1/embeddings"} {
			if bytes.Contains(b, []byte(leak)) {
				t.Errorf("%s carry %q", where, leak)
			}
		}
	}
}

// TestTelemetryMetricsRefuseRebinding: a web page that rebinds its own
// name to 127.0.0.1 could read a loopback /metrics (tool and class names,
// traffic) from the operator's browser. Like the MCP listener, a loopback
// metrics listener answers only a loopback Host; browsers' cross-origin
// requests from other origins are refused too.
func TestTelemetryMetricsRefuseRebinding(t *testing.T) {
	addr := freeAddr(t)
	startRaw(t, "PARSE_MCP_METRICS_ADDR="+addr).initialize()
	scrape(t, addr) // waits for the listener
	_, port, _ := strings.Cut(addr, ":")
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"loopback address", addr, "", http.StatusOK},
		{"localhost", "localhost:" + port, "", http.StatusOK},
		{"rebound name", "rebind.example:" + port, "", http.StatusForbidden},
		{"foreign origin", addr, "http://evil.example", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET /metrics with Host %s: %d, want %d", tc.host, resp.StatusCode, tc.want)
			}
			if tc.want != http.StatusOK && bytes.Contains(body, []byte("parse_mcp_")) {
				t.Errorf("the refusal carries the metrics")
			}
		})
	}
}
