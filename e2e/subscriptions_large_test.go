package e2e

// Subscriptions on a large class (issue: 9–22 s to start at 20k rows, and
// failures under load): a subscription starts within a bound however slow
// the baseline fingerprint is, notifies on a visible insert, update and
// delete, and stays silent on a hidden class's write and on rows the
// server's identity cannot read. BenchmarkSubscriptionPoll measures what a
// poll costs at ~20k rows against ~200 in the same run, per engine.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/resources"
	"github.com/parse-mcp/parse-mcp/tools"
)

// The two sizes of Song: copies of the demo app under their own prefixes.
const (
	subSmallPrefix = "subsmall_"
	subLargePrefix = "sublarge_"
	subSmallRows   = 200
	subLargeRows   = 20000
)

var subSeeds sync.Map // prefix → *subSeed

type subSeed struct {
	once sync.Once
	err  error
}

// seedSongs copies the demo app under prefix with exactly rows Songs (the
// demo's, trimmed, or topped up with copies under new ids and without their
// lyrics).
func seedSongs(tb testing.TB, prefix string, rows int) {
	tb.Helper()
	v, _ := subSeeds.LoadOrStore(prefix, &subSeed{})
	s := v.(*subSeed)
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		s.err = func() error {
			if err := demo.ForceSeed(ctx, testDB, prefix); err != nil {
				return err
			}
			coll := testDB.Collection(prefix + demo.ClassSong)
			cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
			if err != nil {
				return err
			}
			var docs []bson.D
			if err := cur.All(ctx, &docs); err != nil {
				return err
			}
			if rows <= len(docs) {
				var drop bson.A
				for _, d := range docs[rows:] {
					drop = append(drop, d[0].Value)
				}
				_, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: drop}}}})
				return err
			}
			var batch []any
			for i := len(docs); i < rows; i++ {
				var d bson.D
				for _, e := range docs[i%len(docs)] {
					switch e.Key {
					case "_id":
						e.Value = fmt.Sprintf("big%07d", i)
					case "lyrics":
						continue // rows, not bytes: FerretDB 1.24 scans ~20k rows/s (docs/resources.md)
					}
					d = append(d, e)
				}
				if batch = append(batch, d); len(batch) == 1000 || i == rows-1 {
					if _, err := coll.InsertMany(ctx, batch); err != nil {
						return err
					}
					batch = nil
				}
			}
			return nil
		}()
	})
	if s.err != nil {
		tb.Fatalf("seeding %d Songs under %s: %v", rows, prefix, s.err)
	}
}

var largeSongSeq atomic.Int64

// writeLargeSong inserts a Song into the large app as another client would
// and returns its id.
func writeLargeSong(t testing.TB, rperm []string) string {
	t.Helper()
	id := fmt.Sprintf("e2eBig%04d", largeSongSeq.Add(1))
	now := time.Now().UTC()
	doc := bson.D{{Key: "_id", Value: id}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now},
		{Key: "title", Value: "Large subscription " + id}, {Key: "genre", Value: "rock"}, {Key: "plays", Value: 1},
		{Key: "archived", Value: false}, {Key: "_rperm", Value: rperm}, {Key: "_wperm", Value: rperm}}
	largeWrite(t, func(ctx context.Context, c *mongo.Collection) error {
		_, err := c.InsertOne(ctx, doc)
		return err
	})
	return id
}

func largeWrite(t testing.TB, fn func(context.Context, *mongo.Collection) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fn(ctx, testDB.Collection(subLargePrefix+demo.ClassSong)); err != nil {
		t.Fatal(err)
	}
}

// expectLargeUpdates is expectUpdates with a ceiling for fingerprints of
// 20k rows on FerretDB 1.24 on a loaded machine (tens of seconds there).
func (r *rawServer) expectLargeUpdates(n int) []string {
	r.t.Helper()
	return r.collectUpdatesWithin(n, 1500*time.Millisecond, 3*time.Minute)
}

// subscribeStartBound is how long resources/subscribe may take on the
// large class: the baseline fingerprint (seconds at 20k rows on FerretDB
// 1.24, more under load) no longer holds it back (StartWait is 1 s).
const subscribeStartBound = 8 * time.Second

// settleLarge is how long the silence checks wait on the large class: the
// baseline, a poll, and a full fingerprint of 20k rows on FerretDB 1.24.
const settleLarge = 15 * time.Second

