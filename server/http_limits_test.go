package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
)

func limitsHandler(sessions ...*httpSession) *HTTPHandler {
	h := &HTTPHandler{sessions: map[string]*httpSession{}}
	for _, s := range sessions {
		h.sessions[s.SessionID()] = s
	}
	return h
}

func fakeHTTPSession(id, client string, age time.Duration, streaming bool) *httpSession {
	return &httpSession{Session: NewSession(id), client: client, lastUsed: time.Now().Add(-age), streaming: streaming, streamSince: time.Now().Add(-age)}
}

// TestSessionCapsEvictInsteadOfLockingOut (leak class 8): a client at its
// cap loses its own least recently used idle session, never another
// client's; a full process loses its least recently used idle session;
// when nothing idle is left the session with the oldest listening stream
// ends — a newcomer is never refused (streams held open by one local
// process would otherwise lock out every other client for as long as it
// lives).
func TestSessionCapsEvictInsteadOfLockingOut(t *testing.T) {
	var mine []*httpSession
	for i := range maxSessionsPerClient {
		mine = append(mine, fakeHTTPSession(fmt.Sprint("a", i), "10.0.0.1", time.Duration(i)*time.Minute, false))
	}
	other := fakeHTTPSession("b0", "10.0.0.2", time.Hour, false) // the oldest of all
	h := limitsHandler(append(mine, other)...)
	victims, ok := h.evictionsFor("10.0.0.1")
	if !ok || len(victims) != 1 || victims[0].SessionID() != fmt.Sprint("a", maxSessionsPerClient-1) {
		t.Fatalf("client at its cap: %v %v", ids(victims), ok)
	}
	if v, ok := h.evictionsFor("10.0.0.2"); !ok || len(v) != 0 {
		t.Fatalf("another client under its cap: %v %v", ids(v), ok)
	}
	// Streaming sessions are in use: the LRU idle one goes.
	mine[maxSessionsPerClient-1].streaming = true
	if v, ok := h.evictionsFor("10.0.0.1"); !ok || len(v) != 1 || v[0].SessionID() != fmt.Sprint("a", maxSessionsPerClient-2) {
		t.Fatalf("skip streaming: %v %v", ids(v), ok)
	}
	for i, s := range mine {
		s.streaming = true
		s.streamSince = time.Now().Add(-time.Duration(maxSessionsPerClient-i) * time.Minute) // a0's stream is oldest
	}
	if v, ok := h.evictionsFor("10.0.0.1"); !ok || len(v) != 1 || v[0].SessionID() != "a0" {
		t.Fatalf("every session of the client streams: the oldest stream must end, got %v %v", ids(v), ok)
	}
	// Every session of the process streams: the oldest stream of all ends.
	var streams []*httpSession
	for i := range maxHTTPSessions {
		streams = append(streams, fakeHTTPSession(fmt.Sprint("t", i), fmt.Sprint("10.2.", i/8, ".", i%8), time.Duration(i)*time.Second, true))
	}
	if v, ok := limitsHandler(streams...).evictionsFor("10.9.9.8"); !ok || len(v) != 1 || v[0].SessionID() != fmt.Sprint("t", maxHTTPSessions-1) {
		t.Fatalf("all streaming: %v %v", ids(v), ok)
	}
	// A full process: many clients; a newcomer evicts the global LRU idle.
	var all []*httpSession
	for i := range maxHTTPSessions {
		all = append(all, fakeHTTPSession(fmt.Sprint("s", i), fmt.Sprint("10.1.", i/8, ".", i%8), time.Duration(i)*time.Second, i%2 == 1))
	}
	h = limitsHandler(all...)
	v, ok := h.evictionsFor("10.9.9.9")
	if !ok || len(v) != 1 || v[0].SessionID() != fmt.Sprint("s", maxHTTPSessions-2) {
		t.Fatalf("full process: %v %v", ids(v), ok)
	}
}

func ids(list []*httpSession) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.SessionID())
	}
	return out
}

