package policy

import (
	"sync"
	"time"
)

// Default rate limit (SECURITY.md "Limits and guards"): 60 calls per 60 s.
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
