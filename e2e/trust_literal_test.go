package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTrustWholeValueLiterals: a where that compares a whole Object or Array
// value with a literal holding a reference to a hidden class — an embedded
// Pointer object, or a "Class$id" string inside the literal — cannot test a
// guessed id against a hidden reference stored below the path. The stored
// object here has its keys in sorted order, so an exact literal would match
// it if the translator let it through. A hidden class and a missing one, a
// right and a wrong guess, all get the same answer (count_objects only: 36 calls stay under the
// default rate limit).
func TestTrustWholeValueLiterals(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	ctx := context.Background()
	ptr := bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Vault"}, {Key: "objectId", Value: "v1secret"}}
	if _, err := db.Collection("Ticket").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "t1"}, {Key: "title", Value: "x"}, {Key: "meta", Value: bson.D{{Key: "credential", Value: ptr}}},
			{Key: "tags", Value: bson.A{bson.D{{Key: "k", Value: "Vault$v1secret"}}}}},
		bson.D{{Key: "_id", Value: "t2"}, {Key: "title", Value: "y"}, {Key: "meta", Value: bson.D{{Key: "k", Value: "Vault$v1secret"}}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Vault").InsertOne(ctx, bson.D{{Key: "_id", Value: "v1secret"}, {Key: "key", Value: "s"}}); err != nil {
		t.Fatal(err)
	}
	r := startRaw(t, uri, policyEnv(t, "classes:\n  Vault: {hidden: true}\n"))
	r.initialize()
	shapes := []string{
		`{"meta":{"credential":{"__type":"Pointer","className":%[1]q,"objectId":%[2]q}}}`,
		`{"meta":{"$eq":{"credential":{"__type":"Pointer","className":%[1]q,"objectId":%[2]q}}}}`,
		`{"meta":{"$in":[{"credential":{"__type":"Pointer","className":%[1]q,"objectId":%[2]q}}]}}`,
		`{"meta":{"$ne":{"credential":{"__type":"Pointer","className":%[1]q,"objectId":%[2]q}}}}`,
		`{"meta":{"$nin":[{"credential":{"__type":"Pointer","className":%[1]q,"objectId":%[2]q}}]}}`,
		`{"meta":{"k":"%[1]s$%[2]s"}}`,
		`{"tags":{"$all":[{"k":"%[1]s$%[2]s"}]}}`,
		`{"tags":[{"k":"%[1]s$%[2]s"}]}`,
		`{"$or":[{"meta":{"credential":{"__type":"Pointer","className":%[1]q,"objectId":%[2]q}}},{"title":"none"}]}`,
	}
	for i, shape := range shapes {
		var first, firstName string
		for j, c := range []struct{ class, id string }{{"Vault", "v1secret"}, {"Vault", "v2wrong0"}, {"Vaulz", "v1secret"}, {"Vaulz", "v2wrong0"}} {
			where := fmt.Sprintf(shape, c.class, c.id)
			ans := answer(aggRPC(r, fmt.Sprintf("l%d-%d", i, j), "count_objects", fmt.Sprintf(`{"class_name":"Ticket","where":%s}`, where)))
			masked := strings.NewReplacer(c.class, "CLASS", c.id, "GUESS").Replace(ans)
			if j == 0 {
				first, firstName = masked, where
			} else if masked != first {
				t.Errorf("shape %d: the answer depends on the class or the guess:\n %s → %s\n %s → %s", i, firstName, cut(first, 300), where, cut(masked, 300))
			}
		}
	}
}
