package e2e

// Protocol tests through the binary over stdio: progress
// (heartbeats, the tool's own units, ordering), cancellation (a genuinely
// slow query, cancel while queued), logging. HTTP variants are in
// http_test.go; resources and subscriptions in resources_test.go; prompts in
// prompts_test.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// The scratch app: the demo fixture again, under the collection prefix
// "proto_" in the test database, plus a class SlowScan: every query on it is
// slow by construction, because the scratch app's server reaches the
// database through the slow link (slowlink_test.go), which holds back each
// reply about SlowScan for slowDelay. Tests that write (subscriptions) or
// need a slow query use it, so the shared fixture other tests count on is
// never touched. It lives in the test database, so the harness drops it with
// it.
const scratchPrefix = "proto_"

// SlowScan: rows of random lowercase text without a digit; slowRegex never
// matches, so a count scans every row. On a real MongoDB that is what keeps
// the count in currentOp long enough for the cancellation checks (and what
// makes it slow where the slow link cannot proxy: TLS, SRV) — PCRE
// backtracks up to 60 steps at every position (a digit class, not a literal
// '9', so PCRE's required-character shortcut cannot skip the row). Elsewhere
// the slow link alone makes the calls slow. The rows stay large everywhere:
// TestProgressOwnUnits needs query_class to spend more than a progress tick
// on them after the (delayed) reply.
const (
	slowClass = "SlowScan"
	slowRegex = "[a-y ]{1,60}[0-9]"
	slowBody  = 16 << 10
)

// slowRows is the SlowScan row count: more rows than one batch of
// query_class everywhere; many on a real MongoDB (currentOp).
func slowRows() int {
	if realMongo {
		return 8000
	}
	return 400
}

var scratch struct {
	once sync.Once
	err  error
}

// scratchEnv seeds the scratch app once and returns the environment that
// points a server at it (with the demo policy, so VaultSecret is hidden and
// Song has its canonical filter).
func scratchEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	scratch.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if scratch.err = demo.ForceSeed(ctx, testDB, scratchPrefix); scratch.err != nil {
			return
		}
		scratch.err = seedSlowScan(ctx, testDB)
	})
	if scratch.err != nil {
		t.Fatalf("seeding the scratch app: %v", scratch.err)
	}
	return append([]string{"PARSE_MCP_MONGODB_URI=" + slowLinkURI, "PARSE_MCP_COLLECTION_PREFIX=" + scratchPrefix, policyFile(t, "demo")}, extra...)
}

func seedSlowScan(ctx context.Context, db *mongo.Database) error {
	if _, err := db.Collection(scratchPrefix+"_SCHEMA").InsertOne(ctx, bson.D{
		{Key: "_id", Value: slowClass}, {Key: "objectId", Value: "string"}, {Key: "createdAt", Value: "date"},
		{Key: "updatedAt", Value: "date"}, {Key: "body", Value: "string"}, {Key: "n", Value: "number"},
	}); err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(5))
	const letters = "abcdefghijklmnopqrstuvwxy "
	coll := db.Collection(scratchPrefix + slowClass)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var batch []any
	for i := 0; i < slowRows(); i++ {
		b := make([]byte, slowBody)
		for j := range b {
			b[j] = letters[rng.Intn(len(letters))]
		}
		ts := bson.NewDateTimeFromTime(now.Add(time.Duration(i) * time.Minute))
		batch = append(batch, bson.D{{Key: "_id", Value: fmt.Sprintf("slow%06d", i)}, {Key: "_created_at", Value: ts},
			{Key: "_updated_at", Value: ts}, {Key: "body", Value: string(b)}, {Key: "n", Value: i}})
		if len(batch) == 100 {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	if len(batch) > 0 {
		_, err := coll.InsertMany(ctx, batch)
		return err
	}
	return nil
}

// slowCount is a tools/call line for a count that scans every SlowScan row.
func slowCount(id string, meta string) string {
	if meta != "" {
		meta = `,"_meta":` + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":%q,"where":{"body":{"$regex":%q}}}%s}}`, id, slowClass, slowRegex, meta)
}

// collect reads messages until the response with id arrives (or the
// deadline passes), returning the notifications seen before it and the
// response (nil on timeout).
func (r *rawServer) collect(id string, within time.Duration) (notes []map[string]any, resp map[string]any) {
	r.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("server closed stdout")
			}
			m := decodeLine(r.t, line)
			if m["method"] != nil && m["id"] == nil {
				notes = append(notes, m)
				continue
			}
			if fmt.Sprint(m["id"]) == id {
				return notes, m
			}
			r.t.Fatalf("unexpected message while waiting for %s: %v", id, m)
		case <-deadline:
			return notes, nil
		}
	}
}

