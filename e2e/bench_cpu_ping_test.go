package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/embed"
)

// BenchmarkPingUnderSearchLoad: ping latency, and the time of 4 in-process
// searches over 10,000 rows sent at once over stdio (the server's own CPU
// work: decoding and scoring every row), with the server's GOMAXPROCS as
// the environment leaves it. A ping is a few microseconds of work: it must
// not queue behind the searches' CPU time (target p50 ≤ 5 ms).
//
//	PARSE_MCP_TEST_ENGINE=documentdb go test ./e2e -run '^$' -bench PingUnderSearchLoad -benchtime 10x
func BenchmarkPingUnderSearchLoad(b *testing.B) {
	seedSearchBench(b)
	p := spawnPipe(b, policyFile(b, "demo"), "PARSE_MCP_COLLECTION_PREFIX="+searchBenchPrefix, "PARSE_MCP_WORKERS=8")
	defer p.close()
	p.roundTrip(b, initLine)
	vec, _ := json.Marshal(vectorOf(embed.FixtureVector("hold on to the harbor, the silent dream is calling")))
	var pings, batches []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for j := range 4 {
			if j%2 == 0 {
				fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":"s-%d-%d","method":"tools/call","params":{"name":"find_similar","arguments":{"class_name":"Song","vector":%s,"k":20}}}`+"\n", i, j, vec)
			} else {
				fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":"s-%d-%d","method":"tools/call","params":{"name":"atlas_text_search","arguments":{"class_name":"Song","query":"harbor dream","limit":50}}}`+"\n", i, j)
			}
		}
		got, pinged := 0, false
		var tp time.Time
		for got < 4 || !pinged {
			if !pinged && tp.IsZero() && time.Since(t0) > 300*time.Millisecond {
				tp = time.Now()
				fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`+"\n", i)
			}
			line, err := p.out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			switch {
			case strings.Contains(line, `"id":"ping-`):
				pings = append(pings, time.Since(tp))
				pinged = true
			case strings.Contains(line, `"id":"s-`):
				if strings.Contains(line, `"isError":true`) {
					b.Fatalf("search failed: %.300s", line)
				}
				got++
				if got == 4 && tp.IsZero() {
					b.Fatalf("searches finished before the ping was sent")
				}
			}
		}
		batches = append(batches, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(pings, 50).Microseconds())/1000, "ping-p50-ms")
	b.ReportMetric(float64(percentile(pings, 100).Microseconds())/1000, "ping-max-ms")
	b.ReportMetric(float64(percentile(batches, 50).Microseconds())/1000, "batch-p50-ms")
	if p50 := percentile(pings, 50); len(pings) >= 10 && p50 > 5*time.Millisecond {
		b.Errorf("ping p50 %v under search load exceeds 5 ms", p50)
	}
}
