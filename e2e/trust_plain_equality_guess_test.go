package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTrustPlainEqualityRedacted: with the not-a-hidden-reference conjunct
// left off plain equalities on a String column, a where still cannot tell a
// row holding a hidden reference (as a string, inside a drifted array or
// object) from one holding an ordinary other value, nor test a guessed id.
// Rows come in pairs: body "ref" holds Vault$v1secret00 where body "plain"
// holds "zzz"; group_by body must count both alike.
func TestTrustPlainEqualityRedacted(t *testing.T) {
	r := plainEqualityServer(t)
	wheres := []string{
		`{"title":"x"}`, `{"title":{"$eq":"x"}}`, `{"title":{"$in":["x",1,true]}}`, `{"title":{"$in":["x",{"k":"q"}]}}`,
		`{"title":{"$ne":"x"}}`, `{"title":{"$nin":["x",1]}}`, `{"title":{"$eq":["x"]}}`, `{"title":{"$eq":{"k":"q"}}}`,
		`{"title.k":"x"}`, `{"title.k":{"$ne":"x"}}`, `{"Title":"x"}`, `{"title":{"$in":["x"]},"body":{"$exists":true}}`,
		`{"$or":[{"title":"x"},{"title":{"$in":[1]}}]}`, `{"$nor":[{"title":"x"}]}`, `{"title":{"$exists":true}}`,
		`{"title":{"$all":["x"]}}`, `{"title":{"$size":1}}`, `{"title":{"$size":2}}`, `{"title":{"$regex":"^V"}}`,
		`{"title":{"$in":["%[1]s$%[2]s"]}}`, `{"title":{"$eq":["x","%[1]s$%[2]s"]}}`, `{"title":{"$in":[["%[1]s$%[2]s"],"x"]}}`,
		`{"title":{"$eq":{"k":"%[1]s$%[2]s"}}}`, `{"title":{"$nin":["%[1]s$%[2]s"]}}`, `{"title.k":"%[1]s$%[2]s"}`,
		`{"title":{"$in":["x",{"__type":"Pointer","className":%[1]q,"objectId":%[2]q}]}}`,
	}
	group := regexp.MustCompile(`key\\?":\\?"(ref|plain)\\?",\\?"value\\?":(\d+)`)
	counts := func(ans string) (ref, plain string) {
		for _, m := range group.FindAllStringSubmatch(ans, -1) {
			if m[1] == "ref" {
				ref = m[2]
			} else {
				plain = m[2]
			}
		}
		return ref, plain
	}
	for i, w := range wheres {
		var first, firstWhere string
		for j, c := range []struct{ class, id string }{{"Vault", "v1secret00"}, {"Vault", "v2wrong000"}, {"Vaulz", "v1secret00"}} {
			where := w
			if strings.Contains(w, "%[") {
				where = fmt.Sprintf(w, c.class, c.id)
			} else if j > 0 {
				break
			}
			ans := answer(aggRPC(r, fmt.Sprintf("g%d-%d", i, j), "group_by", fmt.Sprintf(`{"class_name":"Memo","field":"body","where":%s}`, where)))
			ref, plain := counts(ans)
			if ref != plain {
				// $ne, $nin, $all and a non-plain $in answer the redacted
				// row by the operator table, not as the row shows it.
				t.Logf("%s: a hidden reference row answers unlike its plain twin: %s", where, cut(ans, 400))
			}
			masked := strings.NewReplacer(c.class, "CLASS", c.id, "GUESS").Replace(ans)
			if j == 0 {
				first, firstWhere = masked, where
				t.Logf("%s → %s", where, cut(ans, 200))
			} else if masked != first {
				t.Errorf("the answer depends on the guess:\n %s → %s\n %s → %s", firstWhere, cut(first, 300), where, cut(masked, 300))
			}
			for _, tool := range []string{"count_objects", "distinct"} {
				a := answer(aggRPC(r, fmt.Sprintf("c%d-%d-%s", i, j, tool), tool, fmt.Sprintf(`{"class_name":"Memo","field":"body","where":%s}`, where)))
				if strings.Contains(a, "ref") != strings.Contains(a, "plain") && !strings.Contains(a, "rror") {
					t.Errorf("%s %s: %s", tool, where, cut(a, 300))
				}
			}
		}
	}
}

// plainEqualityServer: Memo rows in twins, body "ref" holding Vault$v1secret00
// (Vault hidden) where body "plain" holds "zzz", as a string, inside
// drifted arrays and objects.
func plainEqualityServer(t *testing.T) *rawServer {
	t.Helper()
	db, uri := writeDB(t, attackSchemas()...)
	ctx := context.Background()
	var docs []any
	for i, shape := range []func(string) any{
		func(v string) any { return v },
		func(v string) any { return bson.A{"x", v} },
		func(v string) any { return bson.A{v} },
		func(v string) any { return bson.D{{Key: "k", Value: v}} },
		func(v string) any { return bson.A{bson.D{{Key: "k", Value: v}}, "x"} },
	} {
		docs = append(docs,
			bson.D{{Key: "_id", Value: fmt.Sprintf("r%d", i)}, {Key: "title", Value: shape("Vault$v1secret00")}, {Key: "body", Value: "ref"}},
			bson.D{{Key: "_id", Value: fmt.Sprintf("p%d", i)}, {Key: "title", Value: shape("zzz")}, {Key: "body", Value: "plain"}})
	}
	if _, err := db.Collection("Memo").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Vault").InsertOne(ctx, bson.D{{Key: "_id", Value: "v1secret00"}, {Key: "key", Value: "s"}}); err != nil {
		t.Fatal(err)
	}
	r := startRaw(t, uri, policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {rate_limit: {requests: 1000, window: 60s}}\n"))
	r.initialize()
	return r
}
