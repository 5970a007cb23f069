package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestWriteConfirmReplay attacks 2026-07-28 confirmations over HTTP with two
// processes on one database (a load balancer's view): an accepted
// requestState + inputResponses authorises exactly one execution of exactly
// one request by one identity. Replays on the same process and on the other
// one, the answer moved onto other arguments, the token presented to a
// process acting as another identity or by another caller (named API key)
// are each asked anew and write nothing;
// an unspent token issued by one process is honoured once by the other
// (the signing secret is the database's, created once).
func TestWriteConfirmReplay(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	policy := policyEnv(t, "settings: {confirm_writes: always, rate_limit: {requests: 1000, window: 60s}}\n")
	if _, err := db.Collection("_User").InsertOne(context.Background(), bson.D{{Key: "_id", Value: "someoneElse"}, {Key: "username", Value: "else"}}); err != nil {
		t.Fatal(err)
	}
	const alice, bob = "alice-confirm-key-0123456789", "bob-confirm-key-0123456789"
	serverEnv := append(append([]string{}, writeEnv...), uri, policy, "PARSE_MCP_API_KEYS=alice:"+alice+",bob:"+bob)
	a, b := startHTTP(t, serverEnv...), startHTTP(t, serverEnv...)
	other := startHTTP(t, append(append([]string{}, serverEnv...), "PARSE_MCP_ACL_USER=someoneElse")...)

	memos := func() int64 {
		n, err := db.Collection("Memo").CountDocuments(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	key := alice // the caller: a named API key
	create := func(h *httpServer, title, state string) map[string]any {
		t.Helper()
		return confirmCreate(t, func(body []byte) map[string]any {
			hdr := statelessHeaders("tools/call", "create_object")
			hdr["X-MCP-API-Key"] = key
			resp, raw := h.request("POST", "/mcp", string(body), hdr)
			return lastResult(t, decodeAnswer(t, resp, raw))
		}, title, state)
	}
	ask := func(h *httpServer, title string) string {
		t.Helper()
		res := create(h, title, "")
		state, _ := res["requestState"].(string)
		if res["resultType"] != "input_required" || state == "" {
			t.Fatalf("first call: %v", res)
		}
		return state
	}
	asked := func(what string, res map[string]any, want int64) {
		t.Helper()
		if res["resultType"] != "input_required" || res["isError"] == true {
			t.Errorf("%s: not asked anew: %v", what, res)
		}
		if n := memos(); n != want {
			t.Fatalf("%s: %d objects, want %d", what, n, want)
		}
	}

	state := ask(a, "once")
	if res := create(a, "once", state); res["isError"] == true || obj(res["structuredContent"])["created"] != true {
		t.Fatalf("accepted: %v", res)
	}
	if n := memos(); n != 1 {
		t.Fatalf("after the accepted call: %d objects", n)
	}
	for i := range 4 {
		asked(fmt.Sprint("replay ", i+1, " on the same process"), create(a, "once", state), 1)
	}
	asked("replay on the other process", create(b, "once", state), 1)

	// An unspent token: not for other arguments, not for another identity.
	fresh := ask(a, "twice")
	asked("the answer moved onto other arguments", create(a, "swapped", fresh), 1)
	asked("the token on a process acting as another identity", create(other, "twice", fresh), 1)
	key = bob
	asked("the token from another caller (named API key)", create(b, "twice", fresh), 1)
	key = alice
	// The same token on the other process of the same identity: taken once.
	if res := create(b, "twice", fresh); obj(res["structuredContent"])["created"] != true {
		t.Fatalf("an unspent token on the other process: %v", res)
	}
	asked("replay after use on the other process", create(a, "twice", fresh), 2)

	// A forged or truncated state is asked anew too.
	asked("a forged state", create(a, "twice", "parse-mcp.confirm.v2.AAAA"), 2)
}

var confirmSeq atomic.Int64

// confirmCreate sends a 2026-07-28 create_object of a Memo titled title
// through send (which returns the call's result); state, when set, is the
// retry's requestState, sent with an accepted answer.
func confirmCreate(t *testing.T, send func(body []byte) map[string]any, title, state string) map[string]any {
	t.Helper()
	params := map[string]any{
		"name":      "create_object",
		"arguments": map[string]any{"class_name": "Memo", "fields": map[string]any{"title": title}},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    statelessVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "replay", "version": "1"},
		},
	}
	if state != "" {
		params["requestState"] = state
		params["inputResponses"] = map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprint("c", confirmSeq.Add(1)), "method": "tools/call", "params": params})
	return send(body)
}

// TestWriteConfirmReplayStdio: over stdio the token is spent in the process;
// replays there are asked anew, and a second stdio process (its own
// signing key) does not take the first one's token.
func TestWriteConfirmReplayStdio(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	env := append(append([]string{}, writeEnv...), uri, policyEnv(t, "settings: {confirm_writes: always}\n"))
	call := func(r *rawServer) func(body []byte) map[string]any {
		return func(body []byte) map[string]any {
			var m struct {
				ID any `json:"id"`
			}
			_ = json.Unmarshal(body, &m)
			r.send(string(body))
			for {
				if got := r.next(); got["id"] == m.ID {
					return obj(got["result"])
				}
			}
		}
	}
	a, b := call(startRaw(t, env...)), call(startRaw(t, env...))
	memos := func() int64 {
		n, err := db.Collection("Memo").CountDocuments(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := confirmCreate(t, a, "once", "")
	state, _ := first["requestState"].(string)
	if state == "" {
		t.Fatalf("first call: %v", first)
	}
	if res := confirmCreate(t, a, "once", state); obj(res["structuredContent"])["created"] != true {
		t.Fatalf("accepted: %v", res)
	}
	for i := range 3 {
		if res := confirmCreate(t, a, "once", state); res["resultType"] != "input_required" || memos() != 1 {
			t.Fatalf("replay %d: %v, %d objects", i, res, memos())
		}
	}
	fresh, _ := confirmCreate(t, a, "twice", "")["requestState"].(string)
	if res := confirmCreate(t, b, "twice", fresh); res["resultType"] != "input_required" || memos() != 1 {
		t.Fatalf("another stdio process took the token: %v, %d objects", res, memos())
	}
}
