package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestInitializeAndToolsList(t *testing.T) {
	c := stdioClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		names[tool.Name] = tool
	}
	for _, want := range []string{"list_tools", "get_all_schemas", "get_schema", "count_objects"} {
		tool, ok := names[want]
		if !ok {
			t.Errorf("tools/list lacks %s", want)
			continue
		}
		if tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: readOnlyHint not set", want)
		}
		if tool.Meta == nil || tool.Meta.AdditionalFields["category"] == nil {
			t.Errorf("%s: _meta.category missing", want)
		}
	}
	// Readonly by default: no write tools are listed.
	for name := range names {
		if strings.Contains(name, "create") || strings.Contains(name, "delete") || strings.Contains(name, "update") {
			t.Errorf("write tool %s listed under the readonly default", name)
		}
	}
	b, _ := json.Marshal(res)
	t.Logf("tools/list: %d tools, %d bytes", len(res.Tools), len(b))
	if len(b) > 20*1024 {
		t.Errorf("tools/list is %d bytes, want < 20 KB", len(b))
	}
}

func TestToolsListCategoryParam(t *testing.T) {
	r := startRaw(t)
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"category":"SCHEMA"}}`)
	m := r.next()
	tools := m["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("category SCHEMA: got %d tools, want get_all_schemas and get_schema", len(tools))
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"category":"nope"}}`)
	m = r.next()
	if n := len(m["result"].(map[string]any)["tools"].([]any)); n != 0 {
		t.Fatalf("unknown category: %d tools, want 0", n)
	}
}

func TestMalformedInputKeepsServing(t *testing.T) {
	r := startRaw(t)
	r.initialize()
	cases := []struct {
		line string
		code float64
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, -32700}, // truncated JSON
		{`not json at all`, -32700},
		{`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600}, // batch
		{`42`, -32600},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`, -32601},
	}
	for _, c := range cases {
		r.send(c.line)
		m := r.next()
		e, ok := m["error"].(map[string]any)
		if !ok || e["code"] != c.code {
			t.Errorf("%s: got %v, want error %v", c.line, m, c.code)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if m := r.next(); m["id"] != "after" || m["result"] == nil {
		t.Fatalf("server stopped serving after malformed input: %v", m)
	}
}

func TestOversizedLine(t *testing.T) {
	r := startRaw(t)
	r.initialize()
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`
	r.send(big)
	m := r.next()
	if e, ok := m["error"].(map[string]any); !ok || e["code"] != float64(-32600) {
		t.Fatalf("oversized line: got %v, want -32600", m)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := r.next(); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("no answer after oversized line: %v", m)
	}
}

// TestNotificationsPrecedeResponse fires many concurrent tool calls that
// carry progress tokens and checks that, for every request, each of its
// progress notifications reaches stdout before its response. Only calls
// slower than the progress interval report progress (docs/transports.md "Progress"):
// the slow ones are made slow by the slow link, so each of them must.
func TestNotificationsPrecedeResponse(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=100ms")...)
	r.initialize()
	// Every third call counts SlowScan (slow by construction: the slow link
	// delays its answer past many intervals), the others count Song (fast):
	// responses and notifications interleave.
	const n = 30
	for i := range n {
		class := "Song"
		if i%3 == 0 {
			class = slowClass
		}
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":%q},"_meta":{"progressToken":"tok-%d"}}}`, i, class, i))
	}
	answered := map[string]bool{}
	notified := map[string]bool{}
	for len(answered) < n {
		m := r.next()
		if m["method"] == "notifications/progress" {
			tok := m["params"].(map[string]any)["progressToken"].(string)
			id := strings.TrimPrefix(tok, "tok-")
			if answered[id] {
				t.Fatalf("progress for request %s arrived after its response", id)
			}
			notified[id] = true
			continue
		}
		id := fmt.Sprint(m["id"])
		if m["result"] == nil {
			t.Fatalf("request %s failed: %v", id, m)
		}
		answered[id] = true
	}
	t.Logf("%d of %d requests sent progress", len(notified), n)
	for i := 0; i < n; i += 3 {
		if !notified[fmt.Sprint(i)] {
			t.Fatalf("the slow count %d sent no progress", i)
		}
	}
}

func TestStdoutCarriesOnlyProtocol(t *testing.T) {
	// Debug logging is the noisiest setting: all of it must go to stderr.
	r := startRaw(t, "PARSE_MCP_LOG_LEVEL=debug")
	r.initialize()
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_all_schemas","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Nope"}}}`,
	} {
		r.send(line)
		m := r.next() // fails the test on any non-JSON-RPC line
		if m["id"] != float64(i+1) {
			t.Fatalf("unexpected message %v", m)
		}
	}
	_ = r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not exit on EOF")
	}
	for line := range r.lines {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("non-protocol stdout line: %q", line)
		}
	}
	if !strings.Contains(r.stderr.String(), "tool_call") {
		t.Fatalf("audit events missing from stderr")
	}
}

