package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestDottedUpdatesMatchParse: dotted-key updates into an Object field
// ("meta.x": set, deep set, new sub-key, Increment, Date, Pointer, Delete,
// Add/AddUnique/Remove, on a missing top field), sent to Parse Server's REST
// API (class Ref), through parse-mcp's direct path (class Note) and
// through the bridge (class Via), step by step: the stored documents, the
// _SCHEMA documents and Parse's REST reads of the three objects are equal.
func TestDottedUpdatesMatchParse(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	uid, _ := ps.SignUp(t, "dotted", "dotted-pw")
	db := parseDatabase(t, ps)

	defs := map[string]string{"title": "String", "meta": "Object"}
	for _, c := range []string{"Ref", "Note", "Via"} {
		ps.CreateClass(t, c, defs, nil)
	}
	direct := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, policyEnv(t, "settings: {confirm_writes: never, direct_schema_changes: true}\n"))
	bridge := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, "settings: {confirm_writes: never}\n")), writeEnv...)...)

	start := map[string]any{"title": "t", "meta": map[string]any{"k": 1, "s": "v", "arr": []any{"x"}, "deep": map[string]any{"a": 1}}}
	ids := map[string]string{}
	ids["Ref"] = ps.MustDo(t, "POST", "/classes/Ref", start, parsetest.AsMaster)["objectId"].(string)
	ids["Note"] = callOK(t, direct, "create_object", map[string]any{"class_name": "Note", "fields": start})["object_id"].(string)
	ids["Via"] = callOK(t, bridge, "create_object", map[string]any{"class_name": "Via", "fields": start})["object_id"].(string)

	steps := []struct {
		name   string
		fields map[string]any
	}{
		{"set", map[string]any{"meta.k": 5}},
		{"deep set", map[string]any{"meta.deep.b": "z"}},
		{"new sub-key", map[string]any{"meta.n": map[string]any{"x": []any{1, map[string]any{"y": true}}}}},
		{"increment", map[string]any{"meta.k": map[string]any{"__op": "Increment", "amount": 2}}},
		{"date", map[string]any{"meta.d": map[string]any{"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}}},
		{"pointer", map[string]any{"meta.p": map[string]any{"__type": "Pointer", "className": "_User", "objectId": uid}}},
		{"delete", map[string]any{"meta.s": map[string]any{"__op": "Delete"}}},
		{"add", map[string]any{"meta.arr": map[string]any{"__op": "Add", "objects": []any{"y", "y"}}}},
		{"add unique", map[string]any{"meta.arr": map[string]any{"__op": "AddUnique", "objects": []any{"y", "z"}}}},
		{"remove", map[string]any{"meta.arr": map[string]any{"__op": "Remove", "objects": []any{"x"}}}},
		{"missing top field", map[string]any{"info.a": 1}},
		{"missing top field, increment", map[string]any{"count.n": map[string]any{"__op": "Increment", "amount": 1}}},
	}
	for _, s := range steps {
		ps.MustDo(t, "PUT", "/classes/Ref/"+ids["Ref"], s.fields, parsetest.AsMaster)
		callOK(t, direct, "update_object", map[string]any{"class_name": "Note", "object_id": ids["Note"], "fields": s.fields})
		callOK(t, bridge, "update_object", map[string]any{"class_name": "Via", "object_id": ids["Via"], "fields": s.fields})
		for _, c := range []string{"Note", "Via"} {
			compareObjects(t, ps, db, s.name+" ("+c+")", c, ids[c], "Ref", ids["Ref"])
		}
	}
	ref := schemaDoc(t, db, "Ref")
	for _, c := range []string{"Note", "Via"} {
		doc := schemaDoc(t, db, c)
		delete(doc, "_id")
		delete(ref, "_id")
		compareStored(t, c+" _SCHEMA", doc, ref)
	}
	// Parse refuses a dotted key into a field of another type (111), and so
	// do both of parse-mcp's paths, with Parse's code.
	status, body, err := ps.Do("PUT", "/classes/Ref/"+ids["Ref"], map[string]any{"title.x": 1}, parsetest.AsMaster)
	if err != nil || status != 400 || body["code"] != float64(111) {
		t.Errorf("Parse answered %d %v (%v)", status, body, err)
	}
	for class, c := range map[string]*client.Client{"Note": direct, "Via": bridge} {
		msg := callErr(t, c, "update_object", map[string]any{"class_name": class, "object_id": ids[class], "fields": map[string]any{"title.x": 1}}, "parse_error")
		if !strings.Contains(msg, "Parse error 111") {
			t.Errorf("%s: %s", class, msg)
		}
		// Parse's numeric code is in _meta, for either path.
		res := call(t, c, "update_object", map[string]any{"class_name": class, "object_id": ids[class], "fields": map[string]any{"title.x": 1}})
		if res.Meta == nil || fmt.Sprint(res.Meta.AdditionalFields["parse.parse_code"]) != "111" {
			t.Errorf("%s: _meta without parse.parse_code 111: %+v", class, res.Meta)
		}
	}
}

// compareObjects compares two objects as compareStoredAndREST does, and
// their meta values in stored key order.
func compareObjects(t *testing.T, ps *parsetest.Server, db *mongo.Database, step, classA, idA, classB, idB string) {
	t.Helper()
	compareStoredAndREST(t, ps, db, step, classA, idA, classB, idB)
	// Object values keep the client's key order (Parse stores them as sent).
	ctx := context.Background()
	var da, db2 struct {
		Meta bson.D `bson:"meta"`
	}
	_ = db.Collection(classA).FindOne(ctx, bson.D{{Key: "_id", Value: idA}}).Decode(&da)
	_ = db.Collection(classB).FindOne(ctx, bson.D{{Key: "_id", Value: idB}}).Decode(&db2)
	ja, _ := bson.MarshalExtJSON(da.Meta, true, false)
	jb, _ := bson.MarshalExtJSON(db2.Meta, true, false)
	if string(ja) != string(jb) {
		t.Errorf("%s: meta in stored key order differs:\n%s %s\nParse %s", step, classA, ja, jb)
	}
}
