package server

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Session is one client connection: the stdio process itself, or one HTTP
// session. Notifications that belong to no request (resource updates, list
// changes, log messages outside a call) go to Unsolicited; notifications a
// request emits go to that request's own channel (see requestSession), which
// is how a request's notifications are written before its response and reach
// the HTTP stream of the request that caused them.
type Session struct {
	id string
	// client is the HTTP client the session belongs to (clientOf; "" on
	// stdio): the unit of the per-client share of the tool workers and of
	// the rate limit.
	client string
	// oneRequest marks the session of a single stateless (2026-07-28) HTTP
	// request: it has no rate-limit bucket of its own, only its client's.
	oneRequest bool
	// credential is the named API key that opened the session or sent the
	// stateless request ("" for none or the shared key): only it may use
	// the session, and a 2026-07-28 confirmation is bound to it.
	credential  string
	initialized atomic.Bool
	// protocol is the version initialize agreed on, for telemetry.
	protocol atomic.Pointer[string]
	// ended records the session's duration when it closes (telemetry).
	ended       func(protocol string)
	unsolicited chan mcp.JSONRPCNotification

	mu           sync.RWMutex
	logLevel     mcp.LoggingLevel
	clientInfo   mcp.Implementation
	capabilities mcp.ClientCapabilities
	subs         map[string]bool
	// subscriber backs resources/subscribe (set when the session is
	// registered on a server built with subscriptions, see subscriptions.go).
	subscriber subscriber
	// listenID is the id of the open subscriptions/listen request, if any:
	// in 2026-07-28 every notification on a listen stream carries it.
	listenID json.RawMessage
	// pending are the server-initiated requests awaiting the client's
	// response, by JSON id (see elicitation.go).
	pending       map[string]chan pendingReply
	nextRequestID atomic.Uint64
}

// NewSession makes a session with a buffered unsolicited-notification queue.
// Its log level is unset: notifications/message are sent only once the
// client has chosen a level with logging/setLevel (see logging.go).
func NewSession(id string) *Session {
	return &Session{id: id, unsolicited: make(chan mcp.JSONRPCNotification, 256), subs: map[string]bool{}}
}

func (s *Session) SessionID() string                                   { return s.id }
func (s *Session) Initialize()                                         { s.initialized.Store(true) }
func (s *Session) Initialized() bool                                   { return s.initialized.Load() }
func (s *Session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.unsolicited }

// Unsolicited is the queue the transport drains for notifications that belong
// to no request.
func (s *Session) Unsolicited() <-chan mcp.JSONRPCNotification { return s.unsolicited }

func (s *Session) SetLogLevel(level mcp.LoggingLevel) {
	s.mu.Lock()
	s.logLevel = level
	s.mu.Unlock()
}

func (s *Session) GetLogLevel() mcp.LoggingLevel {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.logLevel
}

func (s *Session) GetClientInfo() mcp.Implementation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.clientInfo
}

func (s *Session) SetClientInfo(ci mcp.Implementation) {
	s.mu.Lock()
	s.clientInfo = ci
	s.mu.Unlock()
}

func (s *Session) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.capabilities
}

func (s *Session) SetClientCapabilities(c mcp.ClientCapabilities) {
	s.mu.Lock()
	s.capabilities = c
	s.mu.Unlock()
}

func (s *Session) SubscribeToResource(uri string) {
	s.mu.Lock()
	s.subs[uri] = true
	s.mu.Unlock()
}

func (s *Session) UnsubscribeFromResource(uri string) {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
}

func (s *Session) SubscribedResources() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.subs))
	for u := range s.subs {
		out = append(out, u)
	}
	return out
}

func (s *Session) IsSubscribedToResource(uri string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.subs[uri]
}

// requestSession is the view of a Session that one request's handler sees:
// everything is the session's, except that notifications go to the request's
// own channel.
type requestSession struct {
	*Session
	ch chan mcp.JSONRPCNotification
	// requests carries server-initiated requests (elicitation/create),
	// written in order with the notifications.
	requests chan []byte
	// ctx is the request's context (cancellation, params-error recorder).
	ctx context.Context
}

func (r *requestSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return r.ch }

// SubscribeToResourceErr is how mcp-go's resources/subscribe reaches the
// subscription manager; a refused URI is answered -32602.
func (r *requestSession) SubscribeToResourceErr(uri string) error {
	if r.subscriber == nil {
		return toolerror.InvalidParams("resources/subscribe is not supported")
	}
	if err := r.subscriber.subscribe(r.ctx, r.Session, uri); err != nil {
		return toolerror.Record(r.ctx, err)
	}
	r.Session.SubscribeToResource(uri)
	return nil
}

// UnsubscribeFromResource ends a subscription; an unknown URI is a no-op.
func (r *requestSession) UnsubscribeFromResource(uri string) {
	if r.subscriber != nil {
		r.subscriber.unsubscribe(r.Session, uri)
	}
	r.Session.UnsubscribeFromResource(uri)
}

var (
	_ mcpserver.ClientSession                       = (*Session)(nil)
	_ mcpserver.SessionWithLogging                  = (*Session)(nil)
	_ mcpserver.SessionWithClientInfo               = (*Session)(nil)
	_ mcpserver.SessionWithResourceSubscriptions    = (*Session)(nil)
	_ mcpserver.SessionWithLogging                  = (*requestSession)(nil)
	_ mcpserver.SessionWithResourceSubscriptionsErr = (*requestSession)(nil)
)

func (s *Session) setListenID(id json.RawMessage) {
	s.mu.Lock()
	s.listenID = id
	s.mu.Unlock()
}

// tagListen marks an unsolicited notification with the open
// subscriptions/listen request's id (_meta io.modelcontextprotocol/subscriptionId),
// as 2026-07-28 requires of every message on a listen stream. Without an
// open listen stream the notification is returned unchanged.
func (s *Session) tagListen(n mcp.JSONRPCNotification) mcp.JSONRPCNotification {
	s.mu.RLock()
	id := s.listenID
	s.mu.RUnlock()
	if id == nil {
		return n
	}
	meta := make(map[string]any, len(n.Params.Meta)+1)
	maps.Copy(meta, n.Params.Meta)
	meta[mcp.MetaKeySubscriptionID] = id
	n.Params.Meta = meta
	return n
}
