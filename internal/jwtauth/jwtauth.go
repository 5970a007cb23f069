// Package jwtauth is the jwt mode of per-request identity over HTTP (docs/team.md
// "Serve a team" → "jwt"; SECURITY.md "JWT mode"): a JWT from the app's own
// identity provider in Authorization: Bearer, verified against a JWKS URL or
// one HS256 secret, becomes an authn.Principal — a Parse session token from
// the parse_session_token claim, or the _User a claim names. Claims may only
// narrow what that user may do; roles come from Parse's _Role graph, never
// from the token. JOSE parsing and signature checks are go-jose's.
package jwtauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// Skew is the clock difference allowed between the identity provider and
// this server when exp, nbf and iat are checked.
const Skew = 30 * time.Second

// maxTokenLen bounds a bearer token read as a JWT.
const maxTokenLen = 16 << 10

// Claim names read besides the registered ones and the user claim.
const (
	ClaimSessionToken = "parse_session_token"
	ClaimPermissions  = "permissions"
	ClaimScope        = "scope"
	ClaimTenant       = "tenant_id"
)

// Tiers, ordered, as PARSE_MCP_PERMISSIONS spells them.
var tiers = []string{"readonly", "write", "admin"}

// scopeTiers maps the OAuth scopes parse-mcp knows to the tier each grants.
var scopeTiers = map[string]string{"parse:read": "readonly", "parse:write": "write", "parse:admin": "admin"}

// Users finds the _User a token names (parsedb.Store implements it):
// provider "" matches the objectId, else authData.<provider>.id. "" and no
// error when no user matches.
type Users interface {
	UserIDByAuth(ctx context.Context, provider, id string) (string, error)
}

// Config is the jwt mode's configuration (PARSE_MCP_JWT_*).
type Config struct {
	// Exactly one of JWKSURL and Secret.
	JWKSURL string
	Secret  []byte
	// Issuer must equal iss; Audience must be one of aud.
	Issuer   string
	Audience string
	// UserClaim names the user when there is no parse_session_token claim
	// ("" = sub).
	UserClaim string
	// AuthProvider matches UserClaim to authData.<provider>.id ("" = the
	// claim is the _User objectId).
	AuthProvider string
	// Tier is the configured tier: a permissions or scope claim may only
	// lower it.
	Tier string
	// CacheTTL is how long a user claim's objectId is reused
	// (PARSE_MCP_IDENTITY_CACHE; 0: not cached).
	CacheTTL time.Duration
	// HTTPClient fetches the JWKS (nil: a client with a 5 s timeout that
	// follows no redirect).
	HTTPClient *http.Client
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	Log zerolog.Logger
}

// Authenticator is the jwt mode's authn.Authenticator.
type Authenticator struct {
	cfg   Config
	users Users
	keys  *keySet // nil with a secret
	algs  []jose.SignatureAlgorithm
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]cachedUser
}

type cachedUser struct {
	objectID string
	until    time.Time
}

// maxCachedUsers bounds the user cache; when full it is emptied.
const maxCachedUsers = 10000

var (
	hmacAlgs       = []jose.SignatureAlgorithm{jose.HS256}
	asymmetricAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}
)

// New builds the authenticator. It does not fetch the JWKS: the first token
// does.
func New(cfg Config, users Users) (*Authenticator, error) {
	if (cfg.JWKSURL == "") == (len(cfg.Secret) == 0) {
		return nil, errors.New("jwt: set exactly one of a JWKS URL and a secret")
	}
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("jwt: issuer and audience are required")
	}
	if !slices.Contains(tiers, cfg.Tier) {
		return nil, fmt.Errorf("jwt: unknown tier %q", cfg.Tier)
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	a := &Authenticator{cfg: cfg, users: users, now: cfg.Now, cache: map[string]cachedUser{}}
	if a.now == nil {
		a.now = time.Now
	}
	if cfg.JWKSURL != "" {
		a.keys = newKeySet(cfg.JWKSURL, cfg.HTTPClient, a.now, cfg.Log)
		a.algs = asymmetricAlgs
	} else {
		a.algs = hmacAlgs
	}
	return a, nil
}

// refusal is a credential that does not hold; its text names the reason
// and never quotes the token.
func refusal(reason string) error { return fmt.Errorf("%w: jwt: %s", authn.ErrUnauthorized, reason) }

