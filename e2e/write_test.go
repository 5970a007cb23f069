package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// End-to-end tests of the write surface (docs/writes.md "Writes") through the
// binary. Every test writes its own fresh database, so the seeded demo the
// read tests count on is never touched.

var writeDBSeq atomic.Int64

// writeDB creates an empty database holding the given _SCHEMA documents and
// returns it with the PARSE_MCP_MONGODB_URI setting pointing at it.
func writeDB(t *testing.T, schemas ...bson.D) (*mongo.Database, string) {
	t.Helper()
	name := fmt.Sprintf("pmw_%d_%d", os.Getpid(), writeDBSeq.Add(1))
	u, err := url.Parse(mongoURI)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	cl, err := mongo.Connect(options.Client().ApplyURI(u.String()))
	if err != nil {
		t.Fatal(err)
	}
	db := cl.Database(name)
	t.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = cl.Disconnect(context.Background())
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range schemas {
		if _, err := db.Collection("_SCHEMA").InsertOne(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return db, "PARSE_MCP_MONGODB_URI=" + u.String()
}

// writeEnv is the environment of a server allowed every write.
var writeEnv = []string{"PARSE_MCP_PERMISSIONS=admin", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true", "PARSE_AGENT_ALLOW_RAW_CRUD=true",
	"PARSE_AGENT_ALLOW_SCHEMA_OPS=true", "PARSE_AGENT_ALLOW_RAW_SCHEMA=true"}

// policyEnv writes a small policy of the test's own (not a variant of the
// demo policy: see policyFile) and returns its PARSE_MCP_POLICY_FILE
// setting.
func policyEnv(t testing.TB, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return "PARSE_MCP_POLICY_FILE=" + path
}

func writeClient(t *testing.T, uriEnv string, extra ...string) *client.Client {
	t.Helper()
	return stdioClient(t, append(append(append([]string{}, writeEnv...), uriEnv), extra...)...)
}

// stored reads a stored document as the database holds it.
func stored(t *testing.T, db *mongo.Database, class, id string) bson.M {
	t.Helper()
	var doc bson.M
	err := db.Collection(class).FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Decode(&doc)
	if err != nil {
		t.Fatalf("reading %s %s: %v", class, id, err)
	}
	return doc
}

func schemaDoc(t *testing.T, db *mongo.Database, class string) bson.M {
	t.Helper()
	var doc bson.M
	if err := db.Collection("_SCHEMA").FindOne(context.Background(), bson.D{{Key: "_id", Value: class}}).Decode(&doc); err != nil {
		t.Fatalf("reading _SCHEMA %s: %v", class, err)
	}
	return doc
}

func count(t *testing.T, db *mongo.Database, coll string) int64 {
	t.Helper()
	n, err := db.Collection(coll).CountDocuments(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var noConfirm = "settings: {confirm_writes: never, direct_schema_changes: true}\n"

func TestWriteObjectLifecycle(t *testing.T) {
	db, uri := writeDB(t,
		bson.D{{Key: "_id", Value: "Author"}, {Key: "objectId", Value: "string"}, {Key: "name", Value: "string"}},
		bson.D{{Key: "_id", Value: "_User"}, {Key: "objectId", Value: "string"}, {Key: "username", Value: "string"}},
	)
	c := writeClient(t, uri, policyEnv(t, noConfirm))

	out := callOK(t, c, "create_class", map[string]any{"class_name": "Note", "fields": map[string]any{
		"title":   map[string]any{"type": "String", "required": true},
		"views":   map[string]any{"type": "Number", "defaultValue": 0},
		"author":  map[string]any{"type": "Pointer", "targetClass": "Author"},
		"readers": map[string]any{"type": "Relation", "targetClass": "_User"},
	}})
	if out["created"] != true {
		t.Fatalf("create_class: %v", out)
	}
	sd := schemaDoc(t, db, "Note")
	if sd["title"] != "string" || sd["author"] != "*Author" || sd["readers"] != "relation<_User>" || sd["createdAt"] != "date" {
		t.Fatalf("_SCHEMA of Note: %v", sd)
	}

	out = callOK(t, c, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{
		"title":   "hello",
		"author":  "A1b2C3d4E5",
		"when":    map[string]any{"__type": "Date", "iso": "2024-03-01T10:00:00.000Z"},
		"loc":     map[string]any{"__type": "GeoPoint", "latitude": 48.85, "longitude": 2.35},
		"pic":     map[string]any{"__type": "File", "name": "abc_pic.png", "url": "http://files/abc_pic.png"},
		"tags":    []any{"a", "b"},
		"meta":    map[string]any{"k": 1.5, "at": map[string]any{"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}, "who": map[string]any{"__type": "Pointer", "className": "Author", "objectId": "zzz"}},
		"big":     4e10,
		"readers": map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": "u1"}}},
	}})
	id, _ := out["object_id"].(string)
	if len(id) != 10 {
		t.Fatalf("create_object: objectId %q: %v", id, out)
	}
	doc := stored(t, db, "Note", id)
	if doc["_p_author"] != "Author$A1b2C3d4E5" || doc["views"] != int32(0) || doc["pic"] != "abc_pic.png" || doc["big"] != 4e10 {
		t.Fatalf("stored document: %v", doc)
	}
	if _, ok := doc["when"].(bson.DateTime); !ok {
		t.Fatalf("when is not a BSON date: %T", doc["when"])
	}
	if loc, _ := doc["loc"].(bson.A); len(loc) != 2 || loc[0] != 2.35 || loc[1] != 48.85 {
		t.Fatalf("loc: %v", doc["loc"])
	}
	if doc["_rperm"] != nil || doc["_wperm"] != nil {
		t.Fatalf("no ACL given (and none writable without writable_fields): _rperm %v _wperm %v", doc["_rperm"], doc["_wperm"])
	}
	if doc["_created_at"] != doc["_updated_at"] {
		t.Fatalf("_created_at %v != _updated_at %v", doc["_created_at"], doc["_updated_at"])
	}
	var raw bson.Raw
	if err := db.Collection("Note").FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if at := raw.Lookup("meta", "at"); at.Type != bson.TypeDateTime {
		t.Fatalf("a date inside an Object is not a BSON date: %v", at)
	}
	if who, _ := raw.Lookup("meta", "who").Document().Elements(); len(who) != 3 || who[0].Key() != "__type" || who[1].Key() != "className" || who[2].Key() != "objectId" {
		t.Fatalf("embedded pointer key order: %v", who)
	}
	if n := count(t, db, "_Join:readers:Note"); n != 1 {
		t.Fatalf("_Join:readers:Note has %d pairs, want 1", n)
	}
	sd = schemaDoc(t, db, "Note")
	if sd["when"] != "date" || sd["loc"] != "geopoint" || sd["pic"] != "file" || sd["tags"] != "array" || sd["meta"] != "object" || sd["big"] != "number" {
		t.Fatalf("_SCHEMA after create: %v", sd)
	}
	// Read back through the read tools, in the REST shape.
	got := callOK(t, c, "get_object", map[string]any{"class_name": "Note", "object_id": id, "shape": "rest"})
	obj := got["object"].(map[string]any)
	if a := obj["author"].(map[string]any); a["objectId"] != "A1b2C3d4E5" || a["className"] != "Author" {
		t.Fatalf("author read back: %v", obj)
	}
	if l := obj["loc"].(map[string]any); l["latitude"] != 48.85 {
		t.Fatalf("loc read back: %v", obj["loc"])
	}

	// Every __op.
	callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": id, "fields": map[string]any{
		"views":   map[string]any{"__op": "Increment", "amount": 3},
		"tags":    map[string]any{"__op": "AddUnique", "objects": []any{"b", "c"}},
		"list":    map[string]any{"__op": "Add", "objects": []any{1, 1}},
		"big":     map[string]any{"__op": "Delete"},
		"readers": map[string]any{"__op": "RemoveRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": "u1"}}},
		"author":  map[string]any{"__type": "Pointer", "className": "Author", "objectId": "Other12345"},
		"when":    "2025-01-02T03:04:05Z",
		"loc":     []any{10.5, 20.25},
		"pic":     "other_pic.png",
	}})
	doc = stored(t, db, "Note", id)
	if doc["views"] != int32(3) || fmt.Sprint(doc["tags"]) != "[a b c]" || fmt.Sprint(doc["list"]) != "[1 1]" || doc["_p_author"] != "Author$Other12345" {
		t.Fatalf("after update: %v", doc)
	}
	if loc, _ := doc["loc"].(bson.A); len(loc) != 2 || loc[0] != 20.25 || loc[1] != 10.5 || doc["pic"] != "other_pic.png" {
		t.Fatalf("compact GeoPoint [lat, lng] and file name written back: loc %v pic %v", doc["loc"], doc["pic"])
	}
	if _, has := doc["big"]; has {
		t.Fatalf("Delete left big: %v", doc)
	}
	if w, _ := doc["when"].(bson.DateTime); w.Time().UTC().Year() != 2025 {
		t.Fatalf("an ISO string on a Date field is not stored as a date: %v", doc["when"])
	}
	if n := count(t, db, "_Join:readers:Note"); n != 0 {
		t.Fatalf("RemoveRelation left %d pairs", n)
	}
	callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": id, "fields": map[string]any{
		"tags": map[string]any{"__op": "Remove", "objects": []any{"a"}},
	}})
	if doc = stored(t, db, "Note", id); fmt.Sprint(doc["tags"]) != "[b c]" {
		t.Fatalf("Remove: %v", doc["tags"])
	}

	// Type conflicts and required fields, worded as Parse words them.
	msg := callErr(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": id, "fields": map[string]any{"views": "many"}}, "parse_error")
	if !strings.Contains(msg, "schema mismatch for Note.views; expected Number but got String") || !strings.Contains(msg, "111") {
		t.Fatalf("type conflict: %s", msg)
	}
	msg = callErr(t, c, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{"views": 1}}, "parse_error")
	if !strings.Contains(msg, "title is required") {
		t.Fatalf("required: %s", msg)
	}

	// delete_class refuses a non-empty class.
	msg = callErr(t, c, "delete_class", map[string]any{"class_name": "Note"}, "parse_error")
	if !strings.Contains(msg, "Class Note is not empty, contains 1 objects, cannot drop schema.") {
		t.Fatalf("delete_class of a non-empty class: %s", msg)
	}
	callOK(t, c, "delete_object", map[string]any{"class_name": "Note", "object_id": id})
	if n := count(t, db, "Note"); n != 0 {
		t.Fatalf("delete_object left %d objects", n)
	}
	callOK(t, c, "delete_class", map[string]any{"class_name": "Note"})
	if n, _ := db.Collection("_SCHEMA").CountDocuments(context.Background(), bson.D{{Key: "_id", Value: "Note"}}); n != 0 {
		t.Fatal("delete_class left the _SCHEMA document")
	}
	names, _ := db.ListCollectionNames(context.Background(), bson.D{})
	for _, n := range names {
		if strings.HasPrefix(n, "_Join:readers:Note") || n == "Note" {
			t.Fatalf("delete_class left collection %s", n)
		}
	}
}

