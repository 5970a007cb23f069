package parseserver

import (
	"context"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// requestIdentityKey carries the identity one HTTP request acts as through
// the bridge (docs/team.md "Serve a team"), set where the request's identity is
// resolved.
type requestIdentityKey struct{}

type requestIdentity struct {
	id  *Identity
	why string
}

// WithRequestIdentity returns ctx in which the bridge acts as id instead of
// the configured identity; a nil id means the request's identity has no
// REST equivalent (a user or role named without a session), and why says so
// in the refusal.
func WithRequestIdentity(ctx context.Context, id *Identity, why string) context.Context {
	return context.WithValue(ctx, requestIdentityKey{}, requestIdentity{id: id, why: why})
}

// IdentityFor is who a call made in ctx acts as: the request's identity when
// one was set (WithRequestIdentity), else the configured one.
func (c *Client) IdentityFor(ctx context.Context) (Identity, error) {
	r, ok := ctx.Value(requestIdentityKey{}).(requestIdentity)
	if !ok {
		return c.Identity()
	}
	if r.id == nil {
		return Identity{}, &toolerror.Error{Code: toolerror.PermissionDenied, Message: r.why}
	}
	if r.id.Master && !c.master.IsSet() {
		return Identity{}, &toolerror.Error{Code: toolerror.PermissionDenied, Message: "this request acts in master posture, but no PARSE_MCP_MASTER_KEY is configured for the Parse Server bridge"}
	}
	return *r.id, nil
}
