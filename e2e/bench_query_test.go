package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/tools"
)

// The query target (docs/performance.md "Performance"): query_class of 1000 rows within 1.3× of the
// same find done with the driver directly plus encoding/json of the bson.M
// documents, measured in one run:
//
//	go test ./e2e -run '^$' -bench QueryClass1000 -benchtime 20x
//
// The tool runs in process (handler + result encoding, no stdio), on its own
// copy of the demo app (prefix qbench_) where Song has 1000 rows.

const benchPrefix = "qbench_"

var benchSeed struct {
	once sync.Once
	err  error
}

func seedBench(tb testing.TB) {
	benchSeed.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if benchSeed.err = demo.ForceSeed(ctx, testDB, benchPrefix); benchSeed.err != nil {
			return
		}
		coll := testDB.Collection(benchPrefix + "Song")
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetLimit(1000-demo.SongCount))
		if err != nil {
			benchSeed.err = err
			return
		}
		var docs []bson.D
		if benchSeed.err = cur.All(ctx, &docs); benchSeed.err != nil {
			return
		}
		var copies []any
		for i, d := range docs {
			for j := range d {
				if d[j].Key == "_id" {
					d[j].Value = fmt.Sprintf("bench%05d", i)
				}
			}
			copies = append(copies, d)
		}
		_, benchSeed.err = coll.InsertMany(ctx, copies)
	})
	if benchSeed.err != nil {
		tb.Fatalf("seeding the bench app: %v", benchSeed.err)
	}
}

func benchDeps(tb testing.TB) *tools.Deps {
	f, err := policy.Parse(demo.PolicyYAML, false)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	store := parsedb.NewStore(testDB.Client(), dbName, benchPrefix)
	return tools.NewDeps(store, policy.New(cfg, f, zerolog.Nop()), cfg, zerolog.Nop())
}

func BenchmarkQueryClass1000(b *testing.B) {
	seedBench(b)
	d := benchDeps(b)
	var qc *tools.Tool
	for _, t := range d.Catalog {
		if t.Name == "query_class" {
			qc = t
		}
	}
	handle := qc.Handle(d)
	ctx := context.Background()
	coll := testDB.Collection(benchPrefix + "Song")
	raw := func() int {
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(1001))
		if err != nil {
			b.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			b.Fatal(err)
		}
		out, err := json.Marshal(docs)
		if err != nil {
			b.Fatal(err)
		}
		if len(docs) < 1000 {
			b.Fatalf("raw find returned %d rows", len(docs))
		}
		return len(out)
	}
	for _, format := range []string{"csv", "json"} {
		b.Run(format, func(b *testing.B) {
			req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "query_class", Arguments: map[string]any{
				"class_name": "Song", "limit": 1000.0, "format": format, "apply_canonical_filter": false}}}
			tool := func() int {
				res, err := handle(ctx, req)
				if err != nil || res.IsError {
					b.Fatalf("query_class: %v %v", err, res)
				}
				return len(res.Content[0].(mcp.TextContent).Text)
			}
			tool()
			raw()
			var viaTool, direct time.Duration
			var toolBytes, rawBytes int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				toolBytes = tool()
				viaTool += time.Since(t0)
				t1 := time.Now()
				rawBytes = raw()
				direct += time.Since(t1)
			}
			b.StopTimer()
			b.ReportMetric(float64(viaTool.Microseconds())/float64(b.N)/1000, "tool-ms/op")
			b.ReportMetric(float64(direct.Microseconds())/float64(b.N)/1000, "driver-ms/op")
			b.ReportMetric(float64(viaTool)/float64(direct), "ratio")
			b.ReportMetric(float64(toolBytes), "tool-bytes")
			b.ReportMetric(float64(rawBytes), "raw-bytes")
		})
	}
}
