package server

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// fakeSource: URIs are "C/aspect"; fingerprints are set by the test. A
// class with a channel in events has a change stream: the test sends each
// change event itself (the channel is unbuffered, so a send returns once the
// watcher has taken the event).
//
// A class with a probe token (setProbe) has a probe: the watcher takes a
// fingerprint only when the token moved (or a recheck is due). A class with
// a gate in hold takes its fingerprints only when the test lets one through
// (a slow baseline); one with an error in fail fails them.
type fakeSource struct {
	mu     sync.Mutex
	fp     map[string]map[string]string
	newest map[string]time.Time
	probe  map[string]string
	events map[string]chan struct{}
	hold   map[string]chan struct{}
	fail   map[string]error
	snaps  map[string]int
	probes map[string]int
}

func newFakeSource() *fakeSource {
	return &fakeSource{fp: map[string]map[string]string{}, newest: map[string]time.Time{}, probe: map[string]string{},
		events: map[string]chan struct{}{}, hold: map[string]chan struct{}{}, fail: map[string]error{},
		snaps: map[string]int{}, probes: map[string]int{}}
}

func (f *fakeSource) setProbe(class, token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probe[class] = token
}

func (f *fakeSource) setNewest(class string, t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.newest[class] = t
}

func (f *fakeSource) Probe(_ context.Context, class string, basis any) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes[class]++
	if basis != class {
		return "", errors.New("the basis is not the snapshot's")
	}
	return f.probe[class], nil
}

func (f *fakeSource) probed(class string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.probes[class]
}

func (f *fakeSource) ResolveSubscription(_ context.Context, uri string) (string, string, error) {
	class, aspect, ok := strings.Cut(uri, "/")
	if !ok || aspect == "schema" {
		return "", "", toolerror.InvalidParams("cannot subscribe to %s", uri)
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

func (f *fakeSource) Snapshot(ctx context.Context, class string) (Fingerprint, error) {
	f.mu.Lock()
	gate := f.hold[class]
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return Fingerprint{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snaps[class]++
	if err := f.fail[class]; err != nil {
		return Fingerprint{}, err
	}
	out := map[string]string{}
	maps.Copy(out, f.fp[class])
	return Fingerprint{Aspects: out, Newest: f.newest[class], Probe: f.probe[class], Basis: class}, nil
}

func (f *fakeSource) Watch(_ context.Context, class string) (<-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.events[class]
	if !ok {
		return nil, ErrWatchUnsupported
	}
	return ch, nil
}

func (f *fakeSource) snapshots(class string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snaps[class]
}

// waitCeiling bounds every wait on the watcher goroutine. It is generous:
// the waits are for events (a timer armed, a pass of the loop done), never
// for time to pass, so a busy machine only makes them slower.
const waitCeiling = 30 * time.Second

// fakeClock is the watchers' clock in these tests: time moves only when the
// test advances it, and the test waits for the watcher's loop to finish each
// pass (Subscriptions.stepped), so debounce and max-delay are checked step
// by step instead of against the wall clock.
type fakeClock struct {
	t       *testing.T
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	steps   int
	changed chan struct{} // closed and replaced on every change
}

type fakeTimer struct {
	clk   *fakeClock
	c     chan time.Time
	when  time.Time
	armed bool
}

func newFakeClock(t *testing.T) *fakeClock {
	return &fakeClock{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) clockTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	ft := &fakeTimer{clk: c, c: make(chan time.Time, 1), when: c.now.Add(d), armed: true}
	c.timers = append(c.timers, ft)
	c.broadcastLocked()
	return ft
}

func (ft *fakeTimer) C() <-chan time.Time { return ft.c }

func (ft *fakeTimer) Reset(d time.Duration) {
	c := ft.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	ft.drain()
	ft.when, ft.armed = c.now.Add(d), true
	c.broadcastLocked()
}

func (ft *fakeTimer) Stop() {
	c := ft.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	ft.drain()
	ft.armed = false
	c.broadcastLocked()
}

func (ft *fakeTimer) drain() {
	select {
	case <-ft.c:
	default:
	}
}

func (c *fakeClock) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// step is Subscriptions.stepped: a watcher finished a pass of its loop.
func (c *fakeClock) step() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps++
	c.broadcastLocked()
}

// waitFor waits until cond (called with c.mu held) holds.
func (c *fakeClock) waitFor(what string, cond func() bool) {
	c.t.Helper()
	ceiling := time.After(waitCeiling)
	for {
		c.mu.Lock()
		ok, ch := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ceiling:
			c.t.Fatalf("waited %v for %s", waitCeiling, what)
		}
	}
}

// nextLocked is the armed timer due first, or nil.
func (c *fakeClock) nextLocked() *fakeTimer {
	var next *fakeTimer
	for _, ft := range c.timers {
		if ft.armed && (next == nil || ft.when.Before(next.when)) {
			next = ft
		}
	}
	return next
}

// armedIn is how far ahead the next timer is due (false: none is armed).
func (c *fakeClock) armedIn() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ft := c.nextLocked(); ft != nil {
		return ft.when.Sub(c.now), true
	}
	return 0, false
}