func TestShutdownOnSignalAndEOF(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			r := startRaw(t)
			r.initialize()
			start := time.Now()
			_ = r.cmd.Process.Signal(sig)
			select {
			case err := <-r.done:
				if err != nil {
					t.Fatalf("exit after %v: %v, want status 0", sig, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("server did not exit on %v", sig)
			}
			t.Logf("exited %v after %v", sig, time.Since(start))
		})
	}
	t.Run("EOF", func(t *testing.T) {
		r := startRaw(t)
		r.initialize()
		_ = r.stdin.Close()
		select {
		case err := <-r.done:
			if err != nil {
				t.Fatalf("exit on EOF: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("server did not exit on EOF")
		}
	})
}

func TestBadConfigurationExitCodes(t *testing.T) {
	// A port another process holds.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		env     []string
		args    []string
		code    int
		mention string
		absent  string // the message must not say this
	}{
		{"missing URI", []string{"PARSE_MCP_MONGODB_URI="}, nil, 2, "PARSE_MCP_MONGODB_URI", ""},
		{"bad scheme", []string{"PARSE_MCP_MONGODB_URI=http://x/db"}, nil, 2, "PARSE_MCP_MONGODB_URI", ""},
		{"no database", []string{"PARSE_MCP_MONGODB_URI=mongodb://127.0.0.1:1/"}, nil, 2, "PARSE_MCP_DATABASE", ""},
		{"bad tier", []string{"PARSE_MCP_PERMISSIONS=root"}, nil, 2, "PARSE_MCP_PERMISSIONS", ""},
		{"two identities", []string{"PARSE_MCP_ACL_USER=abc", "PARSE_MCP_ACL_ROLE=Admin"}, nil, 2, "PARSE_MCP_ACL_USER", ""},
		{"bad workers", []string{"PARSE_MCP_WORKERS=lots"}, nil, 2, "PARSE_MCP_WORKERS", ""},
		{"bad demo switch", []string{"PARSE_MCP_DEMO=maybe"}, nil, 2, "PARSE_MCP_DEMO", ""},
		{"typo in a write gate", []string{"PARSE_AGENT_ALLOW_WRITE_TOOLS=ture"}, nil, 2, "PARSE_AGENT_ALLOW_WRITE_TOOLS", ""},
		{"zero sessions", []string{"PARSE_MCP_HTTP_MAX_SESSIONS=0"}, nil, 2, "PARSE_MCP_HTTP_MAX_SESSIONS", ""},
		{"blank URI, demo off", []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO=false"}, nil, 2, "PARSE_MCP_DEMO=true", ""},
		{"placeholder URI", []string{"PARSE_MCP_MONGODB_URI=${user_config.mongodb_uri}"}, nil, 2, "PARSE_MCP_MONGODB_URI: is required", ""},
		{"public bind without key", []string{"PARSE_MCP_HTTP_ADDR=0.0.0.0:0"}, nil, 2, "PARSE_MCP_API_KEY", ""},
		{"missing policy file", []string{"PARSE_MCP_POLICY_FILE=/nonexistent/policy.yaml"}, nil, 2, "PARSE_MCP_POLICY_FILE", ""},
		{"unknown command", nil, []string{"frobnicate"}, 2, "unknown command", ""},
		{"unreachable database", []string{"PARSE_MCP_MONGODB_URI=mongodb://user:s3cret@127.0.0.1:1/app"}, nil, 1, "127.0.0.1:1", ""},
		// A seed list whose last host has no port is a valid URI with a
		// database name: it is tried (unreachable here), not refused.
		{"seed list", []string{"PARSE_MCP_MONGODB_URI=mongodb://user:s3cret@127.0.0.1:1,127.0.0.2/app"}, nil, 1, "cannot connect to MongoDB at mongodb://user@127.0.0.1:1,127.0.0.2/app", "s3cret"},
		{"unparsable URI", []string{"PARSE_MCP_MONGODB_URI=mongodb://user:s3@cret@127.0.0.1:1/app"}, nil, 2, "configuration error: PARSE_MCP_MONGODB_URI: not a valid connection string: unescaped @ sign", "cret"},
		{"unknown limits store", []string{"PARSE_MCP_LIMITS_STORE=redis"}, nil, 2, "configuration error: PARSE_MCP_LIMITS_STORE: unknown store", ""},
		{"unparsable limits URI", []string{"PARSE_MCP_HTTP_ADDR=127.0.0.1:0", "PARSE_MCP_LIMITS_STORE=mongodb", "PARSE_MCP_LIMITS_URI=mongodb://user:s3@cret@127.0.0.1:1/limits"}, nil, 2, "configuration error: PARSE_MCP_LIMITS_URI: not a valid connection string: unescaped @ sign", "cret"},
		{"unreachable limits store", []string{"PARSE_MCP_HTTP_ADDR=127.0.0.1:0", "PARSE_MCP_LIMITS_STORE=mongodb", "PARSE_MCP_LIMITS_URI=mongodb://user:s3cret@127.0.0.1:1/limits"}, nil, 1, "cannot connect to the limits store at mongodb://user@127.0.0.1:1/limits", "s3cret"},
		{"flag after the command", nil, []string{"call", "count_objects", "{}", "--demo"}, 2, "flag --demo must come before the command", ""},
		// mongodb+srv:// resolves at once: the message says DNS, names the
		// name that failed, and does not claim a timeout.
		{"unresolvable srv host", []string{"PARSE_MCP_MONGODB_URI=mongodb+srv://user:s3cret@no-such-host.invalid/app"}, nil, 1, "DNS lookup of _mongodb._tcp.no-such-host.invalid failed: no such host", "timed out"},
		{"port in use", []string{"PARSE_MCP_HTTP_ADDR=" + busy.Addr().String()}, nil, 2, "PARSE_MCP_HTTP_ADDR (or --http): cannot listen on " + busy.Addr().String() + ": address already in use", ""},
		{"metrics port in use", []string{"PARSE_MCP_METRICS_ADDR=" + busy.Addr().String()}, nil, 2, "PARSE_MCP_METRICS_ADDR: cannot listen on " + busy.Addr().String() + ": address already in use", ""},
		{"metrics on a public address", []string{"PARSE_MCP_METRICS_ADDR=0.0.0.0:0"}, nil, 2, "PARSE_MCP_METRICS_ADDR", ""},
		{"metrics on the MCP port", []string{"PARSE_MCP_HTTP_ADDR=127.0.0.1:18787", "PARSE_MCP_METRICS_ADDR=127.0.0.1:18787"}, nil, 2, "PARSE_MCP_METRICS_ADDR: is the MCP listener's address", ""},
		{"OTLP over gRPC", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, nil, 2, "OTEL_EXPORTER_OTLP_PROTOCOL", ""},
		{"demo dir is a file", []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + notDir}, []string{"--demo"}, 2, "configuration error: PARSE_MCP_DEMO_DIR: ", ""},
		{"demo dir under a file", []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + filepath.Join(notDir, "demo")}, []string{"--demo"}, 2, "configuration error: PARSE_MCP_DEMO_DIR: ", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary, c.args...)
			cmd.Env = append(env(), c.env...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != c.code {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, c.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.mention) {
				t.Fatalf("stderr does not mention %q: %s", c.mention, stderr.String())
			}
			if c.absent != "" && strings.Contains(stderr.String(), c.absent) {
				t.Fatalf("stderr says %q: %s", c.absent, stderr.String())
			}
			if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 {
				t.Fatalf("want one line on stderr, got %d: %s", len(lines), stderr.String())
			}
			if strings.Contains(stderr.String(), "s3cret") || strings.Contains(stderr.String(), "panic") {
				t.Fatalf("stderr leaks the password or panics: %s", stderr.String())
			}
			if stdout.Len() != 0 {
				t.Fatalf("stdout is not empty: %q", stdout.String())
			}
			// A ceiling against hanging, not a timing check: the database
			// connection gives up after parsedb.ConnectTimeout (8 s), which
			// the unreachable case's message states; a loaded machine may
			// take longer to start the process.
			if d := time.Since(start); d > 60*time.Second {
				t.Fatalf("took %v to fail", d)
			}
		})
	}
}

// TestPingWhileToolsAreBusy: a ping does not wait for tool calls. With one
// worker busy on a genuinely slow count (seconds) and 7 calls queued behind
// it, the ping is answered before any of them: the order of the answers is
// the proof, not a wall-clock limit.
func TestPingWhileToolsAreBusy(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_WORKERS=1")...)
	r.initialize()
	r.send(slowCount("slow-0", ""))
	for i := 1; i < 8; i++ {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"slow-%d","method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song","where":{"title":{"$regex":"a.*e.*i"}}}}}`, i))
	}
	start := time.Now()
	r.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	for {
		m := r.next()
		if m["id"] == nil {
			continue
		}
		if m["id"] != "ping" {
			t.Fatalf("%v answered before the ping: the ping waited for the tool calls", m["id"])
		}
		break
	}
	t.Logf("ping answered after %v with 8 tool calls in flight", time.Since(start))
	// Free the worker; the queued calls then answer.
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-0"}}`)
	for pending := 7; pending > 0; {
		if m := r.next(); m["id"] != nil {
			if m["id"] == "slow-0" {
				t.Fatalf("the cancelled count answered: %v", m)
			}
			pending--
		}
	}
}
