package parsedb

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The conjunct sends the hidden names to MongoDB, but its echo
// (WithoutHiddenNames, used by dry runs) never shows them, at any depth.
func TestNotHiddenRefNamesOnlyReachMongoDB(t *testing.T) {
	h := NewHiddenRefs([]string{"VaultSecret", "_Session"}, func(c string) bool { return c == "VaultSecret" || c == "_Session" })
	nh := h.NotHiddenRef(nil, "meta.credential")
	pipeline := bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "$and", Value: nh}}}},
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "pipeline", Value: []any{bson.M{"$match": map[string]any{"$and": nh}}}}}}},
		bson.D{{Key: "$facet", Value: bson.D{{Key: "a", Value: []bson.D{{{Key: "$match", Value: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "$and", Value: nh}}}}}}}}}}}},
	}
	sent, err := bson.MarshalExtJSON(bson.D{{Key: "p", Value: pipeline}}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"meta":{"$not":{"$regularExpression":{"pattern":"^(?:VaultSecret|_Session)\\$[A-Za-z0-9_-]{10,32}\\z","options":""}}}},{"meta.className":{"$nin":["VaultSecret","_Session"]}}`
	if !strings.Contains(string(sent), want) {
		t.Errorf("the conjunct sent to MongoDB:\n%s\nlacks %s", sent, want)
	}
	shown, err := bson.MarshalExtJSON(bson.D{{Key: "p", Value: WithoutHiddenNames(pipeline)}}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"VaultSecret", "_Session"} {
		if strings.Contains(string(shown), name) {
			t.Errorf("the echo names %s: %s", name, shown)
		}
	}
	if strings.Count(string(shown), HiddenNamesPlaceholder) != 3*4 {
		t.Errorf("the echo lost structure: %s", shown)
	}
}
