// Package telemetry is the server's OpenTelemetry: one server span per MCP
// request and the MCP semantic conventions' metrics, exported over OTLP/HTTP
// (configured by the standard OTEL_* variables), and metrics on a
// Prometheus endpoint (PARSE_MCP_METRICS_ADDR). docs/observability.md lists every
// span, metric and label; SECURITY.md "Telemetry" says what never leaves.
//
// Everything is off until Start turns it on, and off costs one nil check
// per call site: no exporter, no listener, no span, no instrument.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/version"
)

// state is what Start turned on. It is written once, before the server
// serves, and only read afterwards.
type state struct {
	tracer trace.Tracer // nil: tracing off
	inst   *instruments // nil: metrics off
}

var on *state

// Options are what Start needs beyond the OTEL_* environment.
type Options struct {
	// Metrics is the Prometheus listener (PARSE_MCP_METRICS_ADDR, bound by
	// the caller so that a busy port is a configuration error); nil: none.
	Metrics net.Listener
	Log     zerolog.Logger
	// Getenv reads the OTEL_* variables (os.Getenv when nil).
	Getenv func(string) string
}

// Enabled reports whether anything is exported.
func Enabled() bool { return on != nil }

// Start turns on what the environment asks for and returns the function
// that flushes and stops it. Nothing asked: nothing started, a no-op stop.
func Start(ctx context.Context, o Options) (stop func(context.Context), err error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	stop = func(context.Context) {}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		if o.Metrics != nil {
			return stop, errors.New("OTEL_SDK_DISABLED=true turns telemetry off: unset PARSE_MCP_METRICS_ADDR or OTEL_SDK_DISABLED")
		}
		return stop, nil
	}
	traces, err := exporterWanted(getenv, "TRACES")
	if err != nil {
		return stop, err
	}
	if !traces && o.Metrics == nil {
		return stop, nil
	}
	// The resource names the service only: no process, host or command
	// line attributes (a command line may carry a secret); the operator
	// adds what they want with OTEL_RESOURCE_ATTRIBUTES.
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "parse-mcp"), attribute.String("service.version", version.Version)),
		envResource(getenv))
	if err != nil {
		return stop, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	var stops []func(context.Context) error
	st := &state{}
	if traces {
		// The SDK's own errors (a refused or failed export, with the
		// collector's answer) are log lines like any other: JSON on the
		// scrubbed stderr, cut short, not the SDK's plain-text default.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			msg := err.Error()
			if len(msg) > 512 {
				msg = msg[:512] + "…"
			}
			o.Log.Warn().Str("error", msg).Msg("telemetry export failed")
		}))
		sampler, err := samplerFromEnv(getenv)
		if err != nil {
			return stop, err
		}
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return stop, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler))
		st.tracer = tp.Tracer(scope, trace.WithInstrumentationVersion(version.Version))
		stops = append(stops, tp.Shutdown)
	}
	if o.Metrics != nil {
		reg := prometheus.NewRegistry()
		st.inst = newInstruments(reg)
		stops = append(stops, serveMetrics(o.Metrics, metricsHandler(reg, o.Log), o.Log))
	}
	on = st
	o.Log.Info().Bool("traces", traces).Bool("prometheus", o.Metrics != nil).Msg("telemetry on")
	return func(ctx context.Context) {
		for _, s := range stops {
			_ = s(ctx)
		}
	}, nil
}

const scope = "github.com/parse-mcp/parse-mcp"

// exporterWanted reads OTEL_<SIGNAL>_EXPORTER and the OTLP endpoint: an
// exporter runs only when the operator named an endpoint and did not say
// "none". Only OTLP over HTTP is built in (docs/observability.md "Why
// OTLP over HTTP only").
func exporterWanted(getenv func(string) string, signal string) (bool, error) {
	switch kind := strings.ToLower(strings.TrimSpace(getenv("OTEL_" + signal + "_EXPORTER"))); kind {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("OTEL_%s_EXPORTER=%q is not supported: use otlp or none", signal, kind)
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") == "" {
		return false, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"} {
		if p := strings.ToLower(getenv(v)); p != "" && p != "http/protobuf" {
			return false, fmt.Errorf("%s=%q is not supported: use http/protobuf (OTLP over HTTP)", v, p)
		}
	}
	return true, nil
}

