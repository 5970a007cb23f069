package e2e

import (
	"context"
	le "encoding/binary"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Round trips per tool (ARCHITECTURE.md "Round trips per tool"): the binary
// talks to the database through a loopback proxy that records the name of
// every command it sends, and each tool's typical call must send exactly the
// commands of the table (after a first call that loaded the schema and
// warmed the caches). A change that adds a round trip fails here.

// commandLog is a loopback proxy recording "command collection" per request.
type commandLog struct {
	mu   sync.Mutex
	cmds []string
	keep bool
	docs []bson.Raw
}

// startCommandLog starts the proxy in front of the test database and returns
// the log and the URI through it ("" when the link cannot be proxied).
func startCommandLog(t *testing.T) (*commandLog, string) {
	t.Helper()
	u, err := url.Parse(mongoURI)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "mongodb" || strings.Contains(u.Host, ",") || q.Get("tls") == "true" {
		return nil, ""
	}
	upstream := u.Host
	if !strings.Contains(upstream, ":") {
		upstream += ":27017"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	log := &commandLog{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go log.relay(c, upstream)
		}
	}()
	u.Host = l.Addr().String()
	q.Set("directConnection", "true")
	u.RawQuery = q.Encode()
	return log, u.String()
}

func (l *commandLog) relay(client net.Conn, upstream string) {
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		client.Close()
		return
	}
	defer client.Close()
	defer server.Close()
	go func() {
		defer client.Close()
		defer server.Close()
		for {
			msg, err := readWireMessage(server)
			if err != nil {
				return
			}
			if _, err := client.Write(msg); err != nil {
				return
			}
		}
	}()
	for {
		msg, err := readWireMessage(client)
		if err != nil {
			return
		}
		l.record(msg)
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

// record notes an OP_MSG's command: its first key and, when that names a
// collection, the collection. Connection handshakes and monitoring are left
// out.
func (l *commandLog) record(msg []byte) {
	const opMsg = 2013
	if len(msg) < 21 || le.LittleEndian.Uint32(msg[12:16]) != opMsg || msg[20] != 0 {
		return
	}
	doc := bson.Raw(msg[21:])
	elems, err := doc.Elements()
	if err != nil || len(elems) == 0 {
		return
	}
	name := elems[0].Key()
	switch strings.ToLower(name) {
	case "hello", "ismaster", "ping", "buildinfo", "endsessions", "saslstart", "saslcontinue", "getparameter":
		return
	case "killcursors":
		// Sent after the answer, off the call's path (tools closeCursor);
		// when it arrives depends on the scheduler.
		return
	}
	if coll, ok := elems[0].Value().StringValueOK(); ok {
		name += " " + coll
	}
	l.mu.Lock()
	if l.keep {
		l.docs = append(l.docs, append(bson.Raw(nil), doc...))
	}
	l.cmds = append(l.cmds, name)
	l.mu.Unlock()
}

// take returns the commands recorded since the last take.
func (l *commandLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.cmds
	l.cmds = nil
	return out
}

var rtSeq atomic.Int64

func TestRoundTripsPerTool(t *testing.T) {
	log, uri := startCommandLog(t)
	if log == nil {
		t.Skip("the database link cannot be proxied (TLS or several hosts)")
	}
	seedFloor(t)
	c := stdioClient(t, append(append([]string{}, writeEnv...), policyFile(t, "driver_floor"), "PARSE_MCP_MONGODB_URI="+uri, "PARSE_MCP_COLLECTION_PREFIX="+floorPrefix)...)
	song := floorPrefix + "Song"
	var one struct {
		ID string `bson:"_id"`
	}
	if err := testDB.Collection(song).FindOne(context.Background(), bson.D{{Key: "_rperm", Value: bson.D{{Key: "$exists", Value: false}}}}).Decode(&one); err != nil {
		t.Fatal(err)
	}
	id := one.ID
	tests := []struct {
		tool string
		args func() map[string]any
		want []string
	}{
		{"count_objects", func() map[string]any {
			return map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"}}
		}, []string{"aggregate " + song}},
		{"query_class", func() map[string]any { return map[string]any{"class_name": "Song", "limit": 20} }, []string{"find " + song}},
		{"get_object", func() map[string]any { return map[string]any{"class_name": "Song", "object_id": id} }, []string{"find " + song}},
		{"aggregate", func() map[string]any {
			return map[string]any{"class_name": "Song", "pipeline": []any{map[string]any{"$match": map[string]any{"genre": "rock"}}, map[string]any{"$group": map[string]any{"_id": "$year", "n": map[string]any{"$sum": 1}}}}}
		}, []string{"aggregate " + song}},
		{"create_object", func() map[string]any {
			return map[string]any{"class_name": "Song", "fields": map[string]any{"title": "round trips"}}
		}, []string{"insert " + song}},
		{"update_object", func() map[string]any {
			return map[string]any{"class_name": "Song", "object_id": id, "fields": map[string]any{"plays": 7}}
		}, []string{"find " + song, "findAndModify " + song}},
		{"delete_object", func() map[string]any {
			now := time.Now()
			doomed := fmt.Sprintf("rt%08d", rtSeq.Add(1))
			if _, err := testDB.Collection(song).InsertOne(context.Background(), bson.D{{Key: "_id", Value: doomed}, {Key: "title", Value: "doomed"}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}}); err != nil {
				t.Fatal(err)
			}
			return map[string]any{"class_name": "Song", "object_id": doomed}
		}, []string{"find " + song, "delete " + song}},
	}
	for _, tc := range tests {
		callOK(t, c, tc.tool, tc.args()) // warms the schema and the caches
		args := tc.args()
		log.take()
		callOK(t, c, tc.tool, args)
		got := log.take()
		t.Logf("%s: %s", tc.tool, strings.Join(got, ", "))
		if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
			t.Errorf("%s sent %q, want %q", tc.tool, got, tc.want)
		}
	}
}

// TestSearchFallbackRefusesBeforeScanning: the in-process search counts its
// scope first (up to search.fallback_max_rows+1) and refuses a scope above
// the bound without reading its rows: the refused call sends the count
// (an aggregate) and no find.
func TestSearchFallbackRefusesBeforeScanning(t *testing.T) {
	log, uri := startCommandLog(t)
	if log == nil {
		t.Skip("the database link cannot be proxied (TLS or several hosts)")
	}
	seedFloor(t)
	c := stdioClient(t, policyFile(t, "search_fallback_100_rows"), "PARSE_MCP_MONGODB_URI="+uri, "PARSE_MCP_COLLECTION_PREFIX="+floorPrefix)
	args := map[string]any{"class_name": "Song", "query": "harbor dream"}
	callErr(t, c, "atlas_text_search", args, "invalid_query") // warms the engine probe
	log.take()
	msg := callErr(t, c, "atlas_text_search", args, "invalid_query")
	if !strings.Contains(msg, "more than 100 rows") {
		t.Fatalf("refusal %q", msg)
	}
	got := log.take()
	t.Logf("sent %s", strings.Join(got, ", "))
	counted := false
	for _, cmd := range got {
		if strings.HasPrefix(cmd, "find "+floorPrefix+"Song") {
			t.Fatalf("the refused search read the rows: %q", got)
		}
		counted = counted || cmd == "aggregate "+floorPrefix+"Song"
	}
	if !counted {
		t.Fatalf("no count of the scope: %q", got)
	}
}
