package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTrustRedactedValueInOrderGroupDistinct: a redacted value is one
// value for sorted reads, group_by, group_by_date and distinct too
// (SECURITY.md "Hidden references", the operator table): a sorted read
// returns every row the unsorted one does, the rows whose sort key is
// redacted after every ranked row in objectId order; group counts add up
// to the row count, the redacted rows in one group keyed by the marker;
// distinct lists the marker once. A hidden reference, a reference to a
// missing class and a "Hidden$id" string — with the id equal to a plain
// value's, or another — land in the same place.
func TestTrustRedactedValueInOrderGroupDistinct(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	ptr := func(class, id string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: class}, {Key: "objectId", Value: id}}
	}
	redacted := map[string]any{"hidden": ptr("Vault", "vsecretid01"), "hiddenlo": ptr("Vault", "aaaaaaaaa01"),
		"missing": ptr("Nowhere", "vsecretid01"), "string": "Vault$vsecretid01"}
	for id, ref := range redacted {
		insert(t, db, "Doc", bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "t"}, {Key: "meta", Value: bson.D{{Key: "ref", Value: ref}, {Key: "when", Value: ref}}}})
	}
	day := func(m time.Month) bson.DateTime {
		return bson.NewDateTimeFromTime(time.Date(2024, m, 10, 0, 0, 0, 0, time.UTC))
	}
	insert(t, db, "Doc",
		bson.D{{Key: "_id", Value: "plain1"}, {Key: "title", Value: "t"}, {Key: "meta", Value: bson.D{{Key: "ref", Value: "vsecretid01"}, {Key: "when", Value: day(1)}}}},
		bson.D{{Key: "_id", Value: "plain2"}, {Key: "title", Value: "t"}, {Key: "meta", Value: bson.D{{Key: "ref", Value: "b"}, {Key: "when", Value: day(2)}}}},
		bson.D{{Key: "_id", Value: "absent"}, {Key: "title", Value: "t"}, {Key: "meta", Value: bson.D{{Key: "k", Value: int32(1)}}}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	ids := func(out map[string]any) []string {
		var got []string
		for _, r := range rowObjects(out, "results") {
			got = append(got, fmt.Sprint(obj(r)["objectId"]))
		}
		return got
	}
	marker := `{"__redacted":true}`
	keyOf := func(g any) string { b, _ := json.Marshal(obj(g)["key"]); return string(b) }
	total := func(out map[string]any) (n float64, redactedGroups int) {
		for _, g := range out["groups"].([]any) {
			n += obj(g)["value"].(float64)
			if keyOf(g) == marker {
				redactedGroups++
			}
		}
		return n, redactedGroups
	}

	// The whole class: nothing is left out, and the redacted rows follow
	// the ranked ones in objectId order, in both directions; pages cut
	// the same order.
	for _, order := range []string{"meta.ref", "-meta.ref", "meta.ref.objectId", "-meta.ref.objectId"} {
		out := callOK(t, c, "query_class", map[string]any{"class_name": "Doc", "order": order, "keys": []any{"objectId"}, "limit": 100})
		got := ids(out)
		if len(got) != 7 || strings.Join(got[3:], ",") != "hidden,hiddenlo,missing,string" {
			t.Errorf("order %s: %v, want the 3 ranked rows then hidden,hiddenlo,missing,string", order, got)
		}
		var paged []string
		for skip := 0; skip < 8; skip += 2 {
			paged = append(paged, ids(callOK(t, c, "query_class", map[string]any{"class_name": "Doc", "order": order, "keys": []any{"objectId"}, "limit": 2, "skip": skip}))...)
		}
		if strings.Join(paged, ",") != strings.Join(got, ",") {
			t.Errorf("order %s: pages %v, one read %v", order, paged, got)
		}
	}
	for _, path := range []string{"meta.ref", "meta.ref.objectId"} {
		out := callOK(t, c, "group_by", map[string]any{"class_name": "Doc", "field": path})
		if n, r := total(out); n != 7 || r != 1 {
			t.Errorf("group_by %s: %v rows in %d redacted groups, want 7 in 1: %v", path, n, r, out)
		}
		out = callOK(t, c, "distinct", map[string]any{"class_name": "Doc", "field": path})
		b, _ := json.Marshal(out["values"])
		if strings.Count(string(b), marker) != 1 {
			t.Errorf("distinct %s: %s, want the marker once", path, b)
		}
	}
	out := callOK(t, c, "group_by_date", map[string]any{"class_name": "Doc", "field": "meta.when", "interval": "month"})
	if n, r := total(out); n != 7 || r != 1 {
		t.Errorf("group_by_date meta.when: %v rows in %d redacted groups, want 7 in 1: %v", n, r, out)
	}

	// One redacted row among the plain ones: every reference and every id
	// answers alike, and the counts match the unsorted, ungrouped read.
	for _, path := range []string{"meta.ref", "meta.ref.objectId"} {
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"query_class", map[string]any{"class_name": "Doc", "order": path, "keys": []any{"objectId"}}},
			{"query_class", map[string]any{"class_name": "Doc", "order": "-" + path, "keys": []any{"objectId"}}},
			{"query_class", map[string]any{"class_name": "Doc", "order": path + ",-title", "keys": []any{"objectId"}, "skip": 2}},
			{"group_by", map[string]any{"class_name": "Doc", "field": path}},
			{"group_by", map[string]any{"class_name": "Doc", "field": path, "sort": "key_desc"}},
			{"group_by_date", map[string]any{"class_name": "Doc", "field": "meta.when", "interval": "month"}},
			{"distinct", map[string]any{"class_name": "Doc", "field": path}},
			{"distinct", map[string]any{"class_name": "Doc", "field": path, "sort": "desc"}},
		} {
			var answers []string
			for _, id := range []string{"hidden", "hiddenlo", "missing", "string"} {
				tc.args["where"] = map[string]any{"objectId": map[string]any{"$in": []any{id, "plain1", "plain2", "absent"}}}
				out := callOK(t, c, tc.tool, tc.args)
				switch tc.tool {
				case "query_class":
					if _, skip := tc.args["skip"]; !skip && len(ids(out)) != 4 {
						t.Errorf("%s %v with %s: %v, want the 4 rows the unsorted read returns", tc.tool, tc.args["order"], id, ids(out))
					}
				case "group_by", "group_by_date":
					if n, r := total(out); n != 4 || r != 1 {
						t.Errorf("%s %s with %s: %v rows in %d redacted groups, want 4 in 1", tc.tool, path, id, n, r)
					}
				}
				answers = append(answers, strings.ReplaceAll(text(call(t, c, tc.tool, tc.args)), `"`+id+`"`, `"<id>"`))
			}
			for i := 1; i < len(answers); i++ {
				if answers[i] != answers[0] {
					t.Errorf("%s %v: the redacted rows answer differently:\n%s", tc.tool, tc.args, strings.Join(answers, "\n"))
					break
				}
			}
		}
	}
}
