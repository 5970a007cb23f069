package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// trackSchemas is a private class with every field shape a hidden
// reference can sit in, pointers into a hidden class (Vault) and into a
// class that does not exist (Ghost), and the hidden class itself.
func trackSchemas() []bson.D {
	return []bson.D{
		{{Key: "_id", Value: "Track"}, {Key: "objectId", Value: "string"}, {Key: "label", Value: "string"}, {Key: "meta", Value: "object"},
			{Key: "tags", Value: "array"}, {Key: "plays", Value: "number"}, {Key: "explicit", Value: "boolean"},
			{Key: "secret", Value: "*Vault"}, {Key: "ghost", Value: "*Ghost"}},
		{{Key: "_id", Value: "Vault"}, {Key: "objectId", Value: "string"}, {Key: "key", Value: "string"}},
	}
}

func trackServer(t *testing.T, rows ...bson.D) *rawServer {
	t.Helper()
	db, uri := writeDB(t, trackSchemas()...)
	ctx := context.Background()
	docs := make([]any, len(rows))
	for i, r := range rows {
		docs[i] = r
	}
	if _, err := db.Collection("Track").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Vault").InsertOne(ctx, bson.D{{Key: "_id", Value: "v1secretv1"}, {Key: "key", Value: "s"}}); err != nil {
		t.Fatal(err)
	}
	r := startRaw(t, uri, policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {rate_limit: {requests: 1000, window: 60s}}\n"))
	r.initialize()
	return r
}

// TestTrustWhereRangesAndDrift: the bisection oracles of whole-value ranges
// and of schema drift are closed. Each probe runs with the stored hidden
// id's right prefix and a wrong one, and with the hidden class and a class
// that does not exist: all four answers must be identical once the class
// and the guess are masked. Rows: meta holds a "Vault$…" string one level
// down (a single key, so a literal would line up with it), plays (Number)
// and explicit (Boolean) hold one although the schema says otherwise.
func TestTrustWhereRangesAndDrift(t *testing.T) {
	r := trackServer(t,
		bson.D{{Key: "_id", Value: "t1"}, {Key: "label", Value: "x"}, {Key: "meta", Value: bson.D{{Key: "ref", Value: "Vault$v1secretv1"}}},
			{Key: "tags", Value: bson.A{bson.D{{Key: "ref", Value: "Vault$v1secretv1"}}, "Vault$v1secretv1"}},
			{Key: "plays", Value: "Vault$v1secretv1"}, {Key: "explicit", Value: "Vault$v1secretv1"}},
		bson.D{{Key: "_id", Value: "t2"}, {Key: "label", Value: "y"}, {Key: "plays", Value: 3}, {Key: "explicit", Value: true}},
	)
	// %[1]s is the class, %[2]s the guess: "v1s" is a right prefix of the
	// stored id, "v0" a wrong one; "~" sorts after every id character.
	probes := []string{
		`{"meta":{"$lt":{"ref":"%[1]s$%[2]s~"}}}`,
		`{"meta":{"$gt":{"ref":"%[1]s$%[2]s"}}}`,
		`{"meta":{"$lte":{"ref":"%[1]s"}}}`,
		`{"meta":{"$gte":[{"ref":"%[1]s$%[2]s"}]}}`,
		`{"meta.ref":{"$lt":"%[1]s$%[2]s~"}}`,
		`{"tags":{"$lt":{"ref":"%[1]s$%[2]s~"}}}`,
		`{"tags":{"$in":[["%[1]s$%[2]secretv1"]]}}`,
		`{"tags":{"$eq":["%[1]s$%[2]secretv1"]}}`,
		`{"tags":["%[1]s$%[2]secretv1"]}`,
		`{"plays":{"$lt":"%[1]s$%[2]s~"}}`,
		`{"plays":{"$gte":"%[1]s$%[2]s"}}`,
		`{"plays":{"$regex":"^%[1]s\\$%[2]s"}}`,
		`{"plays":{"$in":["%[1]s$%[2]secretv1"]}}`,
		`{"plays":"%[1]s$%[2]secretv1"}`,
		`{"explicit":{"$in":["%[1]s$%[2]secretv1"]}}`,
		`{"explicit":{"$ne":"%[1]s$%[2]secretv1"}}`,
		`{"explicit":{"$nin":["%[1]s$%[2]secretv1"]}}`,
		`{"$or":[{"plays":{"$lt":"%[1]s$%[2]s~"}},{"label":"none"}]}`,
	}
	for i, probe := range probes {
		var first, firstWhere string
		for j, c := range []struct{ class, guess string }{{"Vault", "v1s"}, {"Vault", "v0"}, {"Ghost", "v1s"}, {"Ghost", "v0"}} {
			where := fmt.Sprintf(probe, c.class, c.guess)
			ans := answer(aggRPC(r, fmt.Sprintf("d%d-%d", i, j), "count_objects", fmt.Sprintf(`{"class_name":"Track","where":%s}`, where)))
			masked := strings.NewReplacer(c.class, "CLASS", c.guess, "GUESS").Replace(ans)
			if j == 0 {
				first, firstWhere = masked, where
			} else if masked != first {
				t.Errorf("probe %d: the answer depends on the class or the guess:\n %s → %s\n %s → %s", i, firstWhere, cut(first, 300), where, cut(masked, 300))
			}
		}
	}
	// The refusal of a whole-value range names Parse's "bad atom".
	ans := answer(aggRPC(r, "atom", "count_objects", `{"class_name":"Track","where":{"meta":{"$lt":{"ref":"zzz"}}}}`))
	if !strings.Contains(ans, "bad atom") {
		t.Errorf("whole-value range: %s", ans)
	}
	// Typed queries on clean rows still answer: t2 has plays 3.
	res := aggToolResult(t, aggRPC(r, "clean", "count_objects", `{"class_name":"Track","where":{"plays":{"$lt":5},"explicit":true}}`))
	if res["count"] != float64(1) {
		t.Errorf("typed count: %v", res)
	}
}

