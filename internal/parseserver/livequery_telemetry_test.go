package parseserver_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
)

// TestLiveQueryConnectSpan: with tracing on, each LiveQuery connect is a
// client span "livequery connect" naming the peer only; a refused connect
// is marked failed; the exported bytes hold neither the session token nor
// the LiveQuery address nor the class.
func TestLiveQueryConnectSpan(t *testing.T) {
	var mu sync.Mutex
	var raw []byte
	var spans []*tracepb.Span
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ex coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &ex); err != nil {
			t.Errorf("OTLP body: %v", err)
		}
		mu.Lock()
		raw = append(raw, body...)
		for _, rs := range ex.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
	}))
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL) // the exporter reads the environment itself
	stop, err := telemetry.Start(context.Background(), telemetry.Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}

	var refuse atomic.Bool
	lqSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		replies := []string{`{"op":"connected","clientId":"c"}`, `{"op":"subscribed","clientId":"c","requestId":1}`}
		if refuse.Load() {
			replies[1] = `{"op":"error","code":119,"error":"nope"}`
		}
		for _, reply := range replies {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
			if err := c.Write(r.Context(), websocket.MessageText, []byte(reply)); err != nil {
				return
			}
		}
		_, _, _ = c.Read(r.Context())
	}))
	defer lqSrv.Close()
	const token = "r:secret-session-token-0001"
	cl, _ := parseserver.New(parseserver.Config{URL: lqSrv.URL + "/parse", ApplicationID: "app", MasterKey: config.NewSecret("k"),
		Identity: &parseserver.Identity{SessionToken: config.NewSecret(token)}})
	lq, err := cl.NewLiveQuery(strings.Replace(lqSrv.URL, "http://", "ws://", 1)+"/", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := lq.Subscribe(ctx, "SecretClassName"); err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	if _, err := lq.Subscribe(ctx, "SecretClassName"); err == nil {
		t.Fatal("a refused subscription succeeded")
	}
	cancel()
	stop(context.Background())

	mu.Lock()
	defer mu.Unlock()
	var ok, failed int
	for _, s := range spans {
		if s.Name != "livequery connect" || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			continue
		}
		if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			failed++
		} else {
			ok++
		}
	}
	if ok != 1 || failed != 1 {
		t.Errorf("livequery connect spans: %d ok, %d failed; want 1 and 1 (of %d spans)", ok, failed, len(spans))
	}
	for _, secret := range []string{token, strings.TrimPrefix(lqSrv.URL, "http://"), "SecretClassName"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the exported spans contain %q", secret)
		}
	}
}
