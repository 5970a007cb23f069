package e2e

// Streamable HTTP through the binary: the transport's guards (auth with the
// fixed 401 body, 413, JSON depth, 415, Origin/Host, /health, loopback-only
// binds, DELETE), notification routing with concurrent clients, and
// cancellation over HTTP.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// httpServer is the binary serving streamable HTTP on a random loopback port.
type httpServer struct {
	t      testing.TB
	base   string // http://127.0.0.1:port
	cmd    *exec.Cmd
	stderr *parsetest.SyncBuffer
	done   chan error
}

var addrRe = regexp.MustCompile(`"addr":"([^"]+)"[^\n]*serving streamable HTTP`)

// startHTTP starts the binary with PARSE_MCP_HTTP_ADDR (default
// 127.0.0.1:0) and waits until it listens.
func startHTTP(t testing.TB, extraEnv ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = env(append([]string{"PARSE_MCP_HTTP_ADDR=127.0.0.1:0", "PARSE_MCP_LOG_LEVEL=info"}, extraEnv...)...)
	stderr := &parsetest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &httpServer{t: t, cmd: cmd, stderr: stderr, done: make(chan error, 1)}
	go func() { h.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := addrRe.FindStringSubmatch(stderr.String()); m != nil {
			h.base = "http://" + m[1]
			return h
		}
		select {
		case err := <-h.done:
			t.Fatalf("server exited: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("server did not start listening:\n%s", stderr.String())
	return nil
}

// request sends one HTTP request to the server.
func (h *httpServer) request(method, path string, body string, headers map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// mcpSession is one initialized HTTP session.
type mcpSession struct {
	h       *httpServer
	id      string
	headers map[string]string
}

const initBody = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + ProtocolVersion + `","capabilities":{},"clientInfo":{"name":"http-e2e","version":"1"}}}`

// session initializes a new session (headers: e.g. the API key).
func (h *httpServer) session(headers map[string]string) *mcpSession {
	h.t.Helper()
	resp, b := h.request("POST", "/mcp", initBody, headers)
	if resp.StatusCode != 200 {
		h.t.Fatalf("initialize: %d %s", resp.StatusCode, b)
	}
	s := &mcpSession{h: h, id: resp.Header.Get("Mcp-Session-Id"), headers: map[string]string{}}
	if s.id == "" {
		h.t.Fatal("initialize: no Mcp-Session-Id")
	}
	maps.Copy(s.headers, headers)
	s.headers["Mcp-Session-Id"] = s.id
	if resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, s.headers); resp.StatusCode != 202 {
		h.t.Fatalf("initialized: %d %s", resp.StatusCode, b)
	}
	return s
}

// post sends one message and returns every JSON-RPC message of the answer:
// one for a JSON answer, or each SSE event (notifications, then the
// response) for a stream.
func (s *mcpSession) post(body string) (int, []map[string]any) {
	s.h.t.Helper()
	resp, b := s.h.request("POST", "/mcp", body, s.headers)
	return resp.StatusCode, decodeAnswer(s.h.t, resp, b)
}

func decodeAnswer(t testing.TB, resp *http.Response, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line[6:]), &m); err != nil {
					t.Fatalf("SSE data is not JSON: %q", line)
				}
				out = append(out, m)
			}
		}
		return out
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer is not JSON: %q", b)
	}
	return append(out, m)
}

// rpc sends a request and returns its response (the last message).
func (s *mcpSession) rpc(id, method, paramsJSON string) map[string]any {
	s.h.t.Helper()
	if paramsJSON == "" {
		paramsJSON = "{}"
	}
	status, msgs := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, paramsJSON))
	if status != 200 || len(msgs) == 0 {
		s.h.t.Fatalf("%s: status %d, %v", method, status, msgs)
	}
	return msgs[len(msgs)-1]
}