// header is the part of a JOSE header read before the signature is checked.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// bearerJWT returns the request's bearer token and its header when the
// token has the shape of a JWS compact JWT (three segments, the first a
// JSON object with alg); ok is false for anything else (a Parse session
// token, an API key), which belongs to another mode.
func bearerJWT(r *http.Request) (token string, h header, ok bool) {
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", h, false
	}
	token = strings.TrimSpace(token)
	if strings.Count(token, ".") != 2 || len(token) > maxTokenLen {
		return "", h, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[:strings.IndexByte(token, '.')])
	if err != nil || json.Unmarshal(raw, &h) != nil || h.Alg == "" {
		return "", h, false
	}
	return token, h, true
}

// Authenticate implements authn.Authenticator.
func (a *Authenticator) Authenticate(r *http.Request) (authn.Principal, error) {
	token, h, ok := bearerJWT(r)
	if !ok {
		return authn.Principal{}, authn.ErrNoCredential
	}
	alg := jose.SignatureAlgorithm(h.Alg)
	// The algorithm is pinned before any key is looked at: HS256 only with
	// the secret, asymmetric ones only with the JWKS (so a token signed
	// with HMAC over a public key's bytes never meets that key), none never.
	if !slices.Contains(a.algs, alg) {
		return authn.Principal{}, refusal("algorithm not allowed")
	}
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{alg})
	if err != nil || len(jws.Signatures) != 1 {
		return authn.Principal{}, refusal("malformed token")
	}
	payload, err := a.verify(r.Context(), jws, h.Kid, alg)
	if err != nil {
		return authn.Principal{}, err
	}
	var std jwt.Claims
	var extra map[string]json.RawMessage
	if json.Unmarshal(payload, &std) != nil || json.Unmarshal(payload, &extra) != nil {
		return authn.Principal{}, refusal("malformed claims")
	}
	if err := a.validate(std); err != nil {
		return authn.Principal{}, err
	}
	return a.principal(r.Context(), std, extra)
}

// verify checks the signature with the key the token names and returns the
// payload.
func (a *Authenticator) verify(ctx context.Context, jws *jose.JSONWebSignature, kid string, alg jose.SignatureAlgorithm) ([]byte, error) {
	if a.keys == nil {
		payload, err := jws.Verify(a.cfg.Secret)
		if err != nil {
			return nil, refusal("bad signature")
		}
		return payload, nil
	}
	keys, err := a.keys.keysFor(ctx, kid, alg)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if payload, err := jws.Verify(k); err == nil {
			return payload, nil
		}
	}
	return nil, refusal("bad signature")
}

// validate checks iss, aud, exp, nbf and iat (with Skew). exp is required:
// a token that never expires cannot be revoked.
func (a *Authenticator) validate(c jwt.Claims) error {
	if c.Expiry == nil {
		return refusal("no exp claim")
	}
	err := c.ValidateWithLeeway(jwt.Expected{Issuer: a.cfg.Issuer, AnyAudience: jwt.Audience{a.cfg.Audience}, Time: a.now()}, Skew)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jwt.ErrExpired):
		return refusal("expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return refusal("not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return refusal("issued in the future")
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return refusal("wrong issuer")
	case errors.Is(err, jwt.ErrInvalidAudience):
		return refusal("wrong audience")
	}
	return refusal("invalid claims")
}

// principal turns verified claims into the Principal.
func (a *Authenticator) principal(ctx context.Context, std jwt.Claims, extra map[string]json.RawMessage) (authn.Principal, error) {
	p := authn.Principal{Mode: authn.ModeJWT, ExpiresAt: std.Expiry.Time()}
	var err error
	if p.Tier, err = a.tier(extra); err != nil {
		return authn.Principal{}, err
	}
	if p.Tenant, err = stringClaim(extra, ClaimTenant, printableRe); err != nil {
		return authn.Principal{}, err
	}
	for _, name := range []string{"azp", "client_id"} {
		if p.ClientID, err = stringClaim(extra, name, clientIDRe); err != nil || p.ClientID != "" {
			break
		}
	}
	if err != nil {
		return authn.Principal{}, err
	}
	if p.SessionToken, err = stringClaim(extra, ClaimSessionToken, printableRe); err != nil || p.SessionToken != "" {
		return p, err
	}
	value, err := stringClaim(extra, a.cfg.UserClaim, printableRe)
	if err != nil {
		return authn.Principal{}, err
	}
	if value == "" {
		return authn.Principal{}, refusal("no user claim")
	}
	if p.UserID, err = a.userID(ctx, value); err != nil {
		return authn.Principal{}, err
	}
	return p, nil
}

