package oauth

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// clientInfo is what /authorize and /token know about a client, however it
// registered. Name and URI are the client's own words: attacker-controlled,
// shown escaped, never trusted.
type clientInfo struct {
	ID           string
	Name         string
	URI          string
	RedirectURIs []string
	AuthMethod   string // none, client_secret_post, client_secret_basic
	SecretHash   string
}

const (
	maxRedirectURIs  = 10
	maxURILength     = 2000
	maxNameLength    = 200
	maxMetadataBytes = 64 << 10
	metadataTimeout  = 5 * time.Second
	maxRegisterBody  = 64 << 10
)

var schemeRe = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)

// checkRedirectURI accepts a redirect URI a client may register: https;
// http on a loopback host (RFC 8252: native apps listening on 127.0.0.1,
// [::1] or localhost); or a private-use scheme of a native app. Never a
// fragment, user info, or a scheme a browser runs or reads locally.
func checkRedirectURI(raw string) error {
	if raw == "" || len(raw) > maxURILength {
		return errors.New("a redirect URI is empty or too long")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return errors.New("a redirect URI is not an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") || u.User != nil {
		return errors.New("a redirect URI has a fragment or user info")
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return errors.New("an https redirect URI has no host")
		}
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return errors.New("a plain http redirect URI must be on a loopback host (127.0.0.1, [::1] or localhost)")
		}
	case "javascript", "data", "file", "vbscript", "blob", "about", "ftp", "ws", "wss", "filesystem", "view-source":
		return errors.New("a redirect URI's scheme is not allowed")
	default:
		if !schemeRe.MatchString(u.Scheme) {
			return errors.New("a redirect URI's scheme is not allowed")
		}
	}
	return nil
}

// redirectMatches is exact string matching, with RFC 8252's one exception:
// a registered http loopback redirect matches any port on the same
// loopback host (native apps pick a free port at run time).
func redirectMatches(registered []string, given string) bool {
	if slices.Contains(registered, given) {
		return true
	}
	g, err := url.Parse(given)
	if err != nil || g.Scheme != "http" || !isLoopbackHost(g.Hostname()) || g.User != nil || g.Fragment != "" {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "http" || !isLoopbackHost(u.Hostname()) {
			continue
		}
		if u.Hostname() == g.Hostname() && u.EscapedPath() == g.EscapedPath() && u.RawQuery == g.RawQuery && g.ForceQuery == u.ForceQuery {
			return true
		}
	}
	return false
}

// cleanClientURI keeps a client_uri only when it is https (it is shown as
// a link on the consent page).
func cleanClientURI(raw string) string {
	if raw == "" || len(raw) > maxURILength {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return ""
	}
	return u.String()
}

func cleanName(s string) string {
	s = strings.TrimSpace(s)
	if len([]rune(s)) > maxNameLength {
		s = string([]rune(s)[:maxNameLength]) + "…"
	}
	return s
}

// resolveClient finds a client: a Client ID Metadata Document when the
// client_id is an https URL, else a dynamically registered client. nil
// when unknown; the error (for the operator log) says why.
func (s *Server) resolveClient(ctx context.Context, clientID string) (*clientInfo, error) {
	if strings.HasPrefix(clientID, "https://") {
		return s.fetchClientMetadata(ctx, clientID)
	}
	if !strings.HasPrefix(clientID, clientPrefix) {
		return nil, errors.New("unknown client_id")
	}
	c, err := s.store.client(ctx, clientID)
	if err != nil || c == nil {
		return nil, cmpErr(err, errors.New("unknown client_id"))
	}
	return &clientInfo{ID: c.ClientID, Name: c.Name, URI: c.URI, RedirectURIs: c.RedirectURIs, AuthMethod: c.AuthMethod, SecretHash: c.SecretHash}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// authenticateClient checks a confidential client's secret at /token and
// /revoke (client_secret_post or client_secret_basic); a public client
// ("none") presents its client_id only, and PKCE binds its codes.
func (s *Server) authenticateClient(r *http.Request) (*clientInfo, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil || (r.PostForm.Get("client_id") != "" && r.PostForm.Get("client_id") != id) {
			return nil, false
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id == "" {
		return nil, false
	}
	if strings.HasPrefix(id, "https://") {
		// A metadata-document client is public: nothing to fetch here, the
		// code or token it presents was issued to exactly this client_id.
		return &clientInfo{ID: id, AuthMethod: "none"}, secret == ""
	}
	c, err := s.resolveClient(r.Context(), id)
	if err != nil || c == nil {
		return nil, false
	}
	if c.AuthMethod == "none" {
		return c, secret == "" && !basic
	}
	if secret == "" || subtle.ConstantTimeCompare([]byte(hashOf(secret)), []byte(c.SecretHash)) != 1 {
		return nil, false
	}
	if (c.AuthMethod == "client_secret_basic") != basic {
		return nil, false
	}
	return c, true
}

// registration is the part of an RFC 7591 request parse-mcp reads.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// register is dynamic client registration (RFC 7591): open, as MCP
// clients expect, rate-limited per address; a client gets nothing but the
// right to ask a person for consent.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if !s.limits.allowRegistration(r.Context(), s.addr(r)) {
		w.Header().Set("Retry-After", "60")
		oauthError(w, http.StatusTooManyRequests, "slow_down", "too many registrations from this address")
		return
	}
	var req registration
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRegisterBody)).Decode(&req); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not a JSON client metadata document")
		return
	}
	if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > maxRedirectURIs {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris must list 1 to 10 URIs")
		return
	}
	for _, u := range req.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
			return
		}
	}
	method := req.TokenEndpointAuthMethod
	switch method {
	case "":
		method = "client_secret_basic" // RFC 7591's default
	case "none", "client_secret_post", "client_secret_basic":
	default:
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "token_endpoint_auth_method must be none, client_secret_post or client_secret_basic")
		return
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "grant_types may hold authorization_code and refresh_token only")
			return
		}
	}
	for _, rt := range req.ResponseTypes {
		if rt != "code" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "response_types may hold code only")
			return
		}
	}
	c := client{
		Kind:         kindClient,
		ClientID:     newSecret(clientPrefix)[:len(clientPrefix)+22],
		Name:         cleanName(req.ClientName),
		URI:          cleanClientURI(req.ClientURI),
		RedirectURIs: req.RedirectURIs,
		AuthMethod:   method,
		CreatedAt:    s.now(),
	}
	c.ID = kindClient + ":" + c.ClientID
	var secret string
	if method != "none" {
		secret = newSecret(secretPrefix)
		c.SecretHash = hashOf(secret)
	}
	if err := s.store.insert(r.Context(), c); err != nil {
		s.log.Error().Err(err).Msg("oauth: registering a client")
		oauthError(w, http.StatusInternalServerError, "server_error", "the registration could not be stored")
		return
	}
	out := map[string]any{
		"client_id":                  c.ClientID,
		"client_id_issued_at":        c.CreatedAt.Unix(),
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": method,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	}
	if c.Name != "" {
		out["client_name"] = c.Name
	}
	if c.URI != "" {
		out["client_uri"] = c.URI
	}
	if secret != "" {
		out["client_secret"] = secret
		out["client_secret_expires_at"] = 0
	}
	s.log.Info().Str("client_id", c.ClientID).Str("auth_method", method).Msg("oauth: client registered")
	writeJSON(w, http.StatusCreated, out)
}

