package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Confirmation of writes (settings.confirm_writes) in both protocol eras:
// accepted, declined, cancelled, and a client that cannot ask.

func confirmDB(t *testing.T) (string, func(id string) bool) {
	t.Helper()
	db, uri := writeDB(t, attackSchemas()...)
	var docs []any
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5", "m6"} {
		docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "title", Value: id}})
	}
	if _, err := db.Collection("Memo").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	exists := func(id string) bool {
		n, err := db.Collection("Memo").CountDocuments(context.Background(), bson.D{{Key: "_id", Value: id}})
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	return uri, exists
}

func initializeWith(r *rawServer, caps string) {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.next(); m["id"] != "init" || m["result"] == nil {
		r.t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// answerElicitation waits for the server's elicitation/create, checks that
// it shows the change, answers it, and returns the call's response.
func answerElicitation(t *testing.T, r *rawServer, callID, answer string, mustShow ...string) map[string]any {
	t.Helper()
	for {
		m := r.next()
		if m["method"] == "elicitation/create" {
			msg, _ := obj(m["params"])["message"].(string)
			for _, s := range mustShow {
				if !strings.Contains(msg, s) {
					t.Errorf("the question does not show %q: %s", s, msg)
				}
			}
			id, _ := m["id"].(string)
			if id == "" {
				r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":%s}`, m["id"], answer))
			} else {
				r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":%s}`, id, answer))
			}
			continue
		}
		if m["id"] == callID {
			return m
		}
	}
}

func TestWriteConfirmSessionEra(t *testing.T) {
	uri, exists := confirmDB(t)
	r := startRaw(t, append(append([]string{}, writeEnv...), uri)...) // confirm_writes defaults to destructive
	initializeWith(r, `{"elicitation":{}}`)

	// Accepted: the object is deleted; the question showed the exact filter.
	r.send(`{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"delete_object","arguments":{"class_name":"Memo","object_id":"m1"}}}`)
	m := answerElicitation(t, r, "d1", `{"action":"accept","content":{"confirm":true}}`, "delete object on Memo m1", `"filter"`, `"m1"`)
	if sc := obj(obj(m["result"])["structuredContent"]); sc["deleted"] != true || exists("m1") {
		t.Fatalf("accepted delete: %v", m)
	}
	// Declined and cancelled: nothing written, a clear result.
	for i, answer := range []string{`{"action":"decline"}`, `{"action":"cancel"}`, `{"action":"accept","content":{"confirm":false}}`} {
		id := fmt.Sprintf("d%d", i+2)
		r.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"delete_object","arguments":{"class_name":"Memo","object_id":"m2"}}}`)
		m := answerElicitation(t, r, id, answer)
		res := obj(m["result"])
		if sc := obj(res["structuredContent"]); res["isError"] == true || sc["written"] != false || !exists("m2") {
			t.Fatalf("%s: %v", answer, m)
		}
	}
	// A non-destructive write is not asked under the default.
	r.send(`{"jsonrpc":"2.0","id":"u1","method":"tools/call","params":{"name":"update_object","arguments":{"class_name":"Memo","object_id":"m3","fields":{"title":"t"}}}}`)
	if m := r.next(); obj(obj(m["result"])["structuredContent"])["updated"] != true {
		t.Fatalf("update under confirm_writes destructive: %v", m)
	}

	// A client without elicitation is refused, and nothing is deleted.
	r2 := startRaw(t, append(append([]string{}, writeEnv...), uri)...)
	initializeWith(r2, `{}`)
	msg := toolError(t, r2, "x1", "delete_object", `{"class_name":"Memo","object_id":"m4"}`, "access_denied", "confirmation_unavailable")
	if !strings.Contains(msg, "elicitation") || !exists("m4") {
		t.Fatalf("no elicitation: %s", msg)
	}
}

func TestWriteConfirmStatelessEra(t *testing.T) {
	uri, exists := confirmDB(t)
	r := startRaw(t, append(append([]string{}, writeEnv...), uri, policyEnv(t, "settings: {confirm_writes: always, direct_schema_changes: true}\n"))...)
	meta := func(caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
			`,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	}
	call := func(id, args, extra, caps string) map[string]any {
		r.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"update_object","arguments":` + args + extra + `,` + meta(caps) + `}}`)
		for {
			m := r.next()
			if m["id"] == id {
				return m
			}
		}
	}
	args := `{"class_name":"Memo","object_id":"m5","fields":{"title":"confirmed"}}`
	m := call("s1", args, "", `{"elicitation":{}}`)
	res := obj(m["result"])
	state, _ := res["requestState"].(string)
	ir := obj(obj(res["inputRequests"])["confirm"])
	if res["resultType"] != "input_required" || state == "" || ir["method"] != "elicitation/create" {
		t.Fatalf("first call: %v", m)
	}
	if msg, _ := obj(ir["params"])["message"].(string); !strings.Contains(msg, `"confirmed"`) || !strings.Contains(msg, "$set") {
		t.Errorf("the question does not show the update: %s", msg)
	}
	if !exists("m5") {
		t.Fatal("m5 vanished")
	}
	// Declined: nothing written.
	m = call("s2", args, `,"inputResponses":{"confirm":{"action":"decline"}},"requestState":"`+state+`"`, `{"elicitation":{}}`)
	if sc := obj(obj(m["result"])["structuredContent"]); sc["written"] != false {
		t.Fatalf("declined: %v", m)
	}
	// Accepted: written.
	m = call("s3", args, `,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`, `{"elicitation":{}}`)
	if sc := obj(obj(m["result"])["structuredContent"]); sc["updated"] != true {
		t.Fatalf("accepted: %v", m)
	}
	// The answer replayed onto another write is not taken: asked anew.
	m = call("s4", `{"class_name":"Memo","object_id":"m6","fields":{"title":"replayed"}}`, `,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`, `{"elicitation":{}}`)
	if obj(m["result"])["resultType"] != "input_required" {
		t.Fatalf("a replayed answer was taken: %v", m)
	}
	// No elicitation capability: refused.
	m = call("s5", args, "", `{}`)
	if meta := obj(obj(m["result"])["_meta"]); meta["parse.error_code"] != "access_denied" {
		t.Fatalf("2026-07-28 client without elicitation: %v", m)
	}
}
