package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/tools"
)

// confirmServer is a Dispatcher over a server with one tool, "confirm_me",
// that asks the user through tools.Confirm and answers with the outcome.
func confirmServer() *Dispatcher {
	s := mcpserver.NewMCPServer("confirm-test", "1", mcpserver.WithToolCapabilities(false), mcpserver.WithLogging())
	t := &tools.Tool{
		ToolInfo:    policy.ToolInfo{Name: "confirm_me"},
		Description: "asks for confirmation",
		Handler: tools.Typed(func(ctx context.Context, d *tools.Deps, in struct {
			What string `json:"what"`
		}) (tools.Dynamic, error) {
			c, err := tools.Confirm(ctx, d, fmt.Sprintf("Delete %v?", in.What))
			if err != nil {
				return nil, err
			}
			return map[string]any{"answer": c.String()}, nil
		}),
	}
	s.AddTool(t.MCPTool(nil), t.Handle(&tools.Deps{}))
	return NewDispatcher(s, 4, zerolog.Nop())
}

// stdioPeer is a client on the in-process stdio transport.
type stdioPeer struct {
	t   *testing.T
	in  *io.PipeWriter
	out chan map[string]any
}

func newStdioPeer(t *testing.T, d *Dispatcher) *stdioPeer {
	return newStdioPeerWith(t, d, StdioOptions{})
}

func newStdioPeerWith(t *testing.T, d *Dispatcher, opts StdioOptions) *stdioPeer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ServeStdio(ctx, d, inR, outW, opts); outW.Close() }()
	p := &stdioPeer{t: t, in: inW, out: make(chan map[string]any, 64)}
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not JSON: %q", sc.Text())
				continue
			}
			p.out <- m
		}
		close(p.out)
	}()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	return p
}

func (p *stdioPeer) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *stdioPeer) next() map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.out:
		if !ok {
			p.t.Fatal("stdout closed")
		}
		return m
	case <-time.After(20 * time.Second):
		p.t.Fatal("no message within 20s")
	}
	return nil
}

func structured(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("no structuredContent in %v", m)
	}
	return sc
}

const callConfirm = `{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"confirm_me","arguments":{"what":%q}%s}}`

// TestConfirmSessionStdio: a session-revision client with the elicitation
// capability gets elicitation/create on stdout, answers it, and the tool sees
// the answer; without the capability nobody is asked.
func TestConfirmSessionStdio(t *testing.T) {
	for _, c := range []struct {
		answer string
		want   string
	}{
		{`{"action":"accept","content":{"confirm":true}}`, "accepted"},
		{`{"action":"accept","content":{"confirm":false}}`, "declined"},
		{`{"action":"decline"}`, "declined"},
		{`{"action":"cancel"}`, "cancelled"},
	} {
		p := newStdioPeer(t, confirmServer())
		p.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
		p.next()
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		p.send(fmt.Sprintf(callConfirm, "c", "rows", ""))
		req := p.next()
		if req["method"] != "elicitation/create" || req["id"] == nil {
			t.Fatalf("expected elicitation/create, got %v", req)
		}
		if msg := req["params"].(map[string]any)["message"]; msg != "Delete rows?" {
			t.Fatalf("question %v", msg)
		}
		id, _ := json.Marshal(req["id"])
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, c.answer))
		if got := structured(t, p.next())["answer"]; got != c.want {
			t.Fatalf("answer %s: tool saw %v, want %s", c.answer, got, c.want)
		}
	}

	p := newStdioPeer(t, confirmServer())
	p.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	p.next()
	p.send(fmt.Sprintf(callConfirm, "c", "rows", ""))
	if got := structured(t, p.next())["answer"]; got != "unsupported" {
		t.Fatalf("client without elicitation: %v", got)
	}
}

