package resources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

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
	if err := p.d.Policy.For(ctx).AllowRequest(ctx); err != nil {
		return "", "", toolerror.InvalidParams("%s", err.Error())
	}
	// The class gate checks the kind's own CLP operation (count for
	// /count), as a read of the resource does: a count the identity may
	// not read is not watched either.
	class, k, err := p.parse(ctx, uri, true)
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
//
// The probe token (Probe) comes with it: its class-wide part is read before
// the tools run (a write in between costs one more fingerprint, never a
// missed change), the sampled rows' part after (their ids come from the
// samples). A probe that cannot be read leaves the token empty: every poll
// then takes a fingerprint.
func (p *Provider) Snapshot(ctx context.Context, class string) (server.Fingerprint, error) {
	basis := &probeBasis{}
	if p.updatedAtIndexed(ctx, class) {
		basis.since = time.Now().Add(-probeSkew)
	}
	head, probeErr := p.probeClass(ctx, class, basis)
	fp := server.Fingerprint{Aspects: map[string]string{}}
	for _, k := range p.kindsAvailable(ctx) {
		if !k.Subscribable {
			continue
		}
		t := server.FindTool(p.d, k.Tool)
		args := tools.Args{"class_name": class}
		maps.Copy(args, k.Args)
		// Under the tool's own CLP operation and its scope (count for
		// count_objects), as a tools/call of it runs.
		v, err := t.Handler.Call(p.d.Policy.AsToolCall(ctx, k.Tool, class), p.d.For(ctx), args)
		if te, ok := toolerror.As(err); ok && te.Code == toolerror.AccessDenied {
			// The identity may not run this kind's tool on the class (a
			// CLP that allows find but not count): nobody is subscribed
			// to it (ResolveSubscription refuses), the others still are.
			fp.Aspects[k.Name] = "denied"
			continue
		}
		if err != nil {
			return server.Fingerprint{}, fmt.Errorf("%s %s: %w", k.Tool, class, err)
		}
		b, err := jsonenc.Marshal(v)
		if err != nil {
			return server.Fingerprint{}, err
		}
		sum := sha256.Sum256(b)
		fp.Aspects[k.Name] = hex.EncodeToString(sum[:12])
		if k.Name == "samples" {
			basis.ids, fp.Newest = sampledRows(b)
		}
	}
	if probeErr == nil {
		var tail string
		if tail, probeErr = p.probeRows(ctx, class, basis); probeErr == nil {
			fp.Probe, fp.Basis = head+tail, basis
		}
	}
	if probeErr != nil && ctx.Err() == nil {
		p.log.Debug().Err(probeErr).Str("class", class).Msg("subscription probe unavailable; every poll takes a fingerprint")
	}
	return fp, nil
}

// Probe implements server.SubscriptionSource: the change token of a
// Snapshot's basis, read unscoped (it never reaches a client; it only
// decides whether the next poll takes a fingerprint). Per engine
// (docs/resources.md "Prompts and resources"):
//   - the collection's document count from $collStats (storage metadata on
//     MongoDB and DocumentDB; FerretDB 1.24 sums SQLite page cells, cheap
//     but proportional to the pages): inserts and deletes;
//   - each sampled row's _updated_at, read by _id (the one lookup every
//     engine serves from an index): updates and deletes of what the
//     samples show;
//   - where an index leads with _updated_at (and the engine uses it: not
//     FerretDB 1.x), how many rows were updated since shortly before the
//     fingerprint, and the newest such time: updates anywhere, e.g. one
//     that makes a row visible to the scope or takes it out.
//
// A change the probe misses (an update outside the samples without the
// index, an insert and a delete between two polls) is caught by the full
// fingerprint the manager takes at least every SafetyPoll.
func (p *Provider) Probe(ctx context.Context, class string, basis any) (string, error) {
	b, ok := basis.(*probeBasis)
	if !ok {
		return "", errors.New("not a probe basis of this source")
	}
	head, err := p.probeClass(ctx, class, b)
	if err != nil {
		return "", err
	}
	tail, err := p.probeRows(ctx, class, b)
	return head + tail, err
}

// probeBasis is what a probe reads besides the class-wide count.
type probeBasis struct {
	since time.Time // zero: no usable _updated_at index
	ids   []string  // the sampled rows
}