// postRunning posts a tools/call that asks for progress and returns its
// messages once the answer ends; running is closed when the first progress
// notification arrives, i.e. once the server is running the call (the
// server needs a short PARSE_MCP_PROGRESS_INTERVAL).
func (s *mcpSession) postRunning(body string, running chan<- struct{}) []map[string]any {
	req, err := http.NewRequest("POST", s.h.base+"/mcp", strings.NewReader(body))
	if err != nil {
		s.h.t.Error(err)
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.h.t.Errorf("POST /mcp: %v", err)
		return nil
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line[6:]), &m) != nil {
			continue
		}
		if m["method"] == "notifications/progress" && running != nil {
			close(running)
			running = nil
		}
		out = append(out, m)
	}
	return out
}

// listen opens the session's GET stream and delivers its messages.
func (s *mcpSession) listen(ctx context.Context) <-chan map[string]any {
	s.h.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.h.base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.h.t.Fatalf("GET /mcp: %v", err)
	}
	if resp.StatusCode != 200 {
		s.h.t.Fatalf("GET /mcp: %d", resp.StatusCode)
	}
	return sseMessages(resp.Body)
}

// sseMessages reads an event stream's JSON-RPC messages, closing the
// channel (and body) when the stream ends.
func sseMessages(body io.ReadCloser) <-chan map[string]any {
	out := make(chan map[string]any, 64)
	go func() {
		defer close(out)
		defer body.Close()
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				var m map[string]any
				if json.Unmarshal([]byte(line[6:]), &m) == nil {
					out <- m
				}
			}
		}
	}()
	return out
}

func TestHTTPHealthAndGuards(t *testing.T) {
	h := startHTTP(t)
	resp, b := h.request("GET", "/health", "", nil)
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"status":"ok","database":"ok"}` {
		t.Fatalf("/health: %d %s", resp.StatusCode, b)
	}

	// 415: not JSON.
	resp, _ = h.request("POST", "/mcp", initBody, map[string]string{"Content-Type": "text/plain"})
	if resp.StatusCode != 415 {
		t.Fatalf("text/plain body: %d, want 415", resp.StatusCode)
	}
	// 413: over 1 MiB.
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`
	resp, _ = h.request("POST", "/mcp", big, nil)
	if resp.StatusCode != 413 {
		t.Fatalf("1 MiB body: %d, want 413", resp.StatusCode)
	}
	// 400: nesting deeper than 20.
	deep := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":` + strings.Repeat("[", 25) + strings.Repeat("]", 25) + `}}`
	resp, b = h.request("POST", "/mcp", deep, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "nesting") {
		t.Fatalf("deep JSON: %d %s, want 400", resp.StatusCode, b)
	}
	// 403: DNS rebinding (foreign Host on a loopback bind) and foreign Origin.
	resp, _ = h.request("POST", "/mcp", initBody, map[string]string{"Host": "evil.example:80"})
	if resp.StatusCode != 403 {
		t.Fatalf("foreign Host: %d, want 403", resp.StatusCode)
	}
	resp, _ = h.request("POST", "/mcp", initBody, map[string]string{"Origin": "https://evil.example"})
	if resp.StatusCode != 403 {
		t.Fatalf("foreign Origin: %d, want 403", resp.StatusCode)
	}
	resp, _ = h.request("POST", "/mcp", initBody, map[string]string{"Origin": "http://localhost:6274"})
	if resp.StatusCode != 200 {
		t.Fatalf("loopback Origin (MCP Inspector): %d, want 200", resp.StatusCode)
	}
	// Sessions: missing id 400, unknown 404.
	resp, _ = h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	if resp.StatusCode != 400 {
		t.Fatalf("no session id: %d, want 400", resp.StatusCode)
	}
	resp, _ = h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Session-Id": "nope"})
	if resp.StatusCode != 404 {
		t.Fatalf("unknown session id: %d, want 404", resp.StatusCode)
	}
	// A session works, then DELETE ends it (204) and it is gone (404).
	s := h.session(nil)
	if m := s.rpc("p", "ping", ""); m["result"] == nil {
		t.Fatalf("ping: %v", m)
	}
	resp, _ = h.request("DELETE", "/mcp", "", s.headers)
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d, want 204", resp.StatusCode)
	}
	resp, _ = h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, s.headers)
	if resp.StatusCode != 404 {
		t.Fatalf("after DELETE: %d, want 404", resp.StatusCode)
	}
}

