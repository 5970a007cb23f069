package telemetry

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestStartOff: without an endpoint, with OTEL_TRACES_EXPORTER=none or
// OTEL_SDK_DISABLED, and without a metrics listener nothing starts; an
// exporter or protocol this build lacks is a configuration error.
func TestStartOff(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		enabled bool
		wantErr bool
	}{
		{"nothing set", nil, false, false},
		{"exporter without endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, false, false},
		{"endpoint, exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false, false},
		{"endpoint, sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, false},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, false},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, true},
		{"ratio sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, true, false},
		{"ratio out of range", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, false, true},
		{"remote sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "jaeger_remote"}, false, true},
		{"zipkin", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			on = nil
			t.Cleanup(func() { on = nil })
			stop, err := Start(context.Background(), Options{Log: zerolog.Nop(), Getenv: func(k string) string { return tc.env[k] }})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			defer stop(context.Background())
			if Enabled() != tc.enabled {
				t.Errorf("Enabled() = %v, want %v", Enabled(), tc.enabled)
			}
			if !tc.enabled && (CommandMonitor() != nil || Transport("parse_server", nil) != nil) {
				t.Errorf("off, yet a monitor or transport wrapper is installed")
			}
		})
	}
}

// TestBoundedTraceState: a caller's tracestate is carried up to 512
// characters, long members dropped first, then members from the end.
func TestBoundedTraceState(t *testing.T) {
	long := "big=" + strings.Repeat("x", 200)
	var many []string
	for i := range 32 {
		many = append(many, fmt.Sprintf("k%02d=%s", i, strings.Repeat("y", 60)))
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short kept", "a=1,b=2", "a=1,b=2"},
		{"invalid dropped", "a=1,=bad", ""},
		{"long member dropped first", "a=1," + long + "," + strings.Join(many[:6], ","), "a=1," + strings.Join(many[:6], ",")},
		{"then from the end", strings.Join(many, ","), strings.Join(many[:7], ",")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := boundedTraceState(tc.in)
			if got != tc.want {
				t.Errorf("boundedTraceState = %q, want %q", got, tc.want)
			}
			if len(got) > maxTraceState {
				t.Errorf("%d characters", len(got))
			}
		})
	}
}
