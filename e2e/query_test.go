package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// demoClient is a server with the demo policy (canonical filter on Song,
// VaultSecret hidden).
func demoClient(t testing.TB, extraEnv ...string) *client.Client {
	t.Helper()
	return stdioClient(t, append([]string{policyFile(t, "demo")}, extraEnv...)...)
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// rowObjects are the rows of a result as objects: the columnar layout
// (columns + rows, the default) turned back into objects — a null cell is
// left out, as a missing field — or the objects under key (shape
// "objects"/"rest").
func rowObjects(out map[string]any, key string) []any {
	cols, ok := out["columns"].([]any)
	if !ok {
		return list(out[key])
	}
	var rows []any
	for _, r := range list(out["rows"]) {
		m := map[string]any{}
		for i, v := range list(r) {
			if v != nil && i < len(cols) {
				m[cols[i].(string)] = v
			}
		}
		rows = append(rows, m)
	}
	return rows
}

// objectsByID is get_objects' result keyed by objectId, in either layout.
func objectsByID(out map[string]any) map[string]any {
	if _, ok := out["columns"]; !ok {
		return objectsByID(out)
	}
	m := map[string]any{}
	for _, r := range rowObjects(out, "") {
		m[obj(r)["objectId"].(string)] = r
	}
	return m
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func TestQueryClassDefaultsAndDisplayCap(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "query_class", map[string]any{"class_name": "Song"})
	if out["class_name"] != "Song" || num(out["result_count"]) != 100 {
		t.Fatalf("class_name/result_count: %v %v", out["class_name"], out["result_count"])
	}
	if n := len(rowObjects(out, "results")); n != 50 {
		t.Errorf("results shows %d rows, want the display cap of 50", n)
	}
	if out["truncated"] != true || !strings.Contains(fmt.Sprint(out["truncated_note"]), "50") {
		t.Errorf("truncated/truncated_note: %v %v", out["truncated"], out["truncated_note"])
	}
	// limit and skip are the caller's own: only has_more comes back.
	if out["has_more"] != true || out["pagination"] != nil {
		t.Errorf("has_more = %v, pagination = %v", out["has_more"], out["pagination"])
	}
	nc := obj(out["next_call"])
	args := obj(nc["arguments"])
	if nc["tool"] != "query_class" || args["class_name"] != "Song" || num(args["skip"]) != 50 {
		t.Errorf("next_call = %v (continues after the rows shown)", nc)
	}
	// The canonical filter applies by default: no archived rows.
	for _, r := range rowObjects(out, "results") {
		if obj(r)["archived"] == true {
			t.Fatalf("archived row returned by default: %v", obj(r)["objectId"])
		}
	}
	// Rows are REST-shaped: no storage or ACL fields.
	b, _ := json.Marshal(rowObjects(out, "results"))
	for _, bad := range []string{`"_p_`, `"_rperm"`, `"_wperm"`, `"_acl"`, `"ACL"`, `"_id"`, `"_created_at"`} {
		if strings.Contains(string(b), bad) {
			t.Errorf("results contain %s", bad)
		}
	}
	// A small limit fits: no display truncation, next_call at skip+limit.
	out = callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 10, "skip": 5})
	if len(rowObjects(out, "results")) != 10 || out["truncated"] != nil || out["truncated_note"] != nil {
		t.Errorf("limit 10: %d rows, truncated %v", len(rowObjects(out, "results")), out["truncated"])
	}
	if num(obj(obj(out["next_call"])["arguments"])["skip"]) != 15 {
		t.Errorf("next_call skip = %v, want 15", obj(out["next_call"])["arguments"])
	}
	// The last page has no next_call.
	out = callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 10, "skip": demo.SongActiveCount - 5})
	if len(rowObjects(out, "results")) != 5 || out["next_call"] != nil || out["has_more"] != false {
		t.Errorf("last page: %d rows, next_call %v, has_more %v", len(rowObjects(out, "results")), out["next_call"], out["has_more"])
	}
}

