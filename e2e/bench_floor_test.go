package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// The driver floor (docs/performance.md "Performance"): each tool's typical call through
// the real binary over stdio against the same operation through the bare
// mongo-driver v2, on the engine under test, as a ratio per tool:
//
//	make bench-floor    (or: go test ./e2e -run '^$' -bench DriverFloor -benchtime 1x)
//
// Calls are interleaved (one call through the binary, one by the driver, the
// order turning with each call), in PARSE_MCP_BENCH_ROUNDS rounds (default 7) of floorCalls calls each; a
// round's ratio is the binary's total time over the driver's, and the table
// gives the median ratio and its spread (lowest–highest round). Only ratios
// compare across runs: the absolute times depend on the machine and its
// load. The binary runs the demo policy without rate limit, with the write
// tools on, on its own copy of the demo app (prefix fbench_); a second copy
// (fbenchix_) has a text index for the indexed search.
//
// The driver is given the demo policy's canonical filter on Song
// (archived ≠ true) wherever the binary applies it: it is the app's meaning
// (the two answer the same count and the same rows), not parse-mcp's cost.
// What the policy adds for security — the not-a-hidden-reference conjunct
// on a where, the shown object's checks — stays on the binary's side.
//
// PARSE_MCP_BENCH_BASELINE=path/to/another/parse-mcp (make bench-floor
// BASELINE=…) measures that binary too, in the same rounds, each call
// interleaved with the others: a before-and-after table from one run.

const (
	floorPrefix        = "fbench_"
	floorIndexedPrefix = "fbenchix_"
)

var floorSeed struct {
	once sync.Once
	err  error
}

func seedFloor(tb testing.TB) {
	floorSeed.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for _, p := range []string{floorPrefix, floorIndexedPrefix} {
			if floorSeed.err = demo.ForceSeed(ctx, testDB, p); floorSeed.err != nil {
				return
			}
		}
		if !ferretDB1 { // FerretDB 1.24 has no text indexes
			_, floorSeed.err = testDB.Collection(floorIndexedPrefix+"Song").Indexes().CreateOne(ctx,
				mongo.IndexModel{Keys: bson.D{{Key: "title", Value: "text"}, {Key: "lyrics", Value: "text"}}})
		}
	})
	if floorSeed.err != nil {
		tb.Fatalf("seeding the driver-floor apps: %v", floorSeed.err)
	}
}

// floorOp is one row of the table: a tool call and the driver's operation.
type floorOp struct {
	name string
	// call returns the tools/call params for call number i.
	call func(i int) string
	// driver runs the same operation with the bare driver.
	driver func(ctx context.Context, i int) error
	// indexed: the call goes to the server on the indexed copy.
	indexed bool
}

// floorRow is a measured row: per binary measured, its time and ratio.
type floorRow struct {
	name     string
	driverMS float64 // median of the rounds' per-call means
	bins     []floorRatio
}

type floorRatio struct {
	serverMS                float64 // median of the rounds' per-call means
	ratio, ratioLo, ratioHi float64
}

// floorRounds and floorCalls: PARSE_MCP_BENCH_ROUNDS (default 7) rounds of
// PARSE_MCP_BENCH_CALLS (default 10) calls per operation.
func floorRounds() int { return envInt("PARSE_MCP_BENCH_ROUNDS", 7) }

