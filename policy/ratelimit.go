package policy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
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

// rateLimiter is a sliding-window log per key: a call is allowed when fewer
// than limit calls were allowed in the last window. Refused calls do not
// count. limit 0 disables it.
type rateLimiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu        sync.Mutex
	buckets   map[string]*rateBucket
	lastSweep time.Time
}

type rateBucket struct {
	// times are the allowed calls' instants inside the window, oldest first.
	times []time.Time
}

func newRateLimiter(limit int, window time.Duration, now func() time.Time) *rateLimiter {
	return &rateLimiter{limit: limit, window: window, now: now, buckets: map[string]*rateBucket{}}
}

// allow records a call for key and reports whether it is allowed; when not,
// it returns how long until the oldest call leaves the window.
func (r *rateLimiter) allow(key string) (time.Duration, bool) {
	if r == nil || r.limit <= 0 {
		return 0, true
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.allowLocked(key, now)
}

// bucketRef is one bucket of one limiter.
type bucketRef struct {
	l   *rateLimiter
	key string
	// scope names the bucket in the refusal ("this session", …).
	scope string
}

// allowAll records a call in every bucket only when all have room (a
// refused call uses none) and otherwise names the first full one. The
// limiters are locked in the order given, which is the same everywhere
// (session, client, process).
func allowAll(now time.Time, refs ...bucketRef) (refused *bucketRef, wait time.Duration) {
	var live []bucketRef
	for _, r := range refs {
		if r.l != nil && r.l.limit > 0 {
			live = append(live, r)
		}
	}
	for _, r := range live {
		r.l.mu.Lock()
		defer r.l.mu.Unlock()
	}
	for i, r := range live {
		if w, ok := r.l.roomLocked(r.key, now); !ok {
			return &live[i], w
		}
	}
	for _, r := range live {
		r.l.allowLocked(r.key, now)
	}
	return nil, 0
}

// roomLocked reports whether key has room now, without recording a call.
func (r *rateLimiter) roomLocked(key string, now time.Time) (time.Duration, bool) {
	b := r.buckets[key]
	if b == nil {
		return 0, true
	}
	cutoff := now.Add(-r.window)
	n := 0
	for _, t := range b.times {
		if t.After(cutoff) {
			n++
		}
	}
	if n >= r.limit {
		for _, t := range b.times {
			if t.After(cutoff) {
				return t.Add(r.window).Sub(now), false
			}
		}
	}
	return 0, true
}

func (r *rateLimiter) allowLocked(key string, now time.Time) (time.Duration, bool) {
	r.sweep(now)
	b := r.buckets[key]
	if b == nil {
		b = &rateBucket{}
		r.buckets[key] = b
	}
	cutoff := now.Add(-r.window)
	i := 0
	for i < len(b.times) && !b.times[i].After(cutoff) {
		i++
	}
	if i > 0 {
		b.times = append(b.times[:0], b.times[i:]...)
	}
	if len(b.times) >= r.limit {
		return b.times[0].Add(r.window).Sub(now), false
	}
	b.times = append(b.times, now)
	return 0, true
}

// sweep drops idle buckets (ended HTTP sessions) once per window.
func (r *rateLimiter) sweep(now time.Time) {
	if now.Sub(r.lastSweep) < r.window {
		return
	}
	r.lastSweep = now
	cutoff := now.Add(-r.window)
	for k, b := range r.buckets {
		if len(b.times) == 0 || !b.times[len(b.times)-1].After(cutoff) {
			delete(r.buckets, k)
		}
	}
}

// checkRate applies the rate limit to one call: one bucket for the process
// over stdio; over HTTP the session's (if any), the client's and the
// process's, all of which must have room. A client's bucket is smaller than
// the process's, so no single client can use up the process's alone. Who
// sends the call comes from the request's callinfo: Client is an opaque key
// the transport chose for the party behind it (its named API key, its
// address or the address a trusted proxy forwards), Session the key of its
// session ("" for a request that belongs to none).
func (e *Engine) checkRate(ctx context.Context) *toolerror.Error {
	now := e.now()
	var refs []bucketRef
	if e.cfg.HTTPAddr == "" {
		refs = []bucketRef{{e.limiter, "process", "this server"}}
	} else {
		who := callinfo.From(ctx)
		if who.Session != "" {
			refs = append(refs, bucketRef{e.limiter, who.Session, "this session"})
		}
		refs = append(refs, bucketRef{e.clientLimiter, "client:" + who.Client, "this client"},
			bucketRef{e.processLimiter, "process", "this server, all clients together"})
	}
	refused, wait := allowAll(now, refs...)
	if refused == nil {
		return nil
	}
	return &toolerror.Error{Code: toolerror.RateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("rate limit reached (%d calls per %s for %s); retry in %d s", refused.l.limit, refused.l.window, refused.scope, retrySeconds(wait))}
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
