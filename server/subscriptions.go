package server

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// SubscriptionSource is what the subscription manager needs from the
// resources layer: which class a URI watches, a fingerprint of what this
// server's scope can read of a class, a cheap probe that says whether
// taking a new fingerprint is worthwhile, and (where the database has them)
// change events.
type SubscriptionSource interface {
	// ResolveSubscription validates a URI for resources/subscribe and returns
	// the class it watches and the aspect ("count", "samples") whose
	// fingerprint decides when it changed. A URI that cannot be subscribed to
	// yields a model-fixable *toolerror.Error (answered -32602).
	ResolveSubscription(ctx context.Context, uri string) (class, aspect string, err error)
	// Snapshot fingerprints every aspect of a class as this server's policy
	// (hidden classes, filters, tenant, ACL scope) lets it read the class: a
	// write the scope cannot read leaves every fingerprint unchanged. Its
	// cost may grow with the class (it counts under the scope).
	Snapshot(ctx context.Context, class string) (Fingerprint, error)
	// Probe recomputes the change token of a fingerprint's Basis. It is
	// unscoped and never reaches a client: it only decides whether a new
	// Snapshot is taken, so a hidden write may cost a Snapshot but never
	// sends a notification. Its cost should not grow with the class
	// (docs/resources.md "How a subscription watches a class": what each engine allows).
	Probe(ctx context.Context, class string, basis any) (string, error)
	// Watch opens a change stream on the class's collection. Each change
	// sends on the returned channel (coalescing); the channel is closed when
	// the stream ends. ErrWatchUnsupported (or any error) at open means the
	// database has no change streams here: the manager polls instead.
	Watch(ctx context.Context, class string) (<-chan struct{}, error)
}

// Fingerprint is a class as this server's scope reads it, and the probe
// token taken with it.
type Fingerprint struct {
	// Aspects maps each aspect ("count", "samples") to a hash of what the
	// scope reads; only a change here notifies subscribers.
	Aspects map[string]string
	// Newest is the newest updatedAt among the rows the scope read (zero:
	// none or unknown). A baseline taken after a subscriber was already
	// acknowledged treats a row written since as a change (Subscriptions).
	Newest time.Time
	// Probe is the change token of the class when the fingerprint was
	// taken; "" means the source has no probe and every poll takes a
	// Snapshot. Basis is what Probe needs to recompute it (opaque here).
	Probe string
	Basis any
}

// ErrWatchUnsupported is returned by SubscriptionSource.Watch where change
// streams are not available (standalone mongod, FerretDB).
var ErrWatchUnsupported = errors.New("change streams are not supported by this database")

// SubscriptionLimits bound what subscriptions may cost.
type SubscriptionLimits struct {
	// PerSession caps the URIs one session may subscribe to.
	PerSession int
	// Sessions caps the sessions holding at least one subscription.
	Sessions int
	// PollInterval is how often a watched class is fingerprinted when the
	// database has no change streams.
	PollInterval time.Duration
	// Debounce is how long a class must stay unchanged before one
	// notifications/resources/updated goes out for a burst of writes.
	Debounce time.Duration
	// MaxDelay bounds how long a continuous stream of writes can hold an
	// update back.
	MaxDelay time.Duration
	// SafetyPoll is the fingerprint interval while a change stream is open
	// (it catches changes a stream could miss, e.g. after a resume failure),
	// and the shortest interval between full fingerprints while polling
	// with a probe (they catch what the probe cannot see on this engine).
	SafetyPoll time.Duration
	// StartWait is how long resources/subscribe waits for a new watcher's
	// baseline fingerprint before answering anyway; the baseline then
	// completes in the background.
	StartWait time.Duration
}

// DefaultSubscriptionLimits are the limits used when none are given.
var DefaultSubscriptionLimits = SubscriptionLimits{
	PerSession:   32,
	Sessions:     64,
	PollInterval: time.Second,
	Debounce:     250 * time.Millisecond,
	MaxDelay:     2 * time.Second,
	SafetyPoll:   30 * time.Second,
	StartWait:    time.Second,
}

// snapshotTimeout bounds one fingerprint of a class. It is generous: a
// fingerprint runs in the background (resources/subscribe waits at most
// StartWait for it), one at a time per class, and counting a large class
// under an ACL scope on an engine that scans (FerretDB 1.24: seconds at 20k
// rows, a minute on a loaded machine) must still finish.
const snapshotTimeout = 3 * time.Minute

