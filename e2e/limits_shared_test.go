package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestLimitsSharedAcrossProcesses: three processes with
// PARSE_MCP_LIMITS_STORE=mongodb behind a round-robin reverse proxy (docs/transports.md
// "Behind a load balancer"), their limits store reached through a relay
// the test can cut:
//   - one client's rate limit holds across the three: exactly its window's
//     calls go through, whichever process serves them (with the in-memory
//     store each process would give it a window of its own: 3×);
//   - another client still has its own window (refused calls used none of
//     the process group's), and then the group's window (4× a session's)
//     is full for everyone, though each process alone served less;
//   - with per-request identity, one person's window is one, whatever
//     address and process their calls come through;
//   - a confirmation accepted on one process is refused on the others;
//   - the store cut: every call is refused as rate-limited, retry_after in
//     1–5 s, in the words of a real limit, and the operator is told why;
//     the store back: calls go through again.
func TestLimitsSharedAcrossProcesses(t *testing.T) {
	db, uriEnv := writeDB(t, attackSchemas()...)
	relay := startRelay(t, mongoURI)
	limitsDB := db.Name() + "_limits"
	limitsURI := relay.uri(limitsDB)
	t.Cleanup(func() { _ = testDB.Client().Database(limitsDB).Drop(context.Background()) })
	const perClient = 2 * 5 // rate_limit.requests × PARSE_MCP_HTTP_CLIENT_RATE_FACTOR (2)
	serverEnv := append(append([]string{}, writeEnv...), uriEnv,
		policyEnv(t, "settings: {confirm_writes: always, rate_limit: {requests: 5, window: 10s}}\n"),
		"PARSE_MCP_TRUSTED_PROXIES=127.0.0.1,::1")
	shared := append(append([]string{}, serverEnv...), "PARSE_MCP_LIMITS_STORE=mongodb", "PARSE_MCP_LIMITS_URI="+limitsURI)
	group := []*httpServer{startHTTP(t, shared...), startHTTP(t, shared...), startHTTP(t, shared...)}
	lb := roundRobin(t, group)

	// The store's windows are fixed, aligned to the epoch: each part starts
	// at the beginning of one (10 s is ample for its calls).
	alignWindow := func() {
		time.Sleep(time.Until(time.Now().Truncate(10 * time.Second).Add(10*time.Second + 100*time.Millisecond)))
	}
	alignWindow()
	allowedFor := func(lb *httpServer, client string, calls int) (allowed int, refusals []string) {
		t.Helper()
		for i := range calls {
			code, msg, retry := countVia(lb, client, fmt.Sprint(client, "-", i))
			switch code {
			case "":
				allowed++
			case "rate_limited":
				if retry < 1 || retry > 10 {
					t.Fatalf("a real refusal's retry_after is %d s", retry)
				}
				refusals = append(refusals, msg)
			default:
				t.Fatalf("call %d of %s: %s %s", i, client, code, msg)
			}
		}
		return allowed, refusals
	}
	if allowed, refusals := allowedFor(lb, "198.51.100.1", 3*perClient); allowed != perClient || !strings.Contains(refusals[0], "for this client") {
		t.Fatalf("one client got %d calls through three processes, want its window's %d; refusals: %q", allowed, perClient, refusals)
	}
	if allowed, _ := allowedFor(lb, "198.51.100.2", perClient); allowed != perClient {
		t.Fatalf("another client got %d of its %d calls", allowed, perClient)
	}
	if allowed, refusals := allowedFor(lb, "198.51.100.7", 3); allowed != 0 || !strings.Contains(refusals[0], "for this server, all clients together") {
		t.Fatalf("the group's window (20) after 20 calls: %d more allowed, refusals %q", allowed, refusals)
	}
	if n, err := testDB.Client().Database(limitsDB).Collection("_parse_mcp_limits").CountDocuments(context.Background(), bson.D{}); err != nil || n == 0 {
		t.Fatalf("no window in the limits store's database (%d, %v)", n, err)
	}

	t.Run("the in-memory store counts per process", func(t *testing.T) {
		local := roundRobin(t, []*httpServer{startHTTP(t, serverEnv...), startHTTP(t, serverEnv...), startHTTP(t, serverEnv...)})
		if allowed, _ := allowedFor(local, "198.51.100.3", 3*perClient); allowed != 3*perClient {
			t.Fatalf("with PARSE_MCP_LIMITS_STORE=memory one client got %d calls through three processes, want %d", allowed, 3*perClient)
		}
	})

	t.Run("in the app's database by default", func(t *testing.T) {
		appDB := append(append([]string{}, serverEnv...), "PARSE_MCP_LIMITS_STORE=mongodb")
		pair := roundRobin(t, []*httpServer{startHTTP(t, appDB...), startHTTP(t, appDB...)})
		alignWindow()
		if allowed, _ := allowedFor(pair, "198.51.100.8", 2*perClient); allowed != perClient {
			t.Fatalf("one client got %d calls through two processes, want %d", allowed, perClient)
		}
		if n, err := db.Collection("_parse_mcp_limits").CountDocuments(context.Background(), bson.D{}); err != nil || n == 0 {
			t.Fatalf("no window in the app's database (%d, %v)", n, err)
		}
	})

	t.Run("per person with per-request identity", func(t *testing.T) {
		ctx := context.Background()
		tokens := map[string]string{"alice": "r:a11ce0000000000000000000000000ls", "bob": "r:b0b000000000000000000000000000ls"}
		for name, tok := range tokens {
			if _, err := db.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: name + "Id"}, {Key: "username", Value: name}}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Collection("_Session").InsertOne(ctx, bson.D{{Key: "_id", Value: name + "Sess"}, {Key: "_session_token", Value: tok}, {Key: "_p_user", Value: "_User$" + name + "Id"}}); err != nil {
				t.Fatal(err)
			}
		}
		people := append(append([]string{}, shared...), "PARSE_MCP_HTTP_AUTH=parse-session")
		lb := roundRobin(t, []*httpServer{startHTTP(t, people...), startHTTP(t, people...), startHTTP(t, people...)})
		alignWindow()
		// alice calls from two addresses: one window, hers, on every process.
		allowed := 0
		for i := range 3 * perClient {
			hdr := map[string]string{"Authorization": "Bearer " + tokens["alice"], "X-Forwarded-For": fmt.Sprint("198.51.100.", 20+i%2)}
			if code, msg, _ := countWith(lb, hdr, fmt.Sprint("alice-", i)); code == "" {
				allowed++
			} else if code != "rate_limited" {
				t.Fatalf("alice's call %d: %s %s", i, code, msg)
			}
		}
		if allowed != perClient {
			t.Fatalf("alice got %d calls through three processes from two addresses, want her window's %d", allowed, perClient)
		}
		for i := range perClient {
			if code, msg, _ := countWith(lb, map[string]string{"Authorization": "Bearer " + tokens["bob"], "X-Forwarded-For": "198.51.100.20"}, fmt.Sprint("bob-", i)); code != "" {
				t.Fatalf("bob's call %d after alice's, from her address: %s %s", i, code, msg)
			}
		}
	})

	t.Run("a confirmation is spent once", func(t *testing.T) {
		alignWindow()
		memos := func() int64 {
			n, err := db.Collection("Memo").CountDocuments(context.Background(), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		create := func(state string) map[string]any {
			t.Helper()
			return confirmCreate(t, func(body []byte) map[string]any {
				hdr := statelessHeaders("tools/call", "create_object")
				hdr["X-Forwarded-For"] = "198.51.100.4"
				resp, raw := lb.request("POST", "/mcp", string(body), hdr)
				return lastResult(t, decodeAnswer(t, resp, raw))
			}, "once", state)
		}
		first := create("") // process k
		state, _ := first["requestState"].(string)
		if state == "" {
			t.Fatalf("first call: %v", first)
		}
		if res := create(state); obj(res["structuredContent"])["created"] != true { // process k+1
			t.Fatalf("accepted: %v", res)
		}
		for i := range 3 { // k+2, k, k+1
			if res := create(state); res["resultType"] != "input_required" || memos() != 1 {
				t.Fatalf("replay %d through the balancer: %v, %d objects", i+1, res, memos())
			}
		}
		if n, err := testDB.Client().Database(limitsDB).Collection("_parse_mcp_confirmation").CountDocuments(context.Background(), bson.D{}); err != nil || n != 1 {
			t.Fatalf("spent nonces in the limits store's database: %d (%v), want 1", n, err)
		}
	})

	t.Run("the store down fails closed, then recovers", func(t *testing.T) {
		relay.stop()
		seen := map[int]bool{}
		for i := range 12 {
			code, msg, retry := countVia(lb, "198.51.100.5", fmt.Sprint("down-", i))
			if code != "rate_limited" || retry < 1 || retry > 5 || msg != fmt.Sprintf("rate limit reached (10 calls per 10s for this client); retry in %d s", retry) {
				t.Fatalf("call %d with the store down: %s %q retry_after %d", i, code, msg, retry)
			}
			seen[retry] = true
		}
		if len(seen) < 2 {
			t.Errorf("retry_after is not randomised: %v", seen)
		}
		for i, h := range group {
			if !strings.Contains(h.stderr.String(), "rate limits store unavailable") {
				t.Errorf("process %d did not tell the operator:\n%s", i, h.stderr.String())
			}
		}
		relay.start()
		deadline := time.Now().Add(30 * time.Second)
		for back := 0; back < len(group); {
			code, msg, _ := countVia(lb, "198.51.100.6", fmt.Sprint("up-", back))
			switch {
			case code == "":
				back++
			case code != "rate_limited":
				t.Fatalf("after the store came back: %s %s", code, msg)
			case time.Now().After(deadline):
				t.Fatal("calls still refused 30 s after the store came back")
			default:
				back = 0
				time.Sleep(300 * time.Millisecond)
			}
		}
		for i, h := range group {
			if !strings.Contains(h.stderr.String(), "rate limits store available again") {
				t.Errorf("process %d did not log the recovery", i)
			}
		}
	})
}

// countVia runs count_objects as client (a forwarded address) through lb;
// code is "" for a result, else its error code with the message and
// parse.retry_after.
func countVia(lb *httpServer, client, id string) (code, msg string, retryAfter int) {
	lb.t.Helper()
	return countWith(lb, map[string]string{"X-Forwarded-For": client}, id)
}

// countWith is countVia with the request's headers.
func countWith(lb *httpServer, hdr map[string]string, id string) (code, msg string, retryAfter int) {
	lb.t.Helper()
	status, msgs, _ := lb.statelessPostHeaders(id, "tools/call", base64Name("count_objects"),
		`{"name":"count_objects","arguments":{"class_name":"Memo"}}`, hdr)
	res := lastResult(lb.t, msgs)
	if status != 200 {
		lb.t.Fatalf("%s: HTTP %d %v", id, status, res)
	}
	if res["isError"] != true {
		return "", "", 0
	}
	meta := obj(res["_meta"])
	r, _ := meta["parse.retry_after"].(float64)
	return fmt.Sprint(meta["parse.error_code"]), fmt.Sprint(obj(list(res["content"])[0])["text"]), int(r)
}

// roundRobin puts a reverse proxy on loopback in front of servers, each
// request to the next one; it appends the caller's address to
// X-Forwarded-For, as a load balancer does.
func roundRobin(t *testing.T, servers []*httpServer) *httpServer {
	t.Helper()
	var next atomic.Int64
	targets := make([]*url.URL, len(servers))
	for i, h := range servers {
		targets[i], _ = url.Parse(h.base)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(targets[int(next.Add(1)-1)%len(targets)])
		r.Out.Header["X-Forwarded-For"] = r.In.Header["X-Forwarded-For"]
		r.SetXForwarded()
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return &httpServer{t: t, base: srv.URL}
}

// relay is a TCP relay to a database server that the test can cut (its
// listener closed and every connection through it dropped: connection
// refused) and restore on the same address.
type relay struct {
	t        *testing.T
	addr     string
	upstream string
	base     url.URL
	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]bool
}

func startRelay(t *testing.T, base string) *relay {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil || strings.Contains(u.Host, ",") {
		t.Skipf("the relay needs a single-host URI: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{t: t, addr: ln.Addr().String(), upstream: u.Host, base: *u, conns: map[net.Conn]bool{}}
	ln.Close()
	r.start()
	t.Cleanup(r.stop)
	return r
}

// uri is the relay's connection string to database db (the server's
// credentials and options kept).
func (r *relay) uri(db string) string {
	u := r.base
	u.Host, u.Path = r.addr, "/"+db
	q := u.Query()
	q.Set("directConnection", "true")
	u.RawQuery = q.Encode()
	return u.String()
}

func (r *relay) start() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("relay on %s: %v", r.addr, err)
	}
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", r.upstream)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns[c], r.conns[up] = true, true
			r.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (r *relay) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
		delete(r.conns, c)
	}
}