// advance moves time forward by d, fires the timers that fall due and waits
// until the watcher has handled each fire.
func (c *fakeClock) advance(d time.Duration) {
	c.t.Helper()
	c.mu.Lock()
	c.now = c.now.Add(d)
	fired := 0
	for _, ft := range c.timers {
		if ft.armed && !ft.when.After(c.now) {
			ft.armed = false
			ft.c <- c.now
			fired++
		}
	}
	want := c.steps + fired
	c.broadcastLocked()
	c.mu.Unlock()
	c.waitFor("the watcher to handle its timer", func() bool { return c.steps >= want })
}

// tick waits until the watcher has armed its timer, moves time to when it is
// due, and waits until the watcher has handled it (fingerprinted the class,
// and notified or rescheduled).
func (c *fakeClock) tick() {
	c.t.Helper()
	c.waitFor("the watcher to arm its timer", func() bool { return c.nextLocked() != nil })
	d, _ := c.armedIn()
	c.advance(d)
}

// event sends a change event and waits until the watcher has handled it.
func (c *fakeClock) event(ch chan struct{}) {
	c.t.Helper()
	c.mu.Lock()
	want := c.steps + 1
	c.mu.Unlock()
	select {
	case ch <- struct{}{}:
	case <-time.After(waitCeiling):
		c.t.Fatalf("the watcher did not take a change event in %v", waitCeiling)
	}
	c.waitFor("the watcher to handle the change event", func() bool { return c.steps >= want })
}

var testLimits = SubscriptionLimits{PerSession: 3, Sessions: 2, PollInterval: 20 * time.Millisecond,
	Debounce: 60 * time.Millisecond, MaxDelay: 300 * time.Millisecond, SafetyPoll: time.Hour,
	StartWait: 50 * time.Millisecond}

