package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// HeartbeatInterval is how often a long tool call reports elapsed time until
// it reports its own work units (PARSE_MCP_PROGRESS_INTERVAL overrides it).
var HeartbeatInterval = 2 * time.Second

// Progress sends notifications/progress for one tool call whose client asked
// for it with _meta.progressToken. A nil *Progress ignores every call, so
// handlers report unconditionally.
type Progress struct {
	ctx   context.Context
	token mcp.ProgressToken
	tool  string
	start time.Time

	mu       sync.Mutex
	last     float64
	sent     bool
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
func startProgress(ctx context.Context, tool string, req mcp.CallToolRequest) (context.Context, *Progress) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return ctx, nil
	}
	p := &Progress{ctx: ctx, token: req.Params.Meta.ProgressToken, tool: tool, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	ctx = context.WithValue(ctx, progressKey{}, p)
	p.send(0, 0, tool+" started")
	go p.heartbeat()
	return ctx, p
}

func (p *Progress) heartbeat() {
	defer close(p.done)
	t := time.NewTicker(HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.mu.Lock()
			own := p.ownUnits
			next := p.last + 1
			p.mu.Unlock()
			if !own {
				p.send(next, 0, fmt.Sprintf("%s running for %.0fs", p.tool, time.Since(p.start).Seconds()))
			}
		}
	}
}

// Report sends the tool's own progress (work units done, of total if known).
func (p *Progress) Report(done, total float64, message string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.ownUnits = true
	p.mu.Unlock()
	p.send(done, total, message)
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

func (p *Progress) send(progress, total float64, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