func TestQueryClassArgumentCaps(t *testing.T) {
	c := demoClient(t)
	callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 1000, "format": "csv", "keys": []any{"title"}})
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 1001}, "invalid_argument")
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 0}, "invalid_argument")
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 2.5}, "invalid_argument")
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "skip": -1}, "invalid_argument")
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "format": "xml"}, "invalid_argument")
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "order": "-bad-name"}, "invalid_argument")

	keys := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf("f%d", i)
		}
		return out
	}
	callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 1, "keys": keys(64)})
	msg := callErr(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 1, "keys": keys(65)}, "invalid_argument")
	if !strings.Contains(msg, "64") {
		t.Errorf("65 keys: %s", msg)
	}
	inc := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = "artist"
		}
		return out
	}
	callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 1, "include": inc(20)})
	msg = callErr(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 1, "include": inc(21)}, "invalid_argument")
	if !strings.Contains(msg, "20") {
		t.Errorf("21 includes: %s", msg)
	}
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "include": []any{"title"}}, "invalid_argument")
	callErr(t, c, "query_class", map[string]any{"class_name": "Nope"}, "invalid_argument")
}

// TestQueryClassPaginationWalk follows next_call through the whole class:
// the pages add up to count_objects, with no row twice.
func TestQueryClassPaginationWalk(t *testing.T) {
	c := demoClient(t)
	count := num(callOK(t, c, "count_objects", map[string]any{"class_name": "Song"})["count"])
	if count != demo.SongActiveCount {
		t.Fatalf("count_objects = %d, want %d", count, demo.SongActiveCount)
	}
	for _, start := range []map[string]any{
		{"class_name": "Song", "limit": 40, "keys": []any{"title"}, "order": "-plays"},
		{"class_name": "Song", "keys": []any{"title"}}, // default limit 100: 50-row display cap
	} {
		seen := map[string]bool{}
		args, pages := start, 0
		for {
			out := callOK(t, c, "query_class", args)
			pages++
			for _, r := range rowObjects(out, "results") {
				id := obj(r)["objectId"].(string)
				if seen[id] {
					t.Fatalf("row %s seen twice", id)
				}
				seen[id] = true
			}
			nc := obj(out["next_call"])
			if nc == nil {
				break
			}
			args = obj(nc["arguments"])
			if pages > 100 {
				t.Fatal("pagination does not end")
			}
		}
		if len(seen) != count {
			t.Errorf("walk from %v: %d rows over %d pages, want %d", start, len(seen), pages, count)
		}
	}
}

func TestQueryClassWhereOrderKeys(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"},
		"order": "-plays", "keys": []any{"title", "plays"}, "limit": 200, "format": "json"})
	if num(out["result_count"]) != demo.ActiveSongsPerGenre["rock"] {
		t.Errorf("result_count = %v, want %d", out["result_count"], demo.ActiveSongsPerGenre["rock"])
	}
	prev := -1.0
	for _, r := range rowObjects(out, "results") {
		row := obj(r)
		var keys []string
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// Compact rows: createdAt/updatedAt only when keys names them.
		if strings.Join(keys, ",") != "objectId,plays,title" {
			t.Fatalf("keys of a row = %v", keys)
		}
		p := row["plays"].(float64)
		if prev >= 0 && p > prev {
			t.Fatalf("not sorted by -plays: %v after %v", p, prev)
		}
		prev = p
	}
	// apply_canonical_filter:false includes the archived rows.
	all := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"}, "apply_canonical_filter": false, "limit": 1})
	if num(all["result_count"]) != 1 || all["has_more"] != true {
		t.Errorf("apply_canonical_filter false: %v", all)
	}
	n := num(callOK(t, c, "count_objects", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"}, "apply_canonical_filter": false})["count"])
	if n != demo.SongsPerGenre["rock"] {
		t.Errorf("count without the canonical filter = %d, want %d", n, demo.SongsPerGenre["rock"])
	}
	// Internal fields are security violations (-32602), never echoed.
	for _, args := range []map[string]any{
		{"class_name": "Song", "keys": []any{"_rperm"}},
		{"class_name": "Song", "order": "_hashed_password"},
		{"class_name": "Song", "where": map[string]any{"_wperm": "x"}},
	} {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "query_class", Arguments: args}})
		if err == nil && (res == nil || !res.IsError) {
			t.Errorf("%v: internal field accepted", args)
		}
		if err != nil && strings.Contains(err.Error(), "perm") {
			t.Errorf("violation message echoes the field: %v", err)
		}
	}
}