// TestTrustGroupHiddenReferences: group_by and distinct never group on a
// hidden reference. Pointers into a hidden class and into a missing one are
// refused alike, with the where translator's message; String, Object,
// Array and drifted typed fields leave rows holding a hidden reference out
// of every group, so neither the number of referenced hidden objects nor
// which rows share one shows; a missing value is the JSON null key.
func TestTrustGroupHiddenReferences(t *testing.T) {
	ptr := func(class, id string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: class}, {Key: "objectId", Value: id}}
	}
	r := trackServer(t,
		bson.D{{Key: "_id", Value: "g1"}, {Key: "label", Value: "Vault$v1secretv1"}, {Key: "meta", Value: ptr("Vault", "v1secret")}, {Key: "plays", Value: "Vault$v1secretv1"},
			{Key: "_p_secret", Value: "Vault$v1secretv1"}, {Key: "_p_ghost", Value: "Ghost$v1secret"}, {Key: "tags", Value: bson.A{"Vault$v1secretv1"}}},
		bson.D{{Key: "_id", Value: "g2"}, {Key: "label", Value: "Vault$v2secretv2"}, {Key: "meta", Value: ptr("Vault", "v2secret")}, {Key: "plays", Value: "Vault$v2secretv2"},
			{Key: "_p_secret", Value: "Vault$v2secretv2"}, {Key: "_p_ghost", Value: "Ghost$v2secret"}, {Key: "tags", Value: bson.A{"Vault$v2secretv2"}}},
		bson.D{{Key: "_id", Value: "g3"}, {Key: "label", Value: "Vault$v1secretv1"}, {Key: "meta", Value: ptr("Vault", "v1secret")}, {Key: "plays", Value: "Vault$v1secretv1"},
			{Key: "tags", Value: bson.A{"Vault$v1secretv1"}}},
		bson.D{{Key: "_id", Value: "g4"}, {Key: "label", Value: "a"}, {Key: "meta", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "plays", Value: 1}, {Key: "tags", Value: bson.A{"a"}}},
		bson.D{{Key: "_id", Value: "g5"}, {Key: "label", Value: "a"}, {Key: "meta", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "plays", Value: 1}, {Key: "tags", Value: bson.A{"a"}}},
		bson.D{{Key: "_id", Value: "g6"}, {Key: "label", Value: "b"}, {Key: "plays", Value: 2}},
		bson.D{{Key: "_id", Value: "g7"}},
	)
	n := 0
	rpc := func(tool, args string) map[string]any {
		n++
		return aggRPC(r, fmt.Sprintf("g%d", n), tool, args)
	}
	// Pointers into hidden and missing classes: one refusal, the where's.
	var answers []string
	for _, f := range []string{"secret", "ghost"} {
		where := answer(rpc("count_objects", fmt.Sprintf(`{"class_name":"Track","where":{%q:{"$exists":true}}}`, f)))
		for _, tool := range []string{"group_by", "distinct"} {
			ans := answer(rpc(tool, fmt.Sprintf(`{"class_name":"Track","field":%q}`, f)))
			if ans != where {
				t.Errorf("%s %s: %s\nwant the where refusal %s", tool, f, ans, where)
			}
			answers = append(answers, strings.ReplaceAll(ans, f, "F"))
		}
	}
	if answers[0] != answers[2] || answers[1] != answers[3] {
		t.Errorf("hidden and missing pointer targets answer differently: %v", answers)
	}
	// Every other field shape: the hidden references, whatever their ids,
	// form one group, the marker's, after every other group (SECURITY.md
	// "Hidden references": a redacted value is one value).
	want := map[string]string{
		"label": `null=1 a=2 b=1 {"__redacted":true}=3`, // g7 has no label: the JSON null key
		"meta":  `null=2 {"k":1}=2 {"__redacted":true}=3`,
		"plays": `null=1 1=2 2=1 {"__redacted":true}=3`,
		"tags":  `null=2 ["a"]=2 {"__redacted":true}=3`,
	}
	for field, w := range want {
		res := aggToolResult(t, rpc("group_by", fmt.Sprintf(`{"class_name":"Track","field":%q,"sort":"key_asc"}`, field)))
		var parts []string
		for _, g := range list(res["groups"]) {
			k, _ := json.Marshal(obj(g)["key"])
			parts = append(parts, fmt.Sprintf("%s=%v", strings.Trim(string(k), `"`), obj(g)["value"]))
		}
		if got := strings.Join(parts, " "); got != w {
			t.Errorf("group_by %s: %s, want %s", field, got, w)
		}
		assertNoVault(t, "group_by "+field, fmt.Sprint(res))
	}
	res := aggToolResult(t, rpc("group_by", `{"class_name":"Track","field":"tags","flatten_arrays":true,"sort":"key_asc"}`))
	if got := fmt.Sprint(list(res["groups"])); got != "[map[key:a value:2] map[key:map[__redacted:true] value:3]]" {
		t.Errorf("group_by tags flattened: %s", got)
	}
	res = aggToolResult(t, rpc("distinct", `{"class_name":"Track","field":"label"}`))
	if got := fmt.Sprint(res["values"]); got != "[a b map[__redacted:true]]" {
		t.Errorf("distinct label: %s", got)
	}
	// value_field holding a hidden reference (drift) is compared by no $min.
	res = aggToolResult(t, rpc("group_by", `{"class_name":"Track","field":"label","operation":"max","value_field":"plays","sort":"key_asc"}`))
	assertNoVault(t, "group_by max plays", fmt.Sprint(res))
}

