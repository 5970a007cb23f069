package oauth

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
)

// A PKCE S256 challenge is 43 base64url characters (a SHA-256).
var challengeRe = parsedb.NewNamePattern("", "A-Za-z0-9_-", "A-Za-z0-9_-", 43)

func validChallenge(c string) bool { return len(c) == 43 && challengeRe.MatchString(c) }

const (
	csrfCookiePrefix = "parse_mcp_csrf_"
	maxStateLength   = 1024
	maxFieldLength   = 1024
)

// authorize answers GET /authorize (the login page) and the pages' POSTs
// (login, then consent).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.authorizeStart(w, r)
	case http.MethodPost:
		s.authorizeStep(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		errorPage(w, http.StatusMethodNotAllowed, "Method not allowed.")
	}
}

// authorizeStart checks the authorization request. Until the client and
// its redirect URI are known to match, errors are shown here and never
// redirected (an unchecked redirect_uri would make this an open
// redirector); after that, they go back to the client, with iss.
func (s *Server) authorizeStart(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	clientID, redirect := q.Get("client_id"), q.Get("redirect_uri")
	// Counted before anything is fetched or stored: a metadata document
	// client_id makes this server fetch a URL.
	if !s.limits.allowAuthorization(r.Context(), s.addr(r)) {
		w.Header().Set("Retry-After", "60")
		errorPage(w, http.StatusTooManyRequests, "Too many sign-ins started from this address; wait a minute.")
		return
	}
	if clientID == "" {
		errorPage(w, http.StatusBadRequest, "The request names no client (client_id).")
		return
	}
	c, err := s.resolveClient(r.Context(), clientID)
	if err != nil || c == nil {
		s.log.Warn().Str("client_id", logClientID(clientID)).Str("reason", errString(err)).Msg("oauth: authorization for an unknown client refused")
		errorPage(w, http.StatusBadRequest, "This application is not registered here, or its registration could not be read.")
		return
	}
	if redirect == "" || !redirectMatches(c.RedirectURIs, redirect) {
		s.log.Warn().Str("client_id", logClientID(clientID)).Msg("oauth: authorization with an unregistered redirect_uri refused")
		errorPage(w, http.StatusBadRequest, "The redirect address is not one this application registered.")
		return
	}
	state := q.Get("state")
	back := func(code, desc string) {
		s.redirectBack(w, r, redirect, url.Values{"error": {code}, "error_description": {desc}, "state": {state}})
	}
	switch {
	case len(state) > maxStateLength:
		back("invalid_request", "state is too long")
	case q.Get("response_type") != "code":
		back("unsupported_response_type", "only the authorization code flow (response_type=code) is supported")
	case q.Get("code_challenge_method") != "S256":
		back("invalid_request", "PKCE with code_challenge_method=S256 is required")
	case !validChallenge(q.Get("code_challenge")):
		back("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)")
	case q.Has("resource") && s.canonicalResource(q["resource"]) == "":
		back("invalid_target", "tokens here are for "+s.resource+" only")
	default:
		tier, narrowed := grantTier(q.Get("scope"), s.tier)
		id, csrf := newSecret(""), newSecret("")
		g := grant{
			ID: recordID(kindRequest, id), Kind: kindRequest,
			ClientID: c.ID, ClientName: c.Name, ClientURI: c.URI,
			RedirectURI: redirect, State: state, Challenge: q.Get("code_challenge"),
			Resource: s.resource, Tier: tier, Narrowed: narrowed,
			CSRF: hashOf(csrf), ExpiresAt: s.now().Add(requestTTL),
		}
		if err := s.store.insert(r.Context(), g); err != nil {
			s.log.Error().Err(err).Msg("oauth: storing an authorization request")
			errorPage(w, http.StatusInternalServerError, "The sign-in could not be started; try again later.")
			return
		}
		s.setCSRFCookie(w, id, csrf)
		render(w, http.StatusOK, "login", s.pageFor(&g, id, csrf), "")
	}
}

