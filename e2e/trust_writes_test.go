package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/demo"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Writes, dry runs and schema metadata answer under the identity's read
// scope (SECURITY.md "Outputs"): each test here is one attack on a write
// output, failing on the code before its fix.

// writeOutSchemas: Memo (plain), Doc (defaults that are references), Ticket
// (tenant-scoped), Vault (hidden by the policy).
func writeOutSchemas() []bson.D {
	return []bson.D{
		{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "n", Value: "number"},
			{Key: "email", Value: "string"}},
		{{Key: "_id", Value: "Doc"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"},
			{Key: "ref", Value: "*Memo"}, {Key: "gone", Value: "*Nowhere"}, {Key: "note", Value: "string"}, {Key: "meta", Value: "object"},
			{Key: "_metadata", Value: bson.D{{Key: "fields_options", Value: bson.D{
				{Key: "ref", Value: bson.D{{Key: "defaultValue", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Vault"}, {Key: "objectId", Value: "v1secretid"}}}}},
				{Key: "note", Value: bson.D{{Key: "defaultValue", Value: "Vault$v2secretid"}}},
				{Key: "meta", Value: bson.D{{Key: "defaultValue", Value: bson.D{{Key: "k", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Nowhere"}, {Key: "objectId", Value: "v3secretid"}}}}}}},
			}}}}},
		{{Key: "_id", Value: "Ticket"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "orgId", Value: "string"}},
		{{Key: "_id", Value: "Vault"}, {Key: "objectId", Value: "string"}, {Key: "key", Value: "string"}},
		{{Key: "_id", Value: "_User"}, {Key: "objectId", Value: "string"}, {Key: "username", Value: "string"}},
	}
}

const outputPolicy = `classes:
  Vault: {hidden: true}
  Ticket:
    tenant_scope: {field: orgId}
settings: {confirm_writes: never, direct_schema_changes: true, rate_limit: {requests: 1000, window: 60s}}
`

func insert(t *testing.T, db *mongo.Database, class string, docs ...bson.D) {
	t.Helper()
	for _, d := range docs {
		if _, err := db.Collection(class).InsertOne(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTrustWriteResultsUnreadableRow (finding 1): a row the identity may
// write but not read (_wperm yes, _rperm no) is "not found" to get_object,
// and every write answer about it — update (dry run, a no-op Increment 0, a
// real one) and delete (dry run, real) — shows nothing of it, as Parse
// answers such a caller with updatedAt or {} only.
func TestTrustWriteResultsUnreadableRow(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}}, bson.D{{Key: "_id", Value: "u2"}, {Key: "username", Value: "bob"}})
	insert(t, db, "Memo",
		bson.D{{Key: "_id", Value: "wo"}, {Key: "title", Value: "SECRET-TITLE"}, {Key: "n", Value: 41}, {Key: "_rperm", Value: bson.A{"u2"}}, {Key: "_wperm", Value: bson.A{"u1"}}},
		bson.D{{Key: "_id", Value: "wo2"}, {Key: "title", Value: "SECRET-TWO"}, {Key: "_rperm", Value: bson.A{}}, {Key: "_wperm", Value: bson.A{"u1"}}},
		bson.D{{Key: "_id", Value: "rw"}, {Key: "title", Value: "mine"}, {Key: "_rperm", Value: bson.A{"u1"}}, {Key: "_wperm", Value: bson.A{"u1"}}},
	)
	c := writeClient(t, uri, "PARSE_MCP_ACL_USER=u1", policyEnv(t, outputPolicy))
	callErr(t, c, "get_object", map[string]any{"class_name": "Memo", "object_id": "wo"}, "invalid_argument")
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"update_object", map[string]any{"class_name": "Memo", "object_id": "wo", "dry_run": true, "fields": map[string]any{"title": "x"}}},
		{"update_object", map[string]any{"class_name": "Memo", "object_id": "wo", "fields": map[string]any{"n": map[string]any{"__op": "Increment", "amount": 0}}}},
		{"update_object", map[string]any{"class_name": "Memo", "object_id": "wo", "fields": map[string]any{"n": map[string]any{"__op": "Increment", "amount": 1}}}},
		{"delete_object", map[string]any{"class_name": "Memo", "object_id": "wo", "dry_run": true}},
		{"delete_object", map[string]any{"class_name": "Memo", "object_id": "wo2"}},
	} {
		out := callOK(t, c, tc.tool, tc.args)
		txt := toJSON(t, out)
		if strings.Contains(txt, "SECRET") || strings.Contains(txt, `"n":41`) || strings.Contains(txt, `"n":42`) || out["object"] != nil || out["deleted_object"] != nil {
			t.Errorf("%s %v shows the unreadable row: %s", tc.tool, tc.args, txt)
		}
	}
	// A readable row's write result is what get_object shows.
	out := callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "rw", "fields": map[string]any{"n": 7}})
	got := callOK(t, c, "get_object", map[string]any{"class_name": "Memo", "object_id": "rw", "shape": "rest"})
	if toJSON(t, out["object"]) != toJSON(t, got["object"]) {
		t.Errorf("update result %s, get_object %s", toJSON(t, out["object"]), toJSON(t, got["object"]))
	}
	out = callOK(t, c, "delete_object", map[string]any{"class_name": "Memo", "object_id": "rw", "dry_run": true})
	if toJSON(t, out["deleted_object"]) != toJSON(t, got["object"]) {
		t.Errorf("delete dry run %s, get_object %s", toJSON(t, out["deleted_object"]), toJSON(t, got["object"]))
	}
}

// TestTrustSchemaDefaultsRedacted (finding 2): get_schema and the schema
// resource show a field's defaultValue through the row encoder: a default
// that refers to a hidden class (a Pointer, a "Class$id" string) or a
// missing one (an embedded Pointer) is the marker, never the class or id.
func TestTrustSchemaDefaultsRedacted(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	for _, ident := range [][]string{nil, {"PARSE_MCP_ACL_USER=u1"}} {
		c := writeClient(t, uri, append([]string{policyEnv(t, outputPolicy)}, ident...)...)
		out := callOK(t, c, "get_schema", map[string]any{"class_name": "Doc"})
		txt := toJSON(t, out)
		for _, leak := range []string{"Vault", "v1secretid", "v2secretid", "v3secretid", "Nowhere"} {
			if strings.Contains(txt, leak) {
				t.Errorf("%v: get_schema shows %q: %s", ident, leak, txt)
			}
		}
		if !strings.Contains(txt, `"__redacted":true`) {
			t.Errorf("%v: defaults not shown redacted: %s", ident, txt)
		}
	}
}

// TestTrustCreateClassDefaultsChecked (finding 3): create_class defaults
// pass the write checkpoint (references to hidden or missing classes
// refused alike, internal keys a violation), and create_object refuses to
// store an app-set default that refers to an invisible class, naming only
// the field.
func TestTrustCreateClassDefaultsChecked(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	answers := map[string]string{}
	for _, cls := range []string{"Vault", "NoSuchClzz"} {
		for name, def := range map[string]any{
			"pointer": map[string]any{"type": "Object", "defaultValue": map[string]any{"k": map[string]any{"__type": "Pointer", "className": cls, "objectId": "abc"}}},
			"string":  map[string]any{"type": "String", "defaultValue": cls + "$abcdefghij"},
		} {
			msg := callErr(t, c, "create_class", map[string]any{"class_name": "Fresh", "fields": map[string]any{"f": def}}, "invalid_argument")
			answers[name+"/"+cls] = strings.ReplaceAll(msg, cls, "<C>")
		}
	}
	if answers["pointer/Vault"] != answers["pointer/NoSuchClzz"] || answers["string/Vault"] != answers["string/NoSuchClzz"] {
		t.Errorf("hidden and missing answer apart: %v", answers)
	}
	_, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "create_class",
		Arguments: map[string]any{"class_name": "Fresh", "fields": map[string]any{"f": map[string]any{"type": "Object", "defaultValue": map[string]any{"_rperm": []any{"*"}}}}}}})
	if err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("internal key in a default: %v, want the security violation", err)
	}
	if n := count(t, db, "_SCHEMA"); n != int64(len(writeOutSchemas())) {
		t.Errorf("a refused create_class changed _SCHEMA (%d documents)", n)
	}
	// Doc's app-set defaults name Vault (hidden) and Nowhere (missing).
	msg := callErr(t, c, "create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"title": "t"}}, "invalid_argument")
	if strings.Contains(msg, "Vault") || strings.Contains(msg, "Nowhere") || !strings.Contains(msg, "default value") {
		t.Errorf("create with an invisible default: %s", msg)
	}
	if n := count(t, db, "Doc"); n != 0 {
		t.Errorf("a create stored an invisible default")
	}
}

// TestTrustACLWritableOnlyWhenListed (finding 5): with neither
// writable_fields nor agent_fields, and with agent_fields alone, acl is
// refused on create and update; writable_fields listing ACL allows it.
func TestTrustACLWritableOnlyWhenListed(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}})
	acl := map[string]any{"*": map[string]any{"read": true}}
	for _, pol := range []string{"settings: {confirm_writes: never, direct_schema_changes: true}\n", "classes:\n  Memo: {agent_fields: [title]}\nsettings: {confirm_writes: never, direct_schema_changes: true}\n"} {
		c := writeClient(t, uri, policyEnv(t, pol))
		callErr(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"title": "t"}, "acl": acl}, "access_denied")
		callErr(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "m1", "acl": acl}, "access_denied")
		callErr(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "m1", "fields": map[string]any{"ACL": acl}}, "access_denied")
	}
	c := writeClient(t, uri, policyEnv(t, "classes:\n  Memo: {writable_fields: [title, ACL]}\nsettings: {confirm_writes: never, direct_schema_changes: true}\n"))
	callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "m1", "acl": acl})
	if doc := stored(t, db, "Memo", "m1"); doc["_rperm"] == nil {
		t.Errorf("listed ACL not written: %v", doc)
	}
}

