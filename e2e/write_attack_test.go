package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Every refusal of the write policy as an attack through the binary, and
// the proof that a refused write touches nothing.

func attackSchemas() []bson.D {
	return []bson.D{
		{{Key: "_id", Value: "Ticket"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "orgId", Value: "string"},
			{Key: "owner", Value: "*_User"}, {Key: "secretRef", Value: "*Vault"}, {Key: "meta", Value: "object"}, {Key: "tags", Value: "array"}},
		{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "body", Value: "string"}},
		{{Key: "_id", Value: "Vault"}, {Key: "objectId", Value: "string"}, {Key: "key", Value: "string"}},
		{{Key: "_id", Value: "Locked"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"},
			{Key: "_metadata", Value: bson.D{{Key: "class_permissions", Value: bson.D{
				{Key: "find", Value: bson.D{{Key: "*", Value: true}}}, {Key: "count", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "get", Value: bson.D{{Key: "*", Value: true}}}, {Key: "create", Value: bson.D{}},
				{Key: "update", Value: bson.D{{Key: "*", Value: true}}}, {Key: "delete", Value: bson.D{}}, {Key: "addField", Value: bson.D{}},
			}}}}},
		{{Key: "_id", Value: "_User"}, {Key: "objectId", Value: "string"}, {Key: "username", Value: "string"}},
	}
}

const attackPolicy = `classes:
  Ticket:
    tenant_scope: {field: orgId}
  Memo:
    agent_fields: [title, body]
    writable_fields: [title]
  Vault: {hidden: true}
settings: {confirm_writes: never, direct_schema_changes: true, rate_limit: {requests: 1000, window: 60s}}
`

// snapshot is every collection's documents, to prove nothing changed.
func snapshot(t *testing.T, db *mongo.Database) string {
	t.Helper()
	ctx := context.Background()
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range sortedStrings(names) {
		cur, err := db.Collection(n).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		b.WriteString(n + ":")
		for _, d := range docs {
			b.WriteString(d.String())
		}
		b.WriteString("\n")
	}
	return b.String()
}