// probeSkew is how far before a fingerprint the _updated_at range starts:
// writers' clocks differ from this server's.
const probeSkew = 5 * time.Second

// probeClass reads the class-wide part of the token: the document count
// and, with an _updated_at index, the rows updated since basis.since.
func (p *Provider) probeClass(ctx context.Context, class string, b *probeBasis) (string, error) {
	n, err := p.d.Store.CollectionCount(ctx, class)
	if err != nil {
		return "", err
	}
	coll := p.d.Store.Collection(class)
	token := fmt.Sprintf("n%d", n)
	if b.since.IsZero() {
		return token, nil
	}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_updated_at", Value: bson.D{{Key: "$gte", Value: b.since}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "newest", Value: bson.D{{Key: "$max", Value: "$_updated_at"}}}}}},
	})
	if err != nil {
		return "", err
	}
	var recent []struct {
		N      int64     `bson:"n"`
		Newest time.Time `bson:"newest"`
	}
	if err := cur.All(ctx, &recent); err != nil {
		return "", err
	}
	for _, r := range recent {
		token += fmt.Sprintf(" u%d@%d", r.N, r.Newest.UnixMilli())
	}
	return token, nil
}

// probeRows reads each sampled row's _updated_at by _id ("-": gone).
func (p *Provider) probeRows(ctx context.Context, class string, b *probeBasis) (string, error) {
	coll := p.d.Store.Collection(class)
	var sb strings.Builder
	for _, id := range b.ids {
		var row struct {
			UpdatedAt time.Time `bson:"_updated_at"`
		}
		// One lookup per id: FerretDB 1.24 serves only a lone _id
		// equality from its index ($in scans the collection).
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(bson.D{{Key: "_updated_at", Value: 1}})).Decode(&row)
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
			sb.WriteString(" -")
		case err != nil:
			return "", err
		default:
			fmt.Fprintf(&sb, " %d", row.UpdatedAt.UnixMilli())
		}
	}
	return sb.String(), nil
}

// sampledRows reads the objectIds and the newest updatedAt of the rows in
// get_sample_objects' result (columns + rows, or objects).
func sampledRows(result []byte) (ids []string, newest time.Time) {
	var out struct {
		Columns []string         `json:"columns"`
		Rows    [][]any          `json:"rows"`
		Samples []map[string]any `json:"samples"`
	}
	if json.Unmarshal(result, &out) != nil {
		return nil, time.Time{}
	}
	rows := out.Samples
	for _, r := range out.Rows {
		obj := map[string]any{}
		for i, c := range out.Columns {
			if i < len(r) {
				obj[c] = r[i]
			}
		}
		rows = append(rows, obj)
	}
	for _, r := range rows {
		if id, ok := r["objectId"].(string); ok {
			ids = append(ids, id)
		}
		if s, ok := r["updatedAt"].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.After(newest) {
				newest = t
			}
		}
	}
	return ids, newest
}

// updatedAtIndexed says whether the class's collection has an index led by
// _updated_at that the engine uses for a range (FerretDB 1.x, whose SQLite
// backend serves every query but a lone _id lookup by a scan, does not).
func (p *Provider) updatedAtIndexed(ctx context.Context, class string) bool {
	if p.engineScansAll(ctx) {
		return false
	}
	specs, err := p.d.Store.Collection(class).Indexes().ListSpecifications(ctx)
	if err != nil {
		return false
	}
	for _, s := range specs {
		var keys bson.D
		if bson.Unmarshal(s.KeysDocument, &keys) == nil && len(keys) > 0 && keys[0].Key == "_updated_at" {
			return true
		}
	}
	return false
}

// engineScansAll says whether the database is FerretDB 1.x: its buildInfo
// carries ferretdbVersion (FerretDB 2 reports a ferretdb document instead).
// Asked once; an error counts as no.
func (p *Provider) engineScansAll(ctx context.Context) bool {
	p.engineOnce.Do(func() {
		var info bson.M
		if err := p.d.Store.DB.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err == nil {
			_, p.ferretdb1 = info["ferretdbVersion"]
		}
	})
	return p.ferretdb1
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