// awaitProgress reads messages until a progress notification for token
// arrives (a running call's heartbeat); any response first is a failure.
func (r *rawServer) awaitProgress(token string, within time.Duration) {
	r.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("server closed stdout")
			}
			m := decodeLine(r.t, line)
			if m["method"] == "notifications/progress" && params(m)["progressToken"] == token {
				return
			}
			if m["id"] != nil {
				r.t.Fatalf("a response while waiting for progress on %s: %v", token, m)
			}
		case <-deadline:
			r.t.Fatalf("no progress notification for %s within %v", token, within)
		}
	}
}

// awaitStderr polls the server's stderr until one line contains every part
// of want: an event the server logs, with a ceiling for a loaded machine.
func (r *rawServer) awaitStderr(within time.Duration, want ...string) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		for line := range strings.Lines(r.stderr.String()) {
			if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(line, w) }) {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("stderr has no line with %q within %v:\n%s", want, within, r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quiet asserts that no message at all arrives for d.
func (r *rawServer) quiet(d time.Duration) {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if ok {
			r.t.Fatalf("unexpected message: %s", line)
		}
	case <-time.After(d):
	}
}

func decodeLine(t testing.TB, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
		t.Fatalf("stdout line is not JSON-RPC: %q", line)
	}
	return m
}

func params(m map[string]any) map[string]any {
	p, _ := m["params"].(map[string]any)
	return p
}

// TestProgressHeartbeats: a slow call with a progress token sends nothing
// during the first PARSE_MCP_PROGRESS_INTERVAL, then elapsed-time heartbeats
// (progress = seconds elapsed, message stating that number, no total), all
// before its response.
func TestProgressHeartbeats(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=300ms")...)
	r.initialize()
	r.send(slowCount("hb", `{"progressToken":"hb-token"}`))
	// Wait for 4 heartbeats (the count takes seconds; the ceiling is
	// generous), then cancel: no response follows, so the ping after the
	// cancel collects whatever else was sent.
	var notes []map[string]any
	for beats := 0; beats < 4; {
		m := r.next()
		if m["id"] != nil {
			t.Fatalf("the slow count answered before 4 heartbeats: %v", m)
		}
		notes = append(notes, m)
		if m["method"] == "notifications/progress" {
			beats++
		}
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"hb","reason":"test"}}`)
	r.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	more, resp := r.collect("after", 30*time.Second)
	if resp == nil || resp["result"] == nil {
		t.Fatalf("ping after cancel: %v", resp)
	}
	notes = append(notes, more...)
	last := 0.0
	beats := 0
	for _, n := range notes {
		if n["method"] != "notifications/progress" {
			continue
		}
		p := params(n)
		if p["progressToken"] != "hb-token" {
			t.Fatalf("progress with token %v", p["progressToken"])
		}
		v := p["progress"].(float64)
		if v <= last {
			t.Fatalf("progress %v after %v: must increase", v, last)
		}
		if v < 0.3 {
			t.Fatalf("progress %v: nothing may be sent within the first interval", v)
		}
		last = v
		if want := fmt.Sprintf("count_objects running for %.1f s", v); p["message"] != want {
			t.Fatalf("heartbeat message %q, want %q", p["message"], want)
		}
		if _, ok := p["total"]; ok {
			t.Fatalf("heartbeat with a total: %v", p)
		}
		beats++
	}
	// Never more often than the interval: by the time the last heartbeat
	// reported `last` seconds, at most last/0.3 intervals had passed (a
	// loaded machine only delays them).
	t.Logf("%d heartbeats in %.1f s at 300ms", beats, last)
	if beats < 4 || float64(beats) > last/0.3+0.5 {
		t.Fatalf("%d heartbeats in %.1f s at a 300ms interval", beats, last)
	}
}

// TestProgressOwnUnits: a call faster than the interval sends nothing; a
// longer query_class reports its own units (rows read, of the limit) on the
// ticks after the first interval: values keep increasing, each message states
// its number, no heartbeat follows own units, and everything precedes the
// response.
func TestProgressOwnUnits(t *testing.T) {
	// The default interval (2 s) is far longer than this call: silence.
	quiet := startRaw(t)
	quiet.initialize()
	quiet.send(`{"jsonrpc":"2.0","id":"quick","method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"},"_meta":{"progressToken":"quick"}}}`)
	if notes, resp := quiet.collect("quick", 30*time.Second); resp == nil || len(notes) != 0 {
		t.Fatalf("a call within the first interval: notes %v, resp %v", notes, resp)
	}

	r := startRaw(t, scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=100ms")...)
	r.initialize()
	ownSeen := 0
	for round := range 3 {
		id := fmt.Sprintf("rows-%d", round)
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"query_class","arguments":{"class_name":%q,"limit":1000,"keys":["body"],"format":"csv"},"_meta":{"progressToken":%q}}}`, id, slowClass, id))
		notes, resp := r.collect(id, 60*time.Second)
		if resp == nil || resp["result"] == nil {
			t.Fatalf("query_class: %v", resp)
		}
		last, own := 0.0, false
		for _, n := range notes {
			p := params(n)
			if n["method"] != "notifications/progress" || p["progressToken"] != id {
				t.Fatalf("unexpected notification %v", n)
			}
			v := p["progress"].(float64)
			if v <= last {
				t.Fatalf("progress %v after %v", v, last)
			}
			last = v
			msg, _ := p["message"].(string)
			switch {
			case strings.HasSuffix(msg, "rows read"):
				own = true
				ownSeen++
				if p["total"] != 1000.0 || msg != fmt.Sprintf("%v rows read", v) {
					t.Fatalf("own-unit notification %v", p)
				}
			case own:
				t.Fatalf("heartbeat %v after the tool reported its own units", p)
			case msg != fmt.Sprintf("query_class running for %.1f s", v):
				t.Fatalf("heartbeat %v", p)
			}
		}
		t.Logf("round %d: %d notifications", round, len(notes))
	}
	if ownSeen == 0 {
		t.Fatalf("no own-unit notification in 3 slow queries at a 100ms interval")
	}
}

