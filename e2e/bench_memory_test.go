package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkPeakRSSOn200MB: peak resident memory of the server process while
// it answers a query_class and an export_data whose matching rows total
// 200 MB (target ≤ 64 MB: the byte cap must work while streaming, not after
// buffering). The rows live under their own collection prefix so the shared
// fixtures are untouched.
//
//	go test ./e2e -run '^$' -bench PeakRSS -benchtime 1x
func BenchmarkPeakRSSOn200MB(b *testing.B) {
	const prefix = "big_"
	const rows, rowBytes = 200, 1 << 20
	ctx := context.Background()
	coll := testDB.Collection(prefix + "BigRow")
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != rows {
		_ = coll.Drop(ctx)
		_, _ = testDB.Collection(prefix+"_SCHEMA").DeleteMany(ctx, bson.D{})
		if _, err := testDB.Collection(prefix+"_SCHEMA").InsertOne(ctx, bson.D{
			{Key: "_id", Value: "BigRow"}, {Key: "objectId", Value: "string"}, {Key: "createdAt", Value: "date"},
			{Key: "updatedAt", Value: "date"}, {Key: "title", Value: "string"}, {Key: "body", Value: "string"},
		}); err != nil {
			b.Fatal(err)
		}
		body := strings.Repeat("lorem ipsum dolor sit amet ", rowBytes/27)
		now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range rows {
			id := fmt.Sprintf("big%07d", i)
			if _, err := coll.InsertOne(ctx, bson.D{
				{Key: "_id", Value: id}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now},
				{Key: "title", Value: "row " + strconv.Itoa(i)}, {Key: "body", Value: body},
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	var worst float64
	for i := 0; i < b.N; i++ {
		p := spawnPipe(b, "PARSE_MCP_COLLECTION_PREFIX="+prefix)
		p.roundTrip(b, initLine)
		for _, req := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_class","arguments":{"class_name":"BigRow","limit":1000}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"export_data","arguments":{"class_name":"BigRow","format":"csv","row_cap":1000}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_sample_objects","arguments":{"class_name":"BigRow","limit":20}}}`,
		} {
			resp := p.roundTrip(b, req)
			if len(resp) > 5<<20 {
				b.Fatalf("response of %d bytes exceeds the 4 MiB cap", len(resp))
			}
		}
		worst = max(worst, float64(peakRSSKB(b, p.cmd.Process.Pid))/1024)
		p.close()
	}
	b.ReportMetric(worst, "peak-RSS-MB")
	if worst > 64 {
		b.Errorf("peak RSS %.1f MB exceeds 64 MB", worst)
	}
}

func peakRSSKB(tb testing.TB, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	tb.Fatal("VmHWM not found")
	return 0
}
