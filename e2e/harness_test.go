// Package e2e runs the real parse-mcp binary over stdio and HTTP against a
// MongoDB-compatible server loaded with Parse-format fixtures. The engine:
//
//   - a real MongoDB when PARSE_MCP_TEST_MONGODB_URI is set;
//   - else, with PARSE_MCP_TEST_ENGINE=documentdb (`make test-engine2`), the
//     second engine of internal/enginetest: FerretDB 2.7 on PostgreSQL 18 +
//     DocumentDB, which runs expressions, $lookup, $facet, nested arrays,
//     $text and $vectorSearch but has no explain plans, currentOp or change
//     streams;
//   - else (PARSE_MCP_TEST_ENGINE unset or "ferretdb") the embedded FerretDB
//     1.24, the demo's engine.
//
// `make test` runs the suite twice: on FerretDB 1.24 (go test ./...) and on
// the second engine. On a shared server the test database gets a unique
// name and is dropped at the end.
//
// Skips that remain, by engine. FerretDB 1.24: TestAggregateLookup
// ($lookup: it checks the clear invalid_query answer, then skips naming the
// feature), TestGroupFallbackEqualsPipeline (the pipeline side needs
// $dateToString, $avg, $min, $max) and TestTrustSubPipelineNestedUnwind
// (nested arrays, $lookup/$facet/$unionWith). Second engine: none;
// it has no explain plans (a PostgreSQL plan instead of a winningPlan), so
// TestExplainQuery and TestPolicyCollscanFailsClosed check the no-plan
// answers there, and the
// currentOp checks of TestCancelSlowQuery run on a real MongoDB only (the
// slow link keeps the call waiting, not the server). Real MongoDB:
// TestPolicyCollscanFailsClosed (MongoDB gives a plan, so the fail-closed
// path cannot be reached). Anywhere: TestMakeDemo without make, the /proc
// memory benchmarks without /proc.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
	"github.com/parse-mcp/parse-mcp/internal/enginetest"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// ProtocolVersion is pinned so the client uses the initialize handshake, as
// Claude Desktop and MCP Inspector do.
const ProtocolVersion = "2025-06-18"

// buildTags and buildEnv are the Makefile's BUILD_TAGS and BUILD_ENV: the
// binary under test is the one `make build` produces (TestBuildTagsAsMakefile).
const (
	buildTags = "ferretdb_no_postgresql"
	buildEnv  = "CGO_ENABLED=0"
)

// The engines the suite runs on (PARSE_MCP_TEST_ENGINE, or "mongodb" when
// PARSE_MCP_TEST_MONGODB_URI is set).
const (
	engineFerretDB   = "ferretdb"   // embedded FerretDB 1.24 (SQLite)
	engineDocumentDB = "documentdb" // FerretDB 2.7 on PostgreSQL + DocumentDB (internal/enginetest)
	engineMongoDB    = "mongodb"    // a real MongoDB
)

var (
	binary   string // the built parse-mcp
	mongoURI string // connection string including the test database
	dbName   string
	engine   string // one of the engine* constants
	// realMongo: a real MongoDB (explain plans, currentOp, killOp).
	realMongo bool
	// ferretDB1: the embedded FerretDB 1.24, which lacks expressions,
	// $lookup, most accumulators, nested arrays …
	ferretDB1 bool
	testDB    *mongo.Database
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "parse-mcp-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)

	binary = filepath.Join(tmp, "parse-mcp")
	build := exec.Command("go", "build", "-tags", buildTags, "-o", binary, "..")
	build.Env = append(os.Environ(), buildEnv)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building parse-mcp:", err)
		return 1
	}

	base := os.Getenv("PARSE_MCP_TEST_MONGODB_URI")
	dbName = fmt.Sprintf("parse_mcp_e2e_%d", os.Getpid())
	switch engine = os.Getenv("PARSE_MCP_TEST_ENGINE"); {
	case base != "":
		engine = engineMongoDB
	case engine == engineDocumentDB:
		if base, err = enginetest.Acquire(context.Background()); err != nil {
			if enginetest.IsUnavailable(err) && os.Getenv(enginetest.EnvRequire) == "" {
				fmt.Fprintf(os.Stderr, "skipping the e2e suite on the second engine: %v\n", err)
				return 0
			}
			fmt.Fprintln(os.Stderr, "starting the second engine:", err)
			return 1
		}
		defer enginetest.Release()
	case engine == "" || engine == engineFerretDB:
		engine = engineFerretDB
		srv, err := embeddeddb.Start(filepath.Join(tmp, "db"), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting embedded FerretDB:", err)
			return 1
		}
		defer srv.Stop()
		base = srv.URI
	default:
		fmt.Fprintf(os.Stderr, "PARSE_MCP_TEST_ENGINE=%q: want %q or %q\n", engine, engineFerretDB, engineDocumentDB)
		return 1
	}
	realMongo, ferretDB1 = engine == engineMongoDB, engine == engineFerretDB
	fmt.Fprintf(os.Stderr, "e2e: engine %s\n", engine)
	u, err := url.Parse(base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "PARSE_MCP_TEST_MONGODB_URI:", err)
		return 1
	}
	u.Path = "/" + dbName
	mongoURI = u.String()
	if slowLinkURI, err = startSlowLink(base, dbName); err != nil {
		fmt.Fprintln(os.Stderr, "starting the slow link:", err)
		return 1
	} else if slowLinkURI == "" {
		slowLinkURI = mongoURI
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := mongo.Connect(options.Client().ApplyURI(base))
	if err != nil {
		fmt.Fprintln(os.Stderr, "connecting:", err)
		return 1
	}
	defer cl.Disconnect(context.Background())
	testDB = cl.Database(dbName)
	if err := demo.ForceSeed(ctx, testDB, ""); err != nil {
		fmt.Fprintln(os.Stderr, "seeding fixtures:", err)
		return 1
	}
	if !ferretDB1 {
		defer testDB.Drop(context.Background())
	}
	return m.Run()
}

