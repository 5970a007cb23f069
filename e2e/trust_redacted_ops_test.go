package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTrustRedactedValueOperatorMatrix: every where operator × {hidden
// reference, reference to a missing class, the same as a reference
// string, a plain value, absent}, at the path and below it. A redacted
// value answers as one present, non-null value equal to no operand; a path
// below it as an absent path (SECURITY.md "Hidden references", the
// operator table). So the hidden and the missing reference answer every
// operator alike, a right and a wrong guess of the hidden id answer alike,
// and exactly one of {p: null} and {p: {$ne: null}} (and of $in/$nin
// [null]) matches every row — before, a redacted row matched neither.
func TestTrustRedactedValueOperatorMatrix(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	ptr := func(class string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: class}, {Key: "objectId", Value: "vsecretid01"}}
	}
	rows := map[string]any{"hidden": ptr("Vault"), "missing": ptr("Nowhere"), "string": "Vault$vsecretid01", "plain": "vsecretid01", "absent": nil}
	for id, ref := range rows {
		meta := bson.D{{Key: "k", Value: int32(1)}}
		if ref != nil {
			meta = append(meta, bson.E{Key: "ref", Value: ref})
		}
		insert(t, db, "Doc", bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "t"}, {Key: "meta", Value: meta}})
	}
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	matches := func(id, path, op string) bool {
		var v any
		if err := json.Unmarshal([]byte(op), &v); err != nil {
			t.Fatal(err)
		}
		n := callOK(t, c, "count_objects", map[string]any{"class_name": "Doc", "where": map[string]any{"objectId": id, path: v}})["count"]
		return n == float64(1)
	}
	ops := []string{`null`, `{"$eq":null}`, `{"$ne":null}`, `"vsecretid01"`, `"wrongguess1"`, `{"$ne":"vsecretid01"}`, `{"$ne":"wrongguess1"}`,
		`{"$in":[null]}`, `{"$in":["vsecretid01"]}`, `{"$in":["wrongguess1"]}`, `{"$nin":[null]}`, `{"$nin":["vsecretid01"]}`, `{"$nin":["wrongguess1"]}`,
		`{"$exists":true}`, `{"$exists":false}`, `{"$gt":""}`, `{"$lt":"vsecretid02"}`, `{"$regex":"^v"}`, `{"$all":["vsecretid01"]}`, `{"$containedBy":["vsecretid01"]}`,
		`{"$exists":true,"$ne":"vsecretid01"}`, `{"$exists":true,"$ne":"wrongguess1"}`}
	for _, path := range []string{"meta.ref", "meta.ref.objectId"} {
		got := map[string]map[string]bool{}
		for id := range rows {
			got[id] = map[string]bool{}
			for _, op := range ops {
				got[id][op] = matches(id, path, op)
			}
		}
		for _, op := range ops {
			if got["hidden"][op] != got["missing"][op] || got["hidden"][op] != got["string"][op] {
				t.Errorf("%s %s: hidden %v, missing %v, string %v", path, op, got["hidden"][op], got["missing"][op], got["string"][op])
			}
		}
		for _, pair := range [][2]string{{`"vsecretid01"`, `"wrongguess1"`}, {`{"$ne":"vsecretid01"}`, `{"$ne":"wrongguess1"}`},
			{`{"$in":["vsecretid01"]}`, `{"$in":["wrongguess1"]}`}, {`{"$nin":["vsecretid01"]}`, `{"$nin":["wrongguess1"]}`},
			{`{"$exists":true,"$ne":"vsecretid01"}`, `{"$exists":true,"$ne":"wrongguess1"}`}} {
			if got["hidden"][pair[0]] != got["hidden"][pair[1]] {
				t.Errorf("%s: a right guess (%s: %v) and a wrong one (%s: %v) answer differently", path, pair[0], got["hidden"][pair[0]], pair[1], got["hidden"][pair[1]])
			}
		}
		for id := range rows {
			for _, pair := range [][2]string{{`null`, `{"$ne":null}`}, {`{"$in":[null]}`, `{"$nin":[null]}`}, {`{"$exists":true}`, `{"$exists":false}`}} {
				if got[id][pair[0]] == got[id][pair[1]] {
					t.Errorf("%s on %s: %s and %s both answer %v", path, id, pair[0], pair[1], got[id][pair[0]])
				}
			}
		}
		// The redacted value answers as written down: at the path, present
		// and non-null; below it, absent.
		want := map[string]bool{`null`: false, `{"$ne":null}`: true, `{"$exists":true}`: true, `{"$ne":"wrongguess1"}`: true, `"wrongguess1"`: false}
		if path != "meta.ref" {
			want = map[string]bool{`null`: true, `{"$ne":null}`: false, `{"$exists":true}`: false, `{"$ne":"wrongguess1"}`: true, `"wrongguess1"`: false}
		}
		for op, w := range want {
			if got["hidden"][op] != w {
				t.Errorf("%s %s on a hidden reference: %v, want %v", path, op, got["hidden"][op], w)
			}
		}
		t.Logf("%s: %s", path, fmt.Sprint(got["hidden"]))
		// Sorting, grouping and distinct keep a redacted row as one value
		// (TestTrustRedactedValueInOrderGroupDistinct): the same answer
		// for a hidden, a missing and a string reference.
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"group_by", map[string]any{"class_name": "Doc", "field": path}},
			{"distinct", map[string]any{"class_name": "Doc", "field": path}},
			{"query_class", map[string]any{"class_name": "Doc", "order": path, "keys": []any{"title"}}},
		} {
			var answers []string
			for _, id := range []string{"hidden", "missing", "string"} {
				tc.args["where"] = map[string]any{"objectId": id}
				answers = append(answers, strings.ReplaceAll(text(call(t, c, tc.tool, tc.args)), `"`+id+`"`, `"<id>"`))
			}
			if answers[0] != answers[1] || answers[0] != answers[2] {
				t.Errorf("%s %s: hidden, missing and string references answer differently:\n%s", tc.tool, path, strings.Join(answers, "\n"))
			}
		}
	}
}