// samplerFromEnv is OTEL_TRACES_SAMPLER's sampler with the caller's say
// taken out (SECURITY.md "Telemetry"): a span whose parent came from
// params._meta is sampled as a new trace would be, by the server's own
// coin rather than the caller's sampled flag or trace id, so a caller can
// neither hide its requests nor force the export of ones the operator's
// ratio drops; spans under the server's own spans follow them. The
// parentbased_ variants are therefore the same as the plain ones.
func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	ratio := 1.0
	switch strings.TrimPrefix(name, "parentbased_") {
	case "", "always_on":
	case "always_off":
		ratio = 0
	case "traceidratio":
		if arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q is not a ratio between 0 and 1", arg)
			}
			ratio = r
		}
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q is not supported: use always_on, always_off or traceidratio (parentbased_ or not)", name)
	}
	own := ownCoin(ratio)
	return sdktrace.ParentBased(own, sdktrace.WithRemoteParentSampled(own), sdktrace.WithRemoteParentNotSampled(own)), nil
}

// ownCoin samples a fraction of the traces it is asked about by a random
// draw of its own, not by the trace id (a caller's choice when the trace
// continues its traceparent).
type ownCoin float64

func (c ownCoin) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	d := sdktrace.Drop
	if c >= 1 || rand.Float64() < float64(c) {
		d = sdktrace.RecordAndSample
	}
	return sdktrace.SamplingResult{Decision: d, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (c ownCoin) Description() string { return fmt.Sprintf("OwnCoin{%g}", float64(c)) }

// HeaderSecrets are the values of the OTLP exporter's headers
// (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS), each also
// without its scheme word ("Bearer x" and x): collector credentials, for
// the scrubber, since a collector refusing them may echo them back into the
// exporter's error.
func HeaderSecrets(getenv func(string) string) []string {
	var out []string
	for _, v := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		for pair := range strings.SplitSeq(getenv(v), ",") {
			_, value, ok := strings.Cut(pair, "=")
			if !ok {
				continue
			}
			if dec, err := url.PathUnescape(value); err == nil {
				value = dec
			}
			value = strings.TrimSpace(value)
			out = append(out, value)
			if _, token, ok := strings.Cut(value, " "); ok {
				out = append(out, strings.TrimSpace(token))
			}
		}
	}
	return out
}

func envResource(getenv func(string) string) *resource.Resource {
	var kvs []attribute.KeyValue
	for pair := range strings.SplitSeq(getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(pair, "=")
		if ok && strings.TrimSpace(k) != "" {
			kvs = append(kvs, attribute.String(strings.TrimSpace(k), strings.TrimSpace(v)))
		}
	}
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		kvs = append(kvs, attribute.String("service.name", s))
	}
	return resource.NewSchemaless(kvs...)
}

// serveMetrics serves GET /metrics on l, and nothing else.
func serveMetrics(l net.Listener, h http.Handler, log zerolog.Logger) func(context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", notRebound(l, h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics listener stopped")
		}
	}()
	return srv.Shutdown
}

// notRebound defeats DNS rebinding as the MCP listener does (SECURITY.md
// "Telemetry"): on a loopback listener the Host must name a loopback host,
// and a browser's request must come from a loopback origin, so a web page
// the operator opens cannot read the metrics through its own name.
func notRebound(l net.Listener, h http.Handler) http.Handler {
	addr, _ := l.Addr().(*net.TCPAddr)
	loopback := addr != nil && addr.IP.IsLoopback()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !config.RequestNotRebound(r, loopback) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricsHandler writes the registry in Prometheus's text format. It is
// promhttp's handler without content negotiation, compression and its
// response-writer wrappers, which cost the idle server more memory than
// they are worth here (docs/observability.md "Cost").
func metricsHandler(reg *prometheus.Registry, log zerolog.Logger) http.Handler {
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		families, err := reg.Gather()
		if err != nil {
			log.Error().Err(err).Msg("gathering metrics")
			http.Error(w, "metrics unavailable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, mf := range families {
			if err := enc.Encode(mf); err != nil {
				return // the scraper went away
			}
		}
	})
}

// propagator reads the W3C trace context a client put in params._meta.
var propagator = propagation.TraceContext{}

// TraceID is the trace id of ctx's span, "" without one (for the audit
// event and log lines).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// Log adds the trace id of ctx's span to a log line, when there is one.
func Log(ctx context.Context, ev *zerolog.Event) *zerolog.Event {
	if id := TraceID(ctx); id != "" {
		return ev.Str("trace_id", id)
	}
	return ev
}
