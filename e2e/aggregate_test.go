package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// End-to-end tests of aggregate, group_by, group_by_date and distinct over
// stdio against the demo fixtures. Features FerretDB cannot run ($avg,
// date expressions, $lookup) are checked for a clear invalid_query naming
// the feature there, and for real results when PARSE_MCP_TEST_MONGODB_URI
// points at a real MongoDB.

func aggClient(t testing.TB) *client.Client {
	t.Helper()
	return stdioClient(t, policyFile(t, "demo"))
}

// requireUnsupported checks FerretDB 1.24's answer for a feature it lacks,
// or (second engine, real MongoDB) returns the successful result.
func requireUnsupported(t *testing.T, c *client.Client, tool string, args map[string]any, feature string) map[string]any {
	t.Helper()
	if !ferretDB1 {
		return callOK(t, c, tool, args)
	}
	msg := callErr(t, c, tool, args, "invalid_query")
	if !strings.Contains(msg, feature) {
		t.Errorf("%s: the invalid_query message does not name %s: %s", tool, feature, msg)
	}
	t.Skipf("FerretDB 1.24 does not implement %s (answered invalid_query as it should); make test-engine2 (or PARSE_MCP_TEST_MONGODB_URI) checks the results", feature)
	return nil
}

func TestGroupByCountGenre(t *testing.T) {
	c := aggClient(t)
	out := callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre"})
	groups := list(out["groups"])
	if len(groups) != len(demo.ActiveSongsPerGenre) || aggNum(out["group_count"]) != len(groups) || out["operation"] != "count" || out["truncated"] != nil {
		t.Fatalf("group_by genre: %v", out)
	}
	prev := math.MaxInt
	for _, g := range groups {
		key, _ := obj(g)["key"].(string)
		v := aggNum(obj(g)["value"])
		if v != demo.ActiveSongsPerGenre[key] {
			t.Errorf("%s: %d songs, want %d", key, v, demo.ActiveSongsPerGenre[key])
		}
		if v > prev {
			t.Errorf("not sorted by value_desc: %v", groups)
		}
		prev = v
	}
	if out["pointer_class"] != nil {
		t.Errorf("pointer_class on a string field: %v", out["pointer_class"])
	}
	// limit and truncation, key order.
	out = callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre", "sort": "key_asc", "limit": 3})
	groups = list(out["groups"])
	keys := make([]string, len(demo.Genres))
	copy(keys, demo.Genres)
	sort.Strings(keys)
	if len(groups) != 3 || out["truncated"] != true || obj(groups[0])["key"] != keys[0] || obj(groups[2])["key"] != keys[2] {
		t.Errorf("limit 3 key_asc: %v", out)
	}
}

func TestGroupBySumAndFlatten(t *testing.T) {
	c := aggClient(t)
	out := callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre", "operation": "sum", "value_field": "plays"})
	for _, g := range list(out["groups"]) {
		key, _ := obj(g)["key"].(string)
		got, _ := obj(g)["value"].(float64)
		if want := float64(demo.ActiveSongPlaysPerGenre[key]); got != want {
			t.Errorf("sum of plays for %s = %v, want %v", key, got, want)
		}
	}
	out = callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "tags", "flatten_arrays": true})
	if len(list(out["groups"])) != len(demo.ActiveSongsPerTag) {
		t.Fatalf("tags: %v", out)
	}
	for _, g := range list(out["groups"]) {
		key, _ := obj(g)["key"].(string)
		if aggNum(obj(g)["value"]) != demo.ActiveSongsPerTag[key] {
			t.Errorf("tag %s: %v, want %d", key, obj(g)["value"], demo.ActiveSongsPerTag[key])
		}
	}
}

