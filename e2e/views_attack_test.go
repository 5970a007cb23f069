package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/tools"
)

// Attacks on the confirm view's token through the binary (SECURITY.md
// "Views"): the model, or a client that claims the extension, tries to make
// one confirmation write twice, write something else, or write in another
// process; and reads of ui:// URIs that are not views.

// viewsWriteServer is a stdio server of a Memo class under confirm_writes:
// always, initialized as an Apps client without elicitation (so a write
// without a valid token is refused, never asked).
func viewsWriteServer(t *testing.T, uri string) *rawServer {
	t.Helper()
	r := startRaw(t, append(append([]string{}, writeEnv...), uri, policyEnv(t, "settings: {confirm_writes: always, rate_limit: {requests: 1000, window: 60s}}\n"))...)
	initializeWith(r, appsCaps)
	return r
}

// callLine sends a tools/call and returns its decoded response.
func (r *rawServer) callLine(id, tool, args, meta string) map[string]any {
	r.t.Helper()
	params := fmt.Sprintf(`{"name":%q,"arguments":%s`, tool, args)
	if meta != "" {
		params += `,"_meta":` + meta
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":%s}}`, id, params))
	return decodeLine(r.t, r.rawAnswer(id))
}

// viewToken is the confirm view's token of a dry run's response.
func viewTokenOf(t *testing.T, resp map[string]any) string {
	t.Helper()
	res := obj(resp["result"])
	tok, _ := obj(res["_meta"])[tools.ViewConfirmationKey].(string)
	if tok == "" {
		t.Fatalf("no confirm view token in %v", resp)
	}
	return tok
}

func TestViewConfirmTokenAttacks(t *testing.T) {
	db, uri := writeDB(t, bson.D{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "n", Value: "number"}})
	ctx := context.Background()
	if _, err := db.Collection("Memo").InsertOne(ctx, bson.D{{Key: "_id", Value: "memo000001"}, {Key: "title", Value: "a"}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	n := func() any {
		var doc bson.M
		if err := db.Collection("Memo").FindOne(ctx, bson.D{{Key: "_id", Value: "memo000001"}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return doc["n"]
	}
	r := viewsWriteServer(t, uri)
	const inc = `{"class_name":"Memo","object_id":"memo000001","fields":{"n":{"__op":"Increment","amount":1}}`
	refused := func(resp map[string]any) bool {
		return obj(resp["result"])["isError"] == true
	}
	meta := func(tok string) string { return fmt.Sprintf(`{%q:%q}`, tools.ViewConfirmationKey, tok) }

	dry := r.callLine("dry", "update_object", inc+`,"dry_run":true}`, "")
	tok := viewTokenOf(t, dry)
	// The token is in the result's _meta only: not in what the model reads.
	res := obj(dry["result"])
	if b, _ := json.Marshal([]any{res["content"], res["structuredContent"]}); strings.Contains(string(b), "parse-mcp.confirm") {
		t.Fatalf("the token is in the model's text or structuredContent")
	}

	t.Run("smuggled in the arguments", func(t *testing.T) {
		args := inc + fmt.Sprintf(`,"_meta":{%q:%q}}`, tools.ViewConfirmationKey, tok)
		if resp := r.callLine("args", "update_object", args, ""); !refused(resp) || fmt.Sprint(n()) != "0" {
			t.Errorf("a token in the arguments confirmed a write: %v, n %v", resp, n())
		}
	})
	t.Run("other arguments", func(t *testing.T) {
		for i, args := range []string{
			`{"class_name":"Memo","object_id":"memo000001","fields":{"n":{"__op":"Increment","amount":1.0}}}`, // 1 vs 1.0
			`{"class_name":"Memo","object_id":"memo000001","fields":{"n":{"__op":"Increment","amount":100}}}`,
			`{"class_name":"Memo","object_id":"memo000001","fields":{"n.x":{"__op":"Increment","amount":1}}}`,
			inc + `,"dry_run":false}`,
		} {
			if resp := r.callLine(fmt.Sprint("other", i), "update_object", args, meta(tok)); !refused(resp) || fmt.Sprint(n()) != "0" {
				t.Errorf("%s with the token: %v, n %v", args, resp, n())
			}
		}
		if resp := r.callLine("del", "delete_object", `{"class_name":"Memo","object_id":"memo000001"}`, meta(tok)); !refused(resp) {
			t.Errorf("another tool took the token: %v", resp)
		}
	})
	t.Run("another process", func(t *testing.T) {
		other := viewsWriteServer(t, uri)
		if resp := other.callLine("x", "update_object", inc+"}", meta(tok)); !refused(resp) || fmt.Sprint(n()) != "0" {
			t.Errorf("another server process took the token: %v, n %v", resp, n())
		}
	})
	t.Run("double spend", func(t *testing.T) {
		// Two calls with the same token at once: exactly one write.
		for _, id := range []string{"a", "b", "c"} {
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"update_object","arguments":%s,"_meta":%s}}`, id, inc+"}", meta(tok)))
		}
		ok, answered := 0, 0
		for answered < 3 {
			m := decodeLine(t, <-r.lines)
			if id := fmt.Sprint(m["id"]); id == "a" || id == "b" || id == "c" {
				answered++
				if !refused(m) {
					ok++
				}
			}
		}
		if ok != 1 || fmt.Sprint(n()) != "1" {
			t.Errorf("%d of three concurrent calls with one token wrote; n = %v, want exactly one write", ok, n())
		}
	})
}

// TestViewResourceReads: a ui:// URI that is not one of the views (another
// name, a traversal) is an unknown resource, not a file of the binary.
func TestViewResourceReads(t *testing.T) {
	r := startRaw(t)
	initializeWith(r, appsCaps)
	for i, uri := range []string{"ui://parse-mcp/nope", "ui://parse-mcp/../rows", "ui://parse-mcp/rows/../../views.go", "ui://parse-mcp/rows?x=1", "ui://parse-mcp/ROWS", "ui://other/rows", "ui://parse-mcp/dist/app.js"} {
		resp := r.rpc(fmt.Sprint("r", i), "resources/read", fmt.Sprintf(`{"uri":%q}`, uri))
		if resp["error"] == nil || strings.Contains(fmt.Sprint(resp), "<!doctype") {
			t.Errorf("%s: %v", uri, resp)
		}
	}
}