var (
	// printableRe is what a claim copied into a Principal may hold: 1 to
	// 256 printable ASCII characters ([\x21-\x7e]).
	printableRe = parsedb.NewNamePattern("", "!-~", "!-~", 256)
	// clientIDRe is what azp/client_id may be: it names the party in audit
	// events and rate windows.
	clientIDRe = parsedb.NewNamePattern("", "A-Za-z0-9._:/@+-", "A-Za-z0-9._:/@+-", 128)
)

// stringClaim reads a string claim ("" when absent). A claim of another
// type, or with characters re refuses, refuses the token.
func stringClaim(extra map[string]json.RawMessage, name string, re *parsedb.NamePattern) (string, error) {
	raw, ok := extra[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || !re.MatchString(s) {
		return "", refusal("claim " + name + " is not a valid string")
	}
	return s, nil
}

// tier is the tier the permissions and scope claims allow, never above the
// configured one ("" when neither claim narrows). permissions names a tier;
// scope (a space-separated string, or scp as an array) narrows when it holds
// parse:read, parse:write or parse:admin (the highest one counts; other
// scopes are the identity provider's own and ignored).
func (a *Authenticator) tier(extra map[string]json.RawMessage) (string, error) {
	limit := slices.Index(tiers, a.cfg.Tier)
	narrowed := false
	perm, err := stringClaim(extra, ClaimPermissions, printableRe)
	if err != nil {
		return "", err
	}
	if perm != "" {
		i := slices.Index(tiers, perm)
		if i < 0 {
			return "", refusal("permissions claim names no tier")
		}
		limit, narrowed = min(limit, i), true
	}
	var scopes []string
	if raw, ok := extra[ClaimScope]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", refusal("claim scope is not a string")
		}
		scopes = strings.Fields(s)
	} else if raw, ok := extra["scp"]; ok {
		if json.Unmarshal(raw, &scopes) != nil {
			return "", refusal("claim scp is not an array of strings")
		}
	}
	best := -1
	for _, s := range scopes {
		if t, ok := scopeTiers[s]; ok {
			best = max(best, slices.Index(tiers, t))
		}
	}
	if best >= 0 {
		limit, narrowed = min(limit, best), true
	}
	if !narrowed {
		return "", nil
	}
	return tiers[limit], nil
}

// userID is the objectId of the _User the user claim names; a claim that
// names no user refuses the token. Found users are cached for CacheTTL, so
// an authData lookup is not repeated on every request.
func (a *Authenticator) userID(ctx context.Context, value string) (string, error) {
	now := a.now()
	a.mu.Lock()
	c, ok := a.cache[value]
	a.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.objectID, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	id, err := a.users.UserIDByAuth(ctx, a.cfg.AuthProvider, value)
	if errors.Is(err, parsedb.ErrAmbiguousUser) {
		return "", refusal("more than one user has this id")
	}
	if err != nil {
		return "", fmt.Errorf("jwt: looking up the user: %w", err)
	}
	if id == "" {
		return "", refusal("no such user")
	}
	if a.cfg.CacheTTL <= 0 {
		return id, nil
	}
	a.mu.Lock()
	if len(a.cache) >= maxCachedUsers {
		clear(a.cache)
	}
	a.cache[value] = cachedUser{objectID: id, until: now.Add(a.cfg.CacheTTL)}
	a.mu.Unlock()
	return id, nil
}

// FromConfig builds the jwt mode from PARSE_MCP_JWT_* (validated at start-up
// by config.Validate) and the configured tier.
func FromConfig(cfg *config.Config, users Users, log zerolog.Logger) (*Authenticator, error) {
	c := Config{
		JWKSURL:      cfg.JWTJWKSURL,
		Issuer:       cfg.JWTIssuer,
		Audience:     cfg.JWTAudience,
		UserClaim:    cfg.JWTUserClaim,
		AuthProvider: cfg.JWTAuthProvider,
		Tier:         cfg.Permissions,
		CacheTTL:     cfg.IdentityCache,
		Log:          log,
	}
	if cfg.JWTSecret.IsSet() {
		c.Secret = []byte(cfg.JWTSecret.Reveal())
	}
	return New(c, users)
}