func TestGroupByPointerAndHiddenPointer(t *testing.T) {
	c := aggClient(t)
	out := callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "artist", "limit": 1000})
	if out["pointer_class"] != "Artist" {
		t.Fatalf("pointer_class: %v", out["pointer_class"])
	}
	ids := map[string]bool{}
	for _, id := range demo.ArtistIDs {
		ids[id] = true
	}
	total := 0
	for _, g := range list(out["groups"]) {
		key, _ := obj(g)["key"].(string)
		if !ids[key] {
			t.Errorf("key %q is not a bare Artist objectId", key)
		}
		total += aggNum(obj(g)["value"])
	}
	if total != demo.SongActiveCount {
		t.Errorf("songs over all artists: %d, want %d", total, demo.SongActiveCount)
	}

	// AuditLog.secret points into the hidden VaultSecret: grouping on it is
	// refused as a where on it is (grouping the stored references would
	// show how many secrets are referenced and which logs share one), and
	// no VaultSecret id appears anywhere.
	whereRefusal := text(call(t, c, "count_objects", map[string]any{"class_name": "AuditLog", "where": map[string]any{"secret": map[string]any{"$exists": true}}}))
	for _, tool := range []string{"group_by", "distinct"} {
		res := call(t, c, tool, map[string]any{"class_name": "AuditLog", "field": "secret"})
		if !res.IsError || text(res) != whereRefusal {
			t.Errorf("%s on a pointer into a hidden class: %s (the where refusal is %s)", tool, text(res), whereRefusal)
		}
		for _, id := range demo.VaultSecretIDs {
			if strings.Contains(text(res), id) {
				t.Fatalf("a VaultSecret id leaks: %s", text(res))
			}
		}
	}
}

func TestDistinct(t *testing.T) {
	c := aggClient(t)
	out := callOK(t, c, "distinct", map[string]any{"class_name": "Song", "field": "genre"})
	var got []string
	for _, v := range list(out["values"]) {
		got = append(got, v.(string))
	}
	want := append([]string{}, demo.Genres...)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") || aggNum(out["count"]) != len(want) {
		t.Errorf("distinct genre: %v, want %v", got, want)
	}
	out = callOK(t, c, "distinct", map[string]any{"class_name": "Song", "field": "tags", "sort": "desc", "limit": 2})
	if vals := list(out["values"]); len(vals) != 2 || out["truncated"] != true || vals[0].(string) < vals[1].(string) {
		t.Errorf("distinct tags desc limit 2: %v", out)
	}
	out = callOK(t, c, "distinct", map[string]any{"class_name": "Song", "field": "album", "where": map[string]any{"objectId": demo.SongPublicID}})
	if vals := list(out["values"]); len(vals) != 1 || out["pointer_class"] != "Album" || strings.Contains(vals[0].(string), "$") {
		t.Errorf("distinct pointer: %v", out)
	}
}

func TestGroupDryRun(t *testing.T) {
	c := aggClient(t)
	out := callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre", "operation": "avg", "value_field": "plays", "dry_run": true})
	p := list(out["pipeline"])
	if out["dry_run"] != true || out["class_name"] != "Song" || len(p) != 4 || out["hint"] == nil || obj(out["parameters"])["operation"] != "avg" {
		t.Fatalf("dry run: %v", out)
	}
	// The first $match ANDs the canonical filter with the grouped fields'
	// not-a-hidden-reference conjunct.
	if m := fmt.Sprint(obj(p[0])["$match"]); !strings.Contains(m, "archived:map[$ne:true]") {
		t.Errorf("the canonical filter is not in the dry-run pipeline: %v", p[0])
	}
	// A dry run is never an authorization bypass.
	_, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "group_by",
		Arguments: map[string]any{"class_name": "_User", "field": "_hashed_password", "dry_run": true}}})
	if err == nil || !strings.Contains(err.Error(), "32602") && !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("dry run on an internal field: %v", err)
	}
	callErr(t, c, "distinct", map[string]any{"class_name": "VaultSecret", "field": "apiKey", "dry_run": true}, "invalid_argument") // hidden equals missing
}

