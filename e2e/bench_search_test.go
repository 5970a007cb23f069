package e2e

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/embed"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/tools"
)

// The in-process search engines over 10,000 rows (docs/search.md "Search and
// retrieval", "Performance"): atlas_text_search (title + lyrics scanned)
// and find_similar (brute-force cosine over 64-dimensional vectors) against
// one read of the same rows and fields with the bare driver, measured in
// one run, time and peak heap:
//
//	go test ./e2e -run '^$' -bench SearchFallback10k -benchtime 5x
//
// The tools run in process (handler + result encoding, no stdio) on their
// own copy of the demo app (prefix sbench_) where Song has 10,000 rows.

const searchBenchPrefix = "sbench_"
const searchBenchRows = 10_000

var searchBenchSeed struct {
	once sync.Once
	err  error
}

func seedSearchBench(tb testing.TB) {
	searchBenchSeed.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if searchBenchSeed.err = demo.ForceSeed(ctx, testDB, searchBenchPrefix); searchBenchSeed.err != nil {
			return
		}
		coll := testDB.Collection(searchBenchPrefix + "Song")
		cur, err := coll.Find(ctx, bson.D{})
		if err != nil {
			searchBenchSeed.err = err
			return
		}
		var docs []bson.D
		if searchBenchSeed.err = cur.All(ctx, &docs); searchBenchSeed.err != nil {
			return
		}
		var copies []any
		for i := 0; len(docs)+len(copies) < searchBenchRows; i++ {
			d := append(bson.D(nil), docs[i%len(docs)]...)
			for j := range d {
				if d[j].Key == "_id" {
					d[j].Value = fmt.Sprintf("sb%08d", i)
				}
			}
			copies = append(copies, d)
		}
		for start := 0; start < len(copies); start += 1000 {
			if _, searchBenchSeed.err = coll.InsertMany(ctx, copies[start:min(start+1000, len(copies))]); searchBenchSeed.err != nil {
				return
			}
		}
	})
	if searchBenchSeed.err != nil {
		tb.Fatalf("seeding the search bench app: %v", searchBenchSeed.err)
	}
}

// peakHeap samples the heap in use while fn runs and returns the peak above
// the heap in use before it.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

func BenchmarkSearchFallback10k(b *testing.B) {
	seedSearchBench(b)
	f, err := policy.Parse(demo.PolicyYAML, false)
	if err != nil {
		b.Fatal(err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	store := parsedb.NewStore(testDB.Client(), dbName, searchBenchPrefix)
	d := tools.NewDeps(store, policy.New(cfg, f, zerolog.Nop()), cfg, zerolog.Nop())
	d.Embedder = embed.Fixture{}
	handlers := map[string]func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error){}
	for _, t := range d.Catalog {
		// No per-call timeout: on a loaded machine and the embedded
		// FerretDB a 10k-row scan can take longer than the tool's 30 s,
		// and the ratio is what is measured.
		tt := *t
		tt.Timeout = 0
		handlers[t.Name] = tt.Handle(d)
	}
	ctx := context.Background()
	run := func(tool string, args map[string]any) *mcp.CallToolResult {
		res, err := handlers[tool](ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", tool, err, res)
		}
		return res
	}
	// The baseline: one read of the same rows with the bare driver (one
	// cursor, the fields the search reads), what exporting them costs. A
	// paged query_class re-reads the skipped rows and flattered the ratio.
	coll := testDB.Collection(searchBenchPrefix + "Song")
	exportOf := func(fields ...string) func() {
		proj := bson.D{{Key: "_rperm", Value: 1}}
		for _, f := range fields {
			proj = append(proj, bson.E{Key: f, Value: 1})
		}
		return func() {
			cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(proj).SetBatchSize(1000))
			if err != nil {
				b.Fatal(err)
			}
			var n int
			for cur.Next(ctx) {
				n++
			}
			if err := cur.Err(); err != nil || n < searchBenchRows {
				b.Fatalf("export: %d rows, %v", n, err)
			}
		}
	}
	vec := vectorOf(embed.FixtureVector("hold on to the harbor, the silent dream is calling"))
	for _, c := range []struct {
		name     string
		fn       func()
		baseline func()
	}{
		{"text", func() {
			run("atlas_text_search", map[string]any{"class_name": "Song", "query": "harbor dream", "limit": 50.0})
		}, exportOf("title", "lyrics")},
		{"similar", func() { run("find_similar", map[string]any{"class_name": "Song", "vector": vec, "k": 20.0}) }, exportOf("lyricsEmbedding")},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.fn()
			c.baseline()
			var viaSearch, viaQuery time.Duration
			var heapSearch, heapQuery uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				heapSearch = max(heapSearch, peakHeap(c.fn))
				viaSearch += time.Since(t0)
				t1 := time.Now()
				heapQuery = max(heapQuery, peakHeap(c.baseline))
				viaQuery += time.Since(t1)
			}
			b.StopTimer()
			b.ReportMetric(float64(viaSearch.Microseconds())/float64(b.N)/1000, "search-ms/op")
			b.ReportMetric(float64(viaQuery.Microseconds())/float64(b.N)/1000, "export-ms/op")
			b.ReportMetric(float64(viaSearch)/float64(viaQuery), "time-ratio")
			b.ReportMetric(float64(heapSearch)/(1<<20), "search-peak-heap-MB")
			b.ReportMetric(float64(heapQuery)/(1<<20), "export-peak-heap-MB")
		})
	}
}