// --- Client ID Metadata Documents ---

// checkMetadataURL: a client_id that is a metadata document's URL must be
// https, with a path, no user info, fragment or dot segments.
func checkMetadataURL(raw string) (*url.URL, error) {
	if len(raw) > maxURILength {
		return nil, errors.New("client_id URL too long")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, errors.New("a client_id URL must be https with a host and no user info or fragment")
	}
	if u.Path == "" || u.Path == "/" {
		return nil, errors.New("a client_id URL must have a path")
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, errors.New("a client_id URL must not have dot segments")
		}
	}
	return u, nil
}

// fetchClientMetadata fetches and checks a Client ID Metadata Document:
// GET, no redirects, at most 64 KiB within 5 s, through the guarded
// dialer; the document must name itself as client_id, list its redirect
// URIs, and be a public client.
func (s *Server) fetchClientMetadata(ctx context.Context, clientID string) (*clientInfo, error) {
	if _, err := checkMetadataURL(clientID); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, errors.New("client_id URL cannot be requested")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.fetch.Do(req)
	if err != nil {
		return nil, errors.New("fetching the client metadata document failed: " + errText(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New("the client metadata document answered " + resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil || len(raw) > maxMetadataBytes {
		return nil, errors.New("the client metadata document is unreadable or larger than 64 KiB")
	}
	var doc struct {
		ClientID                string   `json:"client_id"`
		ClientName              string   `json:"client_name"`
		ClientURI               string   `json:"client_uri"`
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, errors.New("the client metadata document is not JSON")
	}
	if doc.ClientID != clientID {
		return nil, errors.New("the client metadata document names another client_id")
	}
	if doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != "none" {
		return nil, errors.New("the client metadata document asks for a token endpoint auth method other than none")
	}
	if len(doc.RedirectURIs) == 0 || len(doc.RedirectURIs) > maxRedirectURIs {
		return nil, errors.New("the client metadata document must list 1 to 10 redirect_uris")
	}
	for _, u := range doc.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, errors.New("the client metadata document: " + err.Error())
		}
	}
	return &clientInfo{ID: clientID, Name: cleanName(doc.ClientName), URI: cleanClientURI(doc.ClientURI), RedirectURIs: doc.RedirectURIs, AuthMethod: "none"}, nil
}

func errText(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

// refusedPrefixes are address ranges a metadata fetch never connects to,
// beyond what netip classifies as loopback, private, link-local,
// multicast or unspecified: carrier-grade NAT, IETF protocol assignments,
// benchmarking, documentation, the 6to4 and NAT64 prefixes (which embed an
// IPv4 address), and reserved space.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("100::/64"),
}

// publicAddress reports whether a metadata fetch may connect to a.
func publicAddress(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range refusedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// guardedClient fetches metadata documents only from public addresses on
// port 443: the check runs on the address actually dialled (after DNS), so
// a name that resolves, or re-resolves, to an inside address is refused.
func guardedClient() *http.Client {
	dialer := &net.Dialer{
		Timeout: metadataTimeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || ap.Port() != 443 || !publicAddress(ap.Addr()) {
				return errors.New("refused: not a public address on port 443")
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: metadataTimeout,
		Transport: &http.Transport{
			DialContext:            dialer.DialContext,
			TLSHandshakeTimeout:    metadataTimeout,
			ResponseHeaderTimeout:  metadataTimeout,
			MaxResponseHeaderBytes: 16 << 10,
			DisableKeepAlives:      true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
