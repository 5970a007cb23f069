package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/telemetry"
)

// MaxMessageBytes caps one JSON-RPC line on stdio. A longer line is discarded
// up to its newline and answered with -32600; the server keeps serving.
const MaxMessageBytes = 4 << 20

// StdioSessionID is the fixed session id of the stdio connection.
const StdioSessionID = "stdio"

// lineWriter writes whole lines to the client, one at a time. It is the only
// writer of stdout.
type lineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lineWriter) write(msg []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(msg)
	_ = l.w.WriteByte('\n')
	_ = l.w.Flush()
}

// ServeStdio serves newline-delimited JSON-RPC from in to out until in reaches
// EOF or ctx is cancelled. Requests are handled concurrently; each request's
// notifications are written before its response. On return every in-flight
// request has been cancelled and finished (bounded by drainTimeout).
func ServeStdio(ctx context.Context, d *Dispatcher, in io.Reader, out io.Writer, opts StdioOptions) error {
	sess := NewSession(StdioSessionID)
	if err := d.mcp.RegisterSession(ctx, sess); err != nil {
		return err
	}
	defer d.mcp.UnregisterSession(context.Background(), sess.SessionID())
	ended := telemetry.SessionStarted("pipe")
	defer func() { ended(sess.protocolVersion()) }()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &lineWriter{w: bufio.NewWriterSize(out, 64<<10)}

	// Unsolicited notifications (resource updates, list changes).
	unsolicitedDone := make(chan struct{})
	go func() {
		defer close(unsolicitedDone)
		for {
			select {
			case n := <-sess.Unsolicited():
				if b, err := EncodeNotification(sess.tagListen(n)); err == nil {
					w.write(b)
				}
			case <-ctx.Done():
				return
			}
		}
	}()

	var wg sync.WaitGroup
	var accepting gate
	procs := newProcGovernor(opts.ProcsWhenAlone)
	defer procs.restore()
	workers := newIdleWorkers(keptWorkers)
	defer workers.close()
	in, restoreIn := pollable(in, out)
	defer restoreIn()
	readErr := make(chan error, 1)
	go func() {
		// Each line is handed to a goroutine of its own straight from the
		// reader: no hop through a second goroutine on the way to it.
		readErr <- readLines(ctx, in, func(line []byte) bool {
			if !accepting.add(&wg) {
				return false
			}
			workers.run(func() {
				defer wg.Done()
				procs.enter()
				defer procs.leave()
				if resp := d.Handle(ctx, sess, line, w.write); resp != nil {
					w.write(resp)
				}
			})
			return true
		}, func() {
			w.write(ErrorResponse(nil, codeInvalidRequest, "Invalid Request: message exceeds 4 MiB"))
		})
	}()

	var err error
	select {
	case err = <-readErr:
	case <-ctx.Done():
	}
	// EOF: the client is gone or done writing. Requests that finish within a
	// short grace period still get their answers (so `printf … | parse-mcp`
	// works); then in-flight work is cancelled and given a bounded time to
	// unwind. A signal cancels at once.
	if errors.Is(err, io.EOF) && ctx.Err() == nil {
		accepting.shut()
		waitTimeout(&wg, eofGrace)
	}
	cancel()
	accepting.shut()
	waitTimeout(&wg, drainTimeout)
	<-unsolicitedDone
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// StdioOptions tune ServeStdio; the zero value changes nothing.
type StdioOptions struct {
	// ProcsWhenAlone is GOMAXPROCS while at most one message is being
	// handled (0: left as it is). Go's default returns as soon as two
	// overlap, until one of them ends (procGovernor).
	ProcsWhenAlone int
}

// procGovernor runs the process on few processors while one message is
// handled and on all of them while messages overlap. With a processor per
// core, every goroutine a call wakes (its line read, the driver's reply)
// also wakes an idle thread to look for work, which spins on a core the
// database or the client wanted: one call alone answers 5–20 % sooner on
// one processor (docs/performance.md "The driver floor, fourth pass"). But
// a ping or a list must not wait behind another call's CPU work (an
// in-process search scores thousands of rows), and concurrent calls use
// every core: from a second message on, the default is back. A change of
// GOMAXPROCS stops the world for microseconds; it happens only when
// messages start to overlap and when they stop. nil when nothing changes.
type procGovernor struct {
	mu     sync.Mutex
	active int
	alone  int // GOMAXPROCS while at most one message is handled
	busy   int // GOMAXPROCS while messages overlap: the one found at start
}

func newProcGovernor(alone int) *procGovernor {
	busy := runtime.GOMAXPROCS(0)
	if alone <= 0 || alone >= busy {
		return nil
	}
	runtime.GOMAXPROCS(alone)
	return &procGovernor{alone: alone, busy: busy}
}

func (g *procGovernor) enter() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active++; g.active == 2 {
		runtime.GOMAXPROCS(g.busy)
	}
}

