package limits

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
	"github.com/parse-mcp/parse-mcp/internal/enginetest"
)

// testDB is a database on the engine PARSE_MCP_TEST_ENGINE names: the
// embedded FerretDB 1.24 (default) or the second engine ("documentdb").
// stop, non-nil on FerretDB 1.24, stops the server and returns a restart.
func testDB(t testing.TB) (db *mongo.Database, stop func() (restart func())) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping under -short: needs a database")
	}
	var uri string
	if os.Getenv("PARSE_MCP_TEST_ENGINE") == "documentdb" {
		uri = enginetest.DatabaseURI(t)
	} else {
		dir := filepath.Join(t.TempDir(), "db")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		srv, err := embeddeddb.StartAt(dir, addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		running := &srv
		t.Cleanup(func() {
			if *running != nil {
				(*running).Stop()
			}
		})
		uri = "mongodb://" + addr + "/limits"
		stop = func() func() {
			(*running).Stop()
			*running = nil
			return func() {
				s, err := embeddeddb.StartAt(dir, addr, nil)
				if err != nil {
					t.Fatal(err)
				}
				*running = s
			}
		}
	}
	cl, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Disconnect(context.Background()) })
	name, _, _ := strings.Cut(uri[strings.LastIndex(uri, "/")+1:], "?")
	return cl.Database(name), stop
}

// stores are the two implementations, the Mongo ones as separate
// "processes" sharing one collection.
func mongoStores(t testing.TB, db *mongo.Database, n int, log zerolog.Logger) []Store {
	var out []Store
	for range n {
		out = append(out, NewMongo(db.Collection(Collection), "app", log, "mongodb://127.0.0.1/limits", ""))
	}
	return out
}

// TestStoreSemantics: both stores allow Limit calls per window, refuse the
// next naming the full bucket with a wait inside the window, and a refused
// call uses no room in any bucket (a client over its own limit cannot fill
// the process's bucket).
func TestStoreSemantics(t *testing.T) {
	db, _ := testDB(t)
	for name, s := range map[string]Store{"memory": NewMemory(), "mongodb": mongoStores(t, db, 1, zerolog.Nop())[0]} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			// Far from a window boundary, so the fixed window does not roll.
			now := time.Unix(1_000_020, 0)
			process := Bucket{Key: "process", Limit: 5, Window: time.Minute}
			a := []Bucket{{Key: "client:a", Limit: 2, Window: time.Minute}, process}
			b := []Bucket{{Key: "client:b", Limit: 2, Window: time.Minute}, process}
			for i := range 2 {
				if full, _ := s.Full(ctx, now, a[0]); full {
					t.Fatalf("a's bucket full after %d calls", i)
				}
				if r, _ := s.Hit(ctx, now, a); r != -1 {
					t.Fatalf("a's call %d refused by %d", i, r)
				}
			}
			// Full only reads: asked again and again, it counts nothing.
			for range 3 {
				if full, wait := s.Full(ctx, now, a[0]); !full || wait <= 0 || wait > time.Minute {
					t.Fatalf("a's bucket after 2 of 2: full %v, wait %v", full, wait)
				}
			}
			if full, _ := s.Full(ctx, now, Bucket{Key: "client:untouched", Limit: 1, Window: time.Minute}); full {
				t.Fatal("an untouched bucket is full")
			}
			for i := range 10 {
				r, wait := s.Hit(ctx, now, a)
				if r != 0 || wait <= 0 || wait > time.Minute {
					t.Fatalf("a's extra call %d: refused by %d, wait %v", i, r, wait)
				}
			}
			// a's refused calls used none of the process's 5: b gets 2,
			// then the process has 1 left for c.
			for i := range 2 {
				if r, _ := s.Hit(ctx, now, b); r != -1 {
					t.Fatalf("b's call %d refused by %d", i, r)
				}
			}
			c := []Bucket{{Key: "client:c", Limit: 3, Window: time.Minute}, process}
			if r, _ := s.Hit(ctx, now, c); r != -1 {
				t.Fatalf("c's first call refused by %d", r)
			}
			if r, _ := s.Hit(ctx, now, c); r != 1 {
				t.Fatalf("c's second call: refused by %d, want the process's bucket (1)", r)
			}
			// A disabled bucket counts nothing.
			if r, _ := s.Hit(ctx, now, []Bucket{{Key: "off", Limit: 0, Window: time.Minute}}); r != -1 {
				t.Fatal("a disabled bucket refused")
			}
			// The next window has room again.
			if r, _ := s.Hit(ctx, now.Add(time.Minute), a); r != -1 {
				t.Fatalf("next window refused by %d", r)
			}
		})
	}
}

