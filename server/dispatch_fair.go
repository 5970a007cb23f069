package server

import (
	"context"
	"sync"
)

// Fair scheduling of tool calls between HTTP sessions and clients: one
// session may run at most sessionShare of the tool workers at once, one
// client (remote IP) at most clientShare over all its sessions and
// stateless requests; further calls wait for a slot of their own before
// they compete for a worker, so a session or client flooding slow calls
// cannot take every worker from the others. The stdio session (a single
// client) is not limited beyond the pool.

// sessionShare is how many tool calls one HTTP session may run at once.
func sessionShare(workers int) int { return max(1, workers/4) }

// clientShare is how many tool calls one HTTP client (remote IP) may run at
// once over all its sessions and stateless (2026-07-28) requests — without
// it, a client opening several sessions, or sending stateless requests
// (each its own session), would take every worker.
func clientShare(workers int) int { return max(1, workers/2) }

type fairSlots struct {
	mu    sync.Mutex
	share int
	slots map[string]*sessionSlots
}

type sessionSlots struct {
	ch   chan struct{}
	refs int
}

// acquire waits for one of the session's slots; release must be called
// when it returns true.
func (f *fairSlots) acquire(ctx context.Context, sessionID string) (release func(), ok bool) {
	f.mu.Lock()
	if f.slots == nil {
		f.slots = map[string]*sessionSlots{}
	}
	s := f.slots[sessionID]
	if s == nil {
		s = &sessionSlots{ch: make(chan struct{}, f.share)}
		f.slots[sessionID] = s
	}
	s.refs++
	f.mu.Unlock()
	done := func() {
		f.mu.Lock()
		if s.refs--; s.refs == 0 {
			delete(f.slots, sessionID)
		}
		f.mu.Unlock()
	}
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; done() }, true
	case <-ctx.Done():
		done()
		return nil, false
	}
}
