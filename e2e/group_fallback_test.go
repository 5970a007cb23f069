package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/tools"
)

// The capability fallback of group_by / group_by_date (docs/decisions.md "Decisions
// where the spec is silent"): on FerretDB the tools answer from a streamed
// find; these tests check those answers against values computed here from
// the stored fixture documents, and, on a real MongoDB, the fallback against
// the pipeline itself.

// activeSongs reads the Song fixtures that pass the canonical filter.
func activeSongs(t *testing.T) []bson.M {
	t.Helper()
	cur, err := testDB.Collection("Song").Find(context.Background(), bson.D{{Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != demo.SongActiveCount {
		t.Fatalf("%d active songs, want %d", len(docs), demo.SongActiveCount)
	}
	return docs
}

func plays(d bson.M) (float64, bool) {
	switch v := d["plays"].(type) {
	case int32:
		return float64(v), true
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func TestGroupFallbackMinMaxSum(t *testing.T) {
	c := aggClient(t)
	docs := activeSongs(t)
	minP, maxP, sumP := map[string]float64{}, map[string]float64{}, map[string]float64{}
	latest := map[string]time.Time{}
	for _, d := range docs {
		g, _ := d["genre"].(string)
		if p, ok := plays(d); ok {
			if v, seen := minP[g]; !seen || p < v {
				minP[g] = p
			}
			if v, seen := maxP[g]; !seen || p > v {
				maxP[g] = p
			}
			sumP[g] += p
		}
		if r, ok := d["releasedAt"].(bson.DateTime); ok && r.Time().After(latest[g]) {
			latest[g] = r.Time()
		}
	}
	for op, want := range map[string]map[string]float64{"min": minP, "max": maxP, "sum": sumP} {
		out := callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre", "operation": op, "value_field": "plays", "sort": "key_asc"})
		groups := list(out["groups"])
		if len(groups) != len(want) {
			t.Fatalf("%s: %d groups, want %d: %v", op, len(groups), len(want), out)
		}
		prev := ""
		for _, g := range groups {
			key, _ := obj(g)["key"].(string)
			if v, _ := obj(g)["value"].(float64); v != want[key] {
				t.Errorf("%s plays of %s = %v, want %v", op, key, obj(g)["value"], want[key])
			}
			if key < prev {
				t.Errorf("%s: not in key order: %v", op, groups)
			}
			prev = key
		}
	}
	// max of a Date field: the date itself.
	out := callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre", "operation": "max", "value_field": "releasedAt"})
	for _, g := range list(out["groups"]) {
		key, _ := obj(g)["key"].(string)
		iso, _ := obj(obj(g)["value"])["iso"].(string)
		if want := latest[key].UTC().Format("2006-01-02T15:04:05.000Z"); iso != want {
			t.Errorf("latest release of %s = %v, want %s", key, obj(g)["value"], want)
		}
	}
	// value_desc (the default): by value, ties by key.
	out = callOK(t, c, "group_by", map[string]any{"class_name": "Song", "field": "genre", "operation": "max", "value_field": "plays", "limit": 2})
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range maxP {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	groups := list(out["groups"])
	if len(groups) != 2 || out["truncated"] != true || obj(groups[0])["key"] != all[0].k || obj(groups[1])["key"] != all[1].k {
		t.Errorf("top 2 by max plays: %v, want %v", out, all[:2])
	}
}

func TestGroupByDateFallbackIntervals(t *testing.T) {
	c := aggClient(t)
	docs := activeSongs(t)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		interval, tz string
		loc          *time.Location
		key          func(time.Time) string
	}{
		{"quarter", "", time.UTC, func(t time.Time) string { return fmt.Sprintf("%d-Q%d", t.Year(), (int(t.Month())+2)/3) }},
		{"week", "Europe/Paris", paris, func(t time.Time) string { y, w := t.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }},
		{"day", "-05:00", time.FixedZone("", -5*3600), func(t time.Time) string { return t.Format("2006-01-02") }},
	} {
		want := map[string]int{}
		for _, d := range docs {
			if r, ok := d["releasedAt"].(bson.DateTime); ok {
				want[tc.key(r.Time().In(tc.loc))]++
			} else {
				want["null"]++
			}
		}
		out := callOK(t, c, "group_by_date", map[string]any{"class_name": "Song", "field": "releasedAt", "interval": tc.interval, "timezone": tc.tz, "limit": 1000})
		got := map[string]int{}
		for _, g := range list(out["groups"]) {
			key, _ := obj(g)["key"].(string)
			if obj(g)["key"] == nil {
				key = "null" // no release date: the JSON null key
			}
			got[key] = aggNum(obj(g)["value"])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s in %q:\n got %v\nwant %v", tc.interval, tc.tz, got, want)
		}
	}
}

// TestGroupFallbackEqualsPipeline proves the fallback equal to the
// pipeline where the database runs both.
func TestGroupFallbackEqualsPipeline(t *testing.T) {
	if ferretDB1 {
		t.Skip("FerretDB 1.24 does not implement $dateToString, $avg, $min or $max, so the pipeline side cannot run; make test-engine2 (or PARSE_MCP_TEST_MONGODB_URI) runs it")
	}
	f, err := policy.Parse(demo.PolicyYAML, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	d := &tools.Deps{Store: parsedb.NewStore(testDB.Client(), dbName, ""), Policy: policy.New(cfg, f, zerolog.Nop()), Config: cfg, Log: zerolog.Nop(), Catalog: tools.Catalog()}
	handler := func(name string) tools.Handler {
		for _, tl := range tools.Catalog() {
			if tl.Name == name {
				return tl.Handler
			}
		}
		t.Fatalf("no tool %s", name)
		return nil
	}
	cases := []tools.Args{
		{"class_name": "Song", "field": "genre"},
		{"class_name": "Song", "field": "genre", "operation": "avg", "value_field": "plays"},
		{"class_name": "Song", "field": "genre", "operation": "min", "value_field": "plays", "sort": "value_asc"},
		{"class_name": "Song", "field": "artist", "operation": "max", "value_field": "releasedAt", "sort": "key_desc"},
		{"class_name": "Song", "field": "tags", "flatten_arrays": true, "operation": "sum", "value_field": "plays"},
		{"class_name": "Song", "field": "mood", "where": map[string]any{"plays": map[string]any{"$gt": 1000}}, "limit": 3},
		{"class_name": "Song", "field": "releasedAt", "interval": "month", "timezone": "Europe/Paris", "_date": true},
		{"class_name": "Song", "field": "releasedAt", "interval": "quarter", "operation": "avg", "value_field": "plays", "_date": true},
		{"class_name": "Song", "field": "createdAt", "interval": "week", "timezone": "+09:00", "_date": true},
		{"class_name": "Song", "field": "releasedAt", "interval": "hour", "sort": "value_desc", "limit": 5, "_date": true},
		// A key that is a hidden reference on some rows: one redacted group.
		{"class_name": "Song", "field": "meta.credential"},
		{"class_name": "Song", "field": "meta.credential.objectId", "operation": "avg", "value_field": "plays", "sort": "key_desc"},
	}
	for _, args := range cases {
		byDate := args["_date"] == true
		delete(args, "_date")
		name := "group_by"
		if byDate {
			name = "group_by_date"
		}
		pipe, err := handler(name).Call(context.Background(), d, args)
		if err != nil {
			t.Fatalf("%v: pipeline: %v", args, err)
		}
		inGo, err := tools.GroupInGo(context.Background(), d, args, byDate)
		if err != nil {
			t.Fatalf("%v: fallback: %v", args, err)
		}
		a, _ := json.Marshal(pipe)
		b, _ := json.Marshal(inGo)
		if string(a) != string(b) {
			t.Errorf("%s %v:\npipeline %s\nfallback %s", name, args, a, b)
		}
	}
}
