package tools

import (
	"context"
	"fmt"
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
// Values: the call starts at 0 ("<tool> started"); elapsed-time heartbeats
// then climb towards 1 without reaching it (1/2, 2/3, 3/4, … with no total,
// message "<tool> running for 4s"), so that the tool's own work units (rows,
// groups, ids: whole numbers ≥ 1, with a total when known) always continue
// the strictly increasing sequence MCP requires. The first Report stops the
// heartbeats for good.
type Progress struct {
	ctx      context.Context
	interval time.Duration
	token    mcp.ProgressToken
	tool     string
	start    time.Time

	mu       sync.Mutex
	last     float64
	sent     bool
	beats    int
	ownUnits bool // once the tool reports work, heartbeats stop
	stop     chan struct{}
	done     chan struct{}
}

type progressKey struct{}

// ProgressFrom returns the call's reporter (nil when the client sent no token).
func ProgressFrom(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}

// startProgress begins heartbeats for a call if it carries a progress token.
func startProgress(ctx context.Context, tool string, req mcp.CallToolRequest, interval time.Duration) (context.Context, *Progress) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return ctx, nil
	}
	p := &Progress{ctx: ctx, interval: interval, token: req.Params.Meta.ProgressToken, tool: tool, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	ctx = context.WithValue(ctx, progressKey{}, p)
	p.send(0, 0, tool+" started", true)
	go p.heartbeat()
	return ctx, p
}

func (p *Progress) heartbeat() {
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
			if p.ownUnits {
				p.mu.Unlock()
				return
			}
			p.beats++
			next := float64(p.beats) / float64(p.beats+1)
			p.mu.Unlock()
			p.send(next, 0, fmt.Sprintf("%s running for %.0fs", p.tool, time.Since(p.start).Seconds()), true)
		}
	}
}

// Report sends the tool's own progress (work units done, of total if known;
// total 0 = unknown). From the first Report on, heartbeats stop. A report
// that does not advance past the previous notification is skipped (MCP
// requires progress to increase), so reporting 0 units is a no-op.
func (p *Progress) Report(done, total float64, message string) {
	if p == nil {
		return
	}
	p.send(done, total, message, false)
}

// finish stops the heartbeat; it returns only when no more notifications can
// be sent, so that none can follow the response.
func (p *Progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}

// send emits one notification. A heartbeat (beat) is dropped once the tool
// reports its own units; a report marks the switch.
func (p *Progress) send(progress, total float64, message string, beat bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if beat && p.ownUnits {
		return
	}
	if !beat {
		p.ownUnits = true
	}
	// Progress must increase with every notification.
	if p.sent && progress <= p.last {
		return
	}
	p.sent = true
	p.last = progress
	params := map[string]any{"progressToken": p.token, "progress": progress, "message": message}
	if total > 0 {
		params["total"] = total
	}
	if srv := mcpserver.ServerFromContext(p.ctx); srv != nil {
		_ = srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params)
	}
}