func TestWriteACLShapes(t *testing.T) {
	db, uri := writeDB(t, bson.D{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}},
		bson.D{{Key: "_id", Value: "Doc"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}})
	c := writeClient(t, uri, policyEnv(t, `classes:
  Doc:
    default_acl: {"role:Editors": {read: true, write: true}, "*": {read: true}}
    writable_fields: [title, ACL]
  Memo:
    writable_fields: [title, ACL]
settings: {confirm_writes: never, direct_schema_changes: true}
`))
	create := func(class string, acl any) bson.M {
		args := map[string]any{"class_name": class, "fields": map[string]any{"title": "t"}}
		if acl != nil {
			args["acl"] = acl
		}
		out := callOK(t, c, "create_object", args)
		return stored(t, db, class, out["object_id"].(string))
	}
	// No ACL: public, no ACL fields at all (as Parse).
	if doc := create("Memo", nil); doc["_rperm"] != nil || doc["_wperm"] != nil || doc["_acl"] != nil {
		t.Errorf("no ACL: %v", doc)
	}
	// {} is master only.
	if doc := create("Memo", map[string]any{}); fmt.Sprint(doc["_rperm"], doc["_wperm"]) != "[] []" {
		t.Errorf("empty ACL: %v", doc)
	}
	// Roles and users; read-only and write-only entries.
	doc := create("Memo", map[string]any{"role:Staff": map[string]any{"read": true}, "u9": map[string]any{"write": true}})
	if fmt.Sprint(doc["_rperm"], doc["_wperm"]) != "[role:Staff] [u9]" {
		t.Errorf("role/user ACL: %v", doc)
	}
	doc = create("Memo", map[string]any{"*": map[string]any{"read": true}, "u1": map[string]any{"read": true, "write": true}})
	if fmt.Sprint(doc["_rperm"], doc["_wperm"]) != "[* u1] [u1]" || doc["_acl"] == nil {
		t.Errorf("public read, user write ACL: %v", doc)
	}
	// The class's default_acl applies when none is given; a given one wins.
	if doc := create("Doc", nil); fmt.Sprint(doc["_rperm"], doc["_wperm"]) != "[* role:Editors] [role:Editors]" {
		t.Errorf("default_acl: %v", doc)
	}
	if doc := create("Doc", map[string]any{"*": map[string]any{"read": true}}); fmt.Sprint(doc["_rperm"], doc["_wperm"]) != "[*] []" {
		t.Errorf("given ACL over default_acl: %v", doc)
	}
	// An update replaces the ACL; bad shapes are refused.
	out := callOK(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"title": "t"}})
	id := out["object_id"].(string)
	callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": id, "acl": map[string]any{"u1": map[string]any{"read": true, "write": true}}})
	if doc := stored(t, db, "Memo", id); fmt.Sprint(doc["_rperm"], doc["_wperm"]) != "[u1] [u1]" {
		t.Errorf("ACL update: %v", doc)
	}
	callErr(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": id, "acl": map[string]any{"u1": map[string]any{"read": "yes"}}}, "invalid_argument")
	callErr(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": id, "acl": map[string]any{"bad entry!": map[string]any{"read": true}}}, "parse_error")
}

func TestWriteAuditEvent(t *testing.T) {
	_, uri := writeDB(t, bson.D{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "body", Value: "string"}})
	r := startRaw(t, append(append([]string{}, writeEnv...), uri, policyEnv(t, "classes:\n  Memo: {writable_fields: [title, body, ACL]}\n"+noConfirm), "PARSE_MCP_LOG_LEVEL=info")...)
	r.initialize()
	res := obj(aggRPC(r, "c", "create_object", `{"class_name":"Memo","fields":{"title":"SECRETTITLE","body":"SECRETBODY"},"acl":{"*":{"read":true}}}`)["result"])
	id, _ := obj(res["structuredContent"])["object_id"].(string)
	aggRPC(r, "d", "update_object", `{"class_name":"Memo","object_id":"`+id+`","fields":{"title":"SECRET2"},"dry_run":true}`)
	var events []map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && len(events) < 2; time.Sleep(50 * time.Millisecond) {
		events = events[:0]
		for line := range strings.SplitSeq(r.stderr.String(), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) == nil && ev["event"] == "tool_call" {
				events = append(events, ev)
			}
		}
	}
	if len(events) != 2 {
		t.Fatalf("want 2 tool_call events, got %d:\n%s", len(events), r.stderr.String())
	}
	if strings.Contains(r.stderr.String(), "SECRET") {
		t.Fatalf("the audit log carries a written value:\n%s", r.stderr.String())
	}
	create, dry := events[0], events[1]
	if create["class"] != "Memo" || create["object_id"] != id || fmt.Sprint(create["fields"]) != "[ACL body title]" ||
		create["identity"] != "master" || create["dry_run"] != false || create["confirmed"] != false || create["write_path"] != "direct" {
		t.Errorf("create event: %v", create)
	}
	if dry["dry_run"] != true || dry["object_id"] != id || fmt.Sprint(dry["fields"]) != "[title]" {
		t.Errorf("dry-run event: %v", dry)
	}
}