func newTestManager(t *testing.T, src SubscriptionSource) (*Subscriptions, *mcpserver.MCPServer, *fakeClock) {
	t.Helper()
	hooks := &mcpserver.Hooks{}
	s := mcpserver.NewMCPServer("t", "1", mcpserver.WithResourceCapabilities(true, false), mcpserver.WithHooks(hooks))
	m := NewSubscriptions(src, testLimits, zerolog.Nop())
	clk := newFakeClock(t)
	m.clock, m.stepped = clk, clk.step
	m.attach(s, hooks)
	t.Cleanup(m.Close)
	return m, s, clk
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

// updates takes the URIs of the resources/updated notifications queued for
// a session. The watcher queues them before it finishes the pass that sent
// them, so after tick, advance or event they are all there: no waiting.
func updates(sess *Session) []string {
	var out []string
	for {
		select {
		case n := <-sess.Unsolicited():
			if n.Method == string(mcp.MethodNotificationResourceUpdated) {
				out = append(out, n.Params.AdditionalFields["uri"].(string))
			}
		default:
			return out
		}
	}
}

func TestSubscriptionDebounceAndUnsubscribe(t *testing.T) {
	src := newFakeSource()
	src.set("Song", "count", "1")
	src.set("Song", "samples", "a")
	m, s, clk := newTestManager(t, src)
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
	// A burst: count changes before each of 5 polls. Every poll sees a
	// change, so nothing goes out while the burst lasts (it stays shorter
	// than MaxDelay)…
	for i := 2; i <= 6; i++ {
		src.set("Song", "count", string(rune('0'+i)))
		clk.tick()
		if got := append(updates(a), updates(b)...); len(got) != 0 {
			t.Fatalf("update during the burst, after change %d: %v", i-1, got)
		}
	}
	// …and the first quiet poll (Debounce after the last change) sends one
	// update per subscribed URI.
	clk.tick()
	if got := updates(a); len(got) != 1 || got[0] != "Song/count" {
		t.Fatalf("session a: %v, want one Song/count", got)
	}
	if got := updates(b); len(got) != 1 {
		t.Fatalf("session b: %v", got)
	}
	// Only samples changes: only the samples subscriber hears.
	src.set("Song", "samples", "b")
	clk.tick() // sees the change
	clk.tick() // Debounce later, quiet: notifies
	if got := updates(a); len(got) != 1 || got[0] != "Song/samples" {
		t.Fatalf("samples change: %v", got)
	}
	if got := updates(b); len(got) != 0 {
		t.Fatalf("b is not subscribed to samples: %v", got)
	}
	// Unsubscribe: no more updates for that URI.
	m.unsubscribe(a, "Song/count")
	src.set("Song", "count", "9")
	clk.tick()
	clk.tick()
	if got := updates(a); len(got) != 0 {
		t.Fatalf("after unsubscribe: %v", got)
	}
	if got := updates(b); len(got) != 1 {
		t.Fatalf("b still subscribed: %v", got)
	}
	// Session teardown frees its subscriptions and, with the last one, the
	// watcher: it has stopped (the unregistering waits for it) and left no
	// timer armed, so it polls no more.
	s.UnregisterSession(ctx, "a")
	s.UnregisterSession(ctx, "b")
	if n, classes := m.Stats(); n != 0 || len(classes) != 0 {
		t.Fatalf("after teardown: %d sessions, watchers %v", n, classes)
	}
	if in, armed := clk.armedIn(); armed {
		t.Fatalf("a stopped watcher still has its poll timer armed (due in %v)", in)
	}
	before := src.snapshots("Song")
	clk.advance(time.Hour)
	if after := src.snapshots("Song"); after != before {
		t.Fatalf("a stopped watcher still polls (%d → %d)", before, after)
	}
}

func TestSubscriptionUnchangedFingerprintIsSilent(t *testing.T) {
	// A write the scope cannot read leaves the fingerprint as it was.
	src := newFakeSource()
	src.set("Song", "count", "1")
	m, s, clk := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	if err := m.subscribe(context.Background(), a, "Song/count"); err != nil {
		t.Fatal(err)
	}
	src.set("Song", "count", "1")
	src.set("Song", "other", "x") // an aspect nobody subscribed to
	// Polls well past Debounce and MaxDelay.
	for range 20 {
		clk.tick()
	}
	if got := updates(a); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
	if n := src.snapshots("Song"); n < 21 {
		t.Fatalf("%d fingerprints, want the baseline and 20 polls", n)
	}
}

func TestSubscriptionLimits(t *testing.T) {
	src := newFakeSource()
	m, s, _ := newTestManager(t, src)
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
	if pe, ok := toolerror.As(err); !ok || !strings.Contains(pe.Message, "at most 3") {
		t.Fatalf("per-session cap: %v", err)
	}
	if _, ok := toolerror.As(m.subscribe(ctx, a, "A/schema")); !ok {
		t.Fatal("schema must be refused")
	}
	b := newTestSession(t, s, "b")
	if err := m.subscribe(ctx, b, "A/count"); err != nil {
		t.Fatal(err)
	}
	c := newTestSession(t, s, "c")
	err = m.subscribe(ctx, c, "A/count")
	if pe, ok := toolerror.As(err); !ok || !strings.Contains(pe.Message, "Too many sessions") {
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
	events := make(chan struct{})
	src.events["Song"] = events
	src.set("Song", "count", "1")
	m, s, clk := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	if err := m.subscribe(context.Background(), a, "Song/count"); err != nil {
		t.Fatal(err)
	}
	clk.waitFor("the watcher to arm its timer", func() bool { return clk.nextLocked() != nil })
	if in, _ := clk.armedIn(); in != testLimits.SafetyPoll {
		t.Fatalf("idle with a change stream, the next fingerprint is due in %v, want the safety poll (%v)", in, testLimits.SafetyPoll)
	}
	clk.advance(100 * time.Millisecond)
	if n := src.snapshots("Song"); n != 1 {
		t.Fatalf("%d snapshots while idle with a change stream, want only the baseline", n)
	}
	// A continuous stream of writes (one every 20ms for 600ms) still
	// produces an update within MaxDelay of the first, not one at the very
	// end: Debounce alone would never see a quiet moment.
	start := clk.Now()
	var at []time.Duration // when each update went out, since the first write
	for n := 1; n <= 30; n++ {
		clk.advance(20 * time.Millisecond)
		for range updates(a) {
			at = append(at, clk.Now().Sub(start))
		}
		src.set("Song", "count", strings.Repeat("x", n))
		clk.event(events)
	}
	if len(at) == 0 || at[0] > 20*time.Millisecond+testLimits.MaxDelay+testLimits.Debounce {
		t.Fatalf("updates during 600ms of continuous writes with MaxDelay 300ms went out at %v", at)
	}
	// The writes stop: the last burst goes out once quiet.
	for range 10 {
		clk.tick()
		for range updates(a) {
			at = append(at, clk.Now().Sub(start))
		}
	}
	if len(at) < 2 || len(at) > 4 {
		t.Fatalf("%d updates (at %v) for 600ms of continuous writes with MaxDelay 300ms", len(at), at)
	}
	// The stream ends: the watcher falls back to polling.
	clk.mu.Lock()
	handled := clk.steps + 1
	clk.mu.Unlock()
	close(events)
	clk.waitFor("the watcher to notice the stream ended", func() bool { return clk.steps >= handled })
	src.set("Song", "count", "after")
	for range 5 {
		clk.tick()
	}
	if got := updates(a); len(got) != 1 {
		t.Fatalf("after the stream ended: %v", got)
	}
	if in, _ := clk.armedIn(); in != testLimits.PollInterval {
		t.Fatalf("after the stream ended the next fingerprint is due in %v, want the poll interval (%v)", in, testLimits.PollInterval)
	}
}

func TestSubscriptionProbeGatesFingerprints(t *testing.T) {
	// With a probe, a poll costs the probe only; a fingerprint is taken when
	// the token moves, and the fingerprint alone decides who hears of it.
	src := newFakeSource()
	src.set("Song", "count", "1")
	src.setProbe("Song", "p1")
	m, s, clk := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	if err := m.subscribe(context.Background(), a, "Song/count"); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		clk.tick()
	}
	if n, p := src.snapshots("Song"), src.probed("Song"); n != 1 || p != 10 {
		t.Fatalf("10 quiet polls took %d fingerprints and %d probes, want the baseline and 10 probes", n, p)
	}
	// A write the scope cannot read moves the probe (it is unscoped) but not
	// the fingerprint: one more fingerprint, no notification.
	src.setProbe("Song", "p2")
	for range 5 {
		clk.tick()
	}
	if got := updates(a); len(got) != 0 {
		t.Fatalf("a hidden write notified %v", got)
	}
	if n := src.snapshots("Song"); n != 2 {
		t.Fatalf("%d fingerprints, want one more after the probe moved", n)
	}
	// A visible write moves both.
	src.setProbe("Song", "p3")
	src.set("Song", "count", "2")
	clk.tick() // the probe moved: fingerprint, changed
	clk.tick() // quiet: notifies
	if got := updates(a); len(got) != 1 || got[0] != "Song/count" {
		t.Fatalf("a visible write: %v", got)
	}
	// What the probe cannot see on this engine is caught by the full
	// fingerprint taken at least every SafetyPoll.
	src.set("Song", "count", "3")
	clk.advance(testLimits.SafetyPoll)
	clk.tick()
	if got := updates(a); len(got) != 1 {
		t.Fatalf("a change the probe missed, after the recheck interval: %v", got)
	}
}

func TestSubscriptionSlowBaseline(t *testing.T) {
	// A baseline slower than StartWait does not hold resources/subscribe
	// back; a row the scope reads written after the acknowledgement (its
	// updatedAt is in the fingerprint) counts as a change once the baseline
	// arrives, an older one does not.
	for _, tc := range []struct {
		name   string
		newest time.Duration // the newest readable row, relative to the acknowledgement
		want   int
	}{
		{"written after the acknowledgement", time.Second, 1},
		{"written just before (clock skew)", -time.Second, 1},
		{"written well before", -time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource()
			src.set("Song", "count", "1")
			gate := make(chan struct{})
			src.hold["Song"] = gate
			m, s, clk := newTestManager(t, src)
			a := newTestSession(t, s, "a")
			if err := m.subscribe(context.Background(), a, "Song/count"); err != nil {
				t.Fatalf("a slow baseline failed the subscription: %v", err)
			}
			src.setNewest("Song", clk.Now().Add(tc.newest))
			close(gate)
			clk.tick()
			clk.tick()
			if got := updates(a); len(got) != tc.want {
				t.Fatalf("got %v, want %d update(s)", got, tc.want)
			}
		})
	}
}

