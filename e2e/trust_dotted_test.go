package e2e

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// Dotted updates never write into or beside a value the identity sees as
// redacted (SECURITY.md "Writes"): {"meta.ref.className": "Memo"} on an
// Object field holding a pointer into a hidden class would rename the
// pointer to a visible class and show the hidden id to everyone.

// dottedAttackKeys are the dotted writes tried against a row whose
// meta.ref reads as the marker: into it (className, objectId, a new
// sub-key, Delete, a replacement) and beside it (Increment, Delete, Add on
// siblings inside meta).
var dottedAttackKeys = []map[string]any{
	{"meta.ref.className": "Memo"},
	{"meta.ref.objectId": "guessedid01"},
	{"meta.ref.extra": 1},
	{"meta.ref": map[string]any{"__op": "Delete"}},
	{"meta.ref": "plain"},
	{"meta.n": map[string]any{"__op": "Increment", "amount": 1}},
	{"meta.keep": map[string]any{"__op": "Delete"}},
	{"meta.list": map[string]any{"__op": "Add", "objects": []any{1}}},
	{"meta.list": map[string]any{"__op": "AddUnique", "objects": []any{1}}},
	{"meta.list": map[string]any{"__op": "Remove", "objects": []any{1}}},
}

// redactedMetas are Object values whose ref reads as the marker: a typed
// pointer into the hidden class, the same into a missing class, a
// reference string, and an untyped object naming the hidden class one
// level further down.
func redactedMetas() map[string]bson.D {
	ptr := func(class string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: class}, {Key: "objectId", Value: "vsecretid01"}}
	}
	meta := func(ref any) bson.D {
		return bson.D{{Key: "ref", Value: ref}, {Key: "n", Value: int32(1)}, {Key: "keep", Value: "a"}, {Key: "list", Value: bson.A{int32(1)}}}
	}
	return map[string]bson.D{
		"hidden":  meta(ptr("Vault")),
		"missing": meta(ptr("Nowhere")),
		"string":  meta("Vault$vsecretid01"),
		"deep":    meta(bson.D{{Key: "inner", Value: bson.D{{Key: "className", Value: "Vault"}, {Key: "objectId", Value: "vsecretid01"}}}}),
	}
}

// attackDotted runs every attack key, dry run and not, on every row of
// ids, and requires one refusal per key, byte-identical across the rows,
// and every stored row unchanged.
func attackDotted(t *testing.T, c *client.Client, db *mongo.Database, class string, ids []string, keys []map[string]any) {
	t.Helper()
	before := map[string]string{}
	for _, id := range ids {
		before[id] = storedForCompare(storedD(t, db, class, id))
	}
	for _, fields := range keys {
		for _, dry := range []bool{true, false} {
			var first string
			for _, id := range ids {
				args := map[string]any{"class_name": class, "object_id": id, "fields": fields, "dry_run": dry}
				res := call(t, c, "update_object", args)
				if !res.IsError {
					t.Errorf("%v dry_run=%v on %s was accepted: %s", fields, dry, id, text(res))
					continue
				}
				msg := strings.ReplaceAll(text(res), id, "<id>")
				if !strings.Contains(msg, "a dotted key changes part of a stored value") {
					t.Errorf("%v dry_run=%v on %s: not the dotted-write refusal: %s", fields, dry, id, msg)
				}
				if strings.Contains(msg, "vsecretid01") || strings.Contains(msg, "Vault") {
					t.Errorf("%v on %s: the refusal names what is hidden: %s", fields, id, msg)
				}
				if first == "" {
					first = msg
				} else if msg != first {
					t.Errorf("%v dry_run=%v: %s answers\n%s\nwhere %s answers\n%s", fields, dry, id, msg, ids[0], first)
				}
			}
		}
	}
	for _, id := range ids {
		if now := storedForCompare(storedD(t, db, class, id)); now != before[id] {
			t.Errorf("%s changed: %s\nwas %s", id, now, before[id])
		}
	}
}

func storedD(t *testing.T, db *mongo.Database, class, id string) bson.D {
	t.Helper()
	var d bson.D
	if err := db.Collection(class).FindOne(t.Context(), bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		t.Fatalf("reading %s %s: %v", class, id, err)
	}
	return d
}