func TestQueryClassInclude(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "where": map[string]any{"objectId": demo.SongPublicID},
		"include": []any{"artist", "album.artist"}, "keys": []any{"title", "artist", "album.title", "album.artist.name"}})
	rows := rowObjects(out, "results")
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	song := obj(rows[0])
	// Compact: included objects are plain objects; pointer_classes names
	// their classes, nested ones under their include path.
	pc := fmt.Sprint(obj(out["pointer_classes"]))
	if pc != "map[album:Album album.artist:Artist artist:Artist]" {
		t.Errorf("pointer_classes = %s", pc)
	}
	artist := obj(song["artist"])
	if artist["__type"] != nil || artist["name"] == nil || artist["objectId"] == nil {
		t.Errorf("included artist = %v", artist)
	}
	album := obj(song["album"])
	if album["title"] == nil || album["tracks"] != nil || album["createdAt"] != nil {
		t.Errorf("included album (keys album.title) = %v", album)
	}
	aa := obj(album["artist"])
	if aa["name"] == nil || aa["country"] != nil {
		t.Errorf("album.artist (keys album.artist.name) = %v", aa)
	}
	// shape rest: Parse's REST JSON, included objects as {"__type":"Object"}.
	rest := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "where": map[string]any{"objectId": demo.SongPublicID},
		"include": []any{"artist", "album.artist"}, "keys": []any{"title", "artist", "album.title", "album.artist.name"}, "shape": "rest"})
	ra := obj(obj(rowObjects(rest, "results")[0])["album"])
	if ra["__type"] != "Object" || ra["className"] != "Album" || obj(ra["artist"])["__type"] != "Object" || rest["pointer_classes"] != nil {
		t.Errorf("rest include = %v", rest)
	}
	// The included object is the one get_object returns.
	id := artist["objectId"].(string)
	full := obj(callOK(t, c, "get_object", map[string]any{"class_name": "Artist", "object_id": id})["object"])
	if full["name"] != artist["name"] || full["country"] != artist["country"] {
		t.Errorf("included %v differs from get_object %v", artist, full)
	}
	// Includes over many rows: every pointer is expanded.
	out = callOK(t, c, "query_class", map[string]any{"class_name": "Song", "include": []any{"artist"}, "keys": []any{"artist"}, "limit": 50})
	for _, r := range rowObjects(out, "results") {
		if a := obj(obj(r)["artist"]); a != nil && a["name"] == nil {
			t.Fatalf("artist not expanded: %v", a)
		}
	}
	// A pointer into the hidden class cannot be included.
	res := call(t, c, "query_class", map[string]any{"class_name": "AuditLog", "include": []any{"secret"}})
	if !res.IsError || res.Meta.AdditionalFields["parse.details"] != nil || !strings.Contains(text(res), "does not exist or is not accessible") {
		t.Errorf("include of a hidden class: %v %s", res.Meta, text(res))
	}
	if strings.Contains(text(res), "sk_test") {
		t.Error("secret leaked")
	}
}

func TestQueryClassJoinFields(t *testing.T) {
	c := stdioClient(t, policyFile(t, "artist_join_fields_name"))
	out := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 3, "keys": []any{"title", "artist"}, "include": []any{"artist"}})
	tif := obj(out["truncated_include_fields"])
	if fmt.Sprint(tif["artist"]) != "[name]" {
		t.Fatalf("truncated_include_fields = %v", out["truncated_include_fields"])
	}
	for _, r := range rowObjects(out, "results") {
		a := obj(obj(r)["artist"])
		if a["name"] == nil || a["country"] != nil || a["genres"] != nil {
			t.Errorf("artist not projected to join_fields: %v", a)
		}
	}
}