// TestConfirmCancelWhileAsking: a call cancelled while the question is open
// gets no response, and a late answer is ignored.
func TestConfirmCancelWhileAsking(t *testing.T) {
	p := newStdioPeer(t, confirmServer())
	p.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	p.next()
	p.send(fmt.Sprintf(callConfirm, "c", "rows", ""))
	req := p.next()
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`)
	id, _ := json.Marshal(req["id"])
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, id))
	p.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if m := p.next(); m["id"] != "p" {
		t.Fatalf("after cancelling: %v (the cancelled call must not answer)", m)
	}
}

const statelessMetaCaps = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}`

// TestConfirmStateless: in 2026-07-28 the call answers input_required; the
// retry with the answer and the echoed state completes; an answer replayed
// with other arguments is not taken (the question is asked again).
func TestConfirmStateless(t *testing.T) {
	p := newStdioPeer(t, confirmServer())
	meta := "," + fmt.Sprintf(statelessMetaCaps, `{"elicitation":{}}`)
	p.send(fmt.Sprintf(callConfirm, "c1", "rows", meta))
	m := p.next()
	res := m["result"].(map[string]any)
	if res["resultType"] != "input_required" {
		t.Fatalf("first call: %v", m)
	}
	state, _ := res["requestState"].(string)
	ir := res["inputRequests"].(map[string]any)["confirm"].(map[string]any)
	if ir["method"] != "elicitation/create" || state == "" {
		t.Fatalf("input request %v state %q", ir, state)
	}
	retry := func(id, what string) map[string]any {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"confirm_me","arguments":{"what":%q},"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":%q%s}}`, id, what, state, meta))
		return p.next()
	}
	if got := structured(t, retry("c2", "rows"))["answer"]; got != "accepted" {
		t.Fatalf("retry with the answer: %v", got)
	}
	if m := retry("c3", "everything"); m["result"].(map[string]any)["resultType"] != "input_required" {
		t.Fatalf("an answer for other arguments was taken: %v", m)
	}
	p.send(fmt.Sprintf(callConfirm, "c4", "rows", ","+fmt.Sprintf(statelessMetaCaps, `{}`)))
	if got := structured(t, p.next())["answer"]; got != "unsupported" {
		t.Fatalf("2026-07-28 client without elicitation: %v", got)
	}
}

// TestConfirmSessionHTTP: over HTTP the question travels on the call's SSE
// stream and the answer comes back as a POST in the same session; a
// JSON-only call cannot carry it (unsupported); a 2026-07-28 POST gets
// input_required.
func TestConfirmSessionHTTP(t *testing.T) {
	d := confirmServer()
	srv := httptest.NewServer(NewHTTPHandler(d, "", true, zerolog.Nop()))
	defer srv.Close()
	post := func(body string, headers map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	resp.Body.Close()
	h := map[string]string{"Mcp-Session-Id": sid}

	call := post(fmt.Sprintf(callConfirm, "c", "rows", ""), h)
	defer call.Body.Close()
	sc := bufio.NewScanner(call.Body)
	nextEvent := func() map[string]any {
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line[6:]), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
		t.Fatal("SSE stream ended")
		return nil
	}
	req := nextEvent()
	if req["method"] != "elicitation/create" {
		t.Fatalf("expected elicitation/create on the call's stream, got %v", req)
	}
	id, _ := json.Marshal(req["id"])
	ack := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"confirm":true}}}`, id), h)
	ack.Body.Close()
	if ack.StatusCode != http.StatusAccepted {
		t.Fatalf("posting the answer: %d", ack.StatusCode)
	}
	if got := structured(t, nextEvent())["answer"]; got != "accepted" {
		t.Fatalf("HTTP answer: %v", got)
	}

	h2 := map[string]string{"Mcp-Session-Id": sid, "Accept": "application/json"}
	resp = post(fmt.Sprintf(callConfirm, "j", "rows", ""), h2)
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if got := structured(t, m)["answer"]; got != "unsupported" {
		t.Fatalf("JSON-only call: %v", got)
	}

	resp = post(fmt.Sprintf(callConfirm, "s", "rows", ","+fmt.Sprintf(statelessMetaCaps, `{"elicitation":{}}`)),
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "confirm_me"})
	m = nil
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if r, _ := m["result"].(map[string]any); r == nil || r["resultType"] != "input_required" {
		t.Fatalf("2026-07-28 over HTTP: %v", m)
	}
}
