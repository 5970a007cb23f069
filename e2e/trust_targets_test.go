package e2e

// Pointer and Relation fields whose target class is invisible — hidden, or
// missing from the schema — through the built binary (SECURITY.md "Hidden
// references", "Hidden equals missing"): no answer names the target, a
// hidden target and a missing one give the same bytes, and a sort by such a
// pointer is refused as a where on it is. Also: a hidden reference used as
// an object key is redacted (the key and its value).

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

var (
	targetsOnce sync.Once
	targetsURI  string
	targetsErr  error
)

// The crafted fields of Song in the targets database, by target: vault and
// secrets point into the hidden VaultSecret, ghost and ghosts into
// NoSuchClass, which is not in the schema.
const (
	missingTargetClass = "NoSuchClass"
	keyRowID           = "tgtKey0001"
)

// targetsDatabase seeds, once, the demo data plus Song fields into a
// hidden and a missing class, rows holding those pointers (different ids,
// so that a sort by them would rank the ids), relation join rows, and a row
// whose Object field is a map keyed by "VaultSecret$id".
func targetsDatabase(t testing.TB) string {
	t.Helper()
	targetsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		db := testDB.Client().Database(dbName + "_targets")
		if targetsErr = demo.ForceSeed(ctx, db, ""); targetsErr != nil {
			return
		}
		if _, targetsErr = db.Collection("_SCHEMA").UpdateOne(ctx, bson.D{{Key: "_id", Value: "Song"}}, bson.D{{Key: "$set", Value: bson.D{
			{Key: "vault", Value: "*VaultSecret"}, {Key: "ghost", Value: "*" + missingTargetClass},
			{Key: "secrets", Value: "relation<VaultSecret>"}, {Key: "ghosts", Value: "relation<" + missingTargetClass + ">"},
		}}}); targetsErr != nil {
			return
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var rows []any
		for i, id := range demo.VaultSecretIDs[:4] {
			rows = append(rows, bson.D{{Key: "_id", Value: fmt.Sprintf("tgtRow%04d", i)}, {Key: "title", Value: fmt.Sprintf("target row %d", i)},
				{Key: "_p_vault", Value: "VaultSecret$" + id}, {Key: "_p_ghost", Value: missingTargetClass + "$" + id},
				{Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{}},
				{Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}})
		}
		rows = append(rows, bson.D{{Key: "_id", Value: keyRowID}, {Key: "title", Value: "keyed by a hidden reference"},
			{Key: "meta", Value: bson.D{{Key: "seen", Value: bson.D{{Key: "VaultSecret$" + demo.VaultSecretIDs[0], Value: true}, {Key: "Artist$a1", Value: false}}}}},
			{Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{}},
			{Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}})
		if _, targetsErr = db.Collection("Song").InsertMany(ctx, rows); targetsErr != nil {
			return
		}
		if _, targetsErr = db.Collection("_Join:secrets:Song").InsertOne(ctx, bson.D{{Key: "owningId", Value: "tgtRow0000"}, {Key: "relatedId", Value: demo.VaultSecretIDs[0]}}); targetsErr != nil {
			return
		}
		if _, targetsErr = db.Collection("_Join:ghosts:Song").InsertOne(ctx, bson.D{{Key: "owningId", Value: "tgtRow0000"}, {Key: "relatedId", Value: demo.VaultSecretIDs[0]}}); targetsErr != nil {
			return
		}
		u, _ := url.Parse(mongoURI)
		u.Path = "/" + db.Name()
		targetsURI = u.String()
	})
	if targetsErr != nil {
		t.Fatalf("seeding the targets database: %v", targetsErr)
	}
	return targetsURI
}

func targetsServer(t *testing.T, extraEnv ...string) *rawServer {
	t.Helper()
	r := startRaw(t, append([]string{policyFile(t, "trust_suites"), "PARSE_MCP_MONGODB_URI=" + targetsDatabase(t)}, extraEnv...)...)
	r.initialize()
	return r
}

// assertNoTarget fails when an answer names an invisible class or shows a
// hidden reference.
func assertNoTarget(t *testing.T, what, ans string) {
	t.Helper()
	for _, s := range []string{"VaultSecret", missingTargetClass} {
		if strings.Contains(ans, s) {
			t.Errorf("%s names %s: %s", what, s, cut(ans, 600))
			return
		}
	}
	assertNoSecret(t, what, ans)
}

