package server

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// notifyServer has one tool, "notify", that sends n notifications and, with
// hold, waits for release before it answers.
func notifyServer(release <-chan struct{}) *Dispatcher {
	s := mcpserver.NewMCPServer("notify-test", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("notify"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := req.GetInt("n", 0)
		srv := mcpserver.ServerFromContext(ctx)
		for i := range n {
			if err := srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": i}); err != nil {
				return nil, err
			}
		}
		if req.GetBool("hold", false) {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
				return mcp.NewToolResultError("the notifications were not written while the call ran"), nil
			}
		}
		return mcp.NewToolResultText("done"), nil
	})
	return NewDispatcher(s, 4, zerolog.Nop())
}

// A call shorter than forwardAfter has its notifications written by the
// request itself after it returns: all of them, in order, before its
// response. A longer call has them written while it runs.
func TestNotificationsOfShortAndLongCalls(t *testing.T) {
	release := make(chan struct{})
	p := newStdioPeer(t, notifyServer(release))
	p.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	p.next()

	p.send(`{"jsonrpc":"2.0","id":"short","method":"tools/call","params":{"name":"notify","arguments":{"n":5}}}`)
	for i := range 5 {
		m := p.next()
		if m["method"] != "notifications/message" || m["params"].(map[string]any)["data"] != float64(i) {
			t.Fatalf("message %d: want notification %d, got %v", i, i, m)
		}
	}
	if m := p.next(); m["id"] != "short" || m["result"] == nil {
		t.Fatalf("want the response after the notifications, got %v", m)
	}

	p.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"notify","arguments":{"n":1,"hold":true}}}`)
	// The tool waits for release: its notification must arrive first.
	if m := p.next(); m["method"] != "notifications/message" {
		t.Fatalf("want the notification while the call runs, got %v", m)
	}
	close(release)
	m := p.next()
	res, _ := m["result"].(map[string]any)
	if m["id"] != "long" || res == nil || res["isError"] == true {
		t.Fatalf("want the long call's result, got %v", m)
	}
}

// idleWorkers runs every job, reuses idle workers and keeps at most max of
// them; close ends them.
func TestIdleWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	w := newIdleWorkers(3)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	ran := make(chan int, 20)
	for i := range 20 { // 20 at once: 20 goroutines
		wg.Add(1)
		w.run(func() { defer wg.Done(); <-gate; ran <- i })
	}
	close(gate)
	wg.Wait()
	if len(ran) != 20 {
		t.Fatalf("%d of 20 jobs ran", len(ran))
	}
	waitFor(t, func() bool { return w.idle.Load() == 3 && runtime.NumGoroutine() <= before+3 }, "3 idle workers kept, the rest ended")

	// A job now runs on a kept worker: no new goroutine.
	started := make(chan struct{})
	hold := make(chan struct{})
	w.run(func() { close(started); <-hold })
	<-started
	if got := w.idle.Load(); got != 2 {
		t.Fatalf("idle workers while one runs: %d, want 2", got)
	}
	if n := runtime.NumGoroutine(); n > before+3 {
		t.Fatalf("%d goroutines, want at most %d: the job did not run on a kept worker", n, before+3)
	}
	close(hold)
	waitFor(t, func() bool { return w.idle.Load() == 3 }, "the worker back to idle")

	w.close()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before }, "the idle workers ended by close")
	done := make(chan struct{})
	w.run(func() { close(done) }) // after close: still runs, on a goroutine of its own
	<-done
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A cancel that is handled before its request was registered — stdio hands
// each line to a goroutine of its own, so the cancel read after the request
// can run first — still cancels it: the request is neither run nor
// answered. Other requests are untouched, and cancels for ids never seen
// are bounded.
func TestCancelBeforeTheRequestIsRegistered(t *testing.T) {
	ran := make(chan string, 4)
	s := mcpserver.NewMCPServer("cancel-test", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("mark"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran <- req.GetString("as", "")
		return mcp.NewToolResultText("ran"), nil
	})
	d := NewDispatcher(s, 2, zerolog.Nop())
	sess := NewSession(StdioSessionID)
	ctx := context.Background()
	if err := s.RegisterSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	emit := func([]byte) {}
	d.Handle(ctx, sess, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`), emit)

	d.Handle(ctx, sess, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1"}}`), emit)
	if resp := d.Handle(ctx, sess, []byte(`{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"mark","arguments":{"as":"c-1"}}}`), emit); resp != nil {
		t.Fatalf("the cancelled request was answered: %s", resp)
	}
	if resp := d.Handle(ctx, sess, []byte(`{"jsonrpc":"2.0","id":"c-2","method":"tools/call","params":{"name":"mark","arguments":{"as":"c-2"}}}`), emit); resp == nil {
		t.Fatal("a request nobody cancelled got no answer")
	}
	if got := <-ran; got != "c-2" {
		t.Fatalf("the tool ran for %s, want only c-2", got)
	}
	if len(ran) != 0 {
		t.Fatalf("the cancelled request ran: %v", <-ran)
	}

	for i := range 3 * maxEarlyCancels {
		d.Handle(ctx, sess, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-%d"}}`, i), emit)
	}
	d.mu.Lock()
	n := len(d.cancelledEarly)
	d.mu.Unlock()
	if n > maxEarlyCancels {
		t.Fatalf("%d cancels for unknown requests kept, want at most %d", n, maxEarlyCancels)
	}
}

// With ProcsWhenAlone, a message handled alone runs on that many
// processors; from the second overlapping message on, on the GOMAXPROCS
// found at start, until one of them ends; the process gets its GOMAXPROCS
// back when ServeStdio returns.
func TestProcsWhenAlone(t *testing.T) {
	orig := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	procsBecome := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); runtime.GOMAXPROCS(0) != want; {
			if time.Now().After(deadline) {
				t.Fatalf("GOMAXPROCS %d, want %d", runtime.GOMAXPROCS(0), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	release := make(chan struct{})
	ended := make(chan struct{})
	// Cleanups run last first: this one after ServeStdio has returned.
	t.Cleanup(func() { <-ended; procsBecome(3) })
	p := newStdioPeerWith(t, notifyServer(release), StdioOptions{ProcsWhenAlone: 1})
	go func() {
		defer close(ended)
		p.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		p.next()
		procsBecome(1)
		p.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"notify","arguments":{"n":1,"hold":true}}}`)
		p.next() // a runs
		if n := runtime.GOMAXPROCS(0); n != 1 {
			t.Errorf("one call alone: GOMAXPROCS %d, want 1", n)
		}
		p.send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"notify","arguments":{"n":1,"hold":true}}}`)
		p.next() // b runs too
		if n := runtime.GOMAXPROCS(0); n != 3 {
			t.Errorf("two calls at once: GOMAXPROCS %d, want 3", n)
		}
		close(release)
		p.next()
		p.next()
		procsBecome(1)
		p.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
		if m := p.next(); m["id"] != "p" {
			t.Errorf("want the ping's answer, got %v", m)
		}
		procsBecome(1)
	}()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("timed out")
	}
}

// A request still unwinding when shutdown stopped waiting for it does not
// take the restored GOMAXPROCS away again when it ends.
func TestProcsRestoredForGood(t *testing.T) {
	orig := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	g := newProcGovernor(1)
	g.enter()
	g.enter()
	g.restore()
	g.leave()
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Fatalf("GOMAXPROCS %d after a late leave, want 3", n)
	}
}
