// Package limits counts calls in rate windows (SECURITY.md "Limits and
// guards"). A Store answers one question per call: "add one hit to each of
// these buckets if every one has room; else which one is full and when to
// retry". Memory keeps the windows in this process (one process's limit);
// Mongo keeps them in a MongoDB collection shared by every process that
// points at it (docs/transports.md "Behind a load balancer"), so N processes enforce one
// limit.
package limits

import (
	"context"
	"sync"
	"time"
)

// Bucket is one rate window a call counts against.
type Bucket struct {
	// Key names the bucket ("session:…", "client:…", "process"); it is
	// unique across the buckets of one Store.
	Key string
	// Limit is the most calls per Window; 0 or less disables the bucket.
	Limit  int
	Window time.Duration
}

// Store is a rate window store.
type Store interface {
	// Hit records one call at now in every bucket when all of them have
	// room; a refused call uses none. It returns the index of the bucket
	// that refused it (-1: allowed) and how long until it has room again.
	// A store that cannot answer refuses (fail closed): it never allows a
	// call it could not count.
	Hit(ctx context.Context, now time.Time, buckets []Bucket) (refused int, retryAfter time.Duration)
	// Full reports whether b has no room at now, without counting a call,
	// and how long until it has. A store that cannot answer says it is
	// full (fail closed).
	Full(ctx context.Context, now time.Time, b Bucket) (full bool, retryAfter time.Duration)
}

// Memory is a sliding-window log per bucket in this process: a call is
// allowed when fewer than Limit calls were allowed in the last Window.
type Memory struct {
	mu        sync.Mutex
	buckets   map[string]*memoryBucket
	lastSweep time.Time
}

type memoryBucket struct {
	window time.Duration
	// times are the allowed calls' instants inside the window, oldest first.
	times []time.Time
}

// NewMemory is an empty in-process store.
func NewMemory() *Memory { return &Memory{buckets: map[string]*memoryBucket{}} }

// Hit implements Store.
func (m *Memory) Hit(_ context.Context, now time.Time, buckets []Bucket) (int, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now, buckets)
	for i, b := range buckets {
		if b.Limit <= 0 {
			continue
		}
		if wait, ok := m.room(b, now); !ok {
			return i, wait
		}
	}
	for _, b := range buckets {
		if b.Limit <= 0 {
			continue
		}
		mb := m.buckets[b.Key]
		if mb == nil {
			mb = &memoryBucket{}
			m.buckets[b.Key] = mb
		}
		mb.window = b.Window
		mb.times = append(mb.times, now)
	}
	return -1, 0
}

// Full implements Store.
func (m *Memory) Full(_ context.Context, now time.Time, b Bucket) (bool, time.Duration) {
	if b.Limit <= 0 {
		return false, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	wait, ok := m.room(b, now)
	return !ok, wait
}

// room drops b's calls that left the window and reports whether it has
// room; when not, how long until its oldest call leaves the window.
func (m *Memory) room(b Bucket, now time.Time) (time.Duration, bool) {
	mb := m.buckets[b.Key]
	if mb == nil {
		return 0, true
	}
	cutoff := now.Add(-b.Window)
	i := 0
	for i < len(mb.times) && !mb.times[i].After(cutoff) {
		i++
	}
	if i > 0 {
		mb.times = append(mb.times[:0], mb.times[i:]...)
	}
	if len(mb.times) >= b.Limit {
		return mb.times[0].Add(b.Window).Sub(now), false
	}
	return 0, true
}

// sweep drops idle buckets (ended HTTP sessions, clients gone) at most once
// per the longest window among buckets.
func (m *Memory) sweep(now time.Time, buckets []Bucket) {
	var every time.Duration
	for _, b := range buckets {
		every = max(every, b.Window)
	}
	if now.Sub(m.lastSweep) < every {
		return
	}
	m.lastSweep = now
	for k, mb := range m.buckets {
		if len(mb.times) == 0 || !mb.times[len(mb.times)-1].After(now.Add(-mb.window)) {
			delete(m.buckets, k)
		}
	}
}