// TestTrustInvisibleTargets: every tool × argument position that can name a
// Pointer or Relation field, with the field's target hidden and then
// missing: no answer names the target class, and both give the same bytes
// once the field name is normalised. Sorting by such a pointer is refused.
func TestTrustInvisibleTargets(t *testing.T) {
	r := targetsServer(t)
	type req struct{ method, params string }
	q := func(tool, args string) req {
		return req{"tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)}
	}
	// F is replaced by the field name; the same positions for a pointer
	// field (vault / ghost) and a relation field (secrets / ghosts).
	positions := []req{
		q("count_objects", `{"class_name":"Song","where":{"F":{"$exists":true}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":"abcdefghij"}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"__type":"Pointer","className":"Artist","objectId":"abcdefghij"}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"$in":["abcdefghij"]}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"$regex":"^a"}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"$gt":"a"}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"$ne":"a"}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"$all":["a"]}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F.objectId":"abcdefghij"}}`),
		q("count_objects", `{"class_name":"Song","where":{"F.name":"x"}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"$inQuery":{"className":"Artist","where":{}}}}}`),
		q("count_objects", `{"class_name":"Song","where":{"F":{"$select":{"query":{"className":"Artist","where":{}},"key":"objectId"}}}}`),
		q("count_objects", `{"class_name":"Song","where":{"$or":[{"F":{"$exists":true}},{"title":"x"}]}}`),
		q("count_objects", `{"class_name":"Artist","where":{"$relatedTo":{"object":{"__type":"Pointer","className":"Song","objectId":"tgtRow0000"},"key":"F"}}}`),
		q("explain_query", `{"class_name":"Song","where":{"F":{"$exists":true}}}`),
		q("query_class", `{"class_name":"Song","order":"F","keys":["title"]}`),
		q("query_class", `{"class_name":"Song","order":"-F","keys":["title"]}`),
		q("query_class", `{"class_name":"Song","order":"title,F.objectId","keys":["title"]}`),
		q("query_class", `{"class_name":"Song","include":["F"],"keys":["title"]}`),
		q("query_class", `{"class_name":"Song","where":{"objectId":{"$in":["tgtRow0000","tgtRow0001"]}},"keys":["F"]}`),
		q("query_class", `{"class_name":"Song","where":{"objectId":{"$in":["tgtRow0000","tgtRow0001"]}},"keys":["F"],"shape":"objects"}`),
		q("query_class", `{"class_name":"Song","where":{"objectId":"tgtRow0000"},"keys":["F"],"format":"csv"}`),
		q("get_object", `{"class_name":"Song","object_id":"tgtRow0000","keys":["F"]}`),
		q("get_object", `{"class_name":"Song","object_id":"tgtRow0000","keys":["F"],"shape":"rest"}`),
		q("export_data", `{"class_name":"Song","order":"F","columns":["objectId"],"format":"csv"}`),
		q("export_data", `{"class_name":"Song","where":{"objectId":"tgtRow0001"},"columns":["F"],"format":"csv"}`),
		q("group_by", `{"class_name":"Song","field":"F"}`),
		q("group_by", `{"class_name":"Song","field":"F.objectId"}`),
		q("distinct", `{"class_name":"Song","field":"F"}`),
		q("aggregate", `{"class_name":"Song","pipeline":[{"$project":{"s":"$F"}}]}`),
		q("aggregate", `{"class_name":"Song","pipeline":[{"$project":{"s":"$F.objectId"}}]}`),
		q("aggregate", `{"class_name":"Song","pipeline":[{"$sort":{"F":1}}]}`),
		q("aggregate", `{"class_name":"Song","pipeline":[{"$group":{"_id":"$F","n":{"$sum":1}}}]}`),
		q("aggregate", `{"class_name":"Song","pipeline":[{"$match":{"F":{"$exists":true}}}]}`),
	}
	pairs := []struct{ kind, hidden, missing string }{
		{"pointer", "vault", "ghost"},
		{"relation", "secrets", "ghosts"},
	}
	for _, p := range pairs {
		for i, pos := range positions {
			hp := strings.ReplaceAll(pos.params, `F`, p.hidden)
			mp := strings.ReplaceAll(pos.params, `F`, p.missing)
			a := answer(rpc(r, fmt.Sprintf("%s-h%d", p.kind, i), pos.method, hp))
			b := answer(rpc(r, fmt.Sprintf("%s-m%d", p.kind, i), pos.method, mp))
			assertNoTarget(t, p.kind+" "+hp, a)
			assertNoTarget(t, p.kind+" "+mp, b)
			if strings.ReplaceAll(a, p.hidden, "F") != strings.ReplaceAll(b, p.missing, "F") {
				t.Errorf("%s %s: hidden and missing targets differ:\n hidden  %s\n missing %s", p.kind, cut(pos.params, 160), cut(a, 500), cut(b, 500))
			}
		}
	}
	// Sorting by a pointer into an invisible class is refused, as a where on
	// it is (it would rank the hidden ids), for hidden and missing alike.
	for _, f := range []string{"vault", "ghost"} {
		for _, tool := range []string{"query_class", "export_data"} {
			resp := aggRPC(r, "order-"+tool+f, tool, `{"class_name":"Song","order":"`+f+`","keys":["title"],"columns":["title"],"format":"csv"}`)
			res := obj(resp["result"])
			if res == nil || res["isError"] != true || !strings.Contains(answer(resp), "points to a class that does not exist or is not accessible") {
				t.Errorf("%s order by %s must be refused: %s", tool, f, cut(answer(resp), 400))
			}
		}
	}
	// Surfaces that list targets: masked alike, never named.
	for i, rq := range []req{
		q("get_schema", `{"class_name":"Song"}`),
		q("get_all_schemas", `{}`),
		{"prompts/get", `{"name":"parse_relations","arguments":{"classes":"Song"}}`},
		{"prompts/get", `{"name":"parse_relations","arguments":{}}`},
		{"prompts/get", `{"name":"class_overview","arguments":{"class_name":"Song"}}`},
		{"resources/read", `{"uri":"parse://Song/schema"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"find_relationship"},"argument":{"name":"pointer_field","value":""},"context":{"arguments":{"parent_class":"Artist","child_class":"Song"}}}`},
	} {
		ans := answer(rpc(r, fmt.Sprintf("list%d", i), rq.method, rq.params))
		assertNoTarget(t, rq.method+" "+rq.params, ans)
	}
	rel := answer(rpc(r, "rel", "prompts/get", `{"name":"parse_relations","arguments":{"classes":"Song"}}`))
	for _, f := range []string{"Song.vault", "Song.ghost", "Song.secrets", "Song.ghosts"} {
		if strings.Contains(rel, f) {
			t.Errorf("parse_relations lists %s, whose target is invisible: %s", f, cut(rel, 600))
		}
	}
	if !strings.Contains(rel, "Song.artist") {
		t.Errorf("parse_relations lost the visible link Song.artist: %s", cut(rel, 600))
	}
}

// TestTrustHiddenReferenceKeys: an Object field that is a map keyed by
// "VaultSecret$id" shows the member as "__redacted_1": marker in every
// output (rows, csv export, group keys, aggregate rows); a key naming a
// visible class stays.
func TestTrustHiddenReferenceKeys(t *testing.T) {
	r := targetsServer(t)
	for i, c := range []struct{ tool, args string }{
		{"get_object", `{"class_name":"Song","object_id":"` + keyRowID + `","keys":["meta"]}`},
		{"get_object", `{"class_name":"Song","object_id":"` + keyRowID + `","keys":["meta.seen"],"shape":"rest"}`},
		{"query_class", `{"class_name":"Song","where":{"objectId":"` + keyRowID + `"},"keys":["meta"],"format":"csv"}`},
		{"export_data", `{"class_name":"Song","where":{"objectId":"` + keyRowID + `"},"columns":["meta"],"format":"csv"}`},
		{"group_by", `{"class_name":"Song","field":"meta","where":{"objectId":"` + keyRowID + `"}}`},
		{"distinct", `{"class_name":"Song","field":"meta.seen","where":{"objectId":"` + keyRowID + `"}}`},
		{"aggregate", `{"class_name":"Song","pipeline":[{"$match":{"objectId":"` + keyRowID + `"}},{"$project":{"meta":1}}]}`},
	} {
		resp := aggRPC(r, fmt.Sprintf("k%d", i), c.tool, c.args)
		ans := answer(resp)
		assertNoTarget(t, c.tool+" "+c.args, ans)
		if res := obj(resp["result"]); res == nil || res["isError"] == true {
			t.Errorf("%s %s: want success, got %s", c.tool, c.args, cut(ans, 400))
			continue
		}
		if !strings.Contains(ans, "__redacted_1") || !strings.Contains(ans, "Artist$a1") {
			t.Errorf("%s %s: want the redacted key and the visible one: %s", c.tool, c.args, cut(ans, 600))
		}
	}
}