const testAPIKey = "e2e-test-key-0123456789abcdef"

func TestHTTPAuth(t *testing.T) {
	h := startHTTP(t, "PARSE_MCP_API_KEY="+testAPIKey)
	const fixed = `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}`
	for name, hdr := range map[string]map[string]string{
		"no key":       nil,
		"wrong key":    {"X-MCP-API-Key": "wrong-key-0123456789abcdef"},
		"wrong bearer": {"Authorization": "Bearer wrong-key-0123456789abcdef"},
		"key prefix":   {"X-MCP-API-Key": testAPIKey[:10]},
	} {
		resp, b := h.request("POST", "/mcp", initBody, hdr)
		if resp.StatusCode != 401 || string(b) != fixed {
			t.Fatalf("%s: %d %q, want 401 with the fixed body", name, resp.StatusCode, b)
		}
	}
	if resp, _ := h.request("GET", "/health", "", nil); resp.StatusCode != 200 {
		t.Fatalf("/health needs no key: %d", resp.StatusCode)
	}
	s := h.session(map[string]string{"X-MCP-API-Key": testAPIKey})
	if m := s.rpc("p", "ping", ""); m["result"] == nil {
		t.Fatalf("ping with X-MCP-API-Key: %v", m)
	}
	s = h.session(map[string]string{"Authorization": "Bearer " + testAPIKey})
	if m := s.rpc("p", "ping", ""); m["result"] == nil {
		t.Fatalf("ping with Bearer: %v", m)
	}
	// The session id alone is not a credential.
	resp, b := h.request("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Session-Id": s.id})
	if resp.StatusCode != 401 || string(b) != fixed {
		t.Fatalf("session id without key: %d %s", resp.StatusCode, b)
	}
}

func TestHTTPLoopbackOnlyWithoutKey(t *testing.T) {
	cmd := exec.Command(binary)
	cmd.Env = env("PARSE_MCP_HTTP_ADDR=0.0.0.0:0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "PARSE_MCP_API_KEY") {
		t.Fatalf("non-loopback bind without a key: %v, stderr %s", err, stderr.String())
	}
	// With a key it starts, and every /mcp request needs the key.
	h := startHTTP(t, "PARSE_MCP_HTTP_ADDR=0.0.0.0:0", "PARSE_MCP_API_KEY="+testAPIKey)
	h.base = strings.Replace(h.base, "0.0.0.0", "127.0.0.1", 1)
	h.base = strings.Replace(h.base, "[::]", "127.0.0.1", 1)
	if resp, _ := h.request("POST", "/mcp", initBody, nil); resp.StatusCode != 401 {
		t.Fatalf("public bind, no key: %d, want 401", resp.StatusCode)
	}
	s := h.session(map[string]string{"X-MCP-API-Key": testAPIKey})
	if m := s.rpc("p", "ping", ""); m["result"] == nil {
		t.Fatalf("ping: %v", m)
	}
}

