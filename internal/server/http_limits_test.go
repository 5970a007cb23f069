package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func limitsHandler(sessions ...*httpSession) *HTTPHandler {
	h := &HTTPHandler{sessions: map[string]*httpSession{}}
	for _, s := range sessions {
		h.sessions[s.SessionID()] = s
	}
	return h
}

func fakeHTTPSession(id, client string, age time.Duration, streaming bool) *httpSession {
	return &httpSession{Session: NewSession(id), client: client, lastUsed: time.Now().Add(-age), streaming: streaming}
}

// TestSessionCapsEvictInsteadOfLockingOut (leak class 8): a client at its
// cap loses its own least recently used idle session, never another
// client's; a full process loses its least recently used idle session;
// only when nothing idle is left is a new session refused.
func TestSessionCapsEvictInsteadOfLockingOut(t *testing.T) {
	var mine []*httpSession
	for i := range maxSessionsPerClient {
		mine = append(mine, fakeHTTPSession(fmt.Sprint("a", i), "10.0.0.1", time.Duration(i)*time.Minute, false))
	}
	other := fakeHTTPSession("b0", "10.0.0.2", time.Hour, false) // the oldest of all
	h := limitsHandler(append(mine, other)...)
	victims, ok := h.evictionsFor("10.0.0.1")
	if !ok || len(victims) != 1 || victims[0].SessionID() != fmt.Sprint("a", maxSessionsPerClient-1) {
		t.Fatalf("client at its cap: %v %v", ids(victims), ok)
	}
	if v, ok := h.evictionsFor("10.0.0.2"); !ok || len(v) != 0 {
		t.Fatalf("another client under its cap: %v %v", ids(v), ok)
	}
	// Streaming sessions are in use: the LRU idle one goes.
	mine[maxSessionsPerClient-1].streaming = true
	if v, ok := h.evictionsFor("10.0.0.1"); !ok || len(v) != 1 || v[0].SessionID() != fmt.Sprint("a", maxSessionsPerClient-2) {
		t.Fatalf("skip streaming: %v %v", ids(v), ok)
	}
	for _, s := range mine {
		s.streaming = true
	}
	if _, ok := h.evictionsFor("10.0.0.1"); ok {
		t.Fatal("every session of the client streams: must refuse")
	}
	// A full process: many clients; a newcomer evicts the global LRU idle.
	var all []*httpSession
	for i := range maxHTTPSessions {
		all = append(all, fakeHTTPSession(fmt.Sprint("s", i), fmt.Sprint("10.1.", i/8, ".", i%8), time.Duration(i)*time.Second, i%2 == 1))
	}
	h = limitsHandler(all...)
	v, ok := h.evictionsFor("10.9.9.9")
	if !ok || len(v) != 1 || v[0].SessionID() != fmt.Sprint("s", maxHTTPSessions-2) {
		t.Fatalf("full process: %v %v", ids(v), ok)
	}
}

func ids(list []*httpSession) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.SessionID())
	}
	return out
}

// TestFairSlots: a session holding its whole share waits for its own slot
// while another session gets one at once; a cancelled wait gives up.
func TestFairSlots(t *testing.T) {
	f := &fairSlots{share: 2}
	ctx := context.Background()
	r1, _ := f.acquire(ctx, "A")
	r2, _ := f.acquire(ctx, "A")
	got := make(chan bool, 1)
	go func() {
		_, ok := f.acquire(ctx, "A")
		got <- ok
	}()
	select {
	case <-got:
		t.Fatal("a third call of A ran beyond its share")
	case <-time.After(50 * time.Millisecond):
	}
	rb, ok := f.acquire(ctx, "B")
	if !ok {
		t.Fatal("B waited for A")
	}
	rb()
	r1()
	if ok := <-got; !ok {
		t.Fatal("A's queued call did not get the freed slot")
	}
	r2()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	f2 := &fairSlots{share: 1}
	rel, _ := f2.acquire(ctx, "C")
	if _, ok := f2.acquire(cctx, "C"); ok {
		t.Fatal("cancelled wait acquired")
	}
	rel()
	if len(f2.slots) != 0 {
		t.Fatalf("slots not cleaned up: %v", f2.slots)
	}
	if sessionShare(16) != 4 || sessionShare(2) != 1 {
		t.Fatal("sessionShare")
	}
}

func TestServerTimeouts(t *testing.T) {
	srv := &http.Server{}
	applyServerTimeouts(srv)
	if srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 {
		t.Fatalf("timeouts: %+v", srv)
	}
}

// TestListenStreamCaps: stateless listen streams are capped per client and
// in total, and a closed stream frees its place.
func TestListenStreamCaps(t *testing.T) {
	h := &HTTPHandler{}
	var releases []func()
	for i := range maxListensPerClient {
		rel, ok := h.admitListen("10.0.0.1")
		if !ok {
			t.Fatalf("stream %d refused", i)
		}
		releases = append(releases, rel)
	}
	if _, ok := h.admitListen("10.0.0.1"); ok {
		t.Fatal("a client past its cap")
	}
	if rel, ok := h.admitListen("10.0.0.2"); !ok {
		t.Fatal("another client refused")
	} else {
		rel()
	}
	releases[0]()
	if rel, ok := h.admitListen("10.0.0.1"); !ok {
		t.Fatal("a closed stream did not free its place")
	} else {
		rel()
	}
	for _, rel := range releases[1:] {
		rel()
	}
	if len(h.listens) != 0 {
		t.Fatalf("not cleaned up: %v", h.listens)
	}
	for i := range maxListens {
		if _, ok := h.admitListen(fmt.Sprint("c", i)); !ok {
			t.Fatalf("total %d refused", i)
		}
	}
	if _, ok := h.admitListen("late"); ok {
		t.Fatal("past the total cap")
	}
}
