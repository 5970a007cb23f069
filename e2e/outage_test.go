package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
)

// TestDatabaseOutage stops the database under a live stdio session and a
// live HTTP server, then restarts it. During the outage a read answers
// unavailable ("the database is unreachable … try again shortly"), never an
// internal error or the timeout's advice to narrow the filter, and HTTP
// /health says the database is down (503); after the restart the first call
// succeeds (a stale pooled connection is retried once, on a fresh one) and
// /health is ok again. The test runs its own embedded FerretDB on a fixed
// port (a database it may stop), with a real MongoDB configured or not.
func TestDatabaseOutage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	db, err := embeddeddb.StartAt(dir, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	running := true
	t.Cleanup(func() {
		if running {
			db.Stop()
		}
	})
	uri := "mongodb://" + addr + "/outage"
	seedDatabase(t, db.URI, "outage")

	env := []string{"PARSE_MCP_MONGODB_URI=" + uri, "PARSE_MCP_LOG_LEVEL=info"}
	r := startRaw(t, env...)
	r.initialize()
	h := startHTTP(t, env...)
	count := func(id string) map[string]any {
		t.Helper()
		resp := aggRPC(r, id, "count_objects", `{"class_name":"Song"}`)
		return obj(resp["result"])
	}
	health := func() (int, string) {
		t.Helper()
		resp, b := h.request("GET", "/health", "", nil)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if res := count("before"); res["isError"] == true {
		t.Fatalf("before the outage: %v", res)
	}
	if code, body := health(); code != 200 || body != `{"status":"ok","database":"ok"}` {
		t.Fatalf("/health before the outage: %d %s", code, body)
	}

	db.Stop()
	running = false
	for _, id := range []string{"down-1", "down-2"} {
		res := count(id)
		meta := obj(res["_meta"])
		text := fmt.Sprint(obj(list(res["content"])[0])["text"])
		if res["isError"] != true || meta["parse.error_code"] != "unavailable" || meta["parse.retry_after"] == nil {
			t.Fatalf("%s during the outage: %v", id, res)
		}
		if !strings.Contains(text, "the database is unreachable") || !strings.Contains(text, "try again shortly") ||
			strings.Contains(text, "internal error") || strings.Contains(text, "narrow the filter") {
			t.Fatalf("%s during the outage says: %s", id, text)
		}
	}
	if code, body := health(); code != 503 || body != `{"status":"unavailable","database":"unreachable"}` {
		t.Fatalf("/health during the outage: %d %s", code, body)
	}

	db, err = embeddeddb.StartAt(dir, addr, nil)
	if err != nil {
		t.Fatalf("restarting the database on %s: %v", addr, err)
	}
	running = true
	if res := count("after"); res["isError"] == true {
		t.Fatalf("first call after the restart: %v\nstderr:\n%s", res, r.stderr.String())
	}
	if code, body := health(); code != 200 {
		t.Fatalf("/health after the restart: %d %s", code, body)
	}
	if strings.Contains(r.stderr.String(), "panic") {
		t.Fatalf("stderr:\n%s", r.stderr.String())
	}
}

// seedDatabase loads the demo fixtures into database name at uri.
func seedDatabase(t testing.TB, uri, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	if err := demo.ForceSeed(ctx, cl.Database(name), ""); err != nil {
		t.Fatalf("seeding: %v", err)
	}
}