// TestHTTPProgressRouting: 10 clients, each with its own session, run 3
// tool calls at once with progress tokens. Every POST stream carries only
// its own request's notifications, all before its response; the sessions'
// GET streams carry none of them. Zero misrouted.
func TestHTTPProgressRouting(t *testing.T) {
	h := startHTTP(t, scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=100ms")...)
	const clients, calls = 10, 3
	ctx := t.Context()
	var wg sync.WaitGroup
	var mu sync.Mutex
	misrouted, notified, answered := 0, 0, 0
	var problems []string
	var listens []<-chan map[string]any
	for c := range clients {
		s := h.session(nil)
		listens = append(listens, s.listen(ctx))
		for k := range calls {
			wg.Add(1)
			go func(c, k int) {
				defer wg.Done()
				token := fmt.Sprintf("c%d-r%d", c, k)
				// A count on SlowScan answers after the slow link's delay,
				// long enough for heartbeats at 100ms (a call within the
				// first interval sends none, see docs/transports.md "Progress").
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":%q,"where":{"n":{"$lt":%d}}},"_meta":{"progressToken":%q}}}`, token, slowClass, c+k, token)
				status, msgs := s.post(body)
				mu.Lock()
				defer mu.Unlock()
				if status != 200 || len(msgs) == 0 {
					problems = append(problems, fmt.Sprintf("%s: status %d", token, status))
					return
				}
				for i, m := range msgs {
					if i == len(msgs)-1 {
						if m["id"] != token || m["result"] == nil {
							problems = append(problems, fmt.Sprintf("%s: last message is not its response: %v", token, m))
						}
						answered++
						continue
					}
					if m["method"] != "notifications/progress" {
						problems = append(problems, fmt.Sprintf("%s: unexpected %v", token, m))
						continue
					}
					if params(m)["progressToken"] != token {
						misrouted++
						continue
					}
					notified++
				}
			}(c, k)
		}
	}
	wg.Wait()
	for i, l := range listens {
		select {
		case m := <-l:
			t.Errorf("client %d's GET stream got %v", i, m)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("%d responses, %d progress notifications on the right stream, %d misrouted", answered, notified, misrouted)
	if len(problems) > 0 {
		t.Fatalf("%d problems, e.g. %s", len(problems), problems[0])
	}
	if misrouted != 0 || answered != clients*calls || notified == 0 {
		t.Fatalf("misrouted %d, answered %d, notified %d", misrouted, answered, notified)
	}
}

// TestHTTPCancellation: notifications/cancelled on the session cancels its
// in-flight call (matched by session + request id: the same id in another
// session is untouched), and DELETE /mcp cancels every in-flight call of the
// session (204); the server stays responsive and never answers -32603.
func TestHTTPCancellation(t *testing.T) {
	h := startHTTP(t, scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=200ms")...)
	a, b := h.session(nil), h.session(nil)

	type result struct {
		msgs []map[string]any
		took time.Duration
	}
	// run starts a slow count and returns once the server is running it (its
	// first heartbeat arrived): a cancel sent earlier could overtake the call
	// on another connection. The ceiling is generous.
	run := func(s *mcpSession, id string) <-chan result {
		ch := make(chan result, 1)
		running := make(chan struct{})
		go func() {
			start := time.Now()
			msgs := s.postRunning(slowCount(id, `{"progressToken":"`+id+`-progress"}`), running)
			ch <- result{msgs, time.Since(start)}
		}()
		select {
		case <-running:
		case r := <-ch:
			t.Fatalf("the slow count ended before it was cancelled: %v", r.msgs)
		case <-time.After(60 * time.Second):
			t.Fatal("the slow count sent no heartbeat within 60 s")
		}
		return ch
	}
	// Same request id in two sessions; cancel only session a's.
	ra := run(a, "slow")
	// The session stays usable: the next call answers with a result (the
	// HTTP client's own timeout is the ceiling; no tight wall-clock limit).
	quick := func(s *mcpSession) {
		start := time.Now()
		if m := s.rpc("q", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Song"}}`); m["result"] == nil {
			t.Fatalf("count: %v", m)
		}
		t.Logf("the next call answered in %v", time.Since(start))
	}
	// A cancelled call must end without an answer. The proof is the absence
	// of a response carrying its id; the wait is only a generous ceiling
	// (uncancelled, the slow count would answer long before it and fail
	// the check).
	endsUnanswered := func(ch <-chan result, what string) {
		select {
		case r := <-ch:
			for _, m := range r.msgs {
				if e, ok := m["error"].(map[string]any); ok && e["code"] == float64(-32603) {
					t.Fatalf("-32603 for %s: %v", what, m)
				}
				if m["id"] != nil {
					t.Fatalf("%s answered: %v", what, m)
				}
			}
			t.Logf("%s ended after %v", what, r.took)
		case <-time.After(90 * time.Second):
			t.Fatalf("%s did not end", what)
		}
	}
	if status, msgs := a.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}`); status != 202 || len(msgs) != 0 {
		t.Fatalf("cancel: %d %v", status, msgs)
	}
	endsUnanswered(ra, "the cancelled call")
	quick(a)

	// DELETE cancels the session's in-flight calls.
	rb := run(b, "slow")
	resp, _ := h.request("DELETE", "/mcp", "", b.headers)
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	endsUnanswered(rb, "the call of the deleted session")
	quick(a)
}