// TestMongoOneLimitAcrossProcesses: four stores ("processes") counting one
// bucket allow exactly Limit calls in the window together, taking turns and
// (where the engine's updates are atomic) all at once.
func TestMongoOneLimitAcrossProcesses(t *testing.T) {
	db, stop := testDB(t)
	stores := mongoStores(t, db, 4, zerolog.Nop())
	process := Bucket{Key: "process", Limit: 1000, Window: time.Minute}
	check := func(t *testing.T, now time.Time, client Bucket, allowed int64) {
		t.Helper()
		if allowed != int64(client.Limit) {
			t.Fatalf("allowed %d calls across 4 processes, want exactly %d", allowed, client.Limit)
		}
		var doc struct {
			N int `bson:"n"`
		}
		id := stores[0].(*Mongo).doc(process, now).id
		if err := db.Collection(Collection).FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil || doc.N != client.Limit {
			t.Fatalf("the process group's window holds %d (%v), want %d: refused calls must use none", doc.N, err, client.Limit)
		}
	}
	t.Run("taking turns", func(t *testing.T) {
		now := time.Unix(2_000_010, 0)
		client := Bucket{Key: "client:turns", Limit: 25, Window: time.Minute}
		var allowed int64
		for i := range 60 {
			if r, _ := stores[i%len(stores)].Hit(context.Background(), now, []Bucket{client, process}); r == -1 {
				allowed++
			}
		}
		check(t, now, client, allowed)
	})
	t.Run("at once", func(t *testing.T) {
		if stop != nil {
			// Measured: 180 concurrent conditional $inc on one document
			// leave n = 17 with 175 "successes" on FerretDB 1.24.
			t.Skip("FerretDB 1.x loses concurrent updates of one document ($inc is read-modify-write there): docs/transports.md \"Behind a load balancer\" states it")
		}
		now := time.Unix(3_000_010, 0)
		client := Bucket{Key: "client:burst", Limit: 25, Window: time.Minute}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for _, s := range stores {
			for range 3 {
				wg.Go(func() {
					for range 15 {
						if r, _ := s.Hit(context.Background(), now, []Bucket{client, process}); r == -1 {
							allowed.Add(1)
						}
					}
				})
			}
		}
		wg.Wait()
		check(t, now, client, allowed.Load())
	})
}

