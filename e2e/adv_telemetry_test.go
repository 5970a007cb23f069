package e2e

import (
	"encoding/hex"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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
