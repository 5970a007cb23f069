package server

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

// HTTP under abuse (SECURITY.md "HTTP"): session caps that cannot lock other
// clients out, connection timeouts, and a per-session share of the tool
// workers.
//
//   - A client (clientOf: the remote IP, or behind a trusted proxy the
//     address it forwards) holds at most sessionsPerClient sessions;
//     its next initialize ends its own least recently used idle session
//     instead of failing. When the process holds maxSessions, the least
//     recently used idle session of any client is ended — so sessions
//     abandoned without DELETE never refuse a newcomer for the idle TTL.
//     Sessions with an open listening stream are ended last: when every
//     candidate holds one, the session whose stream is oldest ends (a cap
//     never locks a newcomer out).
//   - The whole request (headers and body) must arrive within
//     httpReadTimeout; a response must be written within httpWriteTimeout
//     (the listening stream, which lives as long as the session, clears both
//     deadlines); idle keep-alive connections close after httpIdleTimeout.
//   - Fairness: the dispatcher gives one session at most a share of the tool
//     workers (sessionShare), one client at most a larger one over all its
//     sessions and stateless requests (clientShare).

// The default caps (PARSE_MCP_HTTP_SESSIONS_PER_CLIENT,
// PARSE_MCP_HTTP_MAX_SESSIONS). The open stateless (2026-07-28)
// subscriptions/listen streams, the stateless revision's long-lived state,
// are capped by the same numbers.
const (
	maxSessionsPerClient = config.DefaultHTTPSessionsPerClient
	maxHTTPSessions      = config.DefaultHTTPMaxSessions
	maxListensPerClient  = maxSessionsPerClient
	maxListens           = maxHTTPSessions
)

const (
	httpReadTimeout  = 30 * time.Second
	httpWriteTimeout = 10 * time.Minute
	httpIdleTimeout  = 2 * time.Minute
)

// errTooManySessions: nothing can be evicted (unreachable while the caps
// are positive: a streaming session is evicted when no idle one is left).
var errTooManySessions = errors.New("too many sessions")

// applyServerTimeouts sets the connection timeouts of the HTTP server.
func applyServerTimeouts(srv *http.Server) {
	srv.ReadTimeout = httpReadTimeout
	srv.WriteTimeout = httpWriteTimeout
	srv.IdleTimeout = httpIdleTimeout
}