func sortedStrings(s []string) []string {
	out := append([]string{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestWriteAttacks(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx := context.Background()
	if _, err := db.Collection("Ticket").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "t1"}, {Key: "title", Value: "mine"}, {Key: "orgId", Value: "org1"}},
		bson.D{{Key: "_id", Value: "t2"}, {Key: "title", Value: "theirs"}, {Key: "orgId", Value: "org2"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Memo").InsertOne(ctx, bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("_User").InsertOne(ctx, bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, db)
	r := startRaw(t, append(append([]string{}, writeEnv...), uri, policyEnv(t, attackPolicy), "PARSE_MCP_TENANT_ID=org1")...)
	r.initialize()

	// The internal-field floor at every key and depth: security violations.
	for id, args := range map[string]string{
		"rperm":           `{"class_name":"Memo","fields":{"_rperm":["*"]}}`,
		"hashed-password": `{"class_name":"Memo","fields":{"_hashed_password":"x"}}`,
		"session-token":   `{"class_name":"Memo","fields":{"sessionToken":"x"}}`,
		"auth-data":       `{"class_name":"Memo","fields":{"authData":{"x":{}}}}`,
		"storage-pointer": `{"class_name":"Ticket","fields":{"_p_owner":"_User$u1"}}`,
		"nested-floor":    `{"class_name":"Ticket","fields":{"meta":{"deep":{"_session_token":"r:1"}}}}`,
		"op-payload":      `{"class_name":"Ticket","fields":{"tags":{"__op":"Add","objects":[{"_wperm":["*"]}]}}}`,
		"acl-floor":       `{"class_name":"Memo","fields":{"title":"a"},"acl":{"_rperm":{"read":true}}}`,
		"acl-in-fields":   `{"class_name":"Memo","fields":{"title":"a","ACL":{"_wperm":{"write":true}}}}`,
	} {
		violation(t, r, "create-"+id, "create_object", args, "_rperm", "_hashed_password", "_session_token", "_wperm")
	}
	violation(t, r, "update-floor", "update_object", `{"class_name":"Memo","object_id":"m1","fields":{"_acl":{}}}`, "_acl")

	// Parse's system classes are not writable through raw CRUD.
	toolError(t, r, "system-create", "create_object", `{"class_name":"_User","fields":{"username":"eve"}}`, "access_denied", "system_class")
	toolError(t, r, "system-update", "update_object", `{"class_name":"_User","object_id":"u1","fields":{"username":"eve"}}`, "access_denied", "system_class")
	toolError(t, r, "system-delete", "delete_object", `{"class_name":"_User","object_id":"u1"}`, "access_denied", "system_class")
	toolError(t, r, "system-class-create", "create_class", `{"class_name":"_Audience"}`, "access_denied", "system_class")

	// A hidden class answers exactly as a missing one, in every position.
	missing := toolError(t, r, "missing-class", "create_object", `{"class_name":"Vaulx","fields":{"key":"k"}}`, "invalid_argument", "")
	hidden := toolError(t, r, "hidden-class", "create_object", `{"class_name":"Vault","fields":{"key":"k"}}`, "invalid_argument", "")
	if strings.Replace(missing, "Vaulx", "Vault", 1) != hidden {
		t.Errorf("a hidden class answers unlike a missing one: %q vs %q", hidden, missing)
	}
	// References in written values: a hidden class (Vault) and a missing
	// one (Vaulx) get the same refusal, dry run or not.
	for id, args := range map[string]string{
		"pointer-value": `{"class_name":"Ticket","fields":{"owner":{"__type":"Pointer","className":"%s","objectId":"v1"}}%s}`,
		"new-pointer":   `{"class_name":"Ticket","fields":{"title":"t","x":{"__type":"Pointer","className":"%s","objectId":"wu1JlVFHb8"}}%s}`,
		"nested":        `{"class_name":"Ticket","fields":{"meta":{"p":{"__type":"Pointer","className":"%s","objectId":"v1"}}}%s}`,
		"object":        `{"class_name":"Ticket","fields":{"meta":{"o":{"__type":"Object","className":"%s","objectId":"v1"}}}%s}`,
		"string":        `{"class_name":"Ticket","fields":{"tags":["%s$wu1JlVFHb8"]}%s}`,
		"string-nested": `{"class_name":"Ticket","fields":{"meta":{"a":["%s$wu1JlVFHb8"]}}%s}`,
		"long-id":       `{"class_name":"Ticket","fields":{"title":"%s$wu1JlVFHb8wu1JlVFHb8"}%s}`,
		"relation":      `{"class_name":"Ticket","fields":{"rel":{"__op":"AddRelation","objects":[{"__type":"Pointer","className":"%s","objectId":"v1"}]}}%s}`,
	} {
		for _, dry := range []string{"", `,"dry_run":true`} {
			var answers [2]string
			for i, cls := range []string{"Vault", "Vaulx"} {
				msg := toolError(t, r, "hidden-"+id, "create_object", fmt.Sprintf(args, cls, dry), "invalid_argument", "")
				if !strings.Contains(msg, "Class "+cls+" does not exist or is not accessible.") {
					t.Errorf("%s (%s): %s", id, cls, msg)
				}
				answers[i] = strings.ReplaceAll(msg, cls, "<C>")
			}
			if answers[0] != answers[1] {
				t.Errorf("%s%s: hidden %q, missing %q", id, dry, answers[0], answers[1])
			}
		}
	}
	msg := toolError(t, r, "hidden-pointer-field", "create_object", `{"class_name":"Ticket","fields":{"secretRef":"v1"}}`, "invalid_argument", "")
	if !strings.Contains(msg, "secretRef points to a class that does not exist or is not accessible") || strings.Contains(msg, "Vault") {
		t.Errorf("hidden-pointer-field (must not name the target): %s", msg)
	}
	toolError(t, r, "hidden-delete-class", "delete_class", `{"class_name":"Vault"}`, "invalid_argument", "")
	// create_class of a hidden name answers as a name agent.classes
	// excludes: it does not say why (SECURITY.md "Writes").
	if msg := toolError(t, r, "hidden-create-class", "create_class", `{"class_name":"Vault","dry_run":true}`, "access_denied", "class_filter"); strings.Contains(msg, "polic") || strings.Contains(msg, "reserved") {
		t.Errorf("hidden-create-class names the policy: %s", msg)
	}
	toolError(t, r, "hidden-target", "create_class", `{"class_name":"Leak","fields":{"s":{"type":"Pointer","targetClass":"Vault"}}}`, "invalid_argument", "")

	// The writable set: writable_fields (else agent_fields); the ACL only when listed.
	toolError(t, r, "not-writable", "update_object", `{"class_name":"Memo","object_id":"m1","fields":{"body":"x"}}`, "access_denied", "field_not_writable")
	toolError(t, r, "new-field-not-writable", "create_object", `{"class_name":"Memo","fields":{"title":"a","extra":1}}`, "access_denied", "field_not_writable")
	toolError(t, r, "acl-not-writable", "update_object", `{"class_name":"Memo","object_id":"m1","acl":{"*":{"read":true}}}`, "access_denied", "field_not_writable")

	// The tenant field: forced on create, immutable on update; another
	// tenant's object is not found.
	toolError(t, r, "tenant-spoof", "create_object", `{"class_name":"Ticket","fields":{"title":"a","orgId":"org2"}}`, "access_denied", "tenant_scope")
	toolError(t, r, "tenant-op", "create_object", `{"class_name":"Ticket","fields":{"orgId":{"__op":"Delete"}}}`, "access_denied", "tenant_scope")
	toolError(t, r, "tenant-move", "update_object", `{"class_name":"Ticket","object_id":"t1","fields":{"orgId":"org2"}}`, "access_denied", "tenant_scope")
	if msg := toolError(t, r, "tenant-other", "update_object", `{"class_name":"Ticket","object_id":"t2","fields":{"title":"pwned"}}`, "parse_error", ""); !strings.Contains(msg, "Object not found") {
		t.Errorf("another tenant's object: %s", msg)
	}
	toolError(t, r, "tenant-other-delete", "delete_object", `{"class_name":"Ticket","object_id":"t2"}`, "parse_error", "")

	// Server-set fields and Parse's own refusals.
	toolError(t, r, "object-id", "create_object", `{"class_name":"Memo","fields":{"objectId":"abc"}}`, "invalid_argument", "")
	toolError(t, r, "created-at", "update_object", `{"class_name":"Memo","object_id":"m1","fields":{"createdAt":"2020-01-01"}}`, "invalid_argument", "")
	toolError(t, r, "nested-dollar", "create_object", `{"class_name":"Ticket","fields":{"meta":{"$where":"1"}}}`, "parse_error", "")
	toolError(t, r, "bad-op", "update_object", `{"class_name":"Memo","object_id":"m1","fields":{"title":{"__op":"Batch","ops":[]}}}`, "parse_error", "")

	if after := snapshot(t, db); after != before {
		t.Errorf("a refused write changed the database:\nbefore %s\nafter  %s", before, after)
	}

	// The one allowed write: the tenant is forced on create.
	res := obj(aggRPC(r, "tenant-forced", "create_object", `{"class_name":"Ticket","fields":{"title":"new"}}`)["result"])
	if res["isError"] == true {
		t.Fatalf("create in the tenant: %v", res)
	}
	id := obj(res["structuredContent"])["object_id"].(string)
	if doc := stored(t, db, "Ticket", id); doc["orgId"] != "org1" {
		t.Errorf("the tenant field was not forced: %v", doc)
	}
}

func TestWriteGates(t *testing.T) {
	_, uri := writeDB(t, attackSchemas()...)
	for _, tc := range []struct {
		env  []string
		tool string
		code string
	}{
		{[]string{"PARSE_MCP_PERMISSIONS=readonly", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true", "PARSE_AGENT_ALLOW_RAW_CRUD=true"}, "create_object", "permission_denied"},
		{[]string{"PARSE_MCP_PERMISSIONS=write"}, "create_object", "access_denied"},
		{[]string{"PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true"}, "update_object", "access_denied"},
		{[]string{"PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true", "PARSE_AGENT_ALLOW_RAW_CRUD=true"}, "delete_object", "permission_denied"},
		{[]string{"PARSE_MCP_PERMISSIONS=admin", "PARSE_AGENT_ALLOW_SCHEMA_OPS=true"}, "create_class", "access_denied"},
	} {
		c := stdioClient(t, append(tc.env, uri)...)
		callErr(t, c, tc.tool, map[string]any{"class_name": "Memo", "object_id": "m1", "fields": map[string]any{"title": "x"}}, tc.code)
		list := callOK(t, c, "list_tools", nil)
		for _, x := range list["tools"].([]any) {
			if x.(map[string]any)["name"] == tc.tool {
				t.Errorf("%s is listed though it is not permitted (%v)", tc.tool, tc.env)
			}
		}
	}
}

func TestWriteScopedIdentity(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx := context.Background()
	if _, err := db.Collection("_User").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}},
		bson.D{{Key: "_id", Value: "u2"}, {Key: "username", Value: "bob"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Memo").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "own"}, {Key: "title", Value: "a"}, {Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{"u1"}}},
		bson.D{{Key: "_id", Value: "ro"}, {Key: "title", Value: "b"}, {Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{"u2"}}},
		bson.D{{Key: "_id", Value: "pub"}, {Key: "title", Value: "c"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Locked").InsertOne(ctx, bson.D{{Key: "_id", Value: "l1"}, {Key: "title", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, db)
	c := writeClient(t, uri, "PARSE_MCP_ACL_USER=u1", policyEnv(t, "settings: {confirm_writes: never, direct_schema_changes: true}\n"))

	// _wperm, exactly as Parse's addWriteACL: another user's object is not found.
	msg := callErr(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "ro", "fields": map[string]any{"title": "pwned"}}, "parse_error")
	if !strings.Contains(msg, "Object not found") {
		t.Errorf("update without write permission: %s", msg)
	}
	callErr(t, c, "delete_object", map[string]any{"class_name": "Memo", "object_id": "ro"}, "parse_error")
	// CLP create/delete/addField.
	callErr(t, c, "create_object", map[string]any{"class_name": "Locked", "fields": map[string]any{"title": "x"}}, "access_denied")
	callErr(t, c, "delete_object", map[string]any{"class_name": "Locked", "object_id": "l1"}, "access_denied")
	msg = callErr(t, c, "update_object", map[string]any{"class_name": "Locked", "object_id": "l1", "fields": map[string]any{"brandNew": 1}}, "access_denied")
	if !strings.Contains(msg, "addField") {
		t.Errorf("addField: %s", msg)
	}
	// Class operations need the master posture.
	callErr(t, c, "create_class", map[string]any{"class_name": "Mine"}, "access_denied")
	if after := snapshot(t, db); after != before {
		t.Errorf("a refused write changed the database")
	}

	// What Parse allows: the own object, a public one, an update under CLP update.
	callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "own", "fields": map[string]any{"title": "edited"}})
	callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "pub", "fields": map[string]any{"title": "edited"}})
	callOK(t, c, "update_object", map[string]any{"class_name": "Locked", "object_id": "l1", "fields": map[string]any{"title": "edited"}})
	if doc := stored(t, db, "Memo", "own"); doc["title"] != "edited" {
		t.Errorf("own object not updated: %v", doc)
	}
}

func TestWriteDryRunTouchesNothing(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx := context.Background()
	if _, err := db.Collection("Memo").InsertOne(ctx, bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, db)
	c := writeClient(t, uri, policyEnv(t, "settings: {confirm_writes: always, direct_schema_changes: true}\n"))
	out := callOK(t, c, "create_object", map[string]any{"class_name": "Ticket", "dry_run": true, "fields": map[string]any{
		"title": "t", "newNum": 5, "owner": "u1", "rel": map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": "u1"}}},
	}})
	change := out["change"].(map[string]any)
	doc := change["insert_document"].(map[string]any)
	if out["dry_run"] != true || doc["_p_owner"] != "_User$u1" || change["schema_add_fields"].(map[string]any)["newNum"] != "number" || change["relations"] == nil {
		t.Fatalf("dry run of create: %v", out)
	}
	if obj := out["object"].(map[string]any); obj["newNum"] != float64(5) || obj["objectId"] != out["object_id"] {
		t.Fatalf("dry run object: %v", out["object"])
	}
	out = callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "m1", "dry_run": true, "fields": map[string]any{
		"title": "y", "n": map[string]any{"__op": "Increment", "amount": 2},
	}})
	upd := out["change"].(map[string]any)["update"].(map[string]any)
	if upd["$inc"].(map[string]any)["n"] != float64(2) || out["object"].(map[string]any)["title"] != "y" || out["object"].(map[string]any)["n"] != float64(2) {
		t.Fatalf("dry run of update: %v", out)
	}
	callOK(t, c, "delete_object", map[string]any{"class_name": "Memo", "object_id": "m1", "dry_run": true})
	callOK(t, c, "create_class", map[string]any{"class_name": "Fresh", "dry_run": true, "fields": map[string]any{"a": map[string]any{"type": "String"}}})
	callOK(t, c, "delete_class", map[string]any{"class_name": "Locked", "dry_run": true})
	if after := snapshot(t, db); after != before {
		t.Errorf("a dry run changed the database:\nbefore %s\nafter  %s", before, after)
	}
}