func TestResourceSubscriptionLargeClass(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping under -short: 20k rows take minutes on FerretDB 1.24; make test runs it")
	}
	seedSongs(t, subLargePrefix, subLargeRows)
	r := startRaw(t, "PARSE_MCP_COLLECTION_PREFIX="+subLargePrefix, policyFile(t, "demo"), "PARSE_MCP_ACL_USER="+demo.UserCarolID, "PARSE_MCP_LOG_LEVEL=debug")
	r.initialize()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", r.stderr.String())
		}
	})
	for _, uri := range []string{"parse://Song/count", "parse://Song/samples"} {
		start := time.Now()
		result(t, r.rpc("s-"+uri, "resources/subscribe", `{"uri":"`+uri+`"}`))
		if took := time.Since(start); took > subscribeStartBound {
			t.Fatalf("subscribing to %s on %d rows took %v (bound %v)", uri, subLargeRows, took, subscribeStartBound)
		}
	}
	// At once, while the baseline may still be running: a row carol cannot
	// read, a hidden class's row, and an update of a row she cannot read.
	hidden := writeLargeSong(t, []string{"role:" + demo.RoleAdmin})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := testDB.Collection(subLargePrefix+demo.ClassVaultSecret).InsertOne(ctx, bson.D{
		{Key: "_id", Value: "e2eBigVault"}, {Key: "_created_at", Value: time.Now()}, {Key: "_updated_at", Value: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	largeWrite(t, func(ctx context.Context, c *mongo.Collection) error {
		_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: hidden}}, bson.D{{Key: "$set", Value: bson.D{
			{Key: "title", Value: "changed"}, {Key: "_updated_at", Value: time.Now().UTC()}}}})
		return err
	})
	if u := r.updates(settleLarge); len(u) != 0 {
		t.Fatalf("writes carol cannot read notified %v", u)
	}

	// A visible insert: the count and the samples changed.
	visible := writeLargeSong(t, []string{"*"})
	if u := r.expectLargeUpdates(2); strings.Join(u, " ") != "parse://Song/count parse://Song/samples" {
		t.Fatalf("a visible insert: %v", u)
	}
	// A visible update of a sampled row: only the samples changed.
	largeWrite(t, func(ctx context.Context, c *mongo.Collection) error {
		_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: visible}}, bson.D{{Key: "$set", Value: bson.D{
			{Key: "title", Value: "updated"}, {Key: "_updated_at", Value: time.Now().UTC()}}}})
		return err
	})
	if u := r.expectLargeUpdates(1); strings.Join(u, " ") != "parse://Song/samples" {
		t.Fatalf("a visible update: %v", u)
	}
	// A visible delete: both again.
	largeWrite(t, func(ctx context.Context, c *mongo.Collection) error {
		_, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: visible}})
		return err
	})
	if u := r.expectLargeUpdates(2); strings.Join(u, " ") != "parse://Song/count parse://Song/samples" {
		t.Fatalf("a visible delete: %v", u)
	}
	// Deleting the row carol cannot read: nothing she reads changed.
	largeWrite(t, func(ctx context.Context, c *mongo.Collection) error {
		_, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: hidden}})
		return err
	})
	if u := r.updates(settleLarge); len(u) != 0 {
		t.Fatalf("deleting a row carol cannot read notified %v", u)
	}
}

// BenchmarkSubscriptionPoll: what a subscription poll costs on ~20k Songs
// against ~200, in one run on the engine under test (FerretDB 1.24, or
// PARSE_MCP_TEST_ENGINE=documentdb, or a MongoDB):
//
//	go test -tags ferretdb_no_postgresql ./e2e -run '^$' -bench SubscriptionPoll -benchtime 20x
//
// probe is what every poll costs (the full fingerprint runs only when the
// probe moved, and at least every SafetyPoll); snapshot is that fingerprint
// under the demo policy. Each is reported at both sizes and as the ratio
// 20k/200 (1 = flat); "indexed" repeats the probe with an {_updated_at: 1}
// index, which adds the "updated since" range where the engine uses it.
func BenchmarkSubscriptionPoll(b *testing.B) {
	seedSongs(b, subSmallPrefix, subSmallRows)
	seedSongs(b, subLargePrefix, subLargeRows)
	ctx := context.Background()
	type side struct {
		p     *resources.Provider
		basis any
	}
	sides := map[string]*side{}
	for _, prefix := range []string{subSmallPrefix, subLargePrefix} {
		f, err := policy.Parse(demo.PolicyYAML, false)
		if err != nil {
			b.Fatal(err)
		}
		cfg := &config.Config{Permissions: config.TierReadonly}
		store := parsedb.NewStore(testDB.Client(), dbName, prefix)
		d := tools.NewDeps(store, policy.New(cfg, f, zerolog.Nop()), cfg, zerolog.Nop())
		sides[prefix] = &side{p: resources.New(d, zerolog.Nop())}
	}
	snapshot := func(s *side) time.Duration {
		t0 := time.Now()
		fp, err := s.p.Snapshot(ctx, demo.ClassSong)
		if err != nil {
			b.Fatal(err)
		}
		if fp.Probe == "" {
			b.Fatal("no probe on this engine")
		}
		s.basis = fp.Basis
		return time.Since(t0)
	}
	probe := func(s *side) time.Duration {
		t0 := time.Now()
		if _, err := s.p.Probe(ctx, demo.ClassSong, s.basis); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	report := func(name string, small, large time.Duration, n int) {
		b.ReportMetric(float64(small.Microseconds())/float64(n)/1000, name+"-200-ms")
		b.ReportMetric(float64(large.Microseconds())/float64(n)/1000, name+"-20k-ms")
		b.ReportMetric(float64(large)/float64(small), name+"-20k/200")
	}
	small, large := sides[subSmallPrefix], sides[subLargePrefix]
	// Metrics are reported at the end: ResetTimer would drop them.
	type metric struct {
		name         string
		small, large time.Duration
		n            int
	}
	var metrics []metric
	for _, indexed := range []bool{false, true} {
		name := "probe"
		if indexed {
			name = "probe-indexed"
			for _, prefix := range []string{subSmallPrefix, subLargePrefix} {
				if _, err := testDB.Collection(prefix+demo.ClassSong).Indexes().CreateOne(ctx,
					mongo.IndexModel{Keys: bson.D{{Key: "_updated_at", Value: 1}}}); err != nil {
					b.Fatal(err)
				}
			}
		}
		snapSmall, snapLarge := snapshot(small), snapshot(large)
		if !indexed {
			metrics = append(metrics, metric{"snapshot", snapSmall, snapLarge, 1})
		}
		var ps, pl time.Duration
		for range b.N {
			ps += probe(small)
			pl += probe(large)
		}
		metrics = append(metrics, metric{name, ps, pl, b.N})
	}
	for _, m := range metrics {
		report(m.name, m.small, m.large, m.n)
	}
	for _, prefix := range []string{subSmallPrefix, subLargePrefix} {
		_ = testDB.Collection(prefix+demo.ClassSong).Indexes().DropOne(ctx, "_updated_at_1")
	}
}
