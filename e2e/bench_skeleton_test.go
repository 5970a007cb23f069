package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The issue-2 targets, measured against an already-running database:
//
//	go test ./e2e -run '^$' -bench 'Startup|IdleRSS|PingUnderLoad|ToolsListSize' -benchtime 20x
//
// Each reports its figure as a custom metric, and ratios are measured within
// one run so machine speed cancels out. A call's time against the bare
// driver's is BenchmarkDriverFloor's (bench_floor_test.go).

// pipeServer is a spawned binary with line-level access, for benchmarks.
type pipeServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func spawnPipe(tb testing.TB, extraEnv ...string) *pipeServer {
	return spawnBinary(tb, binary, extraEnv...)
}

// spawnBinary is spawnPipe of another build of parse-mcp (the driver
// floor's baseline).
func spawnBinary(tb testing.TB, bin string, extraEnv ...string) *pipeServer {
	cmd := exec.Command(bin)
	cmd.Env = env(extraEnv...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return &pipeServer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

func (p *pipeServer) roundTrip(tb testing.TB, line string) string {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		tb.Fatal(err)
	}
	for {
		resp, err := p.out.ReadString('\n')
		if err != nil {
			tb.Fatal(err)
		}
		if !strings.Contains(resp, `"method":"notifications/`) {
			return resp
		}
	}
}

func (p *pipeServer) close() {
	_ = p.in.Close()
	_ = p.cmd.Wait()
}

const initLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`

// BenchmarkStartupToInitialize: process start to the initialize response
// (target ≤ 100 ms p50).
func BenchmarkStartupToInitialize(b *testing.B) {
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p := spawnPipe(b)
		p.roundTrip(b, initLine)
		samples = append(samples, time.Since(start))
		p.close()
	}
	b.ReportMetric(float64(percentile(samples, 50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(samples, 90).Microseconds())/1000, "p90-ms")
}

// BenchmarkIdleRSS: resident memory after initialize (target ≤ 30 MB).
func BenchmarkIdleRSS(b *testing.B) {
	var worst float64
	for i := 0; i < b.N; i++ {
		p := spawnPipe(b)
		p.roundTrip(b, initLine)
		p.roundTrip(b, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		time.Sleep(200 * time.Millisecond)
		kb := rssKB(b, p.cmd.Process.Pid)
		worst = max(worst, float64(kb)/1024)
		p.close()
	}
	b.ReportMetric(worst, "idle-RSS-MB")
	if worst > 30 {
		b.Errorf("idle RSS %.1f MB exceeds 30 MB", worst)
	}
}

func rssKB(tb testing.TB, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	tb.Fatal("VmRSS not found")
	return 0
}

// BenchmarkPingUnderLoad: ping latency while 8 slow tool calls are in
// flight (target ≤ 50 ms).
func BenchmarkPingUnderLoad(b *testing.B) {
	p := spawnPipe(b)
	defer p.close()
	p.roundTrip(b, initLine)
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		for j := range 8 {
			fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":"slow-%d-%d","method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Song","where":{"title":{"$regex":"a.*e.*i.*o"}}}}}`+"\n", i, j)
		}
		t0 := time.Now()
		fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`+"\n", i)
		got := 0
		for got < 9 {
			line, err := p.out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(line, `"id":"ping-`) {
				samples = append(samples, time.Since(t0))
			}
			if strings.Contains(line, `"id":`) {
				got++
			}
		}
	}
	b.ReportMetric(float64(percentile(samples, 50).Microseconds())/1000, "ping-p50-ms")
	b.ReportMetric(float64(percentile(samples, 100).Microseconds())/1000, "ping-max-ms")
}

