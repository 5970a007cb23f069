package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/authn"
	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
)

// HTTP limits (SECURITY.md "HTTP").
const (
	MaxHTTPBodyBytes = 1 << 20
	MaxJSONDepth     = 20
	sessionIdleTTL   = 30 * time.Minute
)

// unauthorizedBody is the fixed 401 body.
const unauthorizedBody = `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}`

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	Addr   string
	APIKey string
	Log    zerolog.Logger
	// Ready, if set, receives the bound address once listening (tests, ":0").
	Ready func(addr string)
	// Listener, if set, is already bound to Addr (main binds it before
	// connecting to the database, so a port in use fails at once).
	Listener net.Listener
	// Health, if set, checks the database for GET /health (nil error:
	// reachable).
	Health func(context.Context) error
	// TrustedProxies are the proxies whose X-Forwarded-For names the client
	// (see clientOf); MaxSessions and SessionsPerClient are the session caps
	// (0: the defaults).
	TrustedProxies    []netip.Prefix
	MaxSessions       int
	SessionsPerClient int
	// NamedKeys are further API keys, each naming its client
	// (PARSE_MCP_API_KEYS).
	NamedKeys []config.NamedAPIKey
	// Auth, when set (PARSE_MCP_HTTP_AUTH, docs/team.md "Serve a team"),
	// authenticates every /mcp request in place of APIKey and NamedKeys.
	Auth *HTTPAuth
}

// HTTPAuth is per-request authentication: Identify returns the request's
// context bound to the identity it acts as, or an error — one wrapping
// authn.ErrUnauthorized is answered with the fixed 401 (and Challenge's
// WWW-Authenticate header, when it gives one), any other with 503.
// Routes, when set, serves paths beside /mcp and /health (an OAuth
// server's metadata and endpoints) without /mcp's authentication.
//
// A long-lived stream (GET /mcp, subscriptions/listen) is authenticated
// again every Recheck (0: every 30 s) and ends once its credential no
// longer holds, so a revoked credential does not keep one open.
type HTTPAuth struct {
	Identify  func(r *http.Request) (context.Context, error)
	Challenge func(r *http.Request) string
	Routes    http.Handler
	Recheck   time.Duration
}

// recheckCredential ends a stream (end) once the credential of r stops
// holding, or once the identity it resolves to has gained or lost a role or
// changed tenant (then changed, when set, is called too); it stops with ctx.
func (h *HTTPHandler) recheckCredential(ctx context.Context, r *http.Request, end context.CancelFunc, changed func()) {
	if h.auth == nil {
		return
	}
	every := h.auth.Recheck
	if every <= 0 {
		every = 30 * time.Second
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				now, err := h.auth.Identify(r)
				if errors.Is(err, authn.ErrUnauthorized) {
					h.log.Info().Msg("HTTP stream ended: its credential no longer holds")
					end()
					return
				}
				if err == nil && callinfo.From(now).Identity != callinfo.From(r.Context()).Identity {
					// A role or the tenant changed: what the stream watches was
					// resolved for the identity as it was.
					h.log.Info().Msg("HTTP stream ended: its identity's roles or tenant changed")
					end()
					if changed != nil {
						changed()
					}
					return
				}
			}
		}
	}()
}

// credentialOf is the named API key the request presented ("" for none or
// the shared key), recorded by ServeHTTP once the key is checked.
func credentialOf(r *http.Request) string {
	return callinfo.From(r.Context()).Credential
}

// healthTimeout bounds the database check of GET /health.
const healthTimeout = 2 * time.Second