// TestFairSlots: a session holding its whole share waits for its own slot
// while another session gets one at once; a cancelled wait gives up.
func TestFairSlots(t *testing.T) {
	f := &fairSlots{share: 2}
	ctx := context.Background()
	r1, _ := f.acquire(ctx, "A")
	r2, _ := f.acquire(ctx, "A")
	got := make(chan bool, 1)
	go func() {
		_, ok := f.acquire(ctx, "A")
		got <- ok
	}()
	select {
	case <-got:
		t.Fatal("a third call of A ran beyond its share")
	case <-time.After(50 * time.Millisecond):
	}
	rb, ok := f.acquire(ctx, "B")
	if !ok {
		t.Fatal("B waited for A")
	}
	rb()
	r1()
	if ok := <-got; !ok {
		t.Fatal("A's queued call did not get the freed slot")
	}
	r2()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	f2 := &fairSlots{share: 1}
	rel, _ := f2.acquire(ctx, "C")
	if _, ok := f2.acquire(cctx, "C"); ok {
		t.Fatal("cancelled wait acquired")
	}
	rel()
	if len(f2.slots) != 0 {
		t.Fatalf("slots not cleaned up: %v", f2.slots)
	}
	if sessionShare(16) != 4 || sessionShare(2) != 1 {
		t.Fatal("sessionShare")
	}
}

func TestServerTimeouts(t *testing.T) {
	srv := &http.Server{}
	applyServerTimeouts(srv)
	if srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 {
		t.Fatalf("timeouts: %+v", srv)
	}
}

// TestListenStreamCaps: stateless listen streams are capped per client and
// in total by ending the oldest stream (the client's own past its cap, any
// client's past the total), never by refusing the newcomer; a closed stream
// frees its place.
func TestListenStreamCaps(t *testing.T) {
	h := &HTTPHandler{log: zerolog.Nop()}
	ended := map[string]bool{}
	admit := func(client, name string) func() {
		return h.admitListen(client, func() { ended[name] = true })
	}
	var releases []func()
	for i := range maxListensPerClient {
		releases = append(releases, admit("10.0.0.1", fmt.Sprint("a", i)))
	}
	if len(ended) != 0 {
		t.Fatalf("ended under the cap: %v", ended)
	}
	rel := admit("10.0.0.1", "a-new")
	if !ended["a0"] || len(ended) != 1 {
		t.Fatalf("past the client cap the client's oldest stream must end, ended %v", ended)
	}
	rel()
	other := admit("10.0.0.2", "b0")
	if len(ended) != 1 {
		t.Fatalf("another client's stream ended one: %v", ended)
	}
	other()
	for _, rel := range releases {
		rel()
	}
	if len(h.listens) != 0 {
		t.Fatalf("not cleaned up: %v", h.listens)
	}
	clear(ended)
	for i := range maxListens {
		releases = append(releases, admit(fmt.Sprint("c", i), fmt.Sprint("c", i)))
	}
	admit("late", "late")
	if !ended["c0"] || len(ended) != 1 || len(h.listens) != maxListens {
		t.Fatalf("past the total the oldest stream must end: ended %v, %d open", ended, len(h.listens))
	}
}

