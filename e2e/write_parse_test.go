package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// Parse-readability: objects written by parse-mcp's direct path are stored
// exactly as Parse Server stores the same input, and read back identically
// through Parse Server's REST API. parse-mcp writes class Note, Parse Server
// writes class Ref from the same input; the stored documents (ids and
// timestamps aside) and the REST answers must match.

func TestWritesReadBackThroughParseServer(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	uid, _ := ps.SignUp(t, "writer", "writer-pw")
	ctx := context.Background()
	db := parseDatabase(t, ps)

	c := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, policyEnv(t, "settings: {confirm_writes: never, direct_schema_changes: true}\n"))
	defs := map[string]string{"title": "String", "n": "Number", "when": "Date", "owner": "Pointer:_User", "loc": "GeoPoint",
		"pic": "File", "tags": "Array", "meta": "Object", "readers": "Relation:_User", "ok": "Boolean", "fresh": "String"}
	if !ferretDB1 {
		defs["area"] = "Polygon" // FerretDB 1.24 stores no nested arrays (GeoJSON polygons)
	}
	mcpFields := map[string]any{}
	for f, d := range defs {
		typ, target := d, ""
		if i := len("Pointer:"); len(d) > i && d[:i] == "Pointer:" {
			typ, target = "Pointer", d[i:]
		}
		if i := len("Relation:"); len(d) > i && d[:i] == "Relation:" {
			typ, target = "Relation", d[i:]
		}
		def := map[string]any{"type": typ}
		if target != "" {
			def["targetClass"] = target
		}
		mcpFields[f] = def
	}
	callOK(t, c, "create_class", map[string]any{"class_name": "Note", "fields": mcpFields})
	// The ACL is writable only when writable_fields lists it, and a
	// policy names only fields that exist: the create with an ACL goes
	// through a client whose writable set is Note's fields and ACL.
	writable := "ACL"
	for f := range defs {
		writable += ", " + f
	}
	cACL := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, policyEnv(t, "classes:\n  Note: {writable_fields: ["+writable+"]}\nsettings: {confirm_writes: never}\n"))
	ps.CreateClass(t, "Ref", defs, nil)

	// The _SCHEMA documents Parse reads.
	var noteSchema, refSchema bson.M
	if err := db.Collection("_SCHEMA").FindOne(ctx, bson.D{{Key: "_id", Value: "Note"}}).Decode(&noteSchema); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("_SCHEMA").FindOne(ctx, bson.D{{Key: "_id", Value: "Ref"}}).Decode(&refSchema); err != nil {
		t.Fatal(err)
	}
	delete(noteSchema, "_id")
	delete(refSchema, "_id")
	compareStored(t, "_SCHEMA", noteSchema, refSchema)

	input := map[string]any{
		"title": "hello", "n": 42, "ok": true,
		"when":    map[string]any{"__type": "Date", "iso": "2024-03-01T10:00:00.000Z"},
		"owner":   map[string]any{"__type": "Pointer", "className": "_User", "objectId": uid},
		"loc":     map[string]any{"__type": "GeoPoint", "latitude": 48.85, "longitude": 2.35},
		"pic":     map[string]any{"__type": "File", "name": "abc_pic.png", "url": "http://files.example/abc_pic.png"},
		"tags":    []any{"a", "b", 3},
		"meta":    map[string]any{"k": 1.5, "at": map[string]any{"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}, "who": map[string]any{"__type": "Pointer", "className": "_User", "objectId": uid}},
		"readers": map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": uid}}},
		"fresh":   "a declared field",
	}
	if !ferretDB1 {
		input["area"] = map[string]any{"__type": "Polygon", "coordinates": []any{[]any{0, 0}, []any{0, 1}, []any{1, 1}}}
	}
	acl := map[string]any{"*": map[string]any{"read": true}, uid: map[string]any{"read": true, "write": true}}
	out := callOK(t, cACL, "create_object", map[string]any{"class_name": "Note", "fields": input, "acl": acl})
	noteID := out["object_id"].(string)
	body := map[string]any{"ACL": acl}
	maps.Copy(body, input)
	refID := ps.MustDo(t, "POST", "/classes/Ref", body, parsetest.AsMaster)["objectId"].(string)
	compareBoth(t, ps, db, noteID, refID, "create")

	// Every update operation, both ways.
	update := map[string]any{
		"n":       map[string]any{"__op": "Increment", "amount": 3},
		"tags":    map[string]any{"__op": "AddUnique", "objects": []any{"b", "c"}},
		"title":   map[string]any{"__op": "Delete"},
		"readers": map[string]any{"__op": "RemoveRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": uid}}},
		"list":    map[string]any{"__op": "Add", "objects": []any{1, 1}},
		"ok":      false,
	}
	callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": noteID, "fields": update})
	ps.MustDo(t, "PUT", "/classes/Ref/"+refID, update, parsetest.AsMaster)
	compareBoth(t, ps, db, noteID, refID, "update")
	rm := map[string]any{"tags": map[string]any{"__op": "Remove", "objects": []any{"a"}}}
	callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": noteID, "fields": rm})
	ps.MustDo(t, "PUT", "/classes/Ref/"+refID, rm, parsetest.AsMaster)
	compareBoth(t, ps, db, noteID, refID, "remove")
	// A Batch of relation operations (as Parse's SDKs send them).
	batch := map[string]any{"readers": map[string]any{"__op": "Batch", "ops": []any{
		map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": uid}}}}}}
	callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": noteID, "fields": batch})
	ps.MustDo(t, "PUT", "/classes/Ref/"+refID, batch, parsetest.AsMaster)
	compareBoth(t, ps, db, noteID, refID, "batch")
}

// parseDatabase is a connection to the test Parse Server's database, closed
// when the test ends: the parity tests read the stored documents directly.
func parseDatabase(t *testing.T, ps *parsetest.Server) *mongo.Database {
	t.Helper()
	cl, err := mongo.Connect(options.Client().ApplyURI(ps.MongoURI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Disconnect(context.Background()) })
	return cl.Database(ps.Database)
}

// compareBoth compares the stored documents and Parse Server's REST answers
// for the parse-mcp object and Parse's own.
func compareBoth(t *testing.T, ps *parsetest.Server, db *mongo.Database, noteID, refID, step string) {
	t.Helper()
	compareStoredAndREST(t, ps, db, step, "Note", noteID, "Ref", refID)
	rel := func(class, id string) any {
		w, _ := json.Marshal(map[string]any{"$relatedTo": map[string]any{"object": map[string]any{"__type": "Pointer", "className": class, "objectId": id}, "key": "readers"}})
		out := ps.MustDo(t, "GET", "/classes/_User?count=1&limit=0&where="+string(w), nil, parsetest.AsMaster)
		return out["count"]
	}
	if a, b := rel("Note", noteID), rel("Ref", refID); a != b {
		t.Errorf("%s: relation readers: parse-mcp %v, Parse %v", step, a, b)
	}
}

// compareStoredAndREST compares two objects' stored documents (ids and
// timestamps aside) and Parse Server's REST reads of them; class B holds
// Parse's own object.
func compareStoredAndREST(t *testing.T, ps *parsetest.Server, db *mongo.Database, step, classA, idA, classB, idB string) {
	t.Helper()
	ctx := context.Background()
	var a, b bson.M
	if err := db.Collection(classA).FindOne(ctx, bson.D{{Key: "_id", Value: idA}}).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection(classB).FindOne(ctx, bson.D{{Key: "_id", Value: idB}}).Decode(&b); err != nil {
		t.Fatal(err)
	}
	for _, m := range []bson.M{a, b} {
		delete(m, "_id")
		delete(m, "_created_at")
		delete(m, "_updated_at")
	}
	compareStored(t, step+": stored document", a, b)
	ra := ps.MustDo(t, "GET", "/classes/"+classA+"/"+idA, nil, parsetest.AsMaster)
	rb := ps.MustDo(t, "GET", "/classes/"+classB+"/"+idB, nil, parsetest.AsMaster)
	for _, m := range []map[string]any{ra, rb} {
		delete(m, "objectId")
		delete(m, "createdAt")
		delete(m, "updatedAt")
	}
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("%s: Parse Server reads them differently:\n%s %s\nParse %s", step, classA, jsonOf(ra), jsonOf(rb))
	}
}

func compareStored(t *testing.T, what string, mine, parse bson.M) {
	t.Helper()
	a, _ := bson.MarshalExtJSON(sortedDoc(mine), true, false)
	b, _ := bson.MarshalExtJSON(sortedDoc(parse), true, false)
	if string(a) != string(b) {
		t.Errorf("%s differs:\nparse-mcp %s\nParse     %s", what, a, b)
	}
}

// sortedDoc orders keys (Parse's key order is not part of the format).
func sortedDoc(v any) any {
	switch x := v.(type) {
	case bson.M:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sortStringsInPlace(keys)
		d := bson.D{}
		for _, k := range keys {
			d = append(d, bson.E{Key: k, Value: sortedDoc(x[k])})
		}
		return d
	case bson.D:
		m := bson.M{}
		for _, e := range x {
			m[e.Key] = e.Value
		}
		return sortedDoc(m)
	case bson.A:
		out := bson.A{}
		for _, e := range x {
			out = append(out, sortedDoc(e))
		}
		return out
	}
	return v
}

func sortStringsInPlace(s []string) {
	copy(s, sortedStrings(s))
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