func TestSubscriptionBaselineFailure(t *testing.T) {
	// A baseline that fails before the acknowledgement fails the
	// subscription and the watcher goes away; one that fails after it is
	// retried like any poll.
	src := newFakeSource()
	src.fail["Song"] = errors.New("database down")
	m, s, clk := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	if _, ok := toolerror.As(m.subscribe(context.Background(), a, "Song/count")); !ok {
		t.Fatal("a failed baseline must fail the subscription")
	}
	if _, classes := m.Stats(); len(classes) != 0 {
		t.Fatalf("a failed watcher is still registered: %v", classes)
	}

	gate := make(chan struct{})
	src.hold["Song"] = gate
	if err := m.subscribe(context.Background(), a, "Song/count"); err != nil {
		t.Fatalf("a slow baseline failed the subscription: %v", err)
	}
	close(gate) // the baseline fails now, after the acknowledgement
	clk.tick()  // retried: fails again
	src.mu.Lock()
	delete(src.fail, "Song")
	src.fp["Song"] = map[string]string{"count": "1"}
	src.mu.Unlock()
	clk.tick() // the baseline
	src.set("Song", "count", "2")
	clk.tick()
	clk.tick()
	if got := updates(a); len(got) != 1 {
		t.Fatalf("after a late baseline: %v", got)
	}
}

func TestSubscriptionCancelledWhileWaiting(t *testing.T) {
	// A subscribe call cancelled while the baseline is being taken
	// subscribes nothing, and the watcher nobody needs goes away.
	src := newFakeSource()
	src.hold["Song"] = make(chan struct{})
	m, s, _ := newTestManager(t, src)
	a := newTestSession(t, s, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.subscribe(ctx, a, "Song/count"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the cancellation", err)
	}
	if n, classes := m.Stats(); n != 0 || len(classes) != 0 {
		t.Fatalf("after a cancelled subscribe: %d sessions, watchers %v", n, classes)
	}
}