func TestQueryClassTextFormats(t *testing.T) {
	c := demoClient(t)
	base := map[string]any{"class_name": "Song", "keys": []any{"title", "genre", "plays"}, "order": "title", "limit": 5}
	rows := rowObjects(callOK(t, c, "query_class", base), "results")
	for _, format := range []string{"csv", "markdown", "table"} {
		args := map[string]any{"format": format}
		maps.Copy(args, base)
		out := callOK(t, c, "query_class", args)
		if out["format"] != format || num(out["row_count"]) != 5 || fmt.Sprint(out["headers"]) != "[title genre plays]" {
			t.Errorf("%s envelope: %v", format, out)
		}
		for _, k := range []string{"results", "columns", "rows", "result_count", "pagination"} {
			if _, ok := out[k]; ok {
				t.Errorf("%s envelope has %s", format, k)
			}
		}
		output := out["output"].(string)
		lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
		wantLines := 6
		if format != "csv" {
			wantLines = 7
		}
		if len(lines) != wantLines {
			t.Errorf("%s: %d lines:\n%s", format, len(lines), output)
		}
		first := obj(rows[0])
		if !strings.Contains(output, first["title"].(string)) || !strings.Contains(output, fmt.Sprint(first["plays"])) {
			t.Errorf("%s output lacks the first row %v:\n%s", format, first, output)
		}
		switch format {
		case "csv":
			if lines[0] != "title,genre,plays" {
				t.Errorf("csv header %q", lines[0])
			}
		case "markdown":
			if lines[0] != "| title | genre | plays |" || lines[1] != "| --- | --- | --- |" {
				t.Errorf("markdown header %q %q", lines[0], lines[1])
			}
		case "table":
			if !strings.HasPrefix(lines[1], "-----") {
				t.Errorf("table rule %q", lines[1])
			}
		}
	}
}

// TestQueryClassByteCap: over max_response_bytes, the heaviest field
// (Song.lyrics) is dropped, then rows are trimmed.
func TestQueryClassByteCap(t *testing.T) {
	c := stdioClient(t, policyFile(t, "max_response_20000"))
	where := map[string]any{"lyrics": map[string]any{"$exists": true}}
	res := call(t, c, "query_class", map[string]any{"class_name": "Song", "where": where, "limit": 40})
	if res.IsError {
		t.Fatalf("error: %s", text(res))
	}
	if len(text(res)) > 20000 {
		t.Errorf("result is %d bytes, cap 20000", len(text(res)))
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(text(res)), &out)
	tr := obj(out["_truncated"])
	if tr["reason"] != "response_exceeded_max_bytes" || fmt.Sprint(tr["dropped_fields"]) != "[lyrics]" {
		t.Fatalf("_truncated = %v", tr)
	}
	for _, k := range []string{"result_count", "truncated", "next_call"} {
		if _, ok := out[k]; ok {
			t.Errorf("stale %s kept", k)
		}
	}
	for _, r := range rowObjects(out, "results") {
		if obj(r)["lyrics"] != nil {
			t.Fatal("lyrics still present")
		}
	}
	if num(tr["kept_count"]) != len(rowObjects(out, "results")) || num(tr["original_count"]) < num(tr["kept_count"]) {
		t.Errorf("kept/original = %v/%v with %d rows", tr["kept_count"], tr["original_count"], len(rowObjects(out, "results")))
	}

	// Rows too large even without the heaviest field: rows are trimmed and
	// next_skip continues after the last row kept.
	c = stdioClient(t, policyFile(t, "max_response_6000"))
	res = call(t, c, "query_class", map[string]any{"class_name": "Song", "limit": 50, "skip": 10})
	_ = json.Unmarshal([]byte(text(res)), &out)
	if len(text(res)) > 6000 {
		t.Errorf("result is %d bytes, cap 6000", len(text(res)))
	}
	tr = obj(out["_truncated"])
	kept := num(tr["kept_count"])
	if kept == 0 || kept >= 50 || num(tr["original_count"]) != 50 || num(tr["next_skip"]) != 10+kept {
		t.Errorf("_truncated = %v", tr)
	}
	if !strings.Contains(fmt.Sprint(tr["hint"]), "skip") {
		t.Errorf("hint = %v", tr["hint"])
	}
	// Other tools refuse, naming the heaviest fields and how to retry:
	// get_sample_objects takes no keys, so it points at query_class.
	res = call(t, c, "get_sample_objects", map[string]any{"class_name": "Song", "limit": 20})
	if !res.IsError || !strings.Contains(text(res), "Retry with a smaller limit, or read these objects with query_class and keys: [") {
		t.Errorf("get_sample_objects over the cap: %s", text(res))
	}
	if strings.Contains(text(res), "\"title\":\"") {
		t.Error("the refusal shows values")
	}
}