// canonicalResource accepts the resource indicators that name this
// server's MCP endpoint (RFC 8707: one per request here), or "".
func (s *Server) canonicalResource(values []string) string {
	if len(values) != 1 {
		return ""
	}
	v := strings.TrimSuffix(values[0], "/")
	if v == s.resource || v == s.issuer {
		return s.resource
	}
	return ""
}

func (s *Server) pageFor(g *grant, id, csrf string) page {
	return page{
		ClientName: g.ClientName, ClientURI: g.ClientURI, RedirectURI: g.RedirectURI,
		Action: "/authorize", Request: id, CSRF: csrf,
		Scopes: scopesUpTo(g.Tier), Narrowed: g.Narrowed,
	}
}

func (s *Server) setCSRFCookie(w http.ResponseWriter, id, csrf string) {
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookiePrefix + id[:16], Value: csrf, Path: "/authorize",
		MaxAge: int(requestTTL.Seconds()), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode,
	})
}

// authorizeStep is a POST from the login or the consent page. The form
// must carry the request id and its CSRF token, and the browser the same
// token in the request's cookie (set when the login page was shown):
// another site can make a browser post a form, but cannot read the token.
func (s *Server) authorizeStep(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		errorPage(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	id, csrf := r.PostForm.Get("request"), r.PostForm.Get("csrf")
	if len(id) < 16 || len(id) > 64 {
		errorPage(w, http.StatusBadRequest, "The form is incomplete; start the sign-in again from the application.")
		return
	}
	g, err := s.store.find(r.Context(), kindRequest, id)
	if err != nil {
		s.log.Error().Err(err).Msg("oauth: reading an authorization request")
		errorPage(w, http.StatusInternalServerError, "The sign-in could not continue; try again later.")
		return
	}
	if g == nil {
		errorPage(w, http.StatusBadRequest, "This sign-in expired or was already used; start again from the application.")
		return
	}
	cookie, err := r.Cookie(csrfCookiePrefix + id[:16])
	if err != nil || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(csrf)) != 1 || subtle.ConstantTimeCompare([]byte(hashOf(csrf)), []byte(g.CSRF)) != 1 {
		s.log.Warn().Str("client_id", logClientID(g.ClientID)).Msg("oauth: authorization form without its CSRF token refused")
		errorPage(w, http.StatusForbidden, "This form did not come from this sign-in page; start again from the application.")
		return
	}
	switch r.PostForm.Get("step") {
	case "login":
		s.login(w, r, g, id, csrf)
	case "consent":
		s.consent(w, r, g, id, csrf)
	default:
		errorPage(w, http.StatusBadRequest, "Unknown step.")
	}
}

// login checks the password with Parse Server itself.
func (s *Server) login(w http.ResponseWriter, r *http.Request, g *grant, id, csrf string) {
	username, password := r.PostForm.Get("username"), r.PostForm.Get("password")
	p := s.pageFor(g, id, csrf)
	if username == "" || password == "" || len(username) > maxFieldLength || len(password) > maxFieldLength {
		p.Error = "Enter your username and password."
		render(w, http.StatusBadRequest, "login", p, "")
		return
	}
	p.Username = username
	addr := s.addr(r)
	if !s.limits.allowLogin(r.Context(), addr, username) {
		s.log.Warn().Str("client_addr", addr).Msg("oauth: login attempts rate-limited")
		w.Header().Set("Retry-After", "600")
		p.Error = "Too many sign-in attempts. Wait a few minutes and try again."
		render(w, http.StatusTooManyRequests, "login", p, "")
		return
	}
	session, err := s.parse.Login(r.Context(), username, password)
	if err != nil {
		if pe, ok := errors.AsType[*parseserver.Error](err); ok && pe.Status/100 == 4 {
			// Parse's own words: wrong password, locked account, unverified
			// email, a beforeLogin refusal. Escaped by the template.
			p.Error = pe.Message
			render(w, http.StatusUnauthorized, "login", p, "")
			return
		}
		s.log.Error().Err(err).Msg("oauth: Parse Server login failed")
		p.Error = "The Parse app could not be reached; try again later."
		render(w, http.StatusBadGateway, "login", p, "")
		return
	}
	if err := s.store.update(r.Context(), kindRequest, id, bson.D{{Key: "session", Value: seal(id, session)}}); err != nil {
		s.log.Error().Err(err).Msg("oauth: storing a login")
		s.logout(session)
		errorPage(w, http.StatusInternalServerError, "The sign-in could not continue; try again later.")
		return
	}
	// The login step posted again replaces the stored session: the one it
	// replaces is held by nobody now, so it is logged out rather than left live.
	if g.Session != "" {
		if previous, err := open(id, g.Session); err == nil {
			s.logout(previous)
		}
	}
	s.log.Info().Str("client_id", logClientID(g.ClientID)).Msg("oauth: Parse login for an authorization")
	render(w, http.StatusOK, "consent", p, cspSource(g.RedirectURI))
}

