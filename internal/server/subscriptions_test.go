package server

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// fakeSource: URIs are "C/aspect"; fingerprints are set by the test.
type fakeSource struct {
	mu       sync.Mutex
	fp       map[string]map[string]string
	events   map[string]chan struct{}
	snaps    map[string]int
	watching map[string]bool
}

func newFakeSource() *fakeSource {
	return &fakeSource{fp: map[string]map[string]string{}, events: map[string]chan struct{}{}, snaps: map[string]int{}, watching: map[string]bool{}}
}

func (f *fakeSource) ResolveSubscription(_ context.Context, uri string) (string, string, error) {
	class, aspect, ok := strings.Cut(uri, "/")
	if !ok || aspect == "schema" {
		return "", "", InvalidParams("cannot subscribe to %s", uri)
	}
	return class, aspect, nil
}

func (f *fakeSource) set(class, aspect, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fp[class] == nil {
		f.fp[class] = map[string]string{}
	}
	f.fp[class][aspect] = v
}

func (f *fakeSource) Snapshot(_ context.Context, class string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snaps[class]++
	out := map[string]string{}
	maps.Copy(out, f.fp[class])
	return out, nil
}

func (f *fakeSource) Watch(ctx context.Context, class string) (<-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.events[class]
	if !ok {
		return nil, ErrWatchUnsupported
	}
	f.watching[class] = true
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				f.mu.Lock()
				f.watching[class] = false
				f.mu.Unlock()
				return
			case _, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}

var testLimits = SubscriptionLimits{PerSession: 3, Sessions: 2, PollInterval: 20 * time.Millisecond,
	Debounce: 60 * time.Millisecond, MaxDelay: 300 * time.Millisecond, SafetyPoll: time.Hour}

func newTestManager(t *testing.T, src SubscriptionSource) (*Subscriptions, *mcpserver.MCPServer) {
	t.Helper()
	hooks := &mcpserver.Hooks{}
	s := mcpserver.NewMCPServer("t", "1", mcpserver.WithResourceCapabilities(true, false), mcpserver.WithHooks(hooks))
	m := NewSubscriptions(src, testLimits, zerolog.Nop())
	m.attach(s, hooks)
	t.Cleanup(m.Close)
	return m, s
}

func newTestSession(t *testing.T, s *mcpserver.MCPServer, id string) *Session {
	t.Helper()
	sess := NewSession(id)
	sess.Initialize()
	if err := s.RegisterSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	if sess.subscriber == nil {
		t.Fatal("registering did not attach the subscription manager")
	}
	return sess
}

// updates collects the URIs of resources/updated sent to a session in d.
func updates(sess *Session, d time.Duration) []string {
	var out []string
	deadline := time.After(d)
	for {
		select {
		case n := <-sess.Unsolicited():
			if n.Method == string(mcp.MethodNotificationResourceUpdated) {
				out = append(out, n.Params.AdditionalFields["uri"].(string))
			}
		case <-deadline:
			return out
		}
	}
}