func TestGetObject(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": demo.SongPublicID})
	o := obj(out["object"])
	// The envelope does not repeat the object's id and dates.
	if out["object_id"] != nil || out["created_at"] != nil || o["objectId"] != demo.SongPublicID || o["createdAt"] == nil || o["title"] == nil {
		t.Errorf("envelope: %v", out)
	}
	// keys + include.
	out = callOK(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": demo.SongPublicID, "keys": []any{"title", "artist"}, "include": []any{"artist"}})
	o = obj(out["object"])
	if o["genre"] != nil || obj(o["artist"])["name"] == nil {
		t.Errorf("keys/include: %v", o)
	}
	// The canonical filter does not apply to lookups by id.
	callOK(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": demo.SongArchivedID})
	// Missing.
	msg := callErr(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": "doesNotExist"}, "invalid_argument")
	if msg != "Object not found: Song#doesNotExist" {
		t.Errorf("not found message %q", msg)
	}
	callErr(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": "bad id!"}, "invalid_argument")
	callErr(t, c, "get_object", map[string]any{"class_name": "Song"}, "invalid_argument")
	// Hidden class values never leak through pointers (redaction).
	out = callOK(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": demo.SongLeakIDs[0]})
	if leak := obj(obj(out["object"])["leak"]); leak["__redacted"] != true {
		t.Errorf("leak = %v", obj(out["object"])["leak"])
	}

	// A row filtered out by a per-agent filter is "not found", exactly like
	// a missing one.
	c = stdioClient(t, policyFile(t, "agent_filter_song_jazz"))
	var jazzID, rockID string
	for _, g := range []string{"jazz", "rock"} {
		r := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "where": map[string]any{"genre": g}, "limit": 1, "keys": []any{"title"}})
		if g == "jazz" && len(rowObjects(r, "results")) == 1 {
			jazzID = obj(rowObjects(r, "results")[0])["objectId"].(string)
		}
		if g == "rock" && len(rowObjects(r, "results")) != 0 {
			t.Fatalf("agent filter not applied: %v", r)
		}
	}
	plain := demoClient(t)
	r := callOK(t, plain, "query_class", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"}, "limit": 1, "keys": []any{"title"}})
	rockID = obj(rowObjects(r, "results")[0])["objectId"].(string)
	callOK(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": jazzID})
	res := call(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": rockID})
	missing := call(t, c, "get_object", map[string]any{"class_name": "Song", "object_id": "zzzzzzzzzz"})
	if !res.IsError || text(res) != "Object not found: Song#"+rockID || !missing.IsError {
		t.Errorf("filtered out: %s", text(res))
	}
	if fmt.Sprint(res.Meta.AdditionalFields) != fmt.Sprint(missing.Meta.AdditionalFields) {
		t.Errorf("filtered-out and missing differ: %v vs %v", res.Meta.AdditionalFields, missing.Meta.AdditionalFields)
	}
}

func TestGetObjects(t *testing.T) {
	c := demoClient(t)
	ids := []any{demo.SongPublicID, "missingOne", demo.SongStarACLID, demo.SongPublicID, demo.SongArchivedID}
	out := callOK(t, c, "get_objects", map[string]any{"class_name": "Song", "ids": ids, "keys": []any{"title"}})
	objs := objectsByID(out)
	if out["requested"] != nil || num(out["found"]) != 3 || len(objs) != 3 || fmt.Sprint(out["missing"]) != "[missingOne]" {
		t.Errorf("envelope: %v", out)
	}
	for id, o := range objs {
		if obj(o)["objectId"] != id || obj(o)["genre"] != nil {
			t.Errorf("objects[%s] = %v", id, o)
		}
	}
	// [] → empty result, no query.
	out = callOK(t, c, "get_objects", map[string]any{"class_name": "Song", "ids": []any{}})
	if num(out["found"]) != 0 || len(objectsByID(out)) != 0 || out["missing"] != nil {
		t.Errorf("empty ids: %v", out)
	}
	// 50 ids ok, 51 refused.
	var fifty []any
	for i := range 51 {
		fifty = append(fifty, fmt.Sprintf("id%03d", i))
	}
	out = callOK(t, c, "get_objects", map[string]any{"class_name": "Song", "ids": fifty[:50]})
	if num(out["found"]) != 0 || len(list(out["missing"])) != 50 {
		t.Errorf("50 ids: %v", out["missing"])
	}
	callErr(t, c, "get_objects", map[string]any{"class_name": "Song", "ids": fifty}, "invalid_argument")
	callErr(t, c, "get_objects", map[string]any{"class_name": "Song"}, "invalid_argument")
	callErr(t, c, "get_objects", map[string]any{"class_name": "Song", "ids": []any{"ok", 3}}, "invalid_argument")
	// A hidden class answers like a missing one, even for an empty id list.
	callErr(t, c, "get_objects", map[string]any{"class_name": "VaultSecret", "ids": []any{}}, "invalid_argument")
}

func TestGetSampleObjects(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "get_sample_objects", map[string]any{"class_name": "Song"})
	samples := rowObjects(out, "samples")
	if num(out["sample_count"]) != 5 || len(samples) != 5 || out["note"] == nil {
		t.Fatalf("envelope: %v", out)
	}
	newest := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "order": "-createdAt", "limit": 5, "keys": []any{"title"}})
	for i, r := range rowObjects(newest, "results") {
		if obj(samples[i])["objectId"] != obj(r)["objectId"] {
			t.Errorf("sample %d is %v, want the %d-th newest %v", i, obj(samples[i])["objectId"], i, obj(r)["objectId"])
		}
		if obj(samples[i])["lyrics"] != nil || obj(samples[i])["archived"] == true {
			t.Errorf("sample %d has lyrics or is archived", i)
		}
	}
	if !strings.Contains(out["note"].(string), "lyrics") {
		t.Errorf("note = %v", out["note"])
	}
	if n := num(callOK(t, c, "get_sample_objects", map[string]any{"class_name": "Song", "limit": 20})["sample_count"]); n != 20 {
		t.Errorf("limit 20: %d", n)
	}
	callErr(t, c, "get_sample_objects", map[string]any{"class_name": "Song", "limit": 21}, "invalid_argument")
	if n := num(callOK(t, c, "get_sample_objects", map[string]any{"class_name": "Artist", "limit": 20})["sample_count"]); n != 20 {
		t.Errorf("Artist: %d", n)
	}
}

func TestExplainQuery(t *testing.T) {
	c := demoClient(t)
	out := callOK(t, c, "explain_query", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"}})
	ex := obj(out["explanation"])
	if out["class_name"] != "Song" || ex["summary"] == nil || ex["plan"] != nil || fmt.Sprint(ex["fields"]) != "[archived genre]" {
		t.Errorf("without expose_explain: %v", out)
	}
	cons, _ := json.Marshal(out["constraints"])
	if !strings.Contains(string(cons), `"archived"`) || !strings.Contains(string(cons), `"rock"`) {
		t.Errorf("constraints = %s", cons)
	}

	c = stdioClient(t, policyFile(t, "expose_explain"))
	out = callOK(t, c, "explain_query", map[string]any{"class_name": "Song", "where": map[string]any{"genre": "rock"}})
	plan := obj(obj(out["explanation"])["plan"])
	if plan == nil {
		t.Fatalf("no plan with expose_explain: %v", out)
	}
	if realMongo {
		if plan["available"] != true || len(list(plan["stages"])) == 0 {
			t.Errorf("plan on MongoDB = %v", plan)
		}
	} else if plan["available"] != false || !strings.Contains(fmt.Sprint(plan["note"]), "winningPlan") {
		t.Errorf("plan on FerretDB = %v (must say there is no winningPlan)", plan)
	}
}