// TestCancelSlowQuery: notifications/cancelled stops a genuinely slow count
// (a regex over every SlowScan row): the call never answers (not even
// -32603), the server answers the next call at once, and on a real MongoDB
// the operation is gone from currentOp.
func TestCancelSlowQuery(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=100ms")...)
	r.initialize()
	// Event-based: the first progress heartbeat says the count is running.
	r.send(slowCount("slow", `{"progressToken":"slow"}`))
	r.awaitProgress("slow", 30*time.Second)
	if realMongo {
		// And on a real MongoDB the count is in currentOp before the cancel
		// (a generous ceiling for a loaded machine).
		deadline := time.Now().Add(30 * time.Second)
		for !opRunning(t, slowClass) {
			if time.Now().After(deadline) {
				t.Fatal("the slow count is not in currentOp 30 s after it was sent")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cancelled := time.Now()
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user gave up"}}`)
	r.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	if _, resp := r.collect("ping", 5*time.Second); resp == nil {
		t.Fatal("no ping answer after the cancel")
	}
	t.Logf("ping answered %v after the cancel", time.Since(cancelled))
	start := time.Now()
	r.send(`{"jsonrpc":"2.0","id":"next","method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"}}}`)
	_, resp := r.collect("next", 10*time.Second)
	if resp == nil || resp["result"] == nil {
		t.Fatalf("next call: %v", resp)
	}
	// The next call answers (a ping and this count did not wait for the
	// cancelled scan: the worker pool is not blocked by it). No wall-clock
	// limit: FerretDB (no killOp) may still finish the abandoned SQLite scan
	// on another core, which only slows a loaded machine down.
	t.Logf("next count answered in %v", time.Since(start))
	if realMongo {
		// Event-based: poll currentOp until the operation is gone, with a
		// generous ceiling for a loaded machine.
		deadline := time.Now().Add(30 * time.Second)
		for opRunning(t, slowClass) {
			if time.Now().After(deadline) {
				t.Fatal("the cancelled count is still in currentOp 30 s after the cancel")
			}
			time.Sleep(100 * time.Millisecond)
		}
	} else {
		t.Log("FerretDB: no currentOp; checked that the call ended and the server stays responsive")
	}
	// The cancelled request never gets an answer.
	r.quiet(2 * time.Second)
}

// opRunning reports whether a command on the scratch class is in currentOp.
func opRunning(t testing.TB, class string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var res struct {
		Inprog []bson.M `bson:"inprog"`
	}
	err := testDB.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: dbName + "." + scratchPrefix + class}}).Decode(&res)
	if err != nil {
		t.Fatalf("currentOp: %v", err)
	}
	return len(res.Inprog) > 0
}

