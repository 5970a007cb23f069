// Package mcphandler mounts parse-mcp's MCP endpoint in another Go HTTP
// server, with that server deciding who each request acts as (docs/team.md "Serve
// a team", "From Go"). It is the one importable API of this module: the
// other packages are not (ARCHITECTURE.md "Packages").
//
// The handler is built from the same PARSE_MCP_* / PARSE_AGENT_* environment
// the binary reads (database, policy file, tier, bridge, limits); the
// identity callback replaces PARSE_MCP_HTTP_AUTH. Each request's Identity is
// resolved against the Parse app's own _Session, _User and _Role, and the
// request then sees exactly what that Parse user may see. The binary's own
// authentication modes are built on the same path.
package mcphandler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/app"
	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/scrub"
	"github.com/parse-mcp/parse-mcp/internal/terminal"
	"github.com/parse-mcp/parse-mcp/server"
)

// Identity is who one request acts as. At most one of SessionToken, UserID
// and Role names the Parse identity; none names the identity the
// environment configures (PARSE_MCP_SESSION_TOKEN, _ACL_USER, _ACL_ROLE, or
// master posture). There is no master field: a callback never reaches
// master posture (SECURITY.md "Per-request identity").
type Identity struct {
	// SessionToken is a Parse session token ("r:…"), resolved through
	// _Session (or the bridge's GET /users/me): expiry and roles apply.
	SessionToken string
	// UserID is a _User objectId the request acts as; its roles come from
	// the _Role graph.
	UserID string
	// Role is a role name the request acts as.
	Role string
	// Tier may only lower PARSE_MCP_PERMISSIONS (readonly, write, admin).
	Tier string
	// Tenant, when set, must equal the tenant bound to the identity, else
	// the request is refused.
	Tenant string
	// ClientID names the calling party in audit events and rate windows.
	ClientID string
}

// ErrUnauthorized is what an identity callback returns (or wraps) for a
// request it does not accept. Any error the callback returns is answered
// with HTTP 401 and parse-mcp's fixed body; its text goes to the operator
// log, so it must not quote a credential.
var ErrUnauthorized = authn.ErrUnauthorized

// IdentityFunc decides who a request acts as.
type IdentityFunc func(*http.Request) (Identity, error)

// Options configure New.
type Options struct {
	// Identify decides each request's identity (required).
	Identify IdentityFunc
	// Log receives parse-mcp's operator log, JSON lines (nil: os.Stderr),
	// through the binary's scrubber and JSON terminal filter.
	Log io.Writer
}

// Handler serves the MCP endpoint at its root: mount it where clients
// should reach it, e.g. mux.Handle("/mcp", h), or under a prefix with
// http.StripPrefix. GET /health answers too.
type Handler struct {
	app    *app.App
	http   *server.HTTPHandler
	cancel context.CancelFunc
	logOut *scrub.Writer
}

// New starts parse-mcp from the environment (connects to the database,
// loads and validates the policy) and returns its MCP endpoint. Close it
// when done.
func New(ctx context.Context, o Options) (*Handler, error) {
	if o.Identify == nil {
		return nil, errors.New("mcphandler: Options.Identify is required")
	}
	cfg, err := config.Load()
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("mcphandler: %w", err)
	}
	w := o.Log
	if w == nil {
		w = os.Stderr
	}
	// The log passes the binary's scrubber and JSON terminal filter
	// (SECURITY.md "Secrets in output", "Terminal output"): a line may
	// quote an endpoint's error body or a database message.
	logOut := scrub.New(cfg.Secrets()).Writer(w)
	w = terminal.JSON(logOut)
	level, err := zerolog.ParseLevel(strings.ToLower(cfg.LogLevel))
	if err != nil {
		level = zerolog.InfoLevel
	}
	log := zerolog.New(w).Level(level).With().Timestamp().Logger()
	var startErr bytes.Buffer
	a, _ := app.Start(ctx, cfg, log, &startErr, false)
	if a == nil {
		return nil, fmt.Errorf("mcphandler: %s", strings.TrimSpace(strings.TrimPrefix(startErr.String(), "parse-mcp: ")))
	}
	trusted, _ := cfg.TrustedProxyNets()
	maxSessions, perClient, _, _ := cfg.HTTPCaps()
	hctx, cancel := context.WithCancel(context.Background())
	h := server.MountHTTP(hctx, a.Dispatcher, server.HTTPOptions{Log: log, Health: a.PingDatabase,
		TrustedProxies: trusted, MaxSessions: maxSessions, SessionsPerClient: perClient,
		Auth: a.IdentifyWith(cfg, authenticator(o.Identify))}, false)
	return &Handler{app: a, http: h, cancel: cancel, logOut: logOut}, nil
}

// authenticator adapts an IdentityFunc to the transport's authenticators.
func authenticator(f IdentityFunc) authn.Authenticator {
	return authn.AuthenticatorFunc(func(r *http.Request) (authn.Principal, error) {
		id, err := f(r)
		if err != nil {
			if !errors.Is(err, authn.ErrUnauthorized) {
				err = fmt.Errorf("%w: %v", authn.ErrUnauthorized, err)
			}
			return authn.Principal{}, err
		}
		return authn.Principal{Mode: "callback", SessionToken: id.SessionToken, UserID: id.UserID, Role: id.Role,
			Tier: id.Tier, Tenant: id.Tenant, ClientID: id.ClientID}, nil
	})
}

// ServeHTTP serves one request of the MCP endpoint (any path is /mcp, but
// /health).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/health" {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/mcp"
		r = r2
	}
	h.http.ServeHTTP(w, r)
}

// Close ends every session and releases the database.
func (h *Handler) Close() error {
	h.cancel()
	h.http.CloseSessions()
	done := make(chan struct{})
	go func() { h.app.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return h.logOut.Flush()
}
