package identity

import (
	"context"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/limits"
)

// A made-up session token costs a _Session lookup (through Parse Server,
// /users/me) that no index serves unless the app made one (docs/team.md "Serve a
// team"), and nothing else bounds requests before they are authenticated:
// the rate windows count resolved identities. So refused credentials are
// counted per client address, and once refusalsPerAddress of them fall in
// refusalWindow, every request carrying a credential from that address
// that the identity cache cannot answer is refused with 429 before any
// lookup. 20 a minute is far more than a person or client retrying a stale
// token makes, and bounds a guesser to one uncached lookup every 3 s per
// address. Everyone behind that address carrying a credential the cache
// does not hold waits too: the address is all that is known before the
// credential holds.
const (
	refusalsPerAddress = 20
	refusalWindow      = time.Minute
)

// SetRefusals counts refused credentials per client address in store (the
// HTTP rate windows' store: this process's, or shared). Without it nothing
// is counted (stdio, tests of the resolver alone).
func (r *Resolver) SetRefusals(store limits.Store) { r.refusals = store }

func refusalBucket(client string) limits.Bucket {
	return limits.Bucket{Key: "authn-refused:" + client, Limit: refusalsPerAddress, Window: refusalWindow}
}

// limited is the 429 for client when its refused credentials fill their
// window (or the store cannot say: fail closed), else nil.
func (r *Resolver) limited(ctx context.Context, client string) error {
	if r.refusals == nil || client == "" {
		return nil
	}
	full, wait := r.refusals.Full(ctx, r.now(), refusalBucket(client))
	if !full {
		return nil
	}
	return &authn.TooManyRefusals{RetryAfter: wait, Log: r.firstInWindow(ctx, "authn-limited-log:"+client)}
}

// refused counts err, a refusal of client's credential. Its reason reaches
// the operator log once per window per address (else the bare
// authn.ErrUnauthorized, which is not logged), so a burst of made-up tokens
// is not a burst of log lines.
func (r *Resolver) refused(ctx context.Context, client string, err error) error {
	if r.refusals == nil || client == "" {
		return err
	}
	if limited := r.limited(ctx, client); limited != nil {
		return limited
	}
	r.refusals.Hit(ctx, r.now(), []limits.Bucket{refusalBucket(client)})
	if !r.firstInWindow(ctx, "authn-refused-log:"+client) {
		return authn.ErrUnauthorized
	}
	return err
}

func (r *Resolver) firstInWindow(ctx context.Context, key string) bool {
	refused, _ := r.refusals.Hit(ctx, r.now(), []limits.Bucket{{Key: key, Limit: 1, Window: refusalWindow}})
	return refused < 0
}