var floorCalls = envInt("PARSE_MCP_BENCH_CALLS", 10)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func BenchmarkDriverFloor(b *testing.B) {
	seedFloor(b)
	baseline := os.Getenv("PARSE_MCP_BENCH_BASELINE")
	bins := []string{binary}
	if baseline != "" {
		bins = append(bins, baseline)
	}
	rows := measureFloor(b, floorRounds(), bins)
	fmt.Printf("\ndriver floor on %s, %d rounds of %d interleaved calls (median, lowest–highest round)\n", engine, floorRounds(), floorCalls)
	head := fmt.Sprintf("%-26s %10s %10s %7s %15s", "operation", "server ms", "driver ms", "ratio", "spread")
	if baseline != "" {
		head += fmt.Sprintf(" | %12s %7s %15s   (baseline %s)", "baseline ms", "ratio", "spread", baseline)
	}
	fmt.Println(head)
	for _, r := range rows {
		line := fmt.Sprintf("%-26s %10.2f %10.2f %7.2f %7.2f–%-7.2f", r.name, r.bins[0].serverMS, r.driverMS, r.bins[0].ratio, r.bins[0].ratioLo, r.bins[0].ratioHi)
		if len(r.bins) > 1 {
			line += fmt.Sprintf(" | %12.2f %7.2f %7.2f–%-7.2f", r.bins[1].serverMS, r.bins[1].ratio, r.bins[1].ratioLo, r.bins[1].ratioHi)
		}
		fmt.Println(line)
		b.ReportMetric(r.bins[0].ratio, strings.ReplaceAll(r.name, " ", "_")+"-ratio")
	}
	hop := measurePing(b, 200)
	fmt.Printf("%-26s %10.2f %10s (the stdio hand-off alone: JSON-RPC ping through the binary, median)\n", "ping", ms(hop), "")
	for _, op := range []string{"count (small)", "find 20 rows", "create_object"} {
		fmt.Printf("%-26s %10.0f µs server CPU per call (user + system, %d calls)\n", op, measureServerCPU(b, op, 200), 200)
	}
	lat := measureSubscriptionLatency(b, 5)
	fmt.Printf("%-26s %10s median %.0f ms, highest %.0f ms (%d changes)\n", "subscription update", "", ms(percentile(lat, 50)), ms(percentile(lat, 100)), len(lat))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// floorServer starts the binary bin on a copy of the demo app.
func floorServer(tb testing.TB, bin, prefix string) *pipeServer {
	p := spawnBinary(tb, bin, append(append([]string{}, writeEnv...), policyFile(tb, "driver_floor"), "PARSE_MCP_COLLECTION_PREFIX="+prefix)...)
	p.roundTrip(tb, initLine)
	return p
}

// toolCall sends one tools/call and fails on an error result.
func (p *pipeServer) toolCall(tb testing.TB, params string) string {
	resp := p.roundTrip(tb, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`)
	if !strings.Contains(resp, `"result"`) || strings.Contains(resp, `"isError":true`) {
		tb.Fatalf("%s: %.600s", params, resp)
	}
	return resp
}

// created holds the objects create_object made in a round: call i's of
// binary b at i*(servers+1)+b, the driver's at i*(servers+1)+servers; its
// delete_object and DeleteOne remove them.
func floorOps(tb testing.TB, ids []string, created []string, servers int) []floorOp {
	driverCreated := 0
	coll := testDB.Collection(floorPrefix + "Song")
	// The demo policy's canonical filter on Song (see the top of the file).
	active := bson.E{Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}}
	rock := bson.D{{Key: "genre", Value: "rock"}, active}
	drain := func(cur *mongo.Cursor, err error) error {
		if err != nil {
			return err
		}
		var docs []bson.Raw
		return cur.All(context.Background(), &docs)
	}
	searchWords := "harbor dream"
	// The honest baseline of an in-process search: one export of the rows
	// it reads (the same fields, one cursor).
	searchScan := func(ctx context.Context, _ int) error {
		return drain(coll.Find(ctx, bson.D{active}, options.Find().SetProjection(bson.D{{Key: "title", Value: 1}, {Key: "lyrics", Value: 1}, {Key: "_rperm", Value: 1}})))
	}
	ops := []floorOp{
		{name: "count (small)", call: func(int) string {
			return `{"name":"count_objects","arguments":{"class_name":"Song","where":{"genre":"rock"}}}`
		}, driver: func(ctx context.Context, _ int) error {
			_, err := coll.CountDocuments(ctx, rock)
			return err
		}},
		{name: "find 20 rows", call: func(int) string {
			return `{"name":"query_class","arguments":{"class_name":"Song","limit":20}}`
		}, driver: func(ctx context.Context, _ int) error {
			return drain(coll.Find(ctx, bson.D{active}, options.Find().SetLimit(20).SetSort(bson.D{{Key: "_id", Value: 1}})))
		}},
		{name: "get_object", call: func(i int) string {
			return `{"name":"get_object","arguments":{"class_name":"Song","object_id":"` + ids[i%len(ids)] + `"}}`
		}, driver: func(ctx context.Context, i int) error {
			return coll.FindOne(ctx, bson.D{{Key: "_id", Value: ids[i%len(ids)]}}).Err() // a get by id ignores the canonical filter
		}},
		{name: "aggregate $group", call: func(int) string {
			return `{"name":"aggregate","arguments":{"class_name":"Song","pipeline":[{"$match":{"genre":"rock"}},{"$group":{"_id":"$year","n":{"$sum":1}}}]}}`
		}, driver: func(ctx context.Context, _ int) error {
			return drain(coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: rock}}, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$year"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}))
		}},
		{name: "create_object", call: func(i int) string {
			return fmt.Sprintf(`{"name":"create_object","arguments":{"class_name":"Song","fields":{"title":"floor %d","plays":%d}}}`, i, i)
		}, driver: func(ctx context.Context, i int) error {
			now := time.Now()
			driverCreated++
			id := fmt.Sprintf("fd%08d", driverCreated)
			created[i*(servers+1)+servers] = id
			_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "title", Value: fmt.Sprintf("floor %d", i)}, {Key: "plays", Value: i}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}})
			return err
		}},
		{name: "update_object", call: func(i int) string {
			return fmt.Sprintf(`{"name":"update_object","arguments":{"class_name":"Song","object_id":%q,"fields":{"plays":%d}}}`, ids[i%len(ids)], 1000+i)
		}, driver: func(ctx context.Context, i int) error {
			_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: ids[(i+1)%len(ids)]}}, bson.D{{Key: "$set", Value: bson.D{{Key: "plays", Value: 2000 + i}, {Key: "_updated_at", Value: time.Now()}}}})
			return err
		}},
		{name: "delete_object", call: func(i int) string {
			return fmt.Sprintf(`{"name":"delete_object","arguments":{"class_name":"Song","object_id":%q}}`, created[(servers+1)*(i/servers)+i%servers])
		}, driver: func(ctx context.Context, i int) error {
			_, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: created[(servers+1)*i+servers]}})
			return err
		}},
		{name: "text search (no index)", call: func(int) string {
			return `{"name":"atlas_text_search","arguments":{"class_name":"Song","query":"` + searchWords + `","limit":10}}`
		}, driver: searchScan},
		{name: "find_similar (no index)", call: func(i int) string {
			return `{"name":"find_similar","arguments":{"class_name":"Song","object_id":"` + ids[i%len(ids)] + `","k":10}}`
		}, driver: func(ctx context.Context, _ int) error {
			return drain(coll.Find(ctx, bson.D{active}, options.Find().SetProjection(bson.D{{Key: "lyricsEmbedding", Value: 1}, {Key: "_rperm", Value: 1}})))
		}},
	}
	if !ferretDB1 {
		ixColl := testDB.Collection(floorIndexedPrefix + "Song")
		ops = append(ops, floorOp{name: "text search (text index)", indexed: true, call: func(int) string {
			return `{"name":"atlas_text_search","arguments":{"class_name":"Song","query":"` + searchWords + `","limit":10}}`
		}, driver: func(ctx context.Context, _ int) error {
			return drain(ixColl.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: searchWords}}}, active},
				options.Find().SetLimit(10).SetProjection(bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}).SetSort(bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}})))
		}})
	}
	return ops
}

// measureFloor runs every operation in rounds, each call through each
// binary and the driver's, in an order that turns with every call. An op's call gets the number of the call
// across binaries (call i of binary b is i*len(bins)+b), its driver i.
func measureFloor(tb testing.TB, rounds int, bins []string) []floorRow {
	ctx := context.Background()
	servers := make([]*pipeServer, len(bins))
	indexed := make([]*pipeServer, len(bins))
	for b, bin := range bins {
		servers[b] = floorServer(tb, bin, floorPrefix)
		defer servers[b].close()
		indexed[b] = servers[b]
		if !ferretDB1 {
			indexed[b] = floorServer(tb, bin, floorIndexedPrefix)
			defer indexed[b].close()
		}
	}
	coll := testDB.Collection(floorPrefix + "Song")
	var ids []string
	cur, err := coll.Find(ctx, bson.D{{Key: "_rperm", Value: bson.D{{Key: "$exists", Value: false}}}}, options.Find().SetLimit(50).SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		tb.Fatal(err)
	}
	for cur.Next(ctx) {
		ids = append(ids, cur.Current.Lookup("_id").StringValue())
	}
	if len(ids) == 0 {
		tb.Fatal("no public Song in the driver-floor app")
	}
	created := make([]string, floorCalls*(len(bins)+1))
	ops := floorOps(tb, ids, created, len(bins))
	ratios := make([][][]float64, len(ops))
	server := make([][][]float64, len(ops))
	driver := make([][]float64, len(ops))
	for k := range ops {
		ratios[k] = make([][]float64, len(bins))
		server[k] = make([][]float64, len(bins))
	}
	for r := range rounds + 1 { // round 0 warms all paths up and is not counted
		for k, op := range ops {
			ts := make([]time.Duration, len(bins))
			var td time.Duration
			for i := range floorCalls {
				// The order of the binaries and the driver turns with
				// each call: no one always goes first after the other.
				for j := range len(bins) + 1 {
					b := (i + j) % (len(bins) + 1)
					if b == len(bins) {
						t1 := time.Now()
						if err := op.driver(ctx, i); err != nil {
							tb.Fatalf("%s (driver): %v", op.name, err)
						}
						td += time.Since(t1)
						continue
					}
					srv := servers[b]
					if op.indexed {
						srv = indexed[b]
					}
					params := op.call(i*len(bins) + b)
					t0 := time.Now()
					resp := srv.toolCall(tb, params)
					ts[b] += time.Since(t0)
					if op.name == "create_object" {
						created[i*(len(bins)+1)+b] = createdID(tb, resp)
					}
				}
			}
			fmt.Fprintf(os.Stderr, "driver floor: round %d %s: %.2f ms / %.2f ms\n", r, op.name, ms(ts[0])/float64(floorCalls), ms(td)/float64(floorCalls))
			if r > 0 {
				for b := range bins {
					ratios[k][b] = append(ratios[k][b], float64(ts[b])/float64(td))
					server[k][b] = append(server[k][b], ms(ts[b])/float64(floorCalls))
				}
				driver[k] = append(driver[k], ms(td)/float64(floorCalls))
			}
		}
	}
	out := make([]floorRow, len(ops))
	for k, op := range ops {
		out[k] = floorRow{name: op.name, driverMS: median(driver[k])}
		for b := range bins {
			rs := slices.Sorted(slices.Values(ratios[k][b]))
			out[k].bins = append(out[k].bins, floorRatio{serverMS: median(server[k][b]), ratio: median(rs), ratioLo: rs[0], ratioHi: rs[len(rs)-1]})
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// createdID is the object_id of a create_object result.
func createdID(tb testing.TB, resp string) string {
	var m struct {
		Result struct {
			Structured struct {
				ObjectID string `json:"object_id"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &m); err != nil || m.Result.Structured.ObjectID == "" {
		tb.Fatalf("create_object: no object_id in %.300s", resp)
	}
	return m.Result.Structured.ObjectID
}

// measurePing is the median time of n JSON-RPC pings through the binary:
// the part of every call that is the process hop (pipe, framing, dispatch)
// and no database work.
func measurePing(tb testing.TB, n int) time.Duration {
	p := floorServer(tb, binary, floorPrefix)
	defer p.close()
	d := make([]float64, n)
	for i := range d {
		t0 := time.Now()
		p.roundTrip(tb, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		d[i] = float64(time.Since(t0))
	}
	return time.Duration(median(d))
}

// measureServerCPU is the server process's CPU time (user + system) per
// call of one operation over n calls, less that of a process that made one
// call: the server's own work per call, which the load of a shared machine
// stretches far less than wall time.
func measureServerCPU(tb testing.TB, op string, n int) float64 {
	params := func(i int) string {
		switch op {
		case "count (small)":
			return `{"name":"count_objects","arguments":{"class_name":"Song","where":{"genre":"rock"}}}`
		case "find 20 rows":
			return `{"name":"query_class","arguments":{"class_name":"Song","limit":20}}`
		}
		return fmt.Sprintf(`{"name":"create_object","arguments":{"class_name":"Song","fields":{"title":"cpu %d","plays":%d}}}`, i, i)
	}
	cpu := func(calls int) time.Duration {
		p := floorServer(tb, binary, floorPrefix)
		for i := range calls {
			p.toolCall(tb, params(i))
		}
		p.close()
		return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	}
	base := cpu(1)
	return float64((cpu(n+1) - base).Microseconds()) / float64(n)
}

// measureSubscriptionLatency subscribes to parse://Song/count and measures,
// n times, how long after a driver insert of a visible row the update
// notification arrives.
func measureSubscriptionLatency(tb testing.TB, n int) []time.Duration {
	ctx := context.Background()
	p := floorServer(tb, binary, floorPrefix)
	defer p.close()
	if resp := p.roundTrip(tb, `{"jsonrpc":"2.0","id":"sub","method":"resources/subscribe","params":{"uri":"parse://Song/count"}}`); !strings.Contains(resp, `"result"`) {
		tb.Fatalf("subscribe: %s", resp)
	}
	coll := testDB.Collection(floorPrefix + "Song")
	var out []time.Duration
	for i := range n {
		time.Sleep(500 * time.Millisecond) // let the debounce window of the previous change pass
		now := time.Now()
		id := fmt.Sprintf("fs%08d", i)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "sub"}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}}); err != nil {
			tb.Fatal(err)
		}
		for {
			line, err := p.out.ReadString('\n')
			if err != nil {
				tb.Fatal(err)
			}
			if strings.Contains(line, `"notifications/resources/updated"`) {
				break
			}
		}
		out = append(out, time.Since(now))
		if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
			tb.Fatal(err)
		}
		// the delete's own update
		for {
			line, err := p.out.ReadString('\n')
			if err != nil {
				tb.Fatal(err)
			}
			if strings.Contains(line, `"notifications/resources/updated"`) {
				break
			}
		}
	}
	return out
}
