package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
)

// A PKCE code_verifier: 43 to 128 unreserved characters.
var verifierRe = parsedb.NewNamePattern("", "A-Za-z0-9._~-", "A-Za-z0-9._~-", 128)

func validVerifier(v string) bool { return len(v) >= 43 && verifierRe.MatchString(v) }

// Mount serves the metadata documents and the authorization server's
// endpoints beside /mcp. /authorize, /token and /register are also the
// paths MCP clients of the first protocol revision assume when they find
// no metadata.
func (s *Server) Mount(mux *http.ServeMux) {
	prm := cors(http.HandlerFunc(s.protectedResourceMetadata))
	mux.Handle("/.well-known/oauth-protected-resource", prm)
	mux.Handle("/.well-known/oauth-protected-resource"+MCPPath, prm)
	mux.Handle("/.well-known/oauth-authorization-server", cors(http.HandlerFunc(s.authorizationServerMetadata)))
	mux.HandleFunc("/authorize", s.authorize)
	mux.Handle("/token", cors(post(s.token)))
	mux.Handle("/register", cors(post(s.register)))
	mux.Handle("/revoke", cors(post(s.revoke)))
}

// protectedResourceMetadata is RFC 9728's document for /mcp.
func (s *Server) protectedResourceMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "GET only")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 s.resource,
		"authorization_servers":    []string{s.issuer},
		"scopes_supported":         scopesUpTo(s.tier),
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "parse-mcp",
	})
}

// authorizationServerMetadata is RFC 8414's document. parse-mcp is no
// OpenID provider (it issues no ID tokens): /.well-known/openid-configuration
// is not served, and clients that probe it after this one get a 404.
func (s *Server) authorizationServerMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "GET only")
		return
	}
	auth := []string{"none", "client_secret_post", "client_secret_basic"}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.issuer,
		"authorization_endpoint":                         s.issuer + "/authorize",
		"token_endpoint":                                 s.issuer + "/token",
		"registration_endpoint":                          s.issuer + "/register",
		"revocation_endpoint":                            s.issuer + "/revoke",
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          auth,
		"revocation_endpoint_auth_methods_supported":     auth,
		"scopes_supported":                               scopesUpTo(s.tier),
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          true,
	})
}

// token is the token endpoint: an authorization code (with its PKCE
// verifier) or a refresh token for a new access token and refresh token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	c, ok := s.authenticateClient(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="parse-mcp"`)
		oauthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	if r.PostForm.Has("resource") && s.canonicalResource(r.PostForm["resource"]) == "" {
		oauthError(w, http.StatusBadRequest, "invalid_target", "tokens here are for "+s.resource+" only")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		s.exchangeCode(w, r, c)
	case "refresh_token":
		s.refresh(w, r, c)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// exchangeCode spends the code first (atomically), then checks it: a code
// is good once, for the client, redirect URI and PKCE verifier it was
// issued with. A second use is taken as a stolen code: every token the
// first use obtained is revoked.
func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, c *clientInfo) {
	code := r.PostForm.Get("code")
	g, ok := s.spendOnce(w, r, kindCode, codePrefix, code, usedRetention, "authorization code")
	if !ok {
		return
	}
	verifier := r.PostForm.Get("code_verifier")
	switch {
	case !s.now().Before(g.ExpiresAt):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code expired")
	case g.ClientID != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was issued to another client")
	case r.PostForm.Get("redirect_uri") != g.RedirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request")
	case !validVerifier(verifier) || subtle.ConstantTimeCompare([]byte(s256(verifier)), []byte(g.Challenge)) != 1:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the PKCE code_verifier does not match the code_challenge")
	default:
		session, err := open(code, g.Session)
		if err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code")
			return
		}
		s.issue(w, r, g, session)
		return
	}
	// A refused exchange burns the code: its session is not needed again.
	s.revokeGrant(g.Family, code, g.Session)
}