// TestTrustTenantFieldSpellings (finding 9): OrgId, orgid, org_id beside
// the forced orgId are refused on create and update, as reads refuse them.
func TestTrustTenantFieldSpellings(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Ticket", bson.D{{Key: "_id", Value: "t1"}, {Key: "title", Value: "x"}, {Key: "orgId", Value: "acme"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy), "PARSE_MCP_TENANT_ID=acme")
	for _, f := range []string{"OrgId", "orgid", "org_id", "ORG_ID"} {
		callErr(t, c, "create_object", map[string]any{"class_name": "Ticket", "fields": map[string]any{"title": "t", f: "evil"}}, "access_denied")
		callErr(t, c, "update_object", map[string]any{"class_name": "Ticket", "object_id": "t1", "fields": map[string]any{f: "evil"}}, "access_denied")
	}
	if n := count(t, db, "Ticket"); n != 1 {
		t.Errorf("a refused create stored a ticket")
	}
	if doc := schemaDoc(t, db, "Ticket"); len(doc) != 4 {
		t.Errorf("a refused write added a field: %v", doc)
	}
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTrustExistsAnswersByShownValue (finding 8): a row holding a hidden
// reference at a path matched neither $exists true nor false, so the pair
// told, row by row, where a hidden reference sits. The reference exists
// (it is shown as the marker) and a path below it does not: exactly one of
// the two matches every row.
func TestTrustExistsAnswersByShownValue(t *testing.T) {
	c := demoClient(t)
	ids := append(append([]string{}, demo.SongLeakIDs...), demo.SongEmbeddedSecretID)
	for _, id := range ids {
		for _, p := range []string{"leak", "meta", "meta.credential", "meta.credential.objectId", "meta.credential.className"} {
			n := 0.0
			for _, want := range []bool{true, false} {
				out := callOK(t, c, "count_objects", map[string]any{"class_name": "Song", "apply_canonical_filter": false,
					"where": map[string]any{"objectId": id, p: map[string]any{"$exists": want}}})
				n += out["count"].(float64)
			}
			if n != 1 {
				t.Errorf("row %s, %s: $exists true and false matched %v times together, want 1", id, p, n)
			}
		}
	}
}

// TestTrustConcurrentConflictingFieldTypes (finding 11): pairs of
// concurrent creates adding the same new field with conflicting types. On
// FerretDB both used to succeed, leaving both types stored and _SCHEMA
// missing fields. Now exactly one of each pair succeeds, every stored value
// has the type _SCHEMA declares, and _SCHEMA has every field a row holds.
func TestTrustConcurrentConflictingFieldTypes(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	const pairs = 8
	type result struct {
		field string
		ok    bool
	}
	results := make(chan result, 2*pairs)
	for i := range pairs {
		f := "race" + string(rune('A'+i))
		for _, v := range []any{"text", 5} {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "create_object",
					Arguments: map[string]any{"class_name": "Memo", "fields": map[string]any{f: v}}}})
				results <- result{f, err == nil && !res.IsError}
			}()
		}
	}
	won := map[string]int{}
	for range 2 * pairs {
		r := <-results
		if r.ok {
			won[r.field]++
		}
	}
	sd := schemaDoc(t, db, "Memo")
	cur, err := db.Collection("Memo").Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []bson.M
	if err := cur.All(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	for i := range pairs {
		f := "race" + string(rune('A'+i))
		if won[f] != 1 {
			t.Errorf("%s: %d of the pair succeeded, want 1", f, won[f])
		}
		want, _ := sd[f].(string)
		if want == "" {
			t.Errorf("%s: missing from _SCHEMA %v", f, sd)
		}
		for _, r := range rows {
			v, has := r[f]
			if !has {
				continue
			}
			_, isString := v.(string)
			if isString != (want == "string") {
				t.Errorf("%s: stored %T, _SCHEMA says %s", f, v, want)
			}
		}
	}
}

