package e2e

import (
	"encoding/csv"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

func parseCSV(t *testing.T, s string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("output is not CSV: %v\n%s", err, s)
	}
	return recs
}

func TestExportCSV(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "export_data", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"},
		"columns": "title,plays,artist.name", "order": "title"})
	if out["format"] != "csv" || fmt.Sprint(out["headers"]) != "[title plays artist.name]" || out["truncated"] != nil {
		t.Errorf("envelope: %v", out)
	}
	recs := parseCSV(t, out["output"].(string))
	want := demo.ActiveSongsPerGenre["rock"]
	if num(out["row_count"]) != want || len(recs) != want+1 {
		t.Fatalf("row_count %v, %d records, want %d rows", out["row_count"], len(recs), want)
	}
	if strings.Join(recs[0], ",") != "title,plays,artist.name" {
		t.Errorf("header %v", recs[0])
	}
	named := 0
	for _, r := range recs[1:] {
		if r[2] != "" {
			named++
		}
		if r[0] == "" || r[1] == "" {
			t.Fatalf("empty cells: %v", r)
		}
	}
	if named == 0 {
		t.Error("artist.name (auto-included pointer) is empty everywhere")
	}
	// Sorted by title, as asked.
	for i := 2; i < len(recs); i++ {
		if recs[i-1][0] > recs[i][0] {
			t.Fatalf("not ordered by title: %q > %q", recs[i-1][0], recs[i][0])
		}
	}

	// RFC 4180 quoting round-trips multi-line text with commas and quotes.
	song := obj(callOK(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": demo.SongWithLyricsID})["object"])
	out = callOK(t, c, "export_data", map[string]any{"class_name": "Song", "where": map[string]any{"objectId": demo.SongWithLyricsID},
		"keys": []any{"lyrics", "title"}})
	recs = parseCSV(t, out["output"].(string))
	if len(recs) != 2 || recs[1][0] != song["lyrics"] || recs[1][1] != song["title"] {
		t.Errorf("lyrics did not round-trip: %q", recs)
	}
}

func TestExportFormatsAndCaps(t *testing.T) {
	c := demoClient(t)
	base := map[string]any{"class_name": "Song", "keys": []any{"title", "genre"}, "limit": 4}
	for format, lines := range map[string]int{"markdown": 6, "table": 6, "csv": 5} {
		args := map[string]any{"format": format}
		maps.Copy(args, base)
		out := callOK(t, c, "export_data", args)
		got := strings.Split(strings.TrimSuffix(out["output"].(string), "\n"), "\n")
		if len(got) != lines || num(out["row_count"]) != 4 {
			t.Errorf("%s: %d lines, row_count %v:\n%s", format, len(got), out["row_count"], out["output"])
		}
		if format == "markdown" && got[0] != "| title | genre |" {
			t.Errorf("markdown header %q", got[0])
		}
	}
	callErr(t, c, "export_data", map[string]any{"class_name": "Song", "format": "json"}, "invalid_argument")

	// Default row_cap 1000: every active song fits.
	out := callOK(t, c, "export_data", map[string]any{"class_name": "Song", "keys": []any{"title"}})
	if num(out["row_count"]) != demo.SongActiveCount || out["truncated"] != nil {
		t.Errorf("default row_cap: row_count %v truncated %v", out["row_count"], out["truncated"])
	}
	// row_cap below the matching rows: truncated, available_rows, hint.
	out = callOK(t, c, "export_data", map[string]any{"class_name": "Song", "keys": []any{"title"}, "row_cap": 100})
	if num(out["row_count"]) != 100 || out["truncated"] != true || num(out["available_rows"]) != demo.SongActiveCount || num(out["row_cap"]) != 100 || !strings.Contains(fmt.Sprint(out["hint"]), "skip 100") {
		t.Errorf("row_cap 100: %v", out)
	}
	// A limit under row_cap is what the caller asked for: not truncated.
	out = callOK(t, c, "export_data", map[string]any{"class_name": "Song", "keys": []any{"title"}, "limit": 50, "skip": 500})
	if num(out["row_count"]) != demo.SongActiveCount-500 || out["truncated"] != nil {
		t.Errorf("limit 50 skip 500: %v rows, truncated %v", out["row_count"], out["truncated"])
	}
	// The schema's one type: a list of paths, "path:Header" naming a header.
	out = callOK(t, c, "export_data", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"},
		"columns": []any{"title:Song title", "artist.name:Artist", "plays"}, "order": "title"})
	if recs := parseCSV(t, out["output"].(string)); strings.Join(recs[0], ",") != "Song title,Artist,plays" || len(recs) != demo.ActiveSongsPerGenre["rock"]+1 || recs[1][1] == "" && recs[2][1] == "" {
		t.Errorf("list columns with headers: %v", recs[:min(3, len(recs))])
	}
	callErr(t, c, "export_data", map[string]any{"class_name": "Song", "columns": []any{"title:"}}, "invalid_argument")
	callOK(t, c, "export_data", map[string]any{"class_name": "Song", "keys": []any{"title"}, "row_cap": 10000})
	callErr(t, c, "export_data", map[string]any{"class_name": "Song", "row_cap": 10001}, "invalid_argument")
	callErr(t, c, "export_data", map[string]any{"class_name": "Song", "row_cap": 0}, "invalid_argument")
	callErr(t, c, "export_data", map[string]any{"class_name": "Song", "limit": 10001}, "invalid_argument")
	callErr(t, c, "export_data", map[string]any{"class_name": "Song", "columns": 3}, "invalid_argument")
	callErr(t, c, "export_data", map[string]any{"class_name": "VaultSecret"}, "invalid_argument") // hidden equals missing
	// An included hidden pointer path through columns is refused too (as
	// a pointer into a missing class would be).
	callErr(t, c, "export_data", map[string]any{"class_name": "AuditLog", "columns": "action,secret.apiKey"}, "invalid_query")
}

