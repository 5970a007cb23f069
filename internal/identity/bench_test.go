package identity

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/policy"
)

// BenchmarkIdentityResolution is what deciding a request's identity costs,
// in one run, per request: today's fixed identity (the API key checked, the
// shared engine), a per-request Parse session from the cache (recognised,
// looked up by digest, bound to the context, the engine's view), and the
// same uncached (PARSE_MCP_IDENTITY_CACHE=0s: _Session, _User and the role
// graph read every time). It reports each in ns/request and the two
// per-request costs as multiples of the fixed one (cached-x, uncached-x);
// each measurement includes a clock read (tens of ns).
//
//	go test -run '^$' -bench IdentityResolution ./internal/identity/
func BenchmarkIdentityResolution(b *testing.B) {
	store := demoStore(b)
	cfg := &config.Config{Permissions: config.TierReadonly, IdentityCache: 30 * time.Second}
	engine := policy.New(cfg, nil, zerolog.New(io.Discard))
	const key = "bench-api-key-0123456789"
	fixed := authn.Keys(key, nil)
	cached := New(store, nil, cfg, nil).Authenticate(authn.ParseSession())
	uncachedCfg := *cfg
	uncachedCfg.IdentityCache = 0
	uncached := New(store, nil, &uncachedCfg, nil).Authenticate(authn.ParseSession())

	keyReq := httptest.NewRequest("POST", "/mcp", nil)
	keyReq.Header.Set("X-MCP-API-Key", key)
	sessReq := httptest.NewRequest("POST", "/mcp", nil)
	sessReq.Header.Set("Authorization", "Bearer "+demo.BobSessionToken)
	if _, err := cached(sessReq); err != nil {
		b.Fatal(err)
	}
	var tFixed, tCached, tUncached time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := fixed.Authenticate(keyReq); err != nil {
			b.Fatal(err)
		}
		if engine.For(keyReq.Context()) != engine {
			b.Fatal("the fixed identity got a view")
		}
		t1 := time.Now()
		ctx, err := cached(sessReq)
		if err != nil || engine.For(ctx).MasterPosture() {
			b.Fatal(err)
		}
		t2 := time.Now()
		ctx, err = uncached(sessReq)
		if err != nil || engine.For(ctx).MasterPosture() {
			b.Fatal(err)
		}
		t3 := time.Now()
		tFixed += t1.Sub(t0)
		tCached += t2.Sub(t1)
		tUncached += t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tFixed.Nanoseconds())/n, "fixed-ns/req")
	b.ReportMetric(float64(tCached.Nanoseconds())/n, "cached-ns/req")
	b.ReportMetric(float64(tUncached.Nanoseconds())/n, "uncached-ns/req")
	b.ReportMetric(float64(tCached)/float64(tFixed), "cached-x")
	b.ReportMetric(float64(tUncached)/float64(tFixed), "uncached-x")
}