func assertNoVault(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{"Vault$", "v1secret", "v2secret"} {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows %q: %s", what, secret, cut(s, 400))
		}
	}
}

// TestTrustSubQueryClassGate: a sub-query's class ($select, $dontSelect,
// $inQuery, $notInQuery, $relatedTo) passes the same class gate as a
// tool's own class, so Parse's system classes, a policy-hidden class and
// classes that do not exist answer exactly as count_objects on that class
// does — byte for byte — and never with a message of their own.
func TestTrustSubQueryClassGate(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	shapes := []string{
		`{"title":{"$select":{"query":{"className":%q,"where":{"a":1}},"key":"k"}}}`,
		`{"title":{"$dontSelect":{"query":{"className":%q,"where":{"a":1}},"key":"k"}}}`,
		`{"$relatedTo":{"object":{"__type":"Pointer","className":%q,"objectId":"x1"},"key":"k"}}`,
	}
	n := 0
	for _, class := range []string{"_JobStatus", "_Hooks", "_PushStatus", "_Product", "_SCHEMA", "_GlobalConfig", "_Audience", "VaultSecret", "_Nosuch", "NoSuchClass"} {
		n++
		want := answer(aggRPC(r, fmt.Sprintf("c%d", n), "count_objects", fmt.Sprintf(`{"class_name":%q}`, class)))
		if !strings.Contains(want, "does not exist or is not accessible") {
			t.Fatalf("%s: the tool's own class gate: %s", class, want)
		}
		for _, shape := range shapes {
			n++
			where := fmt.Sprintf(shape, class)
			got := answer(aggRPC(r, fmt.Sprintf("c%d", n), "count_objects", fmt.Sprintf(`{"class_name":"Song","where":%s}`, where)))
			if got != want {
				t.Errorf("%s:\n got  %s\n want %s", where, got, want)
			}
		}
	}
}

