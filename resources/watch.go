package resources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/server"
	"github.com/parse-mcp/parse-mcp/tools"
)

// ResolveSubscription implements server.SubscriptionSource: count and
// samples URIs of visible classes can be watched; schema URIs cannot.
func (p *Provider) ResolveSubscription(ctx context.Context, uri string) (class, aspect string, err error) {
	// A subscription costs polling or a change stream: it is counted by
	// the rate limiter like a tool call (SECURITY.md).
	if err := p.d.Policy.AllowRequest(ctx); err != nil {
		return "", "", toolerror.InvalidParams("%s", err.Error())
	}
	class, k, err := p.Parse(ctx, uri)
	if err != nil {
		return "", "", err
	}
	if !k.Subscribable {
		return "", "", toolerror.InvalidParams("%s cannot be subscribed to (a schema changes only with a migration); subscribe to %s or %s", uri, URI(class, "count"), URI(class, "samples"))
	}
	return class, k.Name, nil
}

// Snapshot implements server.SubscriptionSource. Each subscribable kind is
// fingerprinted by hashing exactly what its tool would return now: the
// tool's own handler runs with the server's policy (hidden classes, default
// filters, tenant, ACL scope), so a write this server could not read leaves
// the fingerprint unchanged and no subscriber hears about it. The handler is
// called without the policy middleware around it on purpose: polling must
// neither consume the caller's rate limit nor write a tool_call audit event
// per second (the class gate and every filter are inside the handler).
func (p *Provider) Snapshot(ctx context.Context, class string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range p.kindsAvailable() {
		if !k.Subscribable {
			continue
		}
		t := server.FindTool(p.d, k.Tool)
		args := tools.Args{"class_name": class}
		maps.Copy(args, k.Args)
		v, err := t.Handler.Call(ctx, p.d, args)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", k.Tool, class, err)
		}
		b, err := jsonenc.Marshal(v)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out[k.Name] = hex.EncodeToString(sum[:12])
	}
	return out, nil
}

// Watch implements server.SubscriptionSource with a MongoDB change stream on
// the class's collection (replica sets and Atlas). Where the server has no
// change streams (standalone mongod, FerretDB) opening fails at once and the
// manager polls instead.
//
// With PARSE_MCP_LIVEQUERY_URL the events come from Parse LiveQuery instead,
// subscribed as the server's identity: Parse checks each event against that
// identity's ACL and CLP, and the fingerprint (under this server's policy)
// still decides whether subscribers hear about it. If LiveQuery cannot be
// reached it falls back to the change stream (then polling).
func (p *Provider) Watch(ctx context.Context, class string) (<-chan struct{}, error) {
	if lq := p.d.LiveQuery; lq != nil {
		events, err := lq.Subscribe(ctx, class)
		if err == nil {
			p.log.Info().Str("class", class).Msg("watching class through Parse LiveQuery")
			return signals(events), nil
		}
		p.log.Warn().Str("class", class).Str("error", err.Error()).Msg("Parse LiveQuery unavailable; watching the database instead")
	}
	// Only the event's kind and key are needed: the fingerprint is
	// recomputed under the policy anyway. _id (the resume token) must stay.
	pipeline := mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "operationType", Value: 1}, {Key: "documentKey", Value: 1}}}}}
	cs, err := p.d.Store.Collection(class).Watch(ctx, pipeline)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrWatchUnsupported, err)
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		defer cs.Close(context.WithoutCancel(ctx))
		for cs.Next(ctx) {
			select {
			case ch <- struct{}{}:
			default: // one pending signal is enough
			}
		}
		if err := cs.Err(); err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Str("class", class).Msg("change stream failed")
		}
	}()
	return ch, nil
}

var _ server.SubscriptionSource = (*Provider)(nil)

// signals turns LiveQuery events into the coalescing signal channel the
// subscription manager reads.
func signals(events <-chan parseserver.Event) <-chan struct{} {
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		for range events {
			select {
			case ch <- struct{}{}:
			default: // one pending signal is enough
			}
		}
	}()
	return ch
}
