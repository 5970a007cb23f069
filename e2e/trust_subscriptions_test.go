package e2e

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Attacks on resources/subscribe by a scoped caller (SECURITY.md "Outputs:
// one rule", "Subscription payloads"): a notification is an output too.

// TestTrustSubscribeCountNeedsCountCLP: parse://C/count is count_objects,
// whose class-level permission is count, not find. A class whose CLP lets
// the identity find but not count is refused by resources/read of the
// count resource; its subscription must be refused alike, not watched with
// find's scope (every insert would then announce a count change the
// identity may not count).
func TestTrustSubscribeCountNeedsCountCLP(t *testing.T) {
	all := bson.D{{Key: "*", Value: true}}
	schemas := writeOutSchemas()
	schemas[0] = append(schemas[0], bson.E{Key: "_metadata", Value: bson.D{{Key: "class_permissions", Value: bson.D{
		{Key: "get", Value: all}, {Key: "find", Value: all}, {Key: "count", Value: bson.D{}},
		{Key: "create", Value: all}, {Key: "update", Value: all}, {Key: "delete", Value: all}, {Key: "addField", Value: bson.D{}},
	}}}})
	db, uri := writeDB(t, schemas...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}})
	r := startRaw(t, uri, "PARSE_MCP_ACL_USER=u1", policyEnv(t, outputPolicy))
	r.initialize()
	msg := rpcError(t, r.rpc("r", "resources/read", `{"uri":"parse://Memo/count"}`), -32602)
	if !strings.Contains(msg, "count") {
		t.Fatalf("read of the count resource: %s", msg)
	}
	m := r.rpc("s", "resources/subscribe", `{"uri":"parse://Memo/count"}`)
	if m["error"] == nil {
		insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m2"}, {Key: "title", Value: "y"}})
		t.Fatalf("subscribing to a count the identity may not read was accepted (%v); after an insert: %v", m, r.updates(settle))
	}
	if sub := rpcError(t, m, -32602); sub != msg {
		t.Errorf("subscribe answers %q, read %q", sub, msg)
	}
	// The samples resource is a find: it may be watched.
	result(t, r.rpc("s2", "resources/subscribe", `{"uri":"parse://Memo/samples"}`))
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m3"}, {Key: "title", Value: "z"}})
	if u := r.expectUpdates(1); strings.Join(u, " ") != "parse://Memo/samples" {
		t.Fatalf("after an insert: %v, want the samples update only", u)
	}
}