// BenchmarkToolsListSize reports the bytes of tools/list for the read-only
// catalog and for the admin tier with the write tools listed (target
// ≤ 10 KB with the write tools), with the share of the output schemas and
// the bytes of name, description and input schema (what the model reads).
// tools TestToolsListSize guards the size.
func BenchmarkToolsListSize(b *testing.B) {
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"readonly", nil},
		{"admin_with_writes", []string{"PARSE_MCP_PERMISSIONS=admin", "PARSE_AGENT_ALLOW_WRITE_TOOLS=1", "PARSE_AGENT_ALLOW_RAW_CRUD=1", "PARSE_AGENT_ALLOW_SCHEMA_OPS=1", "PARSE_AGENT_ALLOW_RAW_SCHEMA=1"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := spawnPipe(b, tc.env...)
			defer p.close()
			p.roundTrip(b, initLine)
			var resp string
			for i := 0; i < b.N; i++ {
				resp = p.roundTrip(b, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			}
			var list struct {
				Result struct {
					Tools []map[string]json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(resp), &list); err != nil {
				b.Fatal(err)
			}
			// What a client hands the model per tool is its name,
			// description and input schema; the output schemas are for
			// the client.
			var model, output int
			for _, t := range list.Result.Tools {
				model += len(t["name"]) + len(t["description"]) + len(t["inputSchema"])
				output += len(t["outputSchema"])
			}
			b.ReportMetric(float64(len(resp)), "bytes")
			b.ReportMetric(float64(len(list.Result.Tools)), "tools")
			b.ReportMetric(float64(output), "outputSchema-bytes")
			b.ReportMetric(float64(model), "model-bytes")
		})
	}
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	i := (len(s) - 1) * p / 100
	return s[i]
}

// BenchmarkConcurrentCalls8: throughput of 8 query_class calls in flight at
// once over stdio (20 rows, four fields) against 8 goroutines doing the same
// find with the driver and encoding/json, in one run (calls/s and their
// ratio).
func BenchmarkConcurrentCalls8(b *testing.B) {
	// The rate limiter (60 calls/min by default) would refuse most calls.
	p := spawnPipe(b, policyFile(b, "no_rate_limit"))
	defer p.close()
	p.roundTrip(b, initLine)
	const inFlight = 8
	args := `{"class_name":"Song","where":{"genre":"rock"},"keys":["title","artist","plays","releasedAt"],"order":"objectId","limit":20}`
	coll := testDB.Collection("Song")
	ctx := context.Background()
	filter := bson.D{{Key: "genre", Value: "rock"}, {Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}}}
	findOpts := options.Find().SetProjection(bson.D{{Key: "title", Value: 1}, {Key: "_p_artist", Value: 1}, {Key: "plays", Value: 1}, {Key: "releasedAt", Value: 1}}).
		SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(21)
	raw := func() {
		cur, err := coll.Find(ctx, filter, findOpts)
		if err != nil {
			b.Error(err)
			return
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			b.Error(err)
			return
		}
		if _, err := json.Marshal(docs); err != nil {
			b.Error(err)
		}
	}
	batch := func(i int) {
		for j := range inFlight {
			fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":"c-%d-%d","method":"tools/call","params":{"name":"query_class","arguments":%s}}`+"\n", i, j, args)
		}
		for got := 0; got < inFlight; {
			line, err := p.out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(line, `"id":"c-`) {
				if !strings.Contains(line, `"rows"`) {
					b.Fatalf("unexpected response %s", line)
				}
				got++
			}
		}
	}
	rawBatch := func() {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() { ; raw() })
		}
		wg.Wait()
	}
	batch(-1)
	rawBatch()
	var viaServer, direct time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		batch(i)
		viaServer += time.Since(t0)
		t1 := time.Now()
		rawBatch()
		direct += time.Since(t1)
	}
	b.StopTimer()
	calls := float64(b.N * inFlight)
	b.ReportMetric(calls/viaServer.Seconds(), "server-calls/s")
	b.ReportMetric(calls/direct.Seconds(), "driver-calls/s")
	b.ReportMetric(float64(viaServer)/float64(direct), "time-ratio")
}
