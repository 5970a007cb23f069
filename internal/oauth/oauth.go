// Package oauth is the oauth mode of per-request identity over HTTP
// (docs/team.md "Serve a team" → "oauth"): parse-mcp as an OAuth 2.1
// authorization server whose login is the Parse app's own. A person signs
// in on /authorize with their Parse username and password, which Parse
// Server itself checks (POST /login through the bridge, so lockout, email
// verification, auth adapters and beforeLogin apply), consents, and
// the client gets an opaque access token bound to this server's /mcp
// resource and mapped, server-side, to the Parse session that login
// created. The session token never leaves the server; the database holds
// only token hashes and the session token sealed under the token itself
// (SECURITY.md "OAuth mode").
//
// The Server is an authn.Authenticator (access tokens on /mcp), an
// authn.Challenger (the 401's resource_metadata) and an authn.Router (the
// metadata documents, /authorize, /token, /register, /revoke).
package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
)

// Lifetimes.
const (
	// requestTTL bounds how long a person may take between opening the
	// login page and approving.
	requestTTL = 10 * time.Minute
	// codeTTL bounds an authorization code's life; a used code is kept
	// this long past its expiry so that a second use is recognised (and
	// revokes what the first one obtained).
	codeTTL       = time.Minute
	usedRetention = 10 * time.Minute
	accessTTL     = time.Hour
	refreshTTL    = 30 * 24 * time.Hour
)

// MCPPath is where the protected resource is served.
const MCPPath = "/mcp"

// Config is what the oauth mode needs.
type Config struct {
	// PublicURL is the origin clients reach the server at
	// (PARSE_MCP_PUBLIC_URL): the issuer; the resource is PublicURL+/mcp.
	PublicURL string
	// Tier is the configured permission tier: scopes only narrow it.
	Tier string
	// Store is the app's database; grants live in its OAuthCollection.
	Store *parsedb.Store
	// Parse is the bridge: logins are Parse's own.
	Parse *parseserver.Client
	Log   zerolog.Logger
	// ClientAddr names the client a login attempt counts against; nil: the
	// transport's client (callinfo: the address, or the one a declared
	// proxy forwards), else the peer address.
	ClientAddr func(*http.Request) string
	// Limits keeps the login, sign-in and registration windows: the shared
	// store of PARSE_MCP_LIMITS_STORE=mongodb; nil: this process's own.
	Limits limits.Store
	// MetadataClient fetches Client ID Metadata Documents; nil: the guarded
	// client that refuses every address that is not public (metadata.go).
	MetadataClient *http.Client
	// Now is the clock (tests).
	Now func() time.Time
}

// Server is the oauth mode.
type Server struct {
	issuer   string // PublicURL, no trailing slash
	resource string // issuer + /mcp
	tier     string
	store    *store
	parse    *parseserver.Client
	log      zerolog.Logger
	addr     func(*http.Request) string
	fetch    *http.Client
	now      func() time.Time
	limits   *limiter
	secure   bool // https: cookies are Secure
}

var (
	_ authn.Authenticator = (*Server)(nil)
	_ authn.Challenger    = (*Server)(nil)
	_ authn.Router        = (*Server)(nil)
)