// stopTimeout bounds how long stopping a watcher waits for its goroutine
// (its context is cancelled, so a database call in flight returns soon).
const stopTimeout = 10 * time.Second

// maxPollInterval caps how far the polling interval stretches for a class
// whose probe (or, without one, fingerprint) is slow. It bounds how late a
// subscriber hears of a change the probe sees (docs/resources.md "Prompts and
// resources": at most this, plus one probe, one fingerprint and the
// debounce), so a client waiting ~20 s is not left waiting on a loaded
// engine where a probe takes seconds.
const maxPollInterval = 10 * time.Second

// maxRecheckInterval caps how far the interval between full fingerprints
// stretches while polling with a probe.
const maxRecheckInterval = 10 * time.Minute

// baselineSkew is how far before a subscriber's acknowledgement a row's
// updatedAt may lie and still count as written after it, when the baseline
// was taken late (writers' clocks differ from this server's).
const baselineSkew = 2 * time.Second

// subscriber is the part of the manager a Session talks to.
type subscriber interface {
	subscribe(ctx context.Context, sess *Session, uri string) error
	unsubscribe(sess *Session, uri string)
}

// Subscriptions tracks resources/subscribe per session and watches each
// subscribed class once, however many sessions subscribe to it: through a
// change stream where the database supports it, otherwise by polling a
// cheap probe and taking a fingerprint under the server's scope only when
// the probe moved (and every SafetyPoll or so). Bursts
// are debounced into one notifications/resources/updated per URI, sent to
// the session's unsolicited stream (stdout on stdio, the GET stream on HTTP).
type Subscriptions struct {
	src    SubscriptionSource
	limits SubscriptionLimits
	log    zerolog.Logger
	srv    *mcpserver.MCPServer

	ctx    context.Context
	cancel context.CancelFunc

	// clock is the watchers' time source (tests drive a fake one, so that
	// debounce and max-delay are checked step by step, not against the wall
	// clock of a busy machine); stepped, when set, is called after every
	// pass of a watcher's loop, so a test knows when a tick or an event has
	// been handled.
	clock   clock
	stepped func()

	mu        sync.Mutex
	bySession map[string]map[string]subTarget // session id → uri → target
	watchers  map[string]*classWatcher        // class → watcher
	live      map[string]bool                 // registered session ids
}

type subTarget struct {
	class, aspect string
	// watcher is the key of the watcher serving it (watcherKey).
	watcher string
}

// watcherKey is the watcher of class for the identity of ctx: one per class
// for the environment identity, one per class and identity for a request
// acting as its own (docs/team.md "Serve a team"), since each fingerprints what
// its identity may read.
func watcherKey(ctx context.Context, class string) string {
	if id := callinfo.From(ctx).Identity; id != "" {
		return id + "\x00" + class
	}
	return class
}

// identityValues lets a watcher's context carry the identity of the request
// that started it (its values) while ending with the manager (its
// cancellation).
type identityValues struct {
	context.Context
	values context.Context
}

func (c identityValues) Value(k any) any {
	if v := c.values.Value(k); v != nil {
		return v
	}
	return c.Context.Value(k)
}

// NewSubscriptions builds a manager; attach it to a server with Attach.
func NewSubscriptions(src SubscriptionSource, limits SubscriptionLimits, log zerolog.Logger) *Subscriptions {
	d := DefaultSubscriptionLimits
	if limits.PerSession <= 0 {
		limits.PerSession = d.PerSession
	}
	if limits.Sessions <= 0 {
		limits.Sessions = d.Sessions
	}
	if limits.PollInterval <= 0 {
		limits.PollInterval = d.PollInterval
	}
	if limits.Debounce <= 0 {
		limits.Debounce = d.Debounce
	}
	if limits.MaxDelay <= 0 {
		limits.MaxDelay = d.MaxDelay
	}
	if limits.SafetyPoll <= 0 {
		limits.SafetyPoll = d.SafetyPoll
	}
	if limits.StartWait <= 0 {
		limits.StartWait = d.StartWait
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Subscriptions{src: src, limits: limits, log: log, ctx: ctx, cancel: cancel, clock: realClock{},
		bySession: map[string]map[string]subTarget{}, watchers: map[string]*classWatcher{}, live: map[string]bool{}}
}

// attach wires the manager to a server: sessions registered on it route
// resources/subscribe here, and a session's subscriptions end with it.
func (m *Subscriptions) attach(s *mcpserver.MCPServer, hooks *mcpserver.Hooks) {
	m.srv = s
	hooks.AddOnRegisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		if sess, ok := cs.(*Session); ok {
			sess.subscriber = m
			m.mu.Lock()
			m.live[sess.SessionID()] = true
			m.mu.Unlock()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		m.DropSession(cs.SessionID())
	})
}

