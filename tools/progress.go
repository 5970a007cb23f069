package tools

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// DefaultHeartbeatInterval is how often a long tool call reports elapsed
// time until it reports its own work units, unless
// PARSE_MCP_PROGRESS_INTERVAL (Config.ProgressInterval) says otherwise.
const DefaultHeartbeatInterval = 2 * time.Second

// Progress sends notifications/progress for one tool call whose client asked
// for it with _meta.progressToken. A nil *Progress ignores every call, so
// handlers report unconditionally.
//
// Rules every client can take (docs/transports.md "Progress"):
//   - Nothing is sent during the first interval: a call that finishes
//     within it sends no notification at all.
//   - Then at most one notification per interval, only when the number
//     advanced: the tool's own units (rows read, ids fetched, with a total
//     when known) once it has reported any, elapsed whole seconds before
//     that ("count_objects running for 4.0 s", progress 4). The message always
//     states the number it is sent with.
//   - Report only records; there is no "started" or "done" notification,
//     and finish stops the ticker before the response is written. The
//     transport holds a response back briefly when a notification went out
//     just before it (see server.Dispatcher), so the two never arrive in one
//     read.
type Progress struct {
	ctx      context.Context
	interval time.Duration
	token    mcp.ProgressToken
	tool     string
	start    time.Time

	mu       sync.Mutex
	last     float64 // last progress value sent
	sent     bool
	ownUnits bool    // the tool has reported its own units
	units    float64 // latest reported units
	total    float64
	message  string
	stop     chan struct{}
	done     chan struct{}
}

// progressKey carries the call's reporter. It stays apart from the
// request's callinfo.Info (which holds the token, in ToolCall's _meta): the
// reporter is a live object of the tool adapter — a ticker goroutine and
// its counters — not a fact about the request.
type progressKey struct{}

// ProgressFrom returns the call's reporter (nil when the client sent no token).
func ProgressFrom(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}

// startProgress begins the ticker for a call if it carries a progress token.
func startProgress(ctx context.Context, tool string, req mcp.CallToolRequest, interval time.Duration) (context.Context, *Progress) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return ctx, nil
	}
	p := &Progress{ctx: ctx, interval: interval, token: req.Params.Meta.ProgressToken, tool: tool, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	ctx = context.WithValue(ctx, progressKey{}, p)
	go p.tick()
	return ctx, p
}

func (p *Progress) tick() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.mu.Lock()
			progress, total, message := p.units, p.total, p.message
			if !p.ownUnits {
				// Tenths of a second, so that short intervals advance too.
				secs := math.Floor(time.Since(p.start).Seconds()*10) / 10
				progress, total, message = secs, 0, fmt.Sprintf("%s running for %.1f s", p.tool, secs)
			}
			// Progress must increase with every notification.
			if progress <= 0 || (p.sent && progress <= p.last) {
				p.mu.Unlock()
				continue
			}
			p.sent, p.last = true, progress
			p.mu.Unlock()
			params := map[string]any{"progressToken": p.token, "progress": progress, "message": message}
			if total > 0 {
				params["total"] = total
			}
			select {
			case <-p.stop:
				return // the call has finished: nothing may follow
			default:
			}
			if srv := mcpserver.ServerFromContext(p.ctx); srv != nil {
				_ = srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params)
			}
		}
	}
}

// Report records the tool's own progress: done work units, of total if
// known (0 = unknown), and a message stating done (e.g. "250 rows read").
// It sends nothing itself: the next tick sends the latest report if it
// advanced past the previous notification.
func (p *Progress) Report(done, total float64, message string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.ownUnits = true
	p.units, p.total, p.message = done, total, message
	p.mu.Unlock()
}

// finish stops the ticker; it returns only when no more notifications can
// be sent, so that none can follow the response.
func (p *Progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}
