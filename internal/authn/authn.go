// Package authn is the contract between the HTTP transport and the ways it
// can learn who a request acts as (PARSE_MCP_HTTP_AUTH: keys, parse-session,
// jwt, oauth; docs/team.md "Serve a team"). An Authenticator reads one request and
// says which Parse principal it presents; the transport tries the configured
// modes in order and resolves the first principal against Parse's own data
// (_Session, _User, _Role) into the request's identity scope. Nothing here
// touches the database or the policy: a Principal is a claim, not a scope.
package authn

import (
	"errors"
	"net/http"
	"time"
)

// Modes, as PARSE_MCP_HTTP_AUTH spells them.
const (
	ModeKeys         = "keys"
	ModeParseSession = "parse-session"
	ModeJWT          = "jwt"
	ModeOAuth        = "oauth"
)

// Principal is who one HTTP request says it acts as. At most one of
// SessionToken, UserID, Role or Master names the Parse identity (none: the
// environment identity — a key that names none; two are refused); the
// other fields may only narrow what that identity could do.
type Principal struct {
	// Mode is the authenticator that recognised the request.
	Mode string
	// SessionToken is a Parse session token ("r:…") to resolve through
	// _Session (direct) or /users/me (bridge). It never leaves the server:
	// no log line, audit event or error carries it.
	SessionToken string
	// UserID is a _User objectId the request acts as without a session
	// (a JWT matched to _User, a named key that names a user).
	UserID string
	// Role is a role name the request acts as (a named key only).
	Role string
	// Master is master posture. Only an operator's named key may carry it:
	// no token of any kind reaches it.
	Master bool
	// Tier caps the permission tier ("" = the configured one); it may only
	// lower it, never raise it.
	Tier string
	// Tenant is a tenant the credential asserts ("" = none); it must agree
	// with the tenant the policy derives for the user, else the request is
	// refused.
	Tenant string
	// ClientID names the party for audit events and rate windows: the
	// OAuth client, a JWT's azp/client_id, a named key's name. Never a
	// secret.
	ClientID string
	// ExpiresAt bounds how long the principal may be cached (zero: the
	// identity cache's TTL alone).
	ExpiresAt time.Time
}

// Authenticator recognises one mode's credential on a request.
//
// It returns (p, nil) for a valid credential, (Principal{}, ErrNoCredential)
// when the request carries nothing of this mode (the next mode is tried),
// and any other error — normally one wrapping ErrUnauthorized — when the
// request carries this mode's credential and it does not hold (expired,
// wrong audience, unknown): the transport answers the fixed 401 and stops.
// An error's text goes to the operator log only, so it must not quote the
// credential.
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (Principal, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(r *http.Request) (Principal, error) { return f(r) }

// Challenger is implemented by an authenticator whose 401 carries a
// WWW-Authenticate challenge (oauth: RFC 9728's resource_metadata).
type Challenger interface {
	Challenge(r *http.Request) string
}

// Router is implemented by an authenticator that serves HTTP endpoints of
// its own beside /mcp (oauth: the metadata documents, /authorize, /token,
// /register, /revoke). Mount registers them; they are not behind the
// /mcp authentication.
type Router interface {
	Mount(mux *http.ServeMux)
}

var (
	// ErrNoCredential: the request carries no credential of this mode.
	ErrNoCredential = errors.New("no credential of this mode")
	// ErrUnauthorized: the credential is present and does not hold.
	ErrUnauthorized = errors.New("unauthorized")
)

// TooManyRefusals answers a request carrying a credential from a client
// address whose refused credentials filled their window (SECURITY.md
// "Per-request identity"): 429 with RetryAfter, before any lookup. Log
// says this is the first such answer to the address in the window.
type TooManyRefusals struct {
	RetryAfter time.Duration
	Log        bool
}

func (e *TooManyRefusals) Error() string { return "too many refused credentials from this client" }
