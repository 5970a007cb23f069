package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestCompactValuesRoundTrip: every compact value type, taken from a row as
// shown, is accepted back by where (equality and $in) and finds that row,
// through the binary (docs/reading.md "Row shapes").
func TestCompactValuesRoundTrip(t *testing.T) {
	c := demoClient(t)
	cases := []struct {
		class, field, path string // path: where key for a nested value
		legend             string // "pointer_classes" or "date_fields" entry expected
	}{
		{class: "Song", field: "artist", legend: "pointer_classes"},
		{class: "Song", field: "releasedAt", legend: "date_fields"},
		{class: "Song", field: "createdAt", legend: "date_fields"},
		{class: "Song", field: "updatedAt", legend: "date_fields"},
		{class: "Song", field: "meta", path: "meta.importedAt", legend: "date_fields"},
		{class: "Playlist", field: "cover"},
		{class: "Playlist", field: "location"},
		{class: "Song", field: "objectId"},
	}
	for _, tc := range cases {
		key := tc.field
		if tc.path != "" {
			key = tc.path
		}
		t.Run(key, func(t *testing.T) {
			out := callOK(t, c, "query_class", map[string]any{"class_name": tc.class, "keys": []any{tc.field},
				"where": map[string]any{key: map[string]any{"$exists": true}}, "limit": 1, "apply_canonical_filter": false})
			rows := rowObjects(out, "results")
			if len(rows) != 1 {
				t.Fatalf("no %s row with %s: %v", tc.class, key, out)
			}
			row := obj(rows[0])
			id := row["objectId"]
			var shown any = row[tc.field]
			if tc.path != "" {
				shown = obj(shown)[strings.TrimPrefix(tc.path, tc.field+".")]
			}
			switch v := shown.(type) {
			case string, []any:
			default:
				t.Fatalf("%s is shown as %T %v, not a compact string or pair", key, v, v)
			}
			switch tc.legend {
			case "pointer_classes":
				if obj(out["pointer_classes"])[key] == nil {
					t.Errorf("pointer_classes lacks %s: %v", key, out["pointer_classes"])
				}
			case "date_fields":
				if !strings.Contains(fmt.Sprint(out["date_fields"]), key) {
					t.Errorf("date_fields lacks %s: %v", key, out["date_fields"])
				}
			}
			for _, where := range []map[string]any{
				{key: shown},
				{key: map[string]any{"$in": []any{shown}}},
			} {
				back := callOK(t, c, "query_class", map[string]any{"class_name": tc.class, "keys": []any{"objectId"}, "where": where, "limit": 1000, "apply_canonical_filter": false})
				found := false
				for _, r := range rowObjects(back, "results") {
					found = found || obj(r)["objectId"] == id
				}
				if !found {
					b, _ := json.Marshal(where)
					t.Errorf("where %s does not find %v (%d rows)", b, id, len(rowObjects(back, "results")))
				}
			}
			// The REST shape of the same row is Parse's.
			rest := callOK(t, c, "get_object", map[string]any{"class_name": tc.class, "object_id": id, "keys": []any{tc.field}, "shape": "rest"})
			if rest["pointer_classes"] != nil || rest["date_fields"] != nil {
				t.Errorf("rest shape carries a legend: %v", rest)
			}
			if rv, ok := obj(rest["object"])[tc.field].(map[string]any); ok && tc.path == "" && rv["__type"] == nil {
				t.Errorf("rest %s = %v", tc.field, rv)
			}
		})
	}
}

// TestCreatedInRangePromptRunsOnDemo: every call the created_in_range prompt
// leads to succeeds on the embedded database.
func TestCreatedInRangePromptRunsOnDemo(t *testing.T) {
	c := demoClient(t)
	res, err := c.GetPrompt(t.Context(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "created_in_range",
		Arguments: map[string]string{"class_name": "Song", "since": "2022-01-01", "until": "2024-01-01"}}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[0].Content.(mcp.TextContent).Text
	calls := 0
	for line := range strings.SplitSeq(text, "\n") {
		_, rest, ok := strings.Cut(line, ". ")
		if !ok {
			continue
		}
		tool, argText, ok := strings.Cut(rest, " {")
		if !ok || strings.Contains(tool, " ") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader("{" + argText))
		var args map[string]any
		if err := dec.Decode(&args); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out := callOK(t, c, tool, args)
		calls++
		if tool == "group_by_date" && len(list(out["groups"])) == 0 {
			t.Errorf("group_by_date found no groups: %v", out)
		}
	}
	if calls != 3 {
		t.Errorf("%d calls run from the prompt, want 3:\n%s", calls, text)
	}
}