func TestAggregateMatchGroupSortLimit(t *testing.T) {
	c := aggClient(t)
	out := callOK(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{
		map[string]any{"$match": map[string]any{"genre": map[string]any{"$in": []any{"rock", "jazz", "folk"}}}},
		map[string]any{"$group": map[string]any{"_id": "$genre", "n": map[string]any{"$sum": 1}}},
		map[string]any{"$sort": map[string]any{"n": -1}},
		map[string]any{"$limit": 2},
	}})
	rows := rowObjects(out, "results")
	if aggNum(out["result_count"]) != 2 || len(rows) != 2 || out["auto_limited"] != nil {
		t.Fatalf("aggregate: %v", out)
	}
	if r := obj(rows[0]); r["objectId"] != "rock" || aggNum(r["n"]) != demo.ActiveSongsPerGenre["rock"] {
		t.Errorf("first group: %v", r)
	}
	if r := obj(rows[1]); r["objectId"] != "jazz" || aggNum(r["n"]) != demo.ActiveSongsPerGenre["jazz"] {
		t.Errorf("second group: %v", r)
	}
	stages := fmt.Sprint(out["pipeline_stages"])
	// The canonical filter, the not-a-hidden-reference guard on the fields
	// the stages read, the caller's $match, the visible-fields projection.
	if stages != "[$match $match $match $project $group $sort $limit]" {
		t.Errorf("pipeline_stages: %s", stages)
	}
	// $count ends the pipeline: no automatic limit; the canonical filter
	// can be switched off.
	out = callOK(t, c, "aggregate", map[string]any{"class_name": "Song", "apply_canonical_filter": false,
		"pipeline": []any{map[string]any{"$match": map[string]any{"genre": "rock"}}, map[string]any{"$count": "n"}}})
	if rows := rowObjects(out, "results"); len(rows) != 1 || aggNum(obj(rows[0])["n"]) != demo.SongsPerGenre["rock"] {
		t.Errorf("$count without the canonical filter: %v", out)
	}
}

func TestAggregateOrderedSort(t *testing.T) {
	// Key order of a multi-key $sort survives the JSON arguments.
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	resp := aggRPC(r, "sort", "aggregate", `{"class_name":"Song","pipeline":[{"$match":{"genre":{"$in":["rock","jazz"]}}},{"$sort":{"genre":1,"plays":-1}},{"$limit":3},{"$project":{"genre":1,"plays":1}}]}`)
	out := aggToolResult(t, resp)
	rows := rowObjects(out, "results")
	if len(rows) != 3 {
		t.Fatalf("rows: %v", out)
	}
	for i, row := range rows {
		if obj(row)["genre"] != "jazz" {
			t.Fatalf("row %d is not jazz: the $sort key order was lost: %v", i, rows)
		}
		if i > 0 && obj(row)["plays"].(float64) > obj(rows[i-1])["plays"].(float64) {
			t.Errorf("plays not descending within genre: %v", rows)
		}
	}
}

func TestAggregateAutoLimit(t *testing.T) {
	c := aggClient(t)
	out := callOK(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{map[string]any{"$match": map[string]any{}}}})
	if aggNum(out["result_count"]) != 200 || out["auto_limited"] != true || aggNum(out["auto_limit"]) != 200 || out["hint"] == nil {
		t.Fatalf("auto limit: count %v, auto_limited %v, auto_limit %v, hint %v", out["result_count"], out["auto_limited"], out["auto_limit"], out["hint"])
	}
	out = callOK(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{map[string]any{"$match": map[string]any{"genre": "classical"}}}})
	if aggNum(out["result_count"]) != demo.ActiveSongsPerGenre["classical"] || out["auto_limited"] != nil || out["hint"] != nil {
		t.Errorf("under the limit: %v %v", out["result_count"], out["auto_limited"])
	}
}