// spendOnce marks a code or refresh token used and returns its record
// (as it was before); a second presentation revokes everything its family
// obtained and logs the Parse session out. false: answered already.
func (s *Server) spendOnce(w http.ResponseWriter, r *http.Request, kind, prefix, secret string, keep time.Duration, what string) (*grant, bool) {
	if !strings.HasPrefix(secret, prefix) {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown "+what)
		return nil, false
	}
	g, first, err := s.store.spend(r.Context(), kind, secret, keep)
	switch {
	case err != nil:
		s.serverError(w, err)
		return nil, false
	case g == nil:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or revoked "+what)
		return nil, false
	case !first:
		s.log.Warn().Str("client_id", logClientID(g.ClientID)).Msg("oauth: a used " + what + " was presented again; its grant is revoked")
		s.revokeGrant(g.Family, secret, g.Session)
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the "+what+" was already used")
		return nil, false
	}
	return g, true
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// refresh rotates a refresh token: each is good once. Presenting one
// again (the client's copy and a thief's cannot both be the legitimate
// one) revokes the whole family and logs its Parse session out.
func (s *Server) refresh(w http.ResponseWriter, r *http.Request, c *clientInfo) {
	rt := r.PostForm.Get("refresh_token")
	g, ok := s.spendOnce(w, r, kindRefresh, refreshPrefix, rt, 0, "refresh token")
	if !ok {
		return
	}
	switch {
	case !s.now().Before(g.ExpiresAt):
		s.revokeGrant(g.Family, rt, g.Session)
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token expired")
		return
	case g.ClientID != c.ID:
		s.revokeGrant(g.Family, rt, g.Session)
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
		return
	case g.Resource != s.resource:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was issued for another resource")
		return
	}
	session, err := open(rt, g.Session)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
		return
	}
	// A grant whose Parse session ended (a logout, the session deleted in
	// the dashboard, its expiry) ends here too: the client signs in again
	// instead of getting tokens that every request would refuse.
	if _, err := s.parse.Do(r.Context(), parseserver.Request{Method: http.MethodGet, Path: "/users/me"}, parseserver.Identity{SessionToken: session}); err != nil {
		if pe, ok := errors.AsType[*parseserver.Error](err); ok && pe.Code == parseserver.CodeInvalidSessionToken {
			s.revokeGrant(g.Family, rt, g.Session)
			oauthError(w, http.StatusBadRequest, "invalid_grant", "the Parse session behind this grant has ended")
			return
		}
		s.serverError(w, err)
		return
	}
	if tier, _ := grantTier(r.PostForm.Get("scope"), g.Tier); r.PostForm.Get("scope") != "" {
		g.Tier = tier // a refresh may narrow the scope, never widen it
	}
	s.issue(w, r, g, session)
}

// issue stores a new access token and refresh token of g's family and
// answers with them.
func (s *Server) issue(w http.ResponseWriter, r *http.Request, g *grant, session config.Secret) {
	now := s.now()
	access, refresh := newSecret(accessPrefix), newSecret(refreshPrefix)
	for _, rec := range []grant{
		{ID: recordID(kindAccess, access), Kind: kindAccess, Family: g.Family, ClientID: g.ClientID, Resource: g.Resource, Tier: g.Tier, Session: seal(access, session), ExpiresAt: now.Add(accessTTL)},
		{ID: recordID(kindRefresh, refresh), Kind: kindRefresh, Family: g.Family, ClientID: g.ClientID, Resource: g.Resource, Tier: g.Tier, Session: seal(refresh, session), ExpiresAt: now.Add(refreshTTL)},
	} {
		if err := s.store.insert(r.Context(), rec); err != nil {
			s.serverError(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token":  access,
		"token_type":    "Bearer",
		"expires_in":    int(accessTTL / time.Second),
		"refresh_token": refresh,
		"scope":         strings.Join(scopesUpTo(g.Tier), " "),
	})
}

// revoke is RFC 7009: an access or refresh token ends its whole grant
// (every token of the family) and the Parse session behind it. Unknown
// tokens, and tokens of another client, answer 200 and change nothing.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	c, ok := s.authenticateClient(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	token := r.PostForm.Get("token")
	kind := kindAccess
	if strings.HasPrefix(token, refreshPrefix) {
		kind = kindRefresh
	}
	g, err := s.store.find(r.Context(), kind, token)
	if err != nil {
		s.serverError(w, err)
		return
	}
	if g != nil && g.ClientID == c.ID {
		s.revokeGrant(g.Family, token, g.Session)
		s.log.Info().Str("client_id", logClientID(c.ID)).Msg("oauth: grant revoked")
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// revokeGrant deletes a family and logs its Parse session out (the
// session opened with secret, which sealed it), whatever the request's
// own fate.
func (s *Server) revokeGrant(family, secret, sealed string) {
	ctx, cancel := background()
	defer cancel()
	if err := s.store.revokeFamily(ctx, family); err != nil {
		s.log.Error().Err(err).Msg("oauth: revoking a grant")
	}
	if session, err := open(secret, sealed); err == nil {
		s.logout(session)
	}
}

// logout ends a Parse session parse-mcp created, best effort (the grant's
// records are gone already).
func (s *Server) logout(session config.Secret) {
	ctx, cancel := background()
	defer cancel()
	if err := s.parse.Logout(ctx, session); err != nil {
		s.log.Warn().Err(err).Msg("oauth: logging a revoked grant's Parse session out")
	}
}

func (s *Server) serverError(w http.ResponseWriter, err error) {
	s.log.Error().Err(err).Msg("oauth: token endpoint")
	oauthError(w, http.StatusInternalServerError, "server_error", "try again later")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// cors lets browser-based MCP clients read the metadata and call the
// token, registration and revocation endpoints: none of them uses a
// cookie, so any origin may (the pages under /authorize are not opened to
// other origins).
func cors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func post(f http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST only")
			return
		}
		f(w, r)
	})
}