// TestTrustDottedWritesIntoRedacted: in master posture and for a user with
// the write tier, every dotted write into or beside a redacted reference —
// to a hidden class, a missing class, by string, one level deeper — is
// refused with the same words for every row, dry run or not, and nothing
// changes; a protected Object field (scoped) and a row the user may write
// but not read refuse every dotted key whether or not a value is stored
// there. Dotted writes beside visible values still work.
func TestTrustDottedWritesIntoRedacted(t *testing.T) {
	allPublic := bson.D{}
	for _, op := range []string{"get", "find", "count", "create", "update", "delete", "addField"} {
		allPublic = append(allPublic, bson.E{Key: op, Value: bson.D{{Key: "*", Value: true}}})
	}
	schemas := writeOutSchemas()
	schemas = append(schemas, bson.D{{Key: "_id", Value: "Box"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"},
		{Key: "meta", Value: "object"}, {Key: "secret", Value: "object"},
		{Key: "_metadata", Value: bson.D{{Key: "class_permissions", Value: append(allPublic, bson.E{Key: "protectedFields", Value: bson.D{{Key: "*", Value: bson.A{"secret"}}}})}}}})
	db, uri := writeDB(t, schemas...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "visible"}})
	var redacted []string
	for name, meta := range redactedMetas() {
		insert(t, db, "Box", bson.D{{Key: "_id", Value: "r_" + name}, {Key: "title", Value: "t"}, {Key: "meta", Value: meta}})
		redacted = append(redacted, "r_"+name)
	}
	insert(t, db, "Box",
		bson.D{{Key: "_id", Value: "plain"}, {Key: "meta", Value: bson.D{{Key: "ref", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Memo"}, {Key: "objectId", Value: "m1"}}}, {Key: "n", Value: int32(1)}}}},
		bson.D{{Key: "_id", Value: "empty"}, {Key: "title", Value: "t"}},
		bson.D{{Key: "_id", Value: "prot"}, {Key: "secret", Value: bson.D{{Key: "x", Value: int32(1)}}}},
		bson.D{{Key: "_id", Value: "noprot"}, {Key: "title", Value: "t"}},
		bson.D{{Key: "_id", Value: "wo_meta"}, {Key: "meta", Value: bson.D{{Key: "n", Value: int32(1)}}}, {Key: "_rperm", Value: bson.A{}}, {Key: "_wperm", Value: bson.A{"u1"}}},
		bson.D{{Key: "_id", Value: "wo_none"}, {Key: "title", Value: "t"}, {Key: "_rperm", Value: bson.A{}}, {Key: "_wperm", Value: bson.A{"u1"}}},
	)
	for _, ident := range [][]string{nil, {"PARSE_MCP_ACL_USER=u1", "PARSE_MCP_PERMISSIONS=write"}} {
		c := writeClient(t, uri, append([]string{policyEnv(t, outputPolicy)}, ident...)...)
		attackDotted(t, c, db, "Box", redacted, dottedAttackKeys)
		if ident != nil {
			attackDotted(t, c, db, "Box", []string{"prot", "noprot"}, []map[string]any{{"secret.x": 2}, {"secret.y": map[string]any{"__op": "Delete"}}})
			attackDotted(t, c, db, "Box", []string{"wo_meta", "wo_none"}, []map[string]any{{"meta.n": 2}, {"meta.n": map[string]any{"__op": "Increment", "amount": 1}}})
		}
	}
	// A write that would need confirmation is refused before anyone is
	// asked: the checkpoint runs first.
	confirm := writeClient(t, uri, policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {confirm_writes: always, rate_limit: {requests: 1000, window: 60s}}\n"))
	attackDotted(t, confirm, db, "Box", redacted, dottedAttackKeys[:2])
	// Beside and below visible values, dotted writes work as Parse's do.
	c := writeClient(t, uri, policyEnv(t, outputPolicy), "PARSE_MCP_ACL_USER=u1", "PARSE_MCP_PERMISSIONS=write")
	callOK(t, c, "update_object", map[string]any{"class_name": "Box", "object_id": "plain", "fields": map[string]any{"meta.n": map[string]any{"__op": "Increment", "amount": 1}, "meta.ref.objectId": "m1"}})
	callOK(t, c, "update_object", map[string]any{"class_name": "Box", "object_id": "empty", "fields": map[string]any{"meta.ref.className": "Memo"}})
	callOK(t, c, "update_object", map[string]any{"class_name": "Box", "object_id": "r_hidden", "fields": map[string]any{"title": "whole fields still write"}})
}

// TestTrustDottedWritesIntoRedactedBridge: through the Parse Server bridge
// (Parse applies dotted keys itself) the policy refuses the same keys
// before the request leaves, in master posture and for a session user;
// Parse's stored row is unchanged.
func TestTrustDottedWritesIntoRedactedBridge(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	db := parseDatabase(t, ps)
	_, session := ps.SignUp(t, "dotty", "dotty-pw")
	ps.CreateClass(t, "Memo", map[string]string{"title": "String"}, nil)
	ps.CreateClass(t, "Vault", map[string]string{"key": "String"}, nil)
	ps.CreateClass(t, "Box", map[string]string{"title": "String", "meta": "Object"}, nil)
	var ids []string
	for name, meta := range redactedMetas() {
		id := "b" + strings.Repeat("0", 9-len(name)) + name
		insert(t, db, "Box", bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "t"}, {Key: "meta", Value: meta}})
		ids = append(ids, id)
	}
	pol := policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {confirm_writes: never, rate_limit: {requests: 1000, window: 60s}}\n")
	for _, ident := range []string{"PARSE_MCP_MASTER_KEY=" + ps.MasterKey, "PARSE_MCP_SESSION_TOKEN=" + session} {
		c := stdioClient(t, append(bridgeEnv(ps, ident, pol), append(writeEnv, "PARSE_MCP_PERMISSIONS=write")...)...)
		attackDotted(t, c, db, "Box", ids, dottedAttackKeys)
	}
	if got := ps.MustDo(t, "GET", "/classes/Box/"+ids[0], nil, parsetest.AsMaster); got["meta"] == nil {
		t.Fatalf("Parse lost the row: %v", got)
	}
}
