package e2e

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestSearchMembershipSameOnEveryEngine: a searched string that is a
// reference to a class missing from _SCHEMA ("Ghost$…") is no member of
// any search, exactly as one to a hidden class ("Vault$…"): the engines
// share one filter (SECURITY.md "Search"). The in-process engine runs on
// every test engine; with a text index (the second engine, MongoDB) the
// same call runs on $text and must give the same rows. Free text naming a
// class ("a Ghost story") and a reference to a visible class stay members.
func TestSearchMembershipSameOnEveryEngine(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Memo",
		bson.D{{Key: "_id", Value: "ghostref01"}, {Key: "title", Value: "Ghost$abcdefghij"}},
		bson.D{{Key: "_id", Value: "vaultref01"}, {Key: "title", Value: "Vault$abcdefghij"}},
		bson.D{{Key: "_id", Value: "memoref001"}, {Key: "title", Value: "Memo$abcdefghij"}},
		bson.D{{Key: "_id", Value: "ghosttext1"}, {Key: "title", Value: "a Ghost story abcdefghij"}},
	)
	pol := policyEnv(t, `classes:
  Vault: {hidden: true}
  Memo:
    search:
      text_fields: [title]
      autocomplete_fields: [title]
settings: {rate_limit: {requests: 1000, window: 60s}}
`)
	cases := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"atlas_text_search", map[string]any{"class_name": "Memo", "query": "ghost", "fields": []any{"title"}, "limit": 50}, []string{"ghosttext1"}},
		{"atlas_text_search", map[string]any{"class_name": "Memo", "query": "abcdefghij", "fields": []any{"title"}, "limit": 50}, []string{"ghosttext1", "memoref001"}},
		{"atlas_text_search", map[string]any{"class_name": "Memo", "query": "vault", "fields": []any{"title"}, "limit": 50}, nil},
		{"atlas_autocomplete", map[string]any{"class_name": "Memo", "field": "title", "prefix": "Ghost"}, nil},
	}
	check := func(t *testing.T, wantTextEngine bool) {
		c := writeClient(t, uri, pol)
		for _, tc := range cases {
			out := callOK(t, c, tc.tool, tc.args)
			if wantTextEngine && tc.tool == "atlas_text_search" && out["engine"] != "text_index" {
				t.Fatalf("engine %v, want text_index", out["engine"])
			}
			var got []string
			if tc.tool == "atlas_autocomplete" {
				for _, s := range out["suggestions"].([]any) {
					got = append(got, s.(map[string]any)["object_id"].(string))
				}
			} else {
				got = rowIDs(t, out)
			}
			if !slices.Equal(sortedCopy(got), sortedCopy(tc.want)) {
				t.Errorf("%s %v (engine %v): rows %v, want %v", tc.tool, tc.args, out["engine"], got, tc.want)
			}
		}
	}
	t.Run("in process", func(t *testing.T) { check(t, false) })
	t.Run("text index", func(t *testing.T) {
		if _, err := db.Collection("Memo").Indexes().CreateOne(context.Background(), mongoIndex(bson.D{{Key: "title", Value: "text"}}, nil)); err != nil {
			t.Skipf("the database has no text indexes: %v", err)
		}
		check(t, true)
	})
}