// TestClientKey: one party cannot pose as many clients — every loopback
// address is one client, an IPv6 address counts by its /64.
func TestClientKey(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"127.0.0.1", "127.0.0.2"}, {"127.0.0.1", "127.255.3.4"}, {"127.0.0.1", "::1"}, {"::ffff:127.0.0.9", "127.0.0.1"},
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::7"}, {"10.0.0.1", "::ffff:10.0.0.1"},
	} {
		if clientKey(c.a) != clientKey(c.b) {
			t.Errorf("%s and %s are different clients: %s, %s", c.a, c.b, clientKey(c.a), clientKey(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{{"10.0.0.1", "10.0.0.2"}, {"2001:db8:1:2::1", "2001:db8:1:3::1"}, {"127.0.0.1", "10.0.0.1"}} {
		if clientKey(c.a) == clientKey(c.b) {
			t.Errorf("%s and %s are the same client: %s", c.a, c.b, clientKey(c.a))
		}
	}
}

// TestClientBehindTrustedProxy: behind a declared proxy the client is the
// rightmost X-Forwarded-For entry that is not a declared proxy; the entries
// a client wrote to the left are never read, and a peer that is not a
// declared proxy has its header ignored.
func TestClientBehindTrustedProxy(t *testing.T) {
	h := &HTTPHandler{trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}}
	for _, c := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer: header ignored", "203.0.113.9:5000", []string{"198.51.100.7"}, "203.0.113.9"},
		{"untrusted loopback peer", "[::1]:5000", []string{"198.51.100.7"}, "loopback"},
		{"trusted peer, no header", "10.1.2.3:5000", nil, "10.1.2.3"},
		{"trusted peer", "10.1.2.3:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"trusted loopback proxy", "127.0.0.1:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"spoofed entries to the left", "10.1.2.3:5000", []string{"1.1.1.1, 2.2.2.2, 198.51.100.7"}, "198.51.100.7"},
		{"a chain of proxies", "10.1.2.3:5000", []string{"6.6.6.6, 198.51.100.7, 10.9.9.9, 10.8.8.8"}, "198.51.100.7"},
		{"several header lines", "10.1.2.3:5000", []string{"6.6.6.6", "198.51.100.7, 10.9.9.9"}, "198.51.100.7"},
		{"with a port", "10.1.2.3:5000", []string{"198.51.100.7:4711"}, "198.51.100.7"},
		{"IPv6 with a port", "10.1.2.3:5000", []string{"[2001:db8:1:2::5]:4711"}, "2001:db8:1:2::/64"},
		{"IPv6 counts by /64", "10.1.2.3:5000", []string{"2001:db8:1:2::9"}, "2001:db8:1:2::/64"},
		{"IPv4-mapped", "10.1.2.3:5000", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"forwarded loopback", "10.1.2.3:5000", []string{"127.0.0.5"}, "loopback"},
		{"every hop a proxy", "10.1.2.3:5000", []string{"10.7.7.7, 10.9.9.9"}, "10.7.7.7"},
		{"garbage where the client should be", "10.1.2.3:5000", []string{"198.51.100.7, unknown"}, "10.1.2.3"},
		{"empty header", "10.1.2.3:5000", []string{""}, "10.1.2.3"},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.RemoteAddr = c.peer
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		r.Header.Set("Forwarded", "for=192.0.2.1") // never read
		if got := h.clientOf(r); got != c.want {
			t.Errorf("%s: client %q, want %q", c.name, got, c.want)
		}
	}
	// Without declared proxies nothing forwarded is read.
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.RemoteAddr = "10.1.2.3:5000"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	if got := (&HTTPHandler{}).clientOf(r); got != "10.1.2.3" {
		t.Errorf("no trusted proxies: client %q", got)
	}
}

// TestNamedKeysAreClients: a named API key (PARSE_MCP_API_KEYS) is its own
// client wherever it connects from, also behind a declared proxy; the
// shared key names no one; a key that matches nothing is refused.
func TestNamedKeysAreClients(t *testing.T) {
	h := MountHTTP(t.Context(), nil, HTTPOptions{APIKey: "shared-key-0123456789", Log: zerolog.Nop(), NamedKeys: []config.NamedAPIKey{
		{Name: "alice", Key: config.NewSecret("alice-key-0123456789")}, {Name: "bob", Key: config.NewSecret("bob-key-0123456789ab")}}}, false)
	h.trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct {
		name, peer, xff, header, value string
		ok                             bool
		client                         string
	}{
		{"alice", "203.0.113.1:1", "", "X-MCP-API-Key", "alice-key-0123456789", true, "key:alice"},
		{"alice elsewhere", "198.51.100.2:1", "", "Authorization", "Bearer alice-key-0123456789", true, "key:alice"},
		{"alice behind the proxy", "10.0.0.1:1", "198.51.100.9", "X-MCP-API-Key", "alice-key-0123456789", true, "key:alice"},
		{"bob", "203.0.113.1:1", "", "X-MCP-API-Key", "bob-key-0123456789ab", true, "key:bob"},
		{"shared key: the address", "203.0.113.1:1", "", "X-MCP-API-Key", "shared-key-0123456789", true, "203.0.113.1"},
		{"shared key behind the proxy", "10.0.0.1:1", "198.51.100.9", "X-MCP-API-Key", "shared-key-0123456789", true, "198.51.100.9"},
		{"wrong key", "203.0.113.1:1", "", "X-MCP-API-Key", "alice-key-0123456780", false, ""},
		{"no key", "203.0.113.1:1", "", "", "", false, ""},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if c.header != "" {
			r.Header.Set(c.header, c.value)
		}
		name, ok := h.credential(r)
		if ok != c.ok {
			t.Errorf("%s: authorised %v", c.name, ok)
			continue
		}
		if !ok {
			continue
		}
		if name != "" {
			r = r.WithContext(callinfo.With(r.Context(), callinfo.Info{Credential: name}))
		}
		if got := h.clientOf(r); got != c.client {
			t.Errorf("%s: client %q, want %q", c.name, got, c.client)
		}
	}
}