func TestAggregatePointerCompactionAndRedaction(t *testing.T) {
	c := aggClient(t)
	args := map[string]any{"class_name": "Song", "pipeline": []any{map[string]any{"$match": map[string]any{"objectId": demo.SongPublicID}}}}
	out := callOK(t, c, "aggregate", args)
	rows := rowObjects(out, "results")
	if len(rows) != 1 {
		t.Fatalf("rows: %v", out)
	}
	row := obj(rows[0])
	pc := obj(out["pointer_classes"])
	if pc["artist"] != "Artist" || pc["album"] != "Album" {
		t.Errorf("pointer_classes: %v", pc)
	}
	if a, ok := row["artist"].(string); !ok || strings.Contains(a, "$") || a == "" {
		t.Errorf("artist not compacted: %v", row["artist"])
	}
	if row["objectId"] != demo.SongPublicID || row["_rperm"] != nil || row["ACL"] != nil || row["_p_artist"] != nil {
		t.Errorf("row shape: %v", row)
	}
	args["compact_pointers"] = false
	out = callOK(t, c, "aggregate", args)
	if p := obj(obj(rowObjects(out, "results")[0])["artist"]); p["__type"] != "Pointer" || p["className"] != "Artist" || out["pointer_classes"] != nil {
		t.Errorf("compact_pointers false: %v", out)
	}
	// Hidden-class references are redacted at any depth.
	res := call(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{
		map[string]any{"$match": map[string]any{"objectId": map[string]any{"$in": []any{demo.SongLeakIDs[0], demo.SongEmbeddedSecretID}}}}}})
	if res.IsError {
		t.Fatal(text(res))
	}
	for _, id := range append([]string{demo.SongEmbeddedSecretTarget}, demo.SongLeakSecretIDs...) {
		if strings.Contains(text(res), id) {
			t.Fatalf("a VaultSecret id leaks: %s", text(res))
		}
	}
	if !strings.Contains(text(res), `"__redacted":true`) {
		t.Errorf("no redaction marker: %s", text(res))
	}
	// The hidden pointer column of AuditLog stays redacted (not compacted).
	out = callOK(t, c, "aggregate", map[string]any{"class_name": "AuditLog", "pipeline": []any{map[string]any{"$limit": 3}}})
	if pc := obj(out["pointer_classes"]); pc["secret"] != nil || pc["actor"] != "_User" {
		t.Errorf("AuditLog pointer_classes: %v", pc)
	}
	if s := obj(obj(rowObjects(out, "results")[0])["secret"]); s["__redacted"] != true {
		t.Errorf("AuditLog.secret: %v", s)
	}
}

// aggRPC sends one tools/call on a raw server and returns its response
// (notifications skipped).
func aggRPC(r *rawServer, id, tool, args string) map[string]any {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		m := r.next()
		if m["id"] == id {
			return m
		}
	}
	r.t.Fatalf("%s: no response", id)
	return nil
}