// TestCancelWhileQueued: with one worker, a second call waits in the queue;
// cancelling it there means it never runs (no tool_call audit event) and
// never answers.
func TestCancelWhileQueued(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_WORKERS=1", "PARSE_MCP_LOG_LEVEL=debug", "PARSE_MCP_PROGRESS_INTERVAL=100ms")...)
	r.initialize()
	// Each step waits for the event it depends on, never for a time: the
	// busy call holds the only worker (its first heartbeat), the second call
	// is queued (the dispatcher's debug event), the cancel reached it while
	// queued (the next debug event).
	r.send(slowCount("busy", `{"progressToken":"busy"}`))
	r.awaitProgress("busy", 30*time.Second)
	r.send(`{"jsonrpc":"2.0","id":"queued","method":"tools/call","params":{"name":"get_schema","arguments":{"class_name":"Song"}}}`)
	r.awaitStderr(30*time.Second, `"request_id":"queued"`, `"message":"tool call queued: every worker is busy"`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"queued"}}`)
	r.awaitStderr(30*time.Second, `"request_id":"queued"`, `"message":"tool call cancelled while queued"`)
	// Free the worker.
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"busy"}}`)
	r.send(`{"jsonrpc":"2.0","id":"next","method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song"}}}`)
	_, resp := r.collect("next", 15*time.Second)
	if resp == nil || resp["result"] == nil {
		t.Fatalf("next call: %v", resp)
	}
	r.quiet(1500 * time.Millisecond)
	logs := r.stderr.String()
	if strings.Contains(logs, `"tool":"get_schema"`) {
		t.Fatalf("the call cancelled while queued ran anyway:\n%s", logs)
	}
	if !strings.Contains(logs, `"tool":"count_objects"`) {
		t.Fatalf("audit events missing from stderr:\n%s", logs)
	}
}

// TestLoggingSetLevel: no notifications/message until the client picks a
// level; then operator events (here: a timeout-free denial of a hidden
// class) arrive before the response, without row data or argument values.
func TestLoggingSetLevel(t *testing.T) {
	r := startRaw(t, scratchEnv(t)...)
	r.initialize()
	// A refused security violation is a logged denial (a hidden class is
	// answered like a missing one and is not logged).
	hidden := `{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song","where":{"$where":"secret-value"}}}}`
	r.send(fmt.Sprintf(hidden, "before"))
	notes, resp := r.collect("before", 10*time.Second)
	if resp == nil || len(notes) != 0 {
		t.Fatalf("before setLevel: notes %v, resp %v", notes, resp)
	}
	r.send(`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"info"}}`)
	if _, resp := r.collect("lvl", 5*time.Second); resp == nil || resp["result"] == nil {
		t.Fatalf("logging/setLevel: %v", resp)
	}
	r.send(fmt.Sprintf(hidden, "after"))
	notes, resp = r.collect("after", 10*time.Second)
	if resp == nil || len(notes) != 1 || notes[0]["method"] != "notifications/message" {
		t.Fatalf("after setLevel: notes %v, resp %v", notes, resp)
	}
	p := params(notes[0])
	b, _ := json.Marshal(p)
	if p["level"] != "warning" || !strings.Contains(string(b), `"error_code":"security_violation"`) || strings.Contains(string(b), "secret-value") {
		t.Fatalf("log message %s", b)
	}
	r.send(`{"jsonrpc":"2.0","id":"bad","method":"logging/setLevel","params":{"level":"loud"}}`)
	if _, resp := r.collect("bad", 5*time.Second); resp == nil || resp["error"].(map[string]any)["code"] != float64(-32602) {
		t.Fatalf("bad level: %v", resp)
	}
}