// bodyRead lifts the read deadline once a POST's body is in: a tool call
// may run longer than httpReadTimeout, and an expired read deadline would
// cancel its context.
func bodyRead(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// streamForever clears both deadlines of a long-lived listening stream
// (it sends keep-alives, so a dead peer is still noticed).
func streamForever(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// caps are the session caps in force (the defaults for a handler built
// without them).
func (h *HTTPHandler) caps() (maxSessions, perClient int) {
	return cmp.Or(h.maxSessions, maxHTTPSessions), cmp.Or(h.perClient, maxSessionsPerClient)
}

// clientOf is the client a request counts against (sessions, listen
// streams, the per-client share of the workers and of the rate limit): the
// named API key it presented (PARSE_MCP_API_KEYS), else its remote address, normalised by clientKey — or, when that peer is a proxy
// the operator declared trusted (PARSE_MCP_TRUSTED_PROXIES), the address it
// forwards: the rightmost X-Forwarded-For entry that is not itself a
// trusted proxy. Entries to the left of it were written by the client and
// are never read, so a client cannot choose who it is; a peer that is not
// trusted has its X-Forwarded-For ignored altogether. The Forwarded header
// (RFC 7239) is not read: a proxy that appends only X-Forwarded-For — most
// do — would pass a client's own Forwarded header through unchanged.
func (h *HTTPHandler) clientOf(r *http.Request) string {
	if name := credentialOf(r); name != "" {
		return "key:" + name // a named API key is its client, wherever it connects from
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !h.trustedProxy(peer) {
		return clientKey(host)
	}
	for i, hop := range slices.Backward(forwardedFor(r.Header)) {
		a, ok := hopAddr(hop)
		if !ok {
			// Not an address: nothing trustworthy names the client; count
			// the request against the proxy itself.
			return clientKey(host)
		}
		if !h.trustedProxy(a) {
			return clientKey(a.String())
		}
		if i == 0 {
			return clientKey(a.String()) // every hop is a proxy: the first one is the client
		}
	}
	return clientKey(host)
}

func (h *HTTPHandler) trustedProxy(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range h.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor is the list of X-Forwarded-For entries, over every header
// line in order (a proxy may add a line instead of extending the last).
func forwardedFor(hdr http.Header) []string {
	var hops []string
	for _, line := range hdr.Values("X-Forwarded-For") {
		for hop := range strings.SplitSeq(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops
}

// hopAddr reads one X-Forwarded-For entry: an address, possibly with a port
// (1.2.3.4:5, [::1]:5) or in brackets.
func hopAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

func clientKey(host string) string {
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.IsLoopback():
		return "loopback"
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// evictionsFor chooses the sessions to end so that client may open one
// more: its own least recently used idle session when it is at its cap,
// and the least recently used idle session overall when the process is at
// its cap. Called with h.mu held; ok is false when the caps are reached
// and nothing can be evicted.
func (h *HTTPHandler) evictionsFor(client string) (victims []*httpSession, ok bool) {
	var own []*httpSession
	for _, s := range h.sessions {
		if s.client == client {
			own = append(own, s)
		}
	}
	// pick is the least recently used idle session of list or, when every
	// one holds a listening stream, the one whose stream is oldest: a
	// newcomer is never refused, so sessions parked on open streams cannot
	// lock other clients out (the ended client can reconnect; a refused
	// newcomer could not).
	pick := func(list []*httpSession, skip map[*httpSession]bool) *httpSession {
		var lru, oldestStream *httpSession
		for _, s := range list {
			switch {
			case skip[s]:
			case s.streaming:
				if oldestStream == nil || s.streamSince.Before(oldestStream.streamSince) {
					oldestStream = s
				}
			case lru == nil || s.lastUsed.Before(lru.lastUsed):
				lru = s
			}
		}
		if lru == nil {
			return oldestStream
		}
		return lru
	}
	maxSessions, perClient := h.caps()
	chosen := map[*httpSession]bool{}
	if len(own) >= perClient {
		v := pick(own, chosen)
		if v == nil {
			return nil, false
		}
		chosen[v] = true
		victims = append(victims, v)
	}
	if len(h.sessions)-len(victims) >= maxSessions {
		all := make([]*httpSession, 0, len(h.sessions))
		for _, s := range h.sessions {
			all = append(all, s)
		}
		v := pick(all, chosen)
		if v == nil {
			return nil, false
		}
		victims = append(victims, v)
	}
	return victims, true
}

// listenStream is one open stateless listen stream.
type listenStream struct {
	client string
	seq    uint64 // admission order
	end    context.CancelFunc
}

// admitListen admits one stateless listen stream of client, whose request
// ends when end is called. Past the per-client cap the client's own oldest
// stream ends; past the process cap the oldest stream of any client ends — so
// streams held open cannot lock a newcomer out. release must be called when
// the stream ends.
func (h *HTTPHandler) admitListen(client string, end context.CancelFunc) (release func()) {
	h.mu.Lock()
	if h.listens == nil {
		h.listens = map[*listenStream]bool{}
	}
	oldest := func(ofClient bool) *listenStream {
		var o *listenStream
		for l := range h.listens {
			if (!ofClient || l.client == client) && (o == nil || l.seq < o.seq) {
				o = l
			}
		}
		return o
	}
	own := 0
	for l := range h.listens {
		if l.client == client {
			own++
		}
	}
	maxStreams, perClient := h.caps()
	var victims []*listenStream
	if own >= perClient {
		victims = append(victims, oldest(true))
	}
	for _, v := range victims {
		delete(h.listens, v)
	}
	if len(h.listens) >= maxStreams {
		v := oldest(false)
		delete(h.listens, v)
		victims = append(victims, v)
	}
	h.listenSeq++
	l := &listenStream{client: client, seq: h.listenSeq, end: end}
	h.listens[l] = true
	h.mu.Unlock()
	for _, v := range victims {
		h.log.Info().Str("client", v.client).Msg("listen stream cap: ending the oldest listening stream")
		v.end()
	}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.listens, l)
	}
}
