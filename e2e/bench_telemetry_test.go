package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkTelemetryOverhead: p50 of a small count_objects through the
// binary with telemetry off, with metrics only (PARSE_MCP_METRICS_ADDR),
// and with every request traced and exported to a local OTLP receiver
// (docs/observability.md "Cost"; goals ≤ 1.02× and ≤ 1.05× of off). The
// three servers run side by side and are called in turn, one call each
// per round, so that machine noise falls on all three alike.
func BenchmarkTelemetryOverhead(b *testing.B) {
	rcv := newOTLPReceiver(b)
	policy := policyFile(b, "no_rate_limit")
	modes := []struct {
		name string
		env  []string
	}{
		{"off", []string{policy}},
		{"metrics", []string{policy, "PARSE_MCP_METRICS_ADDR=" + freeAddr(b)}},
		{"tracing", append(rcv.env(), policy, "PARSE_MCP_METRICS_ADDR="+freeAddr(b))},
	}
	servers := make([]*pipeServer, len(modes))
	for i, m := range modes {
		servers[i] = spawnPipe(b, m.env...)
		defer servers[i].close()
		servers[i].roundTrip(b, initLine)
	}
	const traceparent = `"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`
	line := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Artist"},%s}}`, id, traceparent)
	}
	// Warm the schema caches and connections.
	for _, s := range servers {
		for i := range 20 {
			if resp := s.roundTrip(b, line(i)); !strings.Contains(resp, `"result"`) || strings.Contains(resp, `"isError":true`) {
				b.Fatalf("count_objects: %s", resp)
			}
		}
	}
	rounds := max(b.N, 1) * 150
	samples := make([][]time.Duration, len(modes))
	b.ResetTimer()
	for r := range rounds {
		for k := range servers {
			i := (r + k) % len(servers) // rotate who goes first
			start := time.Now()
			resp := servers[i].roundTrip(b, line(1000+r))
			samples[i] = append(samples[i], time.Since(start))
			if strings.Contains(resp, `"isError":true`) {
				b.Fatalf("count_objects (%s): %s", modes[i].name, resp)
			}
		}
	}
	b.StopTimer()
	off := percentile(samples[0], 50)
	b.ReportMetric(float64(off.Microseconds())/1000, "off-p50-ms")
	for i, m := range modes[1:] {
		b.ReportMetric(float64(percentile(samples[i+1], 50))/float64(off), m.name+"-ratio")
	}
}
