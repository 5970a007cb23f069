package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTrustPipelineOpaqueValues: an aggregate pipeline cannot reach a
// hidden reference stored below an Object or Array value, however it gets
// there (SECURITY.md "Hidden references": pipelines). Ticket t1 holds an
// embedded pointer to the hidden class Vault in meta.credential (keys in
// sorted order, so an exact literal would match it) and {k: "Vault$ididididid"}
// in tags; t2 holds "Vault$ididididid" in meta.k; t4's title is "Vault$ididididid"; t5
// holds the pointer with its objectId first. Each
// probe runs with the real id and with a wrong guess: the answers must be
// identical once the guess is masked, and never show the id. The stages
// that FerretDB runs ($project inclusion, $group, $unwind, $match, $count)
// execute here; pipelines with expressions are refused by the validator
// before anything is sent, on any backend.
func TestTrustPipelineOpaqueValues(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx := context.Background()
	const secret, wrongID = "v1secretv1", "v2wrong0v2"
	ptr := bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Vault"}, {Key: "objectId", Value: secret}}
	if _, err := db.Collection("Ticket").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "t1"}, {Key: "title", Value: "x"}, {Key: "meta", Value: bson.D{{Key: "credential", Value: ptr}}},
			{Key: "tags", Value: bson.A{bson.D{{Key: "k", Value: "Vault$" + secret}}}}},
		bson.D{{Key: "_id", Value: "t2"}, {Key: "title", Value: "y"}, {Key: "meta", Value: bson.D{{Key: "k", Value: "Vault$" + secret}}}},
		bson.D{{Key: "_id", Value: "t3"}, {Key: "title", Value: "z"}, {Key: "meta", Value: bson.D{{Key: "source", Value: "plain"}}}, {Key: "tags", Value: bson.A{"a"}}},
		bson.D{{Key: "_id", Value: "t4"}, {Key: "title", Value: "Vault$" + secret}},
		// The id before the class name: a range with {objectId: guess}
		// would order against it without naming the class.
		bson.D{{Key: "_id", Value: "t5"}, {Key: "title", Value: "w"}, {Key: "meta", Value: bson.D{{Key: "credential",
			Value: bson.D{{Key: "objectId", Value: secret}, {Key: "className", Value: "Vault"}, {Key: "__type", Value: "Pointer"}}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Vault").InsertOne(ctx, bson.D{{Key: "_id", Value: secret}, {Key: "key", Value: "s"}}); err != nil {
		t.Fatal(err)
	}
	r := startRaw(t, uri, policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {refuse_collscan: false, rate_limit: {requests: 100000, window: 1m}}\n"))
	r.initialize()

	// {C} is the class name, {G} the guessed id.
	probes := []struct {
		name, pipeline string
		refused        bool // by the opaque-value rule
	}{
		// Run by the backend: the conjunct follows the value through
		// the stages, so the row holding the reference never matches.
		{"inclusion $project, then a path below", `[{"$project":{"meta":1}},{"$match":{"meta.credential.objectId":"{G}"}},{"$count":"n"}]`, false},
		{"inclusion $project of a string, then $regex", `[{"$project":{"title":1}},{"$match":{"title":{"$regex":"^{C}\\${G}"}}},{"$count":"n"}]`, false},
		{"group key, then a path below", `[{"$group":{"_id":"$meta","n":{"$sum":1}}},{"$match":{"_id.credential.objectId":"{G}"}},{"$count":"n"}]`, false},
		{"group key, then $gte on a path below", `[{"$group":{"_id":"$meta","n":{"$sum":1}}},{"$match":{"_id.credential.objectId":{"$gte":"{G}"}}},{"$count":"n"}]`, false},
		{"$unwind, then an element path", `[{"$unwind":"$tags"},{"$match":{"tags.k":"{C}${G}"}},{"$count":"n"}]`, false},
		{"$unwind, then group, then a path below", `[{"$unwind":"$tags"},{"$group":{"_id":"$tags","n":{"$sum":1}}},{"$match":{"_id.k":{"$regex":"^{C}\\${G}"}}},{"$count":"n"}]`, false},
		{"$elemMatch", `[{"$match":{"tags":{"$elemMatch":{"k":"{C}${G}"}}}},{"$count":"n"}]`, false},
		{"$addFields rename, then a path below", `[{"$addFields":{"m":"$meta"}},{"$match":{"m.credential.objectId":"{G}"}},{"$count":"n"}]`, false},
		// Whole-value literals naming the class: refused as in a where.
		{"whole Object literal", `[{"$match":{"meta":{"credential":{"__type":"Pointer","className":"{C}","objectId":"{G}"}}}},{"$count":"n"}]`, false},
		{"whole Object $in", `[{"$match":{"meta":{"$in":[{"k":"{C}${G}"}]}}},{"$count":"n"}]`, false},
		{"whole Array literal after a rename", `[{"$project":{"tags":1}},{"$match":{"tags":[{"k":"{C}${G}"}]}},{"$count":"n"}]`, false},
		{"whole Object $gt after a group", `[{"$group":{"_id":"$meta"}},{"$match":{"_id":{"$gt":{"credential":{"__type":"Pointer","className":"{C}","objectId":"{G}"}}}}},{"$count":"n"}]`, false},
		{"whole Object $gt, id first", `[{"$match":{"meta":{"$gt":{"credential":{"objectId":"{G}"}}}}},{"$count":"n"}]`, false},
		{"whole Object $lte after a group, id first", `[{"$group":{"_id":"$meta"}},{"$match":{"_id":{"$lte":{"credential":{"objectId":"{G}"}}}}},{"$count":"n"}]`, false},
		// Taken apart by an expression or compared by order: refused.
		{"$objectToArray", `[{"$project":{"x":{"$objectToArray":"$meta"}}},{"$match":{"x.v.objectId":"{G}"}},{"$count":"n"}]`, true},
		{"$getField of a path below", `[{"$match":{"$expr":{"$eq":[{"$getField":{"field":"objectId","input":"$meta.credential"}},"{G}"]}}},{"$count":"n"}]`, true},
		{"$let into a path", `[{"$project":{"x":{"$let":{"vars":{"m":"$meta"},"in":"$$m.credential.objectId"}}}}]`, true},
		{"$unwind then $split", `[{"$unwind":"$tags"},{"$project":{"x":{"$split":["$tags.k","$"]}}},{"$match":{"x":"{G}"}},{"$count":"n"}]`, true},
		{"$map over an Array", `[{"$project":{"x":{"$map":{"input":"$tags","as":"e","in":{"$substrCP":["$$e.k",6,8]}}}}},{"$match":{"x":"{G}"}},{"$count":"n"}]`, true},
		{"$eq of the whole value", `[{"$match":{"$expr":{"$eq":["$meta",{"credential":{"__type":"Pointer","className":"{C}","objectId":"{G}"}}]}}},{"$count":"n"}]`, true},
		{"$in with an object literal", `[{"$match":{"$expr":{"$in":[{"k":"{G}"},"$tags"]}}},{"$count":"n"}]`, true}, // (a literal naming {C} is refused earlier, see TestTrustPipelineLiteralOracle)
		{"$concat of a renamed value", `[{"$addFields":{"m":"$meta.k"}},{"$project":{"x":{"$concat":["$m",""]}}}]`, true},
		{"$sort by the whole value", `[{"$sort":{"meta":1}},{"$limit":1},{"$project":{"title":1}}]`, true},
		{"$group $max of the whole value", `[{"$group":{"_id":null,"m":{"$max":"$meta"}}}]`, true},
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cut(r.stderr.String(), 3000))
		}
	})
	for i, p := range probes {
		var first, firstArgs string
		for j, c := range []struct{ class, id string }{{"Vault", secret}, {"Vault", wrongID}, {"Vaulz", secret}, {"Vaulz", wrongID}} {
			args := `{"class_name":"Ticket","pipeline":` + strings.NewReplacer("{C}", c.class, "{G}", c.id).Replace(p.pipeline) + `}`
			ans := answer(aggRPC(r, fmt.Sprintf("o%d-%d", i, j), "aggregate", args))
			masked := strings.NewReplacer(c.class, "CLASS", c.id, "GUESS").Replace(ans)
			if strings.Contains(masked, secret) {
				t.Errorf("%s shows the hidden id: %s", p.name, cut(masked, 400))
			}
			if p.refused != strings.Contains(ans, "may hold an Object or Array value") {
				t.Errorf("%s: refused by the opaque-value rule = %v, want %v: %s", p.name, !p.refused, p.refused, cut(ans, 400))
			}
			if j == 0 {
				first, firstArgs = masked, args
			} else if masked != first {
				t.Errorf("%s: the answer depends on the class or the guess:\n %s → %s\n %s → %s", p.name, firstArgs, cut(first, 300), args, cut(masked, 300))
			}
		}
	}

	// What keeps working: whole values flow to the output redacted, and
	// a path below an Object field is matched where it holds no reference.
	ans := answer(aggRPC(r, "whole", "aggregate", `{"class_name":"Ticket","pipeline":[{"$match":{"objectId":"t1"}},{"$project":{"meta":1,"tags":1}}]}`))
	if strings.Contains(ans, secret) || !strings.Contains(ans, "__redacted") {
		t.Errorf("whole values: %s", cut(ans, 600))
	}
	ans = answer(aggRPC(r, "plain", "aggregate", `{"class_name":"Ticket","pipeline":[{"$project":{"meta":1}},{"$match":{"meta.source":"plain"}},{"$count":"n"}]}`))
	if !strings.Contains(ans, `\"n\":1`) && !strings.Contains(ans, `"n":1`) && !strings.Contains(ans, `[1]`) {
		t.Errorf("a path below an Object field without a reference should match t3: %s", cut(ans, 600))
	}
}
