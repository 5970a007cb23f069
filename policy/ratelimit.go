package policy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Default rate limit (SECURITY.md "Limits and guards"): 60 calls per 60 s.
const (
	DefaultRateLimitRequests = 60
	DefaultRateLimitWindow   = 60 * time.Second
	// ProcessRateLimitFactor: over HTTP the limit applies per session and,
	// this many times larger, to the whole process, so new sessions cannot
	// reset it and one client cannot take more than a share of the process.
	ProcessRateLimitFactor = 4
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

// allowBoth records a call in two limiters only when both have room (a
// refused call uses neither window): the session's bucket and the process's
// (ProcessRateLimitFactor times as large), so that opening a new session
// does not reset what the process allows. The lock order (session limiter
// first) is the same everywhere.
func allowBoth(a *rateLimiter, ka string, b *rateLimiter, kb string) (time.Duration, bool) {
	if a == nil || a.limit <= 0 {
		return b.allow(kb)
	}
	if b == nil || b.limit <= 0 {
		return a.allow(ka)
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if wait, ok := a.roomLocked(ka, now); !ok {
		return wait, false
	}
	if wait, ok := b.roomLocked(kb, now); !ok {
		return wait, false
	}
	a.allowLocked(ka, now)
	b.allowLocked(kb, now)
	return 0, true
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
// over stdio; over HTTP the session's bucket and the process's, both of
// which must have room.
func (e *Engine) checkRate(ctx context.Context) *toolerror.Error {
	key := e.rateKey(ctx)
	var wait time.Duration
	var ok bool
	limit := e.limiter.limit
	if e.cfg.HTTPAddr == "" {
		wait, ok = e.limiter.allow(key)
	} else {
		if key == "process" {
			// Over HTTP without a session (stateless requests): one shared
			// bucket of the per-session size, inside the process's.
			key = "sessionless"
		}
		wait, ok = allowBoth(e.limiter, key, e.processLimiter, "process")
		if !ok && e.processLimiter != nil {
			if _, sessionOK := e.limiter.peek(key); sessionOK {
				limit = e.processLimiter.limit // the process-wide bucket refused
			}
		}
	}
	if ok {
		return nil
	}
	return &toolerror.Error{Code: toolerror.RateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("rate limit reached (%d calls per %s); retry in %d s", limit, e.limiter.window, retrySeconds(wait))}
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

// peek reports whether key has room, recording nothing.
func (r *rateLimiter) peek(key string) (time.Duration, bool) {
	if r == nil || r.limit <= 0 {
		return 0, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.roomLocked(key, r.now())
}