// TestTrustOneReadingOfReferenceStrings (finding 4): the write check, the
// not-a-hidden-reference conjunct and the row encoder share one definition
// of a reference string (parsedb.ReferenceClass), so a value is never a
// reference to one and text to another. Ordinary text is written and read
// back as written; "write it, then count rows equal to it" answers alike
// whatever class the word before the "$" names; an untyped className that
// is not a string is refused alike.
func TestTrustOneReadingOfReferenceStrings(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	for _, s := range []string{"Ke$ha", "US$100", "A$AP Rocky", "Vault$~", "Vault$ab", "Nowhere$ab~"} {
		out := callOK(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"title": s, "email": s}})
		got := callOK(t, c, "get_object", map[string]any{"class_name": "Memo", "object_id": out["object_id"], "shape": "rest"})
		if o := obj(got["object"]); o["title"] != s || o["email"] != s {
			t.Errorf("%q read back as %v", s, o)
		}
	}
	answers := map[string]string{}
	for _, cls := range []string{"Vault", "NoSuchClzz", "Memo"} {
		v := cls + "$~q"
		callOK(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"email": v}})
		n := callOK(t, c, "count_objects", map[string]any{"class_name": "Memo", "where": map[string]any{"email": v}})["count"]
		g := callOK(t, c, "count_objects", map[string]any{"class_name": "Memo", "where": map[string]any{"email": map[string]any{"$gte": cls + "$~q", "$lt": cls + "$~r"}}})["count"]
		answers[cls] = fmt.Sprint(n, g)
		res := call(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"meta": map[string]any{"className": []any{cls}}}})
		answers[cls] += strings.ReplaceAll(text(res), cls, "<C>")
		res = call(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"title": cls + "$abcdefghij"}})
		if cls != "Memo" {
			answers[cls] += strings.ReplaceAll(text(res), cls, "<C>")
		}
	}
	if answers["Vault"] != answers["NoSuchClzz"] {
		t.Errorf("hidden and missing answer apart:\n hidden  %s\n missing %s", answers["Vault"], answers["NoSuchClzz"])
	}
	_ = db
}