func (g *procGovernor) leave() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active--; g.active == 1 {
		runtime.GOMAXPROCS(g.alone)
	}
}

// restore gives the process back the GOMAXPROCS it was found with, for
// good: a request still unwinding after shutdown gave up waiting on it
// (drainTimeout) leaves GOMAXPROCS as it is.
func (g *procGovernor) restore() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.alone = g.busy
	runtime.GOMAXPROCS(g.busy)
}

// eofGrace is how long in-flight requests may still finish after stdin EOF.
const eofGrace = time.Second

// drainTimeout bounds how long shutdown waits for cancelled calls to return.
const drainTimeout = 3 * time.Second

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// readLines splits in into lines of at most MaxMessageBytes and sends the
// non-blank ones to out. A longer line is skipped through its newline and
// reported with tooLong. It returns io.EOF at end of input.
func readLines(ctx context.Context, in io.Reader, out func([]byte) bool, tooLong func()) error {
	r := bufio.NewReaderSize(in, 64<<10)
	var buf []byte
	skipping := false
	for {
		frag, err := r.ReadSlice('\n')
		if len(frag) > 0 {
			complete := frag[len(frag)-1] == '\n'
			switch {
			case skipping:
			case len(buf)+len(frag) > MaxMessageBytes+1: // +1: the newline
				skipping = true
				buf = buf[:0]
			default:
				buf = append(buf, frag...)
			}
			if complete {
				if skipping {
					tooLong()
					skipping = false
				} else if line := bytes.TrimSpace(buf); len(line) > 0 {
					msg := make([]byte, len(line))
					copy(msg, line)
					if !out(msg) {
						return ctx.Err()
					}
				}
				buf = buf[:0]
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if skipping {
				tooLong()
			} else if line := bytes.TrimSpace(buf); len(line) > 0 {
				out(line)
			}
			return io.EOF
		default:
			return err
		}
	}
}

// keptWorkers is how many idle request goroutines ServeStdio keeps.
const keptWorkers = 4

// idleWorkers runs each request on a goroutine, reusing one that finished
// an earlier request when one is idle. A new goroutine starts on a small
// stack that a tool call grows several times over (mcp-go, the policy, the
// driver: a few percent of a call's CPU spent copying stacks); a kept one
// has grown already. At most max are kept idle, so a burst of concurrent
// calls leaves no crowd of goroutines behind.
type idleWorkers struct {
	jobs chan func()
	done chan struct{}
	idle atomic.Int32
	max  int32
}

func newIdleWorkers(max int32) *idleWorkers {
	return &idleWorkers{jobs: make(chan func()), done: make(chan struct{}), max: max}
}

// run runs f on an idle worker, or on a new goroutine.
func (w *idleWorkers) run(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.work(f)
	}
}

func (w *idleWorkers) work(f func()) {
	for {
		f()
		if w.idle.Add(1) > w.max {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.jobs:
			w.idle.Add(-1)
		case <-w.done:
			return
		}
	}
}

// close ends the idle workers (a later run starts a goroutine).
func (w *idleWorkers) close() { close(w.done) }

// gate lets requests in until shut: a request is counted in the wait group
// before shutdown waits on it, never after (sync.WaitGroup forbids an Add
// racing a Wait), and none is started once shutdown began.
type gate struct {
	mu     sync.Mutex
	closed bool
}

func (g *gate) add(wg *sync.WaitGroup) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	wg.Add(1)
	return true
}

func (g *gate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