// TestExportColumnsOrderAndProgress uses raw JSON so that the {path:
// header} object keeps the caller's key order, and asks for progress (see
// TestProgressOwnUnits for the rules).
func TestExportColumnsOrderAndProgress(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"export_data","arguments":{"class_name":"Song",` +
		`"columns":{"title":"Title","genre":"Genre","artist.name":"Artist"},"row_cap":600},"_meta":{"progressToken":"p1"}}}`)
	var progress []map[string]any
	var resp map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for resp == nil && time.Now().Before(deadline) {
		m := r.next()
		if m["method"] == "notifications/progress" {
			progress = append(progress, m)
			continue
		}
		if m["id"] == "x1" {
			resp = m
		}
	}
	if resp == nil {
		t.Fatal("no response")
	}
	res := obj(resp["result"])
	sc := obj(res["structuredContent"])
	if fmt.Sprint(sc["headers"]) != "[Title Genre Artist]" {
		t.Errorf("headers = %v (the caller's order)", sc["headers"])
	}
	if !strings.HasPrefix(fmt.Sprint(sc["output"]), "Title,Genre,Artist\n") {
		t.Errorf("output starts %.60q", sc["output"])
	}
	// A call that finishes within the first progress interval (2 s) sends
	// no progress at all; a slower one only notifications whose message
	// states their number, and none after the response (collected above).
	for _, p := range progress {
		pp := obj(p["params"])
		if msg := fmt.Sprint(pp["message"]); !strings.Contains(msg, strings.TrimSuffix(fmt.Sprintf("%.1f", pp["progress"]), ".0")) {
			t.Errorf("progress %v: the message does not state the number", pp)
		}
	}
}

func TestExportPipelineMode(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "export_data", map[string]any{"class_name": "Song", "pipeline": []any{
		map[string]any{"$match": map[string]any{"genre": "jazz"}},
		map[string]any{"$project": map[string]any{"title": 1, "genre": 1}},
	}})
	recs := parseCSV(t, out["output"].(string))
	if len(recs)-1 != demo.ActiveSongsPerGenre["jazz"] || num(out["row_count"]) != len(recs)-1 {
		t.Errorf("pipeline rows: %d records, row_count %v, want %d", len(recs)-1, out["row_count"], demo.ActiveSongsPerGenre["jazz"])
	}
	if strings.Join(recs[0], ",") != "objectId,genre,title" {
		t.Errorf("pipeline headers %v", recs[0])
	}
	out = callOK(t, c, "export_data", map[string]any{"class_name": "Song", "row_cap": 10, "format": "markdown", "columns": "title",
		"pipeline": []any{map[string]any{"$match": map[string]any{"genre": "jazz"}}}})
	if num(out["row_count"]) != 10 || out["truncated"] != true || num(out["available_rows"]) != demo.ActiveSongsPerGenre["jazz"] {
		t.Errorf("pipeline row_cap: %v", out)
	}
	// Blocked stages are security violations (-32602).
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "export_data",
		Arguments: map[string]any{"class_name": "Song", "pipeline": []any{map[string]any{"$out": "x"}}}}})
	if err == nil && !res.IsError {
		t.Error("$out accepted")
	}
}

func TestExportByteCap(t *testing.T) {
	c := stdioClient(t, policyFile(t, "max_response_30000"))
	msg := callErr(t, c, "export_data", map[string]any{"class_name": "Song"}, "invalid_argument")
	if !strings.Contains(msg, "Heaviest fields: lyrics") || !strings.Contains(msg, "Retry with columns: [") {
		t.Errorf("refusal: %s", msg)
	}
	out := callOK(t, c, "export_data", map[string]any{"class_name": "Song", "keys": []any{"title"}, "limit": 100})
	if num(out["row_count"]) != 100 {
		t.Errorf("small export under the cap: %v", out["row_count"])
	}
}