// TestTrustSubPipelineNestedUnwind (finding 6, on an engine that stores
// nested arrays and runs $facet, $lookup and $unionWith): inside a
// sub-pipeline two $unwinds lifted a hidden pointer out of an array nested
// in a stored array, past the protective $match, and a $gte on its id with
// $count bisected it under MongoDB's array semantics. A right and a wrong
// prefix answer alike. (FerretDB 2 + DocumentDB answered alike before the
// fix too — its path matching reaches the nested element — so the failing
// proof is the pipeline-level TestAggregateSubPipelineUnwindGetsTheConjunct;
// this test runs the guarded pipelines on a real engine.)
func TestTrustSubPipelineNestedUnwind(t *testing.T) {
	if ferretDB1 {
		t.Skip("FerretDB 1.24 stores no nested arrays and runs no $lookup/$facet/$unionWith (the second engine does)")
	}
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "n1"}, {Key: "title", Value: "x"},
		{Key: "meta", Value: bson.D{{Key: "list", Value: bson.A{bson.A{bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Vault"}, {Key: "objectId", Value: "v1secretv1"}}}}}}}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	inner := `[{"$unwind":"$meta.list"},{"$unwind":"$meta.list"},{"$match":{"meta.list.objectId":{"$gte":"GUESS"}}},{"$count":"n"}]`
	for _, wrap := range []string{`[{"$facet":{"f":%s}}]`, `[{"$lookup":{"from":"Memo","as":"j","pipeline":%s}}]`, `[{"$unionWith":{"coll":"Memo","pipeline":%s}}]`} {
		var answers []string
		for _, guess := range []string{"v1", "v2", "~q"} {
			var pipeline []any
			if err := json.Unmarshal([]byte(fmt.Sprintf(wrap, strings.ReplaceAll(inner, "GUESS", guess))), &pipeline); err != nil {
				t.Fatal(err)
			}
			res := call(t, c, "aggregate", map[string]any{"class_name": "Memo", "pipeline": pipeline})
			// Only an echoed guess (a JSON string) is normalised: replacing
			// the bare guess "a" would rewrite every "a" of the answer.
			answers = append(answers, strings.ReplaceAll(text(res), `"`+guess+`"`, `"G"`))
		}
		if answers[0] != answers[1] || answers[0] != answers[2] {
			t.Errorf("%s: the answer depends on the guess:\n%s", wrap, strings.Join(answers, "\n"))
		}
	}
}

// TestTrustDottedClassNameKey: a dotted update key whose last segment is
// className ({"meta.k.className": "Vault"}) writes an object naming that
// class into the stored Object field. The reader redacts an untyped object
// naming a hidden class and shows one naming a missing class, so accepting
// the key made the write result an oracle for which hidden classes exist.
// The key is checked as the nested value it becomes: hidden and missing are
// refused alike, dry run or not, and nothing is written.
func TestTrustDottedClassNameKey(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Doc", bson.D{{Key: "_id", Value: "d1"}, {Key: "title", Value: "x"}, {Key: "meta", Value: bson.D{{Key: "a", Value: int32(1)}}}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	for _, key := range []string{"meta.k.className", "meta.className"} {
		for _, dry := range []bool{true, false} {
			var answers []string
			for _, cls := range []string{"Vault", "Nowhere"} {
				args := map[string]any{"class_name": "Doc", "object_id": "d1", "fields": map[string]any{key: cls}, "dry_run": dry}
				msg := callErr(t, c, "update_object", args, "invalid_argument")
				answers = append(answers, strings.ReplaceAll(msg, cls, "<C>"))
			}
			if answers[0] != answers[1] {
				t.Errorf("%s dry_run=%v: hidden answers %q, missing %q", key, dry, answers[0], answers[1])
			}
		}
	}
	if meta, _ := stored(t, db, "Doc", "d1")["meta"].(bson.D); len(meta) != 1 {
		t.Errorf("a refused write changed meta: %v", meta)
	}
	// A visible class is fine: the key is data about a class the session sees.
	callOK(t, c, "update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "fields": map[string]any{"meta.k.className": "Memo"}})
}