// consent ends the authorization request: approved, the client gets a
// code bound to itself, its redirect URI, its PKCE challenge and the
// resource; denied, the Parse session made for it is logged out.
func (s *Server) consent(w http.ResponseWriter, r *http.Request, g *grant, id, csrf string) {
	if g.Session == "" {
		p := s.pageFor(g, id, csrf)
		p.Error = "Sign in first."
		render(w, http.StatusBadRequest, "login", p, "")
		return
	}
	session, err := open(id, g.Session)
	if err != nil {
		errorPage(w, http.StatusBadRequest, "This sign-in cannot be read; start again from the application.")
		return
	}
	// One decision per request: whoever removes it decides.
	res, err := s.store.coll.DeleteOne(r.Context(), bson.D{{Key: "_id", Value: recordID(kindRequest, id)}})
	if err != nil || res.DeletedCount != 1 {
		errorPage(w, http.StatusBadRequest, "This sign-in was already used; start again from the application.")
		return
	}
	if r.PostForm.Get("decision") != "approve" {
		s.logout(session)
		s.redirectBack(w, r, g.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the user denied the request"}, "state": {g.State}})
		return
	}
	code := newSecret(codePrefix)
	c := grant{
		ID: recordID(kindCode, code), Kind: kindCode, Family: newSecret("")[:22],
		ClientID: g.ClientID, RedirectURI: g.RedirectURI, Challenge: g.Challenge,
		Resource: g.Resource, Tier: g.Tier, Session: seal(code, session),
		ExpiresAt: s.now().Add(codeTTL),
	}
	if err := s.store.insert(r.Context(), c); err != nil {
		s.log.Error().Err(err).Msg("oauth: storing an authorization code")
		s.logout(session)
		errorPage(w, http.StatusInternalServerError, "The sign-in could not finish; try again later.")
		return
	}
	s.log.Info().Str("client_id", logClientID(g.ClientID)).Str("tier", g.Tier).Msg("oauth: authorization approved")
	s.redirectBack(w, r, g.RedirectURI, url.Values{"code": {code}, "state": {g.State}})
}

// redirectBack sends the browser to the client's (already checked)
// redirect URI with the response parameters and iss (RFC 9207: the client
// can tell which server answered).
func (s *Server) redirectBack(w http.ResponseWriter, r *http.Request, redirect string, params url.Values) {
	u, err := url.Parse(redirect)
	if err != nil {
		errorPage(w, http.StatusBadRequest, "The redirect address is malformed.")
		return
	}
	q := u.Query()
	for k, v := range params {
		if len(v) == 1 && v[0] != "" {
			q.Set(k, v[0])
		}
	}
	q.Set("iss", s.issuer)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// logClientID is a client_id as logged: registered ids and metadata URLs
// are public, but a long one is cut.
func logClientID(id string) string {
	if len(id) > 200 {
		return id[:200] + "…"
	}
	return id
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
