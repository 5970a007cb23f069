package policy

import (
	"context"
	"fmt"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Default rate limit (SECURITY.md "Limits and guards"): 60 calls per 60 s.
// Over HTTP the limit applies per session; one client's sessions and
// stateless requests together get config.DefaultHTTPClientRateFactor times
// as much, the whole process config.DefaultHTTPProcessRateFactor times (both
// configurable, the client's always less than the process's).
const (
	DefaultRateLimitRequests = 60
	DefaultRateLimitWindow   = 60 * time.Second
)

// SetLimitsStore replaces the in-memory rate windows with a store shared by
// every process that uses it (PARSE_MCP_LIMITS_STORE=mongodb; docs/transports.md
// "Behind a load balancer"): the process bucket is then the whole group's.
func (e *Engine) SetLimitsStore(s limits.Store) { e.rates = s }

// rateSubject is the key of the party a call counts against beyond its
// session: the transport's client key — a named API key, else the address
// or the one a trusted proxy forwards; with per-request identity over HTTP
// (docs/team.md "Serve a team") the identity's own key, which the transport uses
// as the request's credential. So one person's window is the same through
// every client, session and (with a shared store) process. It is the one
// place that says who "one client" is for the rate limit.
func rateSubject(ctx context.Context) string { return "client:" + callinfo.From(ctx).Client }

// checkRate applies the rate limit to one call: one bucket for the process
// over stdio; over HTTP the session's (if any), the client's and the
// process's, all of which must have room (a refused call uses none). A
// client's bucket is smaller than the process's, so no single client can
// use up the process's alone. Who sends the call comes from the request's
// callinfo: Client is an opaque key the transport chose for the party
// behind it, Session the key of its session ("" for a request that belongs
// to none).
func (e *Engine) checkRate(ctx context.Context) *toolerror.Error {
	if e.rateLimit <= 0 {
		return nil
	}
	var buckets []limits.Bucket
	var scopes []string
	add := func(key string, factor int, scope string) {
		buckets = append(buckets, limits.Bucket{Key: key, Limit: e.rateLimit * factor, Window: e.rateWindow})
		scopes = append(scopes, scope)
	}
	var store limits.Store = e.localRates
	if e.cfg.HTTPAddr == "" {
		add("process", 1, "this server")
	} else {
		who := callinfo.From(ctx)
		if who.Session != "" {
			add("session:"+who.Session, 1, "this session")
		}
		_, _, clientFactor, processFactor := e.cfg.HTTPCaps()
		add(rateSubject(ctx), clientFactor, "this client")
		add("process", processFactor, "this server, all clients together")
		if e.rates != nil {
			store = e.rates
		}
	}
	refused, wait := store.Hit(ctx, e.now(), buckets)
	if refused < 0 {
		return nil
	}
	b := buckets[refused]
	return &toolerror.Error{Code: toolerror.RateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("rate limit reached (%d calls per %s for %s); retry in %d s", b.Limit, b.Window, scopes[refused], retrySeconds(wait))}
}

// AllowRequest counts a non-tool request that costs the server work
// (resources/subscribe, subscriptions/listen) against the same rate limit as
// tool calls; it fails with a rate_limited error.
func (e *Engine) AllowRequest(ctx context.Context) error {
	if err := e.checkRate(ctx); err != nil {
		return err
	}
	return nil
}