// Close stops every watcher.
func (m *Subscriptions) Close() {
	m.cancel()
	m.mu.Lock()
	ws := make([]*classWatcher, 0, len(m.watchers))
	for _, w := range m.watchers {
		ws = append(ws, w)
	}
	m.watchers = map[string]*classWatcher{}
	m.bySession = map[string]map[string]subTarget{}
	m.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

// Stats reports how many sessions hold subscriptions and which classes are
// watched (tests, describe).
func (m *Subscriptions) Stats() (sessions int, classes []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.watchers {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	return len(m.bySession), classes
}

func (m *Subscriptions) subscribe(ctx context.Context, sess *Session, uri string) error {
	class, aspect, err := m.src.ResolveSubscription(ctx, uri)
	if err != nil {
		return err
	}
	id := sess.SessionID()
	m.mu.Lock()
	subs := m.bySession[id]
	if _, ok := subs[uri]; ok {
		m.mu.Unlock()
		return nil // subscribing twice is a no-op
	}
	if subs == nil && len(m.bySession) >= m.limits.Sessions {
		m.mu.Unlock()
		m.log.Warn().Int("limit", m.limits.Sessions).Msg("subscription refused: too many sessions with subscriptions")
		return toolerror.InvalidParams("Too many sessions hold subscriptions (limit %d); try again later", m.limits.Sessions)
	}
	if len(subs) >= m.limits.PerSession {
		m.mu.Unlock()
		return toolerror.InvalidParams("Subscription limit reached: at most %d resources per session; unsubscribe from one first", m.limits.PerSession)
	}
	key := watcherKey(ctx, class)
	w := m.watchers[key]
	if w == nil && m.ctx.Err() == nil {
		base := m.ctx
		if key != class {
			base = identityValues{Context: m.ctx, values: context.WithoutCancel(ctx)}
		}
		w = m.startWatcher(base, key, class)
		m.watchers[key] = w
	}
	if w != nil {
		w.waiting++ // not reaped while this subscriber waits for it
	}
	m.mu.Unlock()
	if w == nil {
		return toolerror.InvalidParams("The server is shutting down")
	}

	// A new watcher takes its baseline fingerprint first. Waiting for it
	// (up to StartWait) means a write right after the acknowledgement is
	// seen as a change; a slow baseline (a large class on an engine where
	// counting scans) does not hold the answer back: it completes in the
	// background, and a row the scope reads written since the
	// acknowledgement counts as a change (run).
	wait := time.NewTimer(m.limits.StartWait)
	defer wait.Stop()
	select {
	case <-w.ready:
	case <-wait.C:
	case <-ctx.Done():
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	w.waiting--
	if err := ctx.Err(); err != nil {
		// The call was cancelled while waiting: no subscription.
		if idle := m.reapLocked(); len(idle) > 0 {
			go stopAll(idle)
		}
		return err
	}
	if w.startErr != nil {
		m.log.Warn().Err(w.startErr).Str("class", class).Msg("cannot watch class for subscriptions")
		return toolerror.InvalidParams("Cannot watch %s right now (the database did not answer); try again later", class)
	}
	if !m.live[id] {
		// The session ended while the watcher was being set up.
		if idle := m.reapLocked(); len(idle) > 0 {
			go stopAll(idle)
		}
		return toolerror.InvalidParams("The session has ended")
	}
	if !w.based && w.ackedEarly.IsZero() {
		w.ackedEarly = m.clock.Now()
	}
	if m.bySession[id] == nil {
		m.bySession[id] = map[string]subTarget{}
	}
	m.bySession[id][uri] = subTarget{class: class, aspect: aspect, watcher: key}
	return nil
}

func stopAll(ws []*classWatcher) {
	for _, w := range ws {
		w.stop()
	}
}

func (m *Subscriptions) unsubscribe(sess *Session, uri string) {
	m.mu.Lock()
	id := sess.SessionID()
	if subs := m.bySession[id]; subs != nil {
		delete(subs, uri)
		if len(subs) == 0 {
			delete(m.bySession, id)
		}
	}
	idle := m.reapLocked()
	m.mu.Unlock()
	for _, w := range idle {
		w.stop()
	}
}

// DropSession ends every subscription of a session (it went away).
func (m *Subscriptions) DropSession(id string) {
	m.mu.Lock()
	delete(m.live, id)
	delete(m.bySession, id)
	idle := m.reapLocked()
	m.mu.Unlock()
	for _, w := range idle {
		w.stop()
	}
}

// reapLocked removes watchers no subscription needs any more.
func (m *Subscriptions) reapLocked() []*classWatcher {
	needed := map[string]bool{}
	for _, subs := range m.bySession {
		for _, t := range subs {
			needed[t.watcher] = true
		}
	}
	var idle []*classWatcher
	for k, w := range m.watchers {
		if !needed[k] && w.waiting == 0 {
			delete(m.watchers, k)
			idle = append(idle, w)
			m.log.Info().Str("class", w.class).Msg("stopped watching class: no subscriber left")
		}
	}
	return idle
}

// deliver sends notifications/resources/updated for every subscribed URI
// served by the watcher key whose aspect changed.
func (m *Subscriptions) deliver(key string, changed map[string]bool) {
	type target struct{ session, uri string }
	var out []target
	m.mu.Lock()
	for sid, subs := range m.bySession {
		for uri, t := range subs {
			if t.watcher == key && changed[t.aspect] {
				out = append(out, target{sid, uri})
			}
		}
	}
	m.mu.Unlock()
	for _, t := range out {
		err := m.srv.SendNotificationToSpecificClient(t.session, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": t.uri})
		if err != nil {
			m.log.Debug().Err(err).Str("session_id", t.session).Str("uri", t.uri).Msg("resource update not delivered")
		}
	}
}

// notifySessions sends a log message to every session subscribed to class.
func (m *Subscriptions) notifySessions(key string, level mcp.LoggingLevel, data map[string]any) {
	m.mu.Lock()
	var ids []string
	for sid, subs := range m.bySession {
		for _, t := range subs {
			if t.watcher == key {
				ids = append(ids, sid)
				break
			}
		}
	}
	m.mu.Unlock()
	for _, id := range ids {
		sendLog(m.srv, id, level, data)
	}
}

// classWatcher watches one class for every subscriber.
type classWatcher struct {
	m *Subscriptions
	// key is its entry in m.watchers (watcherKey).
	key    string
	class  string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	events <-chan struct{}

	// ready is closed once the first Snapshot has returned: with the
	// baseline (based), or with startErr when it failed before any
	// subscriber was acknowledged.
	ready chan struct{}
	// Under m.mu: based, startErr, and ackedEarly, the time the first
	// subscriber was acknowledged before the baseline was taken.
	based      bool
	startErr   error
	ackedEarly time.Time
	// waiting counts subscribe calls waiting for the baseline (under m.mu):
	// such a watcher is not reaped.
	waiting int
}

// startWatcher starts a class's watcher goroutine, which opens the change
// stream (if any), takes the baseline and then watches. Called with m.mu
// held; the caller registers it.
func (m *Subscriptions) startWatcher(base context.Context, key, class string) *classWatcher {
	ctx, cancel := context.WithCancel(base)
	w := &classWatcher{m: m, key: key, class: class, ctx: ctx, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	go w.run()
	return w
}

func (w *classWatcher) stop() {
	w.cancel()
	select {
	case <-w.done:
	case <-time.After(stopTimeout):
	}
}

// open starts the change stream, if the database has one.
func (w *classWatcher) open() {
	events, err := w.m.src.Watch(w.ctx, w.class)
	switch {
	case err == nil:
		w.events = events
	case !errors.Is(err, ErrWatchUnsupported):
		w.m.log.Debug().Err(err).Str("class", w.class).Msg("change stream unavailable; polling")
	}
	mode := "change stream"
	if w.events == nil {
		mode = "polling every " + w.m.limits.PollInterval.String()
	}
	w.m.log.Info().Str("class", w.class).Str("mode", mode).Msg("watching class for resource subscriptions")
}

// baselineFailed decides what a failed first fingerprint means: with no
// subscriber acknowledged yet, the subscribe calls fail and the watcher
// goes away (false); otherwise it keeps trying, as after any failure.
func (w *classWatcher) baselineFailed(err error) (keepTrying bool) {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if !w.ackedEarly.IsZero() {
		return true
	}
	w.startErr = err
	if m.watchers[w.key] == w {
		delete(m.watchers, w.key)
	}
	close(w.ready)
	return false
}

// baselineTaken records the baseline (run closes ready once its timer is
// armed) and says whether a row the scope
// reads was written after the first subscriber was acknowledged (the
// baseline came late): that counts as a change. A write the scope cannot
// read is never in the fingerprint, so it cannot trigger this either.
func (w *classWatcher) baselineTaken(fp Fingerprint) (changedSinceAck bool) {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	w.based = true
	if w.ackedEarly.IsZero() || fp.Newest.IsZero() {
		return false
	}
	return !fp.Newest.Before(w.ackedEarly.Add(-baselineSkew))
}

// run takes the baseline, then fingerprints the class on a timer (and after
// change events), and fires once a change has been followed by Debounce of
// quiet, or MaxDelay after the first change of a burst.
func (w *classWatcher) run() {
	defer close(w.done)
	w.open()
	s := &watchState{w: w, lim: w.m.limits, clk: w.m.clock, pending: map[string]bool{}}
	// The timer is armed only once the baseline pass is done (a test's
	// fake clock must not see it before).
	defer func() {
		if s.timer != nil {
			s.timer.Stop()
		}
	}()
	first := true // the baseline pass runs at once
	readyClosed := false
	for {
		var tick <-chan time.Time
		if s.timer != nil {
			tick = s.timer.C()
		}
		if first {
			tick = closedTick
		}
		select {
		case <-w.ctx.Done():
			return
		case _, ok := <-w.events:
			s.changeEvent(ok)
			s.stepped()
			continue
		case <-tick:
		}
		if !s.pass() {
			return
		}
		if s.last != nil && !readyClosed {
			close(w.ready) // the baseline is taken and the timer armed
			readyClosed = true
		}
		if first {
			first = false // the tests' steps count timer and event passes only
			continue
		}
		s.stepped()
	}
}

// watchState is a watcher's state between passes.
//
// Polling is bounded: one poller per class whatever the number of
// subscribers, one probe or snapshot in flight. A poll costs the probe
// (flat where the engine allows it) and, only when the probe moved, a
// fingerprint under the policy (a count and a small find); without a
// probe every poll is a fingerprint. The interval stretches so that
// polling takes at most a fifth of the time (a class whose poll takes
// 600 ms is polled every 3 s, not every second), up to maxPollInterval;
// full fingerprints taken to catch what the probe cannot see take at
// most a twentieth, at least SafetyPoll apart, up to maxRecheckInterval.
type watchState struct {
	w                       *classWatcher
	lim                     SubscriptionLimits
	clk                     clock
	pollCost, snapCost      time.Duration
	last                    *Fingerprint
	lastSnap                time.Time
	timer                   clockTimer
	due                     time.Time
	pending                 map[string]bool
	firstChange, lastChange time.Time
	failures                int
}

func (s *watchState) idle() time.Duration {
	if s.w.events != nil {
		return s.lim.SafetyPoll
	}
	d := max(s.lim.PollInterval, 5*s.pollCost)
	return min(d, max(s.lim.PollInterval, maxPollInterval))
}

func (s *watchState) recheck() time.Duration {
	return min(max(s.lim.SafetyPoll, 20*s.snapCost), max(s.lim.SafetyPoll, maxRecheckInterval))
}

func (s *watchState) schedule(d time.Duration) {
	if s.timer == nil {
		s.timer = s.clk.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	s.due = s.clk.Now().Add(d)
}

func (s *watchState) stepped() {
	if s.w.m.stepped != nil {
		s.w.m.stepped()
	}
}

// changeEvent handles a change stream event, or the stream's end (!ok).
func (s *watchState) changeEvent(ok bool) {
	w := s.w
	if !ok {
		w.events = nil
		w.m.log.Info().Str("class", w.class).Msg("change stream ended; polling instead")
		w.m.notifySessions(w.key, mcp.LoggingLevelInfo, map[string]any{"event": "subscription_polling", "class": w.class,
			"detail": "change stream ended; the class is polled every " + s.lim.PollInterval.String()})
	}
	// Look soon, but never push back a check that is already due:
	// a continuous stream of events must not starve MaxDelay.
	if s.due.Sub(s.clk.Now()) > s.lim.Debounce {
		s.schedule(s.lim.Debounce)
	}
	if s.last != nil {
		s.last.Probe = "" // an event: take a fingerprint, whatever the probe says
	}
}

// pass looks at the class, records what changed, delivers a settled burst
// and arms the timer; false when the watcher stops.
func (s *watchState) pass() bool {
	probed, snap, err := s.look()
	now := s.clk.Now()
	if !s.record(now, probed, snap, err) {
		return false
	}
	if len(s.pending) > 0 && (now.Sub(s.lastChange) >= s.lim.Debounce || now.Sub(s.firstChange) >= s.lim.MaxDelay) {
		s.w.m.deliver(s.w.key, s.pending)
		s.pending = map[string]bool{}
		s.firstChange, s.lastChange = time.Time{}, time.Time{}
	}
	if len(s.pending) > 0 {
		s.schedule(s.lim.Debounce)
	} else {
		s.schedule(s.idle())
	}
	return true
}

// look probes the class when the probe can answer (probed: it did not
// move), else takes a fingerprint.
func (s *watchState) look() (probed bool, snap Fingerprint, err error) {
	w := s.w
	sctx, cancel := context.WithTimeout(w.ctx, snapshotTimeout)
	defer cancel()
	began := s.clk.Now()
	if s.last != nil && s.last.Probe != "" && w.events == nil && began.Sub(s.lastSnap) < s.recheck() {
		token, err := w.m.src.Probe(sctx, w.class, s.last.Basis)
		telemetry.SubscriptionPoll("probe")
		s.pollCost = s.clk.Now().Sub(began)
		probed = err == nil && token == s.last.Probe
		if err != nil {
			w.m.log.Debug().Err(err).Str("class", w.class).Msg("subscription probe failed; taking a fingerprint")
		}
	}
	if probed {
		return true, snap, nil
	}
	began = s.clk.Now()
	snap, err = w.m.src.Snapshot(sctx, w.class)
	telemetry.SubscriptionPoll("fingerprint")
	s.snapCost = s.clk.Now().Sub(began)
	w.m.log.Debug().Str("class", w.class).Dur("took", s.snapCost).Bool("baseline", s.last == nil).Msg("subscription fingerprint taken")
	if s.last == nil || s.last.Probe == "" || w.events != nil {
		s.pollCost = s.snapCost
	}
	return false, snap, err
}

// record takes in what look found; false when the watcher stops.
func (s *watchState) record(now time.Time, probed bool, snap Fingerprint, err error) bool {
	w := s.w
	switch {
	case w.ctx.Err() != nil:
		return false
	case probed: // the probe did not move: nothing changed
	case err != nil:
		if s.last == nil && !w.baselineFailed(err) {
			return false
		}
		s.failures++
		if s.failures == 1 || s.failures%60 == 0 {
			w.m.log.Warn().Err(err).Str("class", w.class).Int("failures", s.failures).Msg("subscription watch: cannot fingerprint class")
			w.m.notifySessions(w.key, mcp.LoggingLevelWarning, map[string]any{"event": "subscription_watch_failed", "class": w.class})
		}
	case s.last == nil:
		s.failures = 0
		s.lastSnap = now
		if w.baselineTaken(snap) {
			for aspect := range snap.Aspects {
				s.pending[aspect] = true
			}
			s.firstChange, s.lastChange = now, now
		}
		s.last = &snap
	default:
		s.failures = 0
		s.lastSnap = now
		changed := false
		for aspect, fp := range snap.Aspects {
			if s.last.Aspects[aspect] != fp {
				s.pending[aspect] = true
				changed = true
			}
		}
		s.last = &snap
		if changed {
			if s.firstChange.IsZero() {
				s.firstChange = now
			}
			s.lastChange = now
		}
	}
	return true
}

// closedTick makes the watcher's first pass (the baseline) run at once.
var closedTick = func() <-chan time.Time {
	ch := make(chan time.Time)
	close(ch)
	return ch
}()

// clock is the time source of the subscription watchers.
type clock interface {
	Now() time.Time
	NewTimer(d time.Duration) clockTimer
}

// clockTimer is a one-shot timer of a clock. Reset re-arms it (a fire not
// yet received is dropped); Stop disarms it.
type clockTimer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) clockTimer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }

// Reset: since Go 1.23 a stopped or reset timer never delivers a stale
// value, so no draining is needed.
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }

func (r realTimer) Stop() { r.t.Stop() }