func TestSubscriptionDebounceAndUnsubscribe(t *testing.T) {
	src := newFakeSource()
	src.set("Song", "count", "1")
	src.set("Song", "samples", "a")
	m, s := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	b := newTestSession(t, s, "b")
	ctx := context.Background()
	for _, u := range []string{"Song/count", "Song/samples"} {
		if err := m.subscribe(ctx, a, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.subscribe(ctx, b, "Song/count"); err != nil {
		t.Fatal(err)
	}
	if _, classes := m.Stats(); len(classes) != 1 {
		t.Fatalf("one watcher per class, got %v", classes)
	}
	// A burst: count changes 5 times within 100ms → one update per URI.
	for i := 2; i <= 6; i++ {
		src.set("Song", "count", string(rune('0'+i)))
		time.Sleep(15 * time.Millisecond)
	}
	if got := updates(a, 400*time.Millisecond); len(got) != 1 || got[0] != "Song/count" {
		t.Fatalf("session a: %v, want one Song/count", got)
	}
	if got := updates(b, 50*time.Millisecond); len(got) != 1 {
		t.Fatalf("session b: %v", got)
	}
	// Only samples changes: only the samples subscriber hears.
	src.set("Song", "samples", "b")
	if got := updates(a, 300*time.Millisecond); len(got) != 1 || got[0] != "Song/samples" {
		t.Fatalf("samples change: %v", got)
	}
	if got := updates(b, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("b is not subscribed to samples: %v", got)
	}
	// Unsubscribe: no more updates for that URI.
	m.unsubscribe(a, "Song/count")
	src.set("Song", "count", "9")
	if got := updates(a, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("after unsubscribe: %v", got)
	}
	if got := updates(b, 50*time.Millisecond); len(got) != 1 {
		t.Fatalf("b still subscribed: %v", got)
	}
	// Session teardown frees its subscriptions and, with the last one, the
	// watcher.
	s.UnregisterSession(ctx, "a")
	s.UnregisterSession(ctx, "b")
	if n, classes := m.Stats(); n != 0 || len(classes) != 0 {
		t.Fatalf("after teardown: %d sessions, watchers %v", n, classes)
	}
	src.mu.Lock()
	before := src.snaps["Song"]
	src.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	src.mu.Lock()
	after := src.snaps["Song"]
	src.mu.Unlock()
	if after != before {
		t.Fatalf("a stopped watcher still polls (%d → %d)", before, after)
	}
}

func TestSubscriptionUnchangedFingerprintIsSilent(t *testing.T) {
	// A write the scope cannot read leaves the fingerprint as it was.
	src := newFakeSource()
	src.set("Song", "count", "1")
	m, s := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	if err := m.subscribe(context.Background(), a, "Song/count"); err != nil {
		t.Fatal(err)
	}
	src.set("Song", "count", "1")
	src.set("Song", "other", "x") // an aspect nobody subscribed to
	if got := updates(a, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}

func TestSubscriptionLimits(t *testing.T) {
	src := newFakeSource()
	m, s := newTestManager(t, src)
	ctx := context.Background()
	a := newTestSession(t, s, "a")
	for _, u := range []string{"A/count", "B/count", "C/count"} {
		if err := m.subscribe(ctx, a, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.subscribe(ctx, a, "A/count"); err != nil {
		t.Fatalf("subscribing twice must be a no-op: %v", err)
	}
	err := m.subscribe(ctx, a, "D/count")
	if pe, ok := AsParamsError(err); !ok || !strings.Contains(pe.Message, "at most 3") {
		t.Fatalf("per-session cap: %v", err)
	}
	if _, ok := AsParamsError(m.subscribe(ctx, a, "A/schema")); !ok {
		t.Fatal("schema must be refused")
	}
	b := newTestSession(t, s, "b")
	if err := m.subscribe(ctx, b, "A/count"); err != nil {
		t.Fatal(err)
	}
	c := newTestSession(t, s, "c")
	err = m.subscribe(ctx, c, "A/count")
	if pe, ok := AsParamsError(err); !ok || !strings.Contains(pe.Message, "Too many sessions") {
		t.Fatalf("session cap: %v", err)
	}
	s.UnregisterSession(ctx, "b")
	if err := m.subscribe(ctx, c, "A/count"); err != nil {
		t.Fatalf("after a session left: %v", err)
	}
}

func TestSubscriptionChangeStream(t *testing.T) {
	// With a change stream, the class is fingerprinted only after events
	// (plus the rare safety poll), and events keep being debounced.
	src := newFakeSource()
	src.events["Song"] = make(chan struct{}, 16)
	src.set("Song", "count", "1")
	m, s := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	if err := m.subscribe(context.Background(), a, "Song/count"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	src.mu.Lock()
	idle := src.snaps["Song"]
	src.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d snapshots while idle with a change stream, want only the baseline", idle)
	}
	// A continuous stream of events (every 20ms for 600ms) still produces
	// updates within MaxDelay, not one at the very end.
	stop := time.After(600 * time.Millisecond)
	n := 0
loop:
	for {
		select {
		case <-stop:
			break loop
		case <-time.After(20 * time.Millisecond):
			n++
			src.set("Song", "count", strings.Repeat("x", n))
			src.events["Song"] <- struct{}{}
		}
	}
	got := updates(a, 400*time.Millisecond)
	if len(got) < 2 || len(got) > 4 {
		t.Fatalf("%d updates for 600ms of continuous writes with MaxDelay 300ms", len(got))
	}
	// The stream ends: the watcher falls back to polling.
	close(src.events["Song"])
	time.Sleep(50 * time.Millisecond)
	src.set("Song", "count", "after")
	if got := updates(a, 300*time.Millisecond); len(got) != 1 {
		t.Fatalf("after the stream ended: %v", got)
	}
}