// TestMongoFailsClosed: with the store down every call is refused like a
// real limit with retry_after in 1–5 s, the operator is told why (without
// the password), and calls are counted again once it is back.
func TestMongoFailsClosed(t *testing.T) {
	db, stop := testDB(t)
	if stop == nil {
		t.Skip("the shared second engine cannot be stopped here; the e2e test stops a relay in front of it")
	}
	var logs bytes.Buffer
	s := NewMongo(db.Collection(Collection), "app", zerolog.New(&syncWriter{w: &logs}), "mongodb://user@127.0.0.1/limits", "s3cret-pw")
	buckets := []Bucket{{Key: "client:x", Limit: 100, Window: time.Minute}}
	if r, _ := s.Hit(context.Background(), time.Now(), buckets); r != -1 {
		t.Fatal("refused while up")
	}
	restart := stop()
	if full, wait := s.Full(context.Background(), time.Now(), buckets[0]); !full || wait < time.Second {
		t.Fatalf("Full with the store down: %v, wait %v; want full (fail closed)", full, wait)
	}
	for i := range 5 {
		r, wait := s.Hit(context.Background(), time.Now(), buckets)
		if r != 0 || wait < time.Second || wait > 5*time.Second {
			t.Fatalf("call %d with the store down: refused %d, wait %v; want refused with 1–5 s", i, r, wait)
		}
	}
	restart()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r, _ := s.Hit(context.Background(), time.Now(), buckets); r == -1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no recovery within 30 s of the restart")
		}
		time.Sleep(200 * time.Millisecond)
	}
	out := logs.String()
	if !strings.Contains(out, "rate limits store unavailable") || !strings.Contains(out, "available again") || !strings.Contains(out, `"cause"`) {
		t.Fatalf("log:\n%s", out)
	}
	if strings.Contains(out, "s3cret-pw") {
		t.Fatalf("the password is in the log:\n%s", out)
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// BenchmarkHit compares one allowed check (session, client and process
// buckets) in the MongoDB store with the in-memory one, in one run:
// go test -run XXX -bench Hit ./internal/limits/ (and with
// PARSE_MCP_TEST_ENGINE=documentdb).
func BenchmarkHit(b *testing.B) {
	db, _ := testDB(b)
	buckets := func(i int) []Bucket {
		return []Bucket{
			{Key: fmt.Sprint("session:", i%64), Limit: 1 << 30, Window: time.Minute},
			{Key: fmt.Sprint("client:", i%16), Limit: 1 << 30, Window: time.Minute},
			{Key: "process", Limit: 1 << 30, Window: time.Minute},
		}
	}
	ctx := context.Background()
	run := func(s Store) time.Duration {
		start := time.Now()
		for i := range b.N {
			if r, _ := s.Hit(ctx, time.Now(), buckets(i)); r != -1 {
				b.Fatal("refused")
			}
		}
		return time.Since(start) / time.Duration(b.N)
	}
	mem := run(NewMemory())
	mg := run(mongoStores(b, db, 1, zerolog.Nop())[0])
	// For scale: one plain single-document upsert on the same engine.
	start := time.Now()
	for i := range b.N {
		if _, err := db.Collection("bench_write").UpdateOne(ctx, bson.D{{Key: "_id", Value: i % 64}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetUpsert(true)); err != nil {
			b.Fatal(err)
		}
	}
	write := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(mem.Nanoseconds()), "memory-ns/check")
	b.ReportMetric(float64(mg.Nanoseconds()), "mongodb-ns/check")
	b.ReportMetric(float64(write.Nanoseconds()), "one-upsert-ns")
	b.ReportMetric(float64(mg)/float64(max(mem, 1)), "mongodb/memory")
}

// TestMemorySlidingWindow: the in-memory store is a sliding log per bucket:
// a call leaves the window Window after it was allowed, refused calls free
// nothing, and idle buckets are dropped.
func TestMemorySlidingWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewMemory()
	hit := func(key string) (time.Duration, bool) {
		r, wait := m.Hit(context.Background(), now, []Bucket{{Key: key, Limit: 3, Window: 10 * time.Second}})
		return wait, r < 0
	}
	for range 3 {
		if _, ok := hit("a"); !ok {
			t.Fatal("refused early")
		}
		now = now.Add(time.Second)
	}
	if wait, ok := hit("a"); ok || wait != 7*time.Second {
		t.Fatalf("4th: %v %v", wait, ok)
	}
	if _, ok := hit("b"); !ok {
		t.Fatal("another bucket is limited by a's calls")
	}
	now = now.Add(7 * time.Second) // the first call leaves the window
	if _, ok := hit("a"); !ok {
		t.Fatal("still refused after the window slid")
	}
	if _, ok := hit("a"); ok {
		t.Fatal("refused calls must not have freed slots")
	}
	now = now.Add(time.Hour)
	hit("c")
	if len(m.buckets) != 1 {
		t.Fatalf("idle buckets kept: %d", len(m.buckets))
	}
}

// TestMongoRedactsSecrets: whatever a driver error quotes, the store's
// password (as written and decoded) never reaches the log.
func TestMongoRedactsSecrets(t *testing.T) {
	m := NewMongo(nil, "app", zerolog.Nop(), "mongodb://u@h/limits", "p%40ss", "p@ss", "")
	got := m.redact("auth error for mongodb://u:p%40ss@h: password p@ss refused")
	if strings.Contains(got, "p%40ss") || strings.Contains(got, "p@ss") || !strings.Contains(got, "refused") {
		t.Fatalf("redacted: %q", got)
	}
}