func aggToolResult(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	res := obj(resp["result"])
	if res == nil || res["isError"] == true {
		t.Fatalf("tool call failed: %v", resp)
	}
	var out map[string]any
	content := list(res["content"])
	if err := json.Unmarshal([]byte(obj(content[0])["text"].(string)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAggregateRefusalsThroughTheBinary(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	violations := map[string]string{
		"out":        `{"class_name":"Song","pipeline":[{"$match":{}},{"$out":"stolen"}]}`,
		"merge":      `{"class_name":"Song","pipeline":[{"$facet":{"a":[{"$merge":{"into":"x"}}]}}]}`,
		"function":   `{"class_name":"Song","pipeline":[{"$lookup":{"from":"Artist","pipeline":[{"$addFields":{"x":{"$function":{"body":"f","args":[],"lang":"js"}}}}],"as":"a"}}]}`,
		"hashed":     `{"class_name":"_User","pipeline":[{"$match":{"_hashed_password":{"$exists":true}}}]}`,
		"authdata":   `{"class_name":"_User","pipeline":[{"$project":{"x":"$_auth_data_github"}}]}`,
		"output":     `{"class_name":"Song","pipeline":[{"$addFields":{"_rperm":["*"]}}]}`,
		"schema":     `{"class_name":"Song","pipeline":[{"$lookup":{"from":"_SCHEMA","pipeline":[],"as":"s"}}]}`,
		"join":       `{"class_name":"Song","pipeline":[{"$unionWith":"_Join:users:_Role"}]}`,
		"group_by":   `{"class_name":"_User","field":"_hashed_password"}`,
		"regex":      `{"class_name":"Song","pipeline":[{"$match":{"title":{"$regex":"` + strings.Repeat("a", 600) + `"}}}]}`,
		"session":    `{"class_name":"_User","field":"sessionToken"}`,
		"distinct_p": `{"class_name":"_User","field":"_password_history"}`,
	}
	for id, args := range violations {
		tool := "aggregate"
		switch id {
		case "group_by":
			tool = "group_by"
		case "session", "distinct_p":
			tool = "distinct"
		}
		resp := aggRPC(r, id, tool, args)
		e := obj(resp["error"])
		if e == nil || e["code"] != float64(-32602) {
			t.Errorf("%s: want JSON-RPC -32602, got %v", id, resp)
			continue
		}
		msg, _ := e["message"].(string)
		for _, leak := range []string{"_hashed", "_rperm", "$out", "$merge", "$function", "_SCHEMA", "_Join", "auth_data", "sessionToken", "password"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: the violation message echoes %s: %s", id, leak, msg)
			}
		}
	}
	// Refusals the model can act on are tool errors with details.
	tool := func(id, name, args, code, kind string) {
		t.Helper()
		resp := aggRPC(r, id, name, args)
		res := obj(resp["result"])
		meta := obj(res["_meta"])
		if res["isError"] != true || meta["parse.error_code"] != code || (kind != "" && obj(meta["parse.details"])["kind"] != kind) {
			t.Errorf("%s: want %s/%s, got %v", id, code, kind, resp)
		}
	}
	tool("hidden", "aggregate", `{"class_name":"AuditLog","pipeline":[{"$lookup":{"from":"VaultSecret","localField":"secret","foreignField":"objectId","as":"s"}}]}`, "invalid_argument", "")
	tool("hidden-nested", "aggregate", `{"class_name":"Song","pipeline":[{"$facet":{"a":[{"$unionWith":"VaultSecret"}]}}]}`, "invalid_argument", "")
	tool("storage", "aggregate", `{"class_name":"Song","pipeline":[{"$group":{"_id":"$_p_artist","n":{"$sum":1}}}]}`, "access_denied", "storage_form_field_ref")
	tool("storage-group", "group_by", `{"class_name":"Song","field":"_p_album"}`, "access_denied", "storage_form_field_ref")
	tool("unknown-stage", "aggregate", `{"class_name":"Song","pipeline":[{"$currentOp":{}}]}`, "invalid_query", "")
	tool("too-many", "aggregate", `{"class_name":"Song","pipeline":[`+strings.TrimSuffix(strings.Repeat(`{"$skip":0},`, 21), ",")+`]}`, "invalid_query", "")
	tool("hidden-class", "group_by", `{"class_name":"VaultSecret","field":"apiKey"}`, "invalid_argument", "")
}

func TestGroupByDate(t *testing.T) {
	c := aggClient(t)
	where := func(from, to string) map[string]any {
		return map[string]any{"releasedAt": map[string]any{"$gte": from, "$lt": to}}
	}
	// On FerretDB (no $dateToString) the capability fallback answers.
	out := callOK(t, c, "group_by_date", map[string]any{"class_name": "Song", "field": "releasedAt", "interval": "month",
		"where": where("2020-01-01T00:00:00Z", "2021-01-01T00:00:00Z")})
	checkMonths(t, out, demo.ActiveSongsReleasedPerMonth2020)
	out = callOK(t, c, "group_by_date", map[string]any{"class_name": "Song", "field": "releasedAt", "interval": "month", "timezone": "+09:00",
		"where": where("2019-12-31T15:00:00Z", "2020-12-31T15:00:00Z")})
	checkMonths(t, out, demo.ActiveSongsReleasedPerMonth2020Plus9)
	out = callOK(t, c, "group_by_date", map[string]any{"class_name": "Song", "field": "releasedAt", "interval": "year"})
	for _, g := range list(out["groups"]) {
		key, _ := obj(g)["key"].(string)
		var y int
		if obj(g)["key"] == nil {
			continue // no release date: the JSON null key
		}
		fmt.Sscan(key, &y)
		if aggNum(obj(g)["value"]) != demo.ActiveSongsPerReleaseYear[y] {
			t.Errorf("year %s: %v, want %d", key, obj(g)["value"], demo.ActiveSongsPerReleaseYear[y])
		}
	}
}

func checkMonths(t *testing.T, out map[string]any, want map[string]int) {
	t.Helper()
	groups := list(out["groups"])
	if len(groups) != len(want) {
		t.Fatalf("%d months, want %d: %v", len(groups), len(want), out)
	}
	prev := ""
	for _, g := range groups {
		key, _ := obj(g)["key"].(string)
		if aggNum(obj(g)["value"]) != want[key] {
			t.Errorf("%s: %v, want %d", key, obj(g)["value"], want[key])
		}
		if key < prev {
			t.Errorf("not in key_asc order: %v", groups)
		}
		prev = key
	}
}

func TestGroupByAverage(t *testing.T) {
	c := aggClient(t)
	// On FerretDB (no $avg) the capability fallback answers.
	out := callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre", "operation": "average", "value_field": "plays"})
	if len(list(out["groups"])) != len(demo.ActiveSongsPerGenre) {
		t.Fatalf("groups: %v", out)
	}
	for _, g := range list(out["groups"]) {
		key, _ := obj(g)["key"].(string)
		got, _ := obj(g)["value"].(float64)
		want := float64(demo.ActiveSongPlaysPerGenre[key]) / float64(demo.ActiveSongsPerGenre[key])
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("avg plays of %s = %v, want %v", key, got, want)
		}
	}
}

func TestAggregateLookup(t *testing.T) {
	c := aggClient(t)
	out := requireUnsupported(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{
		map[string]any{"$match": map[string]any{"objectId": demo.SongPublicID}},
		map[string]any{"$lookup": map[string]any{"from": "Artist", "localField": "artist", "foreignField": "objectId", "as": "artistDoc"}},
		map[string]any{"$unwind": "$artistDoc"},
	}}, "$lookup")
	rows := rowObjects(out, "results")
	if len(rows) != 1 {
		t.Fatalf("lookup rows: %v", out)
	}
	row := obj(rows[0])
	joined := obj(row["artistDoc"])
	if joined["objectId"] != row["artist"] || joined["name"] == nil || joined["_rperm"] != nil || joined["ACL"] != nil {
		t.Errorf("joined artist: %v (artist %v)", joined, row["artist"])
	}
}

func aggNum(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func TestAggregateByteCap(t *testing.T) {
	c := stdioClient(t, policyFile(t, "max_response_30000"))
	msg := callErr(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{map[string]any{"$match": map[string]any{}}}}, "invalid_argument")
	if !strings.Contains(msg, "Heaviest fields: lyrics") || !strings.Contains(msg, "Retry with keys: [") {
		t.Errorf("refusal: %s", msg)
	}
	out := callOK(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{
		map[string]any{"$project": map[string]any{"title": 1}}, map[string]any{"$limit": 100}}})
	if aggNum(out["result_count"]) != 100 {
		t.Errorf("small result under the cap: %v", out["result_count"])
	}
}