// env is the environment for a spawned server: the test database plus extra
// settings. The parent's PARSE_MCP_*, PARSE_AGENT_*, LLM_* (chat) and OTEL_*
// (telemetry) variables are not inherited, so tests are hermetic.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PARSE_MCP_") || strings.HasPrefix(kv, "PARSE_AGENT_") || strings.HasPrefix(kv, "LLM_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "PARSE_MCP_MONGODB_URI="+mongoURI, "PARSE_MCP_LOG_LEVEL=warn")
	return append(out, extra...)
}

// stdioClient spawns the binary and returns an initialized MCP client.
func stdioClient(t testing.TB, extraEnv ...string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClientWithOptions(binary, env(extraEnv...), nil,
		transport.WithCommandStderrWriter(&testWriter{t: t}))
	if err != nil {
		t.Fatalf("spawning parse-mcp: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c2 := client.NewClient(c.GetTransport(), client.WithProtocolVersion(ProtocolVersion))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := c2.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      mcp.Implementation{Name: "parse-mcp-e2e", Version: "1"},
	}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c2
}

// testWriter forwards the server's stderr to the test log, line by line,
// only when the test is verbose or fails.
type testWriter struct {
	t  testing.TB
	mu sync.Mutex
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() { _ = recover() }() // the test may have finished
	w.t.Logf("server: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// call runs a tool and returns its result (failing the test on a protocol error).
func call(t testing.TB, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// callOK runs a tool that must succeed and decodes its structured result.
func callOK(t testing.TB, c *client.Client, tool string, args map[string]any) map[string]any {
	t.Helper()
	res := call(t, c, tool, args)
	if res.IsError {
		t.Fatalf("%s returned an error: %s", tool, text(res))
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text(res)), &out); err != nil {
		t.Fatalf("%s: result is not a JSON object: %v\n%s", tool, err, text(res))
	}
	return out
}

// callErr runs a tool that must fail with the given parse.error_code.
func callErr(t testing.TB, c *client.Client, tool string, args map[string]any, code string) string {
	t.Helper()
	res := call(t, c, tool, args)
	if !res.IsError {
		t.Fatalf("%s succeeded, want error %s: %s", tool, code, text(res))
	}
	got := ""
	if res.Meta != nil {
		got, _ = res.Meta.AdditionalFields["parse.error_code"].(string)
	}
	if got != code {
		t.Fatalf("%s: error code %q, want %q (%s)", tool, got, code, text(res))
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// rawServer is the binary with raw pipes, for protocol-level tests that a
// well-behaved client library cannot express (malformed lines, ordering).
type rawServer struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *parsetest.SyncBuffer
	done   chan error
}

func startRaw(t testing.TB, extraEnv ...string) *rawServer {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = env(extraEnv...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &parsetest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawServer{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1024), stderr: stderr, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return r
}

func (r *rawServer) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("writing to server: %v", err)
	}
}

// next returns the next stdout line as a decoded JSON object; every stdout
// line must be JSON-RPC.
func (r *rawServer) next() map[string]any {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("server closed stdout")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
			r.t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		return m
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no message from server within 30s")
	}
	return nil
}

// initialize performs the handshake on a raw server.
func (r *rawServer) initialize() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + ProtocolVersion + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.next(); m["id"] != "init" || m["result"] == nil {
		r.t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}