// HTTPHandler is parse-mcp's streamable HTTP transport: POST /mcp for
// messages (answered as JSON, or as an SSE stream carrying the request's own
// notifications before its response), GET /mcp for a session's unsolicited
// notifications, DELETE /mcp to end a session, GET /health.
//
// It is written over the Dispatcher instead of mcp-go's StreamableHTTPServer
// because the latter misroutes progress notifications between concurrent
// requests in stateful mode and has no body limit, Origin check or auth.
type HTTPHandler struct {
	d   *Dispatcher
	log zerolog.Logger
	// keys checks the API keys (authn.Keys): PARSE_MCP_API_KEY, shared
	// and nameless, and the named PARSE_MCP_API_KEYS, each one client; nil
	// when none is configured.
	keys     authn.Authenticator
	auth     *HTTPAuth
	loopback bool
	health   func(context.Context) error
	// trusted are the declared proxies; maxSessions and perClient the
	// session caps (0: the defaults), see http_limits.go.
	trusted     []netip.Prefix
	maxSessions int
	perClient   int

	mu       sync.Mutex
	sessions map[string]*httpSession
	// listens are the open stateless listen streams (http_limits.go).
	listens   map[*listenStream]bool
	listenSeq uint64
}

type httpSession struct {
	*Session
	client    string // remote IP, for the per-client session cap
	lastUsed  time.Time
	streaming bool
	// streamSince is when the open listening stream began.
	streamSince time.Time
	ctx         context.Context
	cancel      context.CancelFunc
}

// NewHTTPHandler builds the handler. loopback says whether the server is
// bound to a loopback address (stricter Host checks apply).
func NewHTTPHandler(d *Dispatcher, apiKey string, loopback bool, log zerolog.Logger) *HTTPHandler {
	h := &HTTPHandler{d: d, log: log, loopback: loopback, sessions: map[string]*httpSession{}}
	if apiKey != "" {
		h.keys = authn.Keys(apiKey, nil)
	}
	return h
}

// MountHTTP is the transport as an http.Handler, for ServeHTTP and for a
// server that mounts it (package mcphandler); o's Addr, Listener and Ready
// are not used. Its idle sessions expire until ctx ends; CloseSessions ends
// the rest.
func MountHTTP(ctx context.Context, d *Dispatcher, o HTTPOptions, loopback bool) *HTTPHandler {
	h := NewHTTPHandler(d, o.APIKey, loopback, o.Log)
	h.health, h.auth = o.Health, o.Auth
	h.trusted, h.maxSessions, h.perClient = o.TrustedProxies, o.MaxSessions, o.SessionsPerClient
	if len(o.NamedKeys) > 0 {
		h.keys = authn.Keys(o.APIKey, o.NamedKeys)
	}
	telemetry.ObserveListenStreams(h.openStreams)
	go h.expireIdle(ctx)
	return h
}

// openStreams counts the listening streams open now (telemetry).
func (h *HTTPHandler) openStreams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.listens)
	for _, s := range h.sessions {
		if s.streaming {
			n++
		}
	}
	return n
}

// CloseSessions ends every HTTP session (their in-flight calls are
// cancelled).
func (h *HTTPHandler) CloseSessions() { h.closeAll() }