// TestWritePolygon: a Polygon (GeoJSON coordinates, arrays inside arrays) is
// stored on MongoDB; the embedded FerretDB stores no nested arrays, and the
// write answers a model-fixable invalid_query naming what the database
// lacks instead of an internal error, on create and on update alike.
func TestWritePolygon(t *testing.T) {
	db, uri := writeDB(t, bson.D{{Key: "_id", Value: "Zone"}, {Key: "objectId", Value: "string"}, {Key: "name", Value: "string"}})
	c := writeClient(t, uri, policyEnv(t, noConfirm))
	polygon := map[string]any{"__type": "Polygon", "coordinates": []any{[]any{0, 0}, []any{0, 1}, []any{1, 1}}}
	created := callOK(t, c, "create_object", map[string]any{"class_name": "Zone", "fields": map[string]any{"name": "plain"}})
	id, _ := created["object_id"].(string)
	if !ferretDB1 {
		callOK(t, c, "create_object", map[string]any{"class_name": "Zone", "fields": map[string]any{"area": polygon}})
		callOK(t, c, "update_object", map[string]any{"class_name": "Zone", "object_id": id, "fields": map[string]any{"area": polygon}})
		if doc := stored(t, db, "Zone", id); doc["area"] == nil {
			t.Fatalf("the Polygon was not stored: %v", doc)
		}
		return
	}
	for _, args := range []map[string]any{
		{"class_name": "Zone", "fields": map[string]any{"area": polygon}},
		{"class_name": "Zone", "object_id": id, "fields": map[string]any{"area": polygon}},
	} {
		tool := "create_object"
		if args["object_id"] != nil {
			tool = "update_object"
		}
		msg := callErr(t, c, tool, args, "invalid_query")
		if !strings.Contains(msg, "does not support") || !strings.Contains(msg, "Polygon") || !strings.Contains(msg, "FerretDB") {
			t.Errorf("%s of a Polygon on FerretDB: %s", tool, msg)
		}
	}
	if n := count(t, db, "Zone"); n != 1 {
		t.Errorf("%d Zone objects after the refused writes, want 1", n)
	}
}