// New checks the configuration and returns the mode. Without a bridge the
// mode is refused: parse-mcp never checks a password itself.
func New(c Config) (*Server, error) {
	if c.Parse == nil {
		return nil, &config.Error{Variable: "PARSE_MCP_SERVER_URL", Problem: "the oauth mode needs the Parse Server bridge: logins are checked by Parse Server itself", Fix: "set PARSE_MCP_SERVER_URL and PARSE_MCP_APPLICATION_ID"}
	}
	if c.Store == nil {
		return nil, errors.New("oauth: no database")
	}
	issuer, err := PublicOrigin(c.PublicURL)
	if err != nil {
		return nil, err
	}
	switch c.Tier {
	case config.TierReadonly, config.TierWrite, config.TierAdmin:
	default:
		return nil, fmt.Errorf("oauth: unknown tier %q", c.Tier)
	}
	s := &Server{
		issuer:   issuer,
		resource: issuer + MCPPath,
		tier:     c.Tier,
		store:    &store{coll: c.Store.Collection(parsedb.OAuthCollection)},
		parse:    c.Parse,
		log:      c.Log,
		addr:     c.ClientAddr,
		fetch:    c.MetadataClient,
		now:      c.Now,
		secure:   strings.HasPrefix(issuer, "https://"),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.addr == nil {
		s.addr = peerAddr
	}
	if s.fetch == nil {
		s.fetch = guardedClient()
	}
	s.store.now = s.now
	s.limits = &limiter{store: c.Limits, now: s.now}
	if s.limits.store == nil {
		s.limits.store = limits.NewMemory()
	}
	return s, nil
}

// PublicOrigin checks PARSE_MCP_PUBLIC_URL for the oauth mode: an origin
// (scheme://host[:port], no path, query or fragment), https — or http on a
// loopback host, for a server only this machine reaches. It is the issuer,
// and every metadata URL is built from it.
func PublicOrigin(raw string) (string, error) {
	bad := func(problem string) error {
		return &config.Error{Variable: "PARSE_MCP_PUBLIC_URL", Problem: problem, Fix: "set it to the https origin clients reach this server at, e.g. https://mcp.example.com"}
	}
	if raw == "" {
		return "", bad("the oauth mode needs the server's public URL")
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", bad("not an absolute URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || (u.Path != "" && u.Path != "/") {
		return "", bad("it must be an origin only: no path, user, query or fragment")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
	default:
		return "", bad("OAuth needs https (plain http only on a loopback host)")
	}
	return u.Scheme + "://" + u.Host, nil
}

// Issuer is the authorization server's identifier (the public origin).
func (s *Server) Issuer() string { return s.issuer }

// Resource is the protected resource every token is bound to.
func (s *Server) Resource() string { return s.resource }

func peerAddr(r *http.Request) string {
	if c := callinfo.From(r.Context()).Client; c != "" {
		return c
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Access-token prefix: a bearer token without it is not this mode's, so
// parse-session and jwt can share the Authorization header.
const (
	accessPrefix  = "pmcp_at_"
	refreshPrefix = "pmcp_rt_"
	codePrefix    = "pmcp_ac_"
	clientPrefix  = "pmcp_client_"
	secretPrefix  = "pmcp_cs_"
)

// Authenticate recognises this mode's access token on a /mcp request. The
// Parse session it maps to is resolved by the transport like any session
// token, so a Parse logout, or the session deleted in the dashboard, ends
// the token too.
func (s *Server) Authenticate(r *http.Request) (authn.Principal, error) {
	token, ok := bearer(r)
	if !ok || !strings.HasPrefix(token, accessPrefix) {
		return authn.Principal{}, authn.ErrNoCredential
	}
	g, err := s.store.find(r.Context(), kindAccess, token)
	if err != nil {
		return authn.Principal{}, err
	}
	switch {
	case g == nil:
		return authn.Principal{}, fmt.Errorf("%w: unknown or revoked oauth access token", authn.ErrUnauthorized)
	case !s.now().Before(g.ExpiresAt):
		return authn.Principal{}, fmt.Errorf("%w: expired oauth access token (client %s)", authn.ErrUnauthorized, g.ClientID)
	case g.Resource != s.resource:
		return authn.Principal{}, fmt.Errorf("%w: oauth access token minted for another resource (client %s)", authn.ErrUnauthorized, g.ClientID)
	}
	session, err := open(token, g.Session)
	if err != nil {
		return authn.Principal{}, fmt.Errorf("%w: oauth access token does not open its grant (client %s)", authn.ErrUnauthorized, g.ClientID)
	}
	return authn.Principal{
		Mode:         authn.ModeOAuth,
		SessionToken: session.Reveal(),
		Tier:         g.Tier,
		ClientID:     g.ClientID,
		ExpiresAt:    g.ExpiresAt,
	}, nil
}

// Challenge is the 401's WWW-Authenticate: where the protected resource
// metadata is, and the scopes this server grants.
func (s *Server) Challenge(r *http.Request) string {
	c := fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, s.issuer+"/.well-known/oauth-protected-resource"+MCPPath, strings.Join(scopesUpTo(s.tier), " "))
	if token, ok := bearer(r); ok && strings.HasPrefix(token, accessPrefix) {
		c += `, error="invalid_token"`
	}
	return c
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	t := strings.TrimSpace(h[7:])
	return t, t != ""
}

// background is the context of work that must finish whatever the
// request does (revoking a family, logging a session out).
func background() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