// ServeHTTP serves until ctx is cancelled.
func ServeHTTP(ctx context.Context, d *Dispatcher, o HTTPOptions) error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return err
	}
	loopback := config.IsLoopbackHost(host)
	if !loopback && o.APIKey == "" && len(o.NamedKeys) == 0 && o.Auth == nil {
		return errors.New("refusing to bind a non-loopback address without PARSE_MCP_API_KEY")
	}
	ln := o.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", o.Addr); err != nil {
			return err
		}
	}
	h := MountHTTP(ctx, d, o, loopback)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	applyServerTimeouts(srv)
	o.Log.Info().Str("addr", ln.Addr().String()).Msg("serving streamable HTTP on /mcp")
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	h.closeAll()
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if h.health != nil {
			ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
			err := h.health(ctx)
			cancel()
			if err != nil {
				// No detail beyond "unreachable": /health needs no API key.
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `{"status":"unavailable","database":"unreachable"}`)
				return
			}
			_, _ = io.WriteString(w, `{"status":"ok","database":"ok"}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"ok"}`)
		return
	case "/mcp":
	default:
		if h.auth != nil && h.auth.Routes != nil {
			// The routes' own limits (login attempts) count per client too.
			h.auth.Routes.ServeHTTP(w, r.WithContext(callinfo.With(r.Context(), callinfo.Info{Client: h.clientOf(r)})))
			return
		}
		http.NotFound(w, r)
		return
	}
	if !config.RequestNotRebound(r, h.loopback) {
		http.Error(w, "forbidden: Host or Origin not allowed", http.StatusForbidden)
		return
	}
	// Browser clients on a loopback origin (MCP Inspector in direct mode)
	// need CORS; only origins config.RequestNotRebound accepted get here.
	if o := r.Header.Get("Origin"); o != "" {
		w.Header().Set("Access-Control-Allow-Origin", o)
		w.Header().Set("Vary", "Origin")
		w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, X-MCP-API-Key, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if h.auth != nil {
		// The client key goes along for the count of refused credentials
		// per address (SECURITY.md "Per-request identity"), then back to
		// what it was: the rest of the request keys by identity.
		before := callinfo.From(r.Context())
		seen := before
		seen.Client = h.clientOf(r)
		ctx, err := h.auth.Identify(r.WithContext(callinfo.With(r.Context(), seen)))
		if err != nil {
			h.refuse(w, r, err)
			return
		}
		info := callinfo.From(ctx)
		info.Client = before.Client
		r = r.WithContext(callinfo.With(ctx, info))
	} else if name, ok := h.credential(r); !ok {
		h.refuse(w, r, authn.ErrUnauthorized)
		return
	} else if name != "" {
		r = r.WithContext(callinfo.With(r.Context(), callinfo.Info{Credential: name}))
	}
	if r.Method != http.MethodPost && mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		// 2026-07-28 has no sessions: no GET stream (subscriptions/listen
		// replaces it) and nothing to DELETE.
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, r.Method+" is not part of protocol "+mcp.ProtocolVersion20260728+": use POST (subscriptions/listen for notifications)", http.StatusMethodNotAllowed)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.listen(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// refuse answers a request whose credential did not hold with the fixed
// 401 body (and the mode's challenge), or, when the identity could not be
// resolved for another reason (the database or Parse Server failing), with
// 503. The reason goes to the operator log only; it never quotes a
// credential (internal/authn).
func (h *HTTPHandler) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if limited, ok := errors.AsType[*authn.TooManyRefusals](err); ok {
		if limited.Log {
			h.log.Warn().Str("client", h.clientOf(r)).Msg("HTTP requests with a credential refused for a while: too many refused credentials from this client")
		}
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(limited.RetryAfter.Seconds())))))
		writeJSONRPCError(w, http.StatusTooManyRequests, codeInternalError, "Too many refused credentials from this client; retry later")
		return
	}
	if !errors.Is(err, authn.ErrUnauthorized) {
		h.log.Error().Str("error", err.Error()).Msg("HTTP request: the identity could not be resolved")
		writeJSONRPCError(w, http.StatusServiceUnavailable, codeInternalError, "Identity temporarily unavailable")
		return
	}
	if err != authn.ErrUnauthorized {
		h.log.Info().Str("reason", err.Error()).Msg("HTTP request refused: unauthorized")
	}
	if h.auth != nil && h.auth.Challenge != nil {
		if c := h.auth.Challenge(r); c != "" {
			w.Header().Set("WWW-Authenticate", c)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, unauthorizedBody)
}

// credential checks X-MCP-API-Key or Authorization: Bearer against every
// accepted key (authn.Keys: constant time, which key matched does not leak);
// it returns the matching key's name ("" for the shared key, or when no key
// is configured). Without PARSE_MCP_HTTP_AUTH a credential that is no key is
// refused, whatever its header.
func (h *HTTPHandler) credential(r *http.Request) (string, bool) {
	if h.keys == nil {
		return "", true
	}
	p, err := h.keys.Authenticate(r)
	return p.ClientID, err == nil
}

func writeJSONRPCError(w http.ResponseWriter, status int, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(ErrorResponse(nil, code, msg))
}