// TestTrustDriftInPipelinesAndOrder: a typed field whose data drifted to a
// "Hidden$id" string (t1.plays, a Number column) cannot be bisected through
// aggregate's $match or ranked by order either: every path a pipeline reads
// and every sort key gets the not-a-hidden-reference conjunct whatever its
// declared type, so the drifted row is in no answer and the answers do not
// depend on the class or the guess.
func TestTrustDriftInPipelinesAndOrder(t *testing.T) {
	r := trackServer(t,
		bson.D{{Key: "_id", Value: "t1"}, {Key: "label", Value: "x"}, {Key: "plays", Value: "Vault$v1secretv1"}, {Key: "explicit", Value: "Vault$v1secretv1"}},
		bson.D{{Key: "_id", Value: "t2"}, {Key: "label", Value: "y"}, {Key: "plays", Value: 3}, {Key: "explicit", Value: true}},
	)
	probes := []string{
		`{"class_name":"Track","pipeline":[{"$match":{"plays":{"$lt":"%[1]s$%[2]s~"}}},{"$count":"n"}]}`,
		`{"class_name":"Track","pipeline":[{"$match":{"plays":{"$gte":"%[1]s$%[2]s"}}},{"$count":"n"}]}`,
		`{"class_name":"Track","pipeline":[{"$match":{"plays":{"$regex":"^%[1]s\\$%[2]s"}}},{"$count":"n"}]}`,
		`{"class_name":"Track","pipeline":[{"$match":{"explicit":{"$in":["%[1]s$%[2]secretv1"]}}},{"$count":"n"}]}`,
		`{"class_name":"Track","pipeline":[{"$match":{"label":{"$ne":"%[1]s%[2]s"}}},{"$sort":{"plays":1}},{"$project":{"label":1}}]}`,
	}
	for i, probe := range probes {
		var first, firstArgs string
		for j, c := range []struct{ class, guess string }{{"Vault", "v1s"}, {"Vault", "v0"}, {"Ghost", "v1s"}, {"Ghost", "v0"}} {
			args := fmt.Sprintf(probe, c.class, c.guess)
			ans := answer(aggRPC(r, fmt.Sprintf("p%d-%d", i, j), "aggregate", args))
			masked := strings.NewReplacer(c.class, "CLASS", c.guess, "GUESS").Replace(ans)
			if j == 0 {
				first, firstArgs = masked, args
			} else if masked != first {
				t.Errorf("probe %d: the answer depends on the class or the guess:\n %s → %s\n %s → %s", i, firstArgs, cut(first, 300), args, cut(masked, 300))
			}
		}
	}
	// A sorted read does not rank the drifted row (its place would rank
	// the id): it follows the ranked rows in both directions; the sorted
	// pipeline above leaves it out.
	for _, order := range []string{"plays", "-plays"} {
		for tool, args := range map[string]string{
			"query_class": `{"class_name":"Track","order":"` + order + `","keys":["label"]}`,
			"export_data": `{"class_name":"Track","order":"` + order + `","columns":["objectId","label"]}`,
		} {
			ans := answer(aggRPC(r, "o-"+tool+order, tool, args))
			if i, j := strings.Index(ans, "t2"), strings.Index(ans, "t1"); i < 0 || j < i {
				t.Errorf("%s order %s: the drifted row is ranked or missing: %s", tool, order, cut(ans, 400))
			}
		}
	}
	ans := answer(aggRPC(r, "sorted", "aggregate", `{"class_name":"Track","pipeline":[{"$sort":{"plays":1}},{"$project":{"label":1}}]}`))
	if strings.Contains(ans, "t1") || !strings.Contains(ans, "t2") {
		t.Errorf("aggregate $sort plays: the drifted row is ranked: %s", cut(ans, 400))
	}
}