func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeJSONRPCError(w, http.StatusUnsupportedMediaType, codeInvalidRequest, "Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHTTPBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeJSONRPCError(w, http.StatusRequestEntityTooLarge, codeInvalidRequest, "Request body exceeds 1 MiB")
			return
		}
		writeJSONRPCError(w, http.StatusBadRequest, codeInvalidRequest, "Cannot read request body")
		return
	}
	bodyRead(w)
	if depth, ok := jsonDepth(body); !ok {
		writeJSONRPCError(w, http.StatusBadRequest, codeParseError, "Parse error")
		return
	} else if depth > MaxJSONDepth {
		writeJSONRPCError(w, http.StatusBadRequest, codeInvalidRequest, fmt.Sprintf("JSON nesting exceeds %d levels", MaxJSONDepth))
		return
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		// Not an object (batch, scalar): the dispatcher gives the exact error.
		writeJSON(w, http.StatusBadRequest, h.d.Handle(r.Context(), NewSession("anonymous"), body, func([]byte) {}))
		return
	}

	if era := detectEra(r.Header, env.Params); era.modern {
		h.postStateless(w, r, body, env, era)
		return
	}

	var sess *httpSession
	if env.Method == "initialize" {
		sess, err = h.newSession(h.clientOf(r), credentialOf(r))
		if err != nil {
			writeJSONRPCError(w, http.StatusServiceUnavailable, codeInternalError, "Too many sessions")
			return
		}
		w.Header().Set("Mcp-Session-Id", sess.SessionID())
	} else {
		var status int
		sess, status = h.session(r)
		if sess == nil {
			msg := "Bad Request: Mcp-Session-Id header is required"
			if status == http.StatusNotFound {
				msg = "Session not found"
			}
			writeJSONRPCError(w, status, codeInvalidRequest, msg)
			return
		}
	}

	isRequest := env.Method != "" && len(env.ID) > 0 && string(env.ID) != "null"
	if !isRequest {
		h.d.Handle(sess.ctx, sess.Session, body, func([]byte) {})
		w.WriteHeader(http.StatusAccepted)
		return
	}

	// The request's context ends with the client's connection or the session.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(sess.ctx, cancel)
	defer stop()
	h.serveRequest(ctx, w, r, sess.Session, body, nil)
}

// serveRequest answers one JSON-RPC request: as plain JSON, or, once the
// request emits a notification and the client accepts SSE, as an event
// stream carrying the notifications and then the response. extra, when set,
// is a further source of notifications for the stream (a subscriptions/listen
// stream's resource updates); it is drained until the request returns.
func (h *HTTPHandler) serveRequest(ctx context.Context, w http.ResponseWriter, r *http.Request, sess *Session, body []byte, extra func(ctx context.Context, emit func([]byte))) {
	sse := acceptsSSE(r)
	if !sse {
		ctx = withoutServerRequests(ctx)
	}
	var mu sync.Mutex
	streaming := false
	flusher, _ := w.(http.Flusher)
	emit := func(msg []byte) {
		if !sse || flusher == nil {
			return // a JSON-only client cannot receive notifications
		}
		mu.Lock()
		defer mu.Unlock()
		if !streaming {
			streaming = true
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
		}
		writeSSE(w, msg)
		flusher.Flush()
	}
	var extraDone chan struct{}
	if extra != nil {
		ectx, ecancel := context.WithCancel(ctx)
		extraDone = make(chan struct{})
		go func() { defer close(extraDone); extra(ectx, emit) }()
		defer func() { ecancel(); <-extraDone }()
	}
	resp := h.d.Handle(ctx, sess, body, emit)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case streaming && resp != nil:
		writeSSE(w, resp)
		flusher.Flush()
	case streaming:
	case resp == nil:
		w.WriteHeader(http.StatusAccepted)
	default:
		writeJSON(w, responseStatus(r, resp), resp)
	}
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeSSE(w io.Writer, msg []byte) {
	_, _ = io.WriteString(w, "event: message\ndata: ")
	_, _ = w.Write(msg)
	_, _ = io.WriteString(w, "\n\n")
}

func acceptsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// listen streams a session's unsolicited notifications (resource updates,
// list changes) until the client goes away or the session ends.
func (h *HTTPHandler) listen(w http.ResponseWriter, r *http.Request) {
	if !acceptsSSE(r) {
		http.Error(w, "GET /mcp needs Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	sess, status := h.session(r)
	if sess == nil {
		http.Error(w, "unknown or missing Mcp-Session-Id", status)
		return
	}
	h.mu.Lock()
	if sess.streaming {
		h.mu.Unlock()
		http.Error(w, "a listening stream is already open for this session", http.StatusConflict)
		return
	}
	sess.streaming, sess.streamSince = true, time.Now()
	h.mu.Unlock()
	streamForever(w)
	ctx, end := context.WithCancel(r.Context())
	defer end()
	// The session's subscriptions were made for the identity as it was:
	// a role change ends the session with them (the client initializes
	// again), as a stream alone would come back to the same watchers.
	h.recheckCredential(ctx, r, end, func() { h.endSession(sess) })
	defer func() {
		h.mu.Lock()
		sess.streaming = false
		h.mu.Unlock()
	}()
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	keepAlive := time.NewTicker(25 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case n := <-sess.Unsolicited():
			if b, err := EncodeNotification(n); err == nil {
				writeSSE(w, b)
				flusher.Flush()
			}
		case <-keepAlive.C:
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			flusher.Flush()
		case <-ctx.Done():
			return
		case <-sess.ctx.Done():
			return
		}
	}
}

// delete ends a session: its in-flight calls are cancelled.
func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	sess, status := h.session(r)
	if sess == nil {
		http.Error(w, "unknown or missing Mcp-Session-Id", status)
		return
	}
	h.endSession(sess)
	w.WriteHeader(http.StatusNoContent)
}

func (h *HTTPHandler) newSession(client, credential string) (*httpSession, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &httpSession{Session: NewSession(hex.EncodeToString(b[:])), client: client, lastUsed: time.Now(), ctx: ctx, cancel: cancel}
	s.Session.client, s.Session.credential = client, credential
	s.ended = telemetry.SessionStarted("tcp")
	h.mu.Lock()
	victims, ok := h.evictionsFor(client)
	if ok {
		h.sessions[s.SessionID()] = s
	}
	h.mu.Unlock()
	for _, v := range victims {
		h.log.Info().Str("client", client).Msg("HTTP session cap: ending the least recently used idle session")
		h.endSession(v)
	}
	if !ok {
		cancel()
		s.ended("")
		return nil, errTooManySessions
	}
	if err := h.d.mcp.RegisterSession(ctx, s.Session); err != nil {
		h.endSession(s)
		return nil, err
	}
	return s, nil
}

func (h *HTTPHandler) session(r *http.Request) (*httpSession, int) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return nil, http.StatusBadRequest
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil || s.credential != credentialOf(r) {
		// A session belongs to the named key that opened it: another
		// caller holding its id is answered as for an unknown session.
		return nil, http.StatusNotFound
	}
	s.lastUsed = time.Now()
	return s, http.StatusOK
}

func (h *HTTPHandler) endSession(s *httpSession) {
	h.mu.Lock()
	_, present := h.sessions[s.SessionID()]
	delete(h.sessions, s.SessionID())
	h.mu.Unlock()
	if !present {
		return
	}
	s.ended(s.protocolVersion())
	h.d.CancelSession(s.Session)
	s.cancel()
	h.d.mcp.UnregisterSession(context.Background(), s.SessionID())
}

func (h *HTTPHandler) closeAll() {
	h.mu.Lock()
	all := make([]*httpSession, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		h.endSession(s)
	}
}

func (h *HTTPHandler) expireIdle(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			var idle []*httpSession
			h.mu.Lock()
			for _, s := range h.sessions {
				if !s.streaming && time.Since(s.lastUsed) > sessionIdleTTL {
					idle = append(idle, s)
				}
			}
			h.mu.Unlock()
			for _, s := range idle {
				h.endSession(s)
			}
		}
	}
}

// jsonDepth returns the maximum nesting depth of a JSON text and whether it
// is syntactically plausible (balanced brackets outside strings). Full
// validity is checked later by the decoder.
func jsonDepth(b []byte) (int, bool) {
	depth, maxDepth := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				maxDepth = depth
			}
		case '}', ']':
			depth--
			if depth < 0 {
				return maxDepth, false
			}
		}
	}
	return maxDepth, depth == 0 && !inString
}
