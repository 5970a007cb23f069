package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/embed"
)

// The search tools through the binary on the embedded FerretDB (or
// PARSE_MCP_TEST_MONGODB_URI): FerretDB 1.24 has neither Atlas Search nor
// text or vector indexes, so the in-process engine answers (engine
// in_process / prefix_match), and every result is checked against the same
// rows computed here from the database.

var searchTools = []string{"atlas_text_search", "atlas_autocomplete", "atlas_faceted_search", "find_similar", "semantic_search"}

const fixtureEmbedder = "PARSE_MCP_EMBEDDINGS_URL=fixture"

// activeSongRows reads every non-archived Song (the demo policy's canonical
// filter) with its ACL, straight from the database.
type songRow struct {
	ID     string    `bson:"_id"`
	Title  string    `bson:"title"`
	Lyrics string    `bson:"lyrics"`
	Genre  string    `bson:"genre"`
	Org    string    `bson:"orgId"`
	Rperm  []string  `bson:"_rperm"`
	Vector []float64 `bson:"lyricsEmbedding"`
	HasACL bool      `bson:"-"`
}

func activeSongRows(t *testing.T) []songRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cur, err := testDB.Collection("Song").Find(ctx, bson.D{{Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []songRow
	for cur.Next(ctx) {
		var s songRow
		if err := cur.Decode(&s); err != nil {
			t.Fatal(err)
		}
		_, err := cur.Current.LookupErr("_rperm")
		s.HasACL = err == nil
		out = append(out, s)
	}
	return out
}

// hasWord reports whether text has a word whose light stem is stem (the
// in-process engine's matching: case-insensitive words, plural and -ing/-ed
// endings stripped).
func hasWord(text, stem string) bool {
	for _, w := range embed.Words(text) {
		for _, suf := range []string{"ing", "ed", "es", "s"} {
			if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
				w = w[:len(w)-len(suf)]
				break
			}
		}
		if w == stem {
			return true
		}
	}
	return false
}

func rowIDs(t *testing.T, out map[string]any) []string {
	t.Helper()
	var ids []string
	if objs, ok := out["results"].([]any); ok { // sparse rows come as objects
		for _, o := range objs {
			ids = append(ids, o.(map[string]any)["objectId"].(string))
		}
		return ids
	}
	cols, _ := out["columns"].([]any)
	rows, _ := out["rows"].([]any)
	if len(rows) > 0 && cols[0] != "objectId" {
		t.Fatalf("objectId is not the first column: %v", out)
	}
	for _, r := range rows {
		ids = append(ids, r.([]any)[0].(string))
	}
	return ids
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// TestSearchToolsOnDemo: in master posture all five tools answer on the
// demo data with the in-process engines, and each result is the one
// computed from the database.
func TestSearchToolsOnDemo(t *testing.T) {
	c := stdioClient(t, policyFile(t, "demo"), fixtureEmbedder)
	listed := listedTools(t, c)
	for _, n := range searchTools {
		if !listed[n] {
			t.Errorf("tools/list lacks %s", n)
		}
	}
	songs := activeSongRows(t)

	// atlas_text_search: the hits are exactly the rows with the word.
	var want []string
	for _, s := range songs {
		if hasWord(s.Title, "harbor") || hasWord(s.Lyrics, "harbor") {
			want = append(want, s.ID)
		}
	}
	out := callOK(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "harbors", "limit": 50})
	if out["engine"] != "in_process" {
		t.Errorf("engine %v, want in_process", out["engine"])
	}
	got := rowIDs(t, out)
	if len(want) <= 50 {
		if !slices.Equal(sortedCopy(got), sortedCopy(want)) {
			t.Errorf("text search: %d hits, the database has %d rows with the word", len(got), len(want))
		}
	} else if len(got) != 50 {
		t.Errorf("%d hits, want the limit 50 (%d match)", len(got), len(want))
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("hit %s does not have the word", g)
		}
	}
	scores := out["scores"].([]any)
	for i := 1; i < len(scores); i++ {
		if scores[i].(float64) > scores[i-1].(float64) {
			t.Fatalf("scores not descending: %v", scores)
		}
	}
	if strings.Contains(fmt.Sprint(out["columns"]), "lyrics") || strings.Contains(fmt.Sprint(out["columns"]), demo.SongVectorField) {
		t.Errorf("rows carry the large field or the vector: %v", out["columns"])
	}

	// atlas_autocomplete: literal case-insensitive prefix, in title order.
	out = callOK(t, c, "atlas_autocomplete", map[string]any{"class_name": "Song", "field": "title", "prefix": "mid", "limit": 20})
	if out["engine"] != "prefix_match" {
		t.Errorf("engine %v", out["engine"])
	}
	n := 0
	for _, s := range songs {
		if strings.HasPrefix(strings.ToLower(s.Title), "mid") {
			n++
		}
	}
	sugg := out["suggestions"].([]any)
	if len(sugg) != min(n, 20) || n == 0 {
		t.Errorf("%d suggestions, %d titles start with mid", len(sugg), n)
	}
	for i, s := range sugg {
		v := s.(map[string]any)["value"].(string)
		if !strings.HasPrefix(strings.ToLower(v), "mid") || i > 0 && v < sugg[i-1].(map[string]any)["value"].(string) {
			t.Errorf("suggestion %d %q", i, v)
		}
	}

	// atlas_faceted_search: the genre buckets add up to count_objects.
	out = callOK(t, c, "atlas_faceted_search", map[string]any{"class_name": "Song", "facets": []any{map[string]any{"field": "genre"}}})
	total := 0
	for _, b := range out["facets"].(map[string]any)["genre"].([]any) {
		total += int(b.(map[string]any)["count"].(float64))
	}
	if total != len(songs) || int(out["total"].(float64)) != len(songs) {
		t.Errorf("genre buckets sum %d, total %v, active songs %d", total, out["total"], len(songs))
	}
	out = callOK(t, c, "atlas_faceted_search", map[string]any{"class_name": "Song", "query": "harbor",
		"facets": []any{map[string]any{"field": "plays", "type": "number", "boundaries": []any{0, 1000, 1e12}}}})
	if int(out["total"].(float64)) != len(want) {
		t.Errorf("faceted total %v for the query, %d rows match", out["total"], len(want))
	}

	// find_similar: the brute-force nearest rows, the seed excluded.
	seed := songs[7]
	type near struct {
		id    string
		score float64
	}
	var all []near
	for _, s := range songs {
		if s.ID != seed.ID && len(s.Vector) == len(seed.Vector) {
			all = append(all, near{s.ID, embed.Cosine(seed.Vector, s.Vector)})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].score > all[j].score || all[i].score == all[j].score && all[i].id < all[j].id
	})
	out = callOK(t, c, "find_similar", map[string]any{"class_name": "Song", "object_id": seed.ID, "k": 5})
	got = rowIDs(t, out)
	for i, g := range got {
		if g != all[i].id {
			t.Errorf("find_similar #%d = %s, want %s", i, g, all[i].id)
		}
		if s := out["scores"].([]any)[i].(float64); math.Abs(s-all[i].score) > 1e-4 {
			t.Errorf("score %v, want %v", s, all[i].score)
		}
	}
	if slices.Contains(got, seed.ID) || len(got) != 5 {
		t.Errorf("find_similar: %v (seed %s)", got, seed.ID)
	}
	vec := make([]any, len(seed.Vector))
	for i, x := range seed.Vector {
		vec[i] = x
	}
	out = callOK(t, c, "find_similar", map[string]any{"class_name": "Song", "vector": vec, "k": 1})
	if got := rowIDs(t, out); len(got) != 1 || got[0] != seed.ID {
		t.Errorf("the nearest row to a row's own vector is %v, want %s", got, seed.ID)
	}
	callErr(t, c, "find_similar", map[string]any{"class_name": "Song", "vector": []any{1, 2, 3}}, "invalid_argument")

	// semantic_search: chunks of the nearest rows' text, within the budget.
	out = callOK(t, c, "semantic_search", map[string]any{"query": "hold on to the harbor, the silent dream is calling", "k": 3, "token_budget": 300})
	chunks := out["chunks"].([]any)
	used := 0
	for _, ch := range chunks {
		m := ch.(map[string]any)
		used += len(m["text"].(string))/4 + 1
		if m["class_name"] != "Song" || len(m["text"].(string)) > 800 {
			t.Errorf("chunk %v", m)
		}
	}
	if len(chunks) == 0 || used > 300 || out["budget_truncated"] != true {
		t.Errorf("%d chunks, %d tokens, budget_truncated %v", len(chunks), used, out["budget_truncated"])
	}
	out = callOK(t, c, "semantic_search", map[string]any{"query": "harbor", "class_name": "Song", "k": 2})
	if out["budget_truncated"] != false || len(out["chunks"].([]any)) == 0 {
		t.Errorf("a large budget truncated, or no chunks: %v", out)
	}
}

// TestSearchToolsetOptIn: without a searchable class the toolset is not
// listed and a call is tool_filtered; without an embedder semantic_search
// says how to configure one.
func TestSearchToolsetOptIn(t *testing.T) {
	c := stdioClient(t, policyFile(t, "search_off"))
	listed := listedTools(t, c)
	for _, n := range searchTools {
		if listed[n] {
			t.Errorf("%s listed without a searchable class", n)
		}
	}
	callErr(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "x"}, "tool_filtered")
	c = stdioClient(t, policyFile(t, "demo"))
	msg := callErr(t, c, "semantic_search", map[string]any{"query": "sea"}, "invalid_argument")
	if !strings.Contains(msg, "PARSE_MCP_EMBEDDINGS_URL") {
		t.Errorf("no configuration hint: %s", msg)
	}
	callErr(t, c, "atlas_text_search", map[string]any{"class_name": "Artist", "query": "x"}, "invalid_argument")
}

// TestSearchScopeOfScopedIdentities: for a scoped identity every engine
// searches exactly its query_class scope (_rperm, CLP, canonical filter),
// protected fields are neither searched nor embedded, and scores are
// rounded to 2 decimals.
func TestSearchScopeOfScopedIdentities(t *testing.T) {
	for _, who := range []struct{ name, env string }{
		{"carol", "PARSE_MCP_SESSION_TOKEN=" + demo.CarolSessionToken},
		{"alice", "PARSE_MCP_SESSION_TOKEN=" + demo.AliceSessionToken},
		{"bob", "PARSE_MCP_SESSION_TOKEN=" + demo.BobSessionToken},
	} {
		t.Run(who.name, func(t *testing.T) {
			c := stdioClient(t, policyFile(t, "demo"), fixtureEmbedder, who.env)
			// The readable rows whose title has the word, by query_class.
			qc := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "keys": []any{"title"}, "limit": 1000,
				"where": map[string]any{"title": map[string]any{"$regex": "heart", "$options": "i"}}, "shape": "objects"})
			var want []string
			for _, r := range qc["results"].([]any) {
				m := r.(map[string]any)
				if hasWord(m["title"].(string), "heart") {
					want = append(want, m["objectId"].(string))
				}
			}
			out := callOK(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "hearts", "limit": 50})
			got := rowIDs(t, out)
			if len(want) > 50 || len(want) == 0 {
				t.Fatalf("fixture: %d titles with the word", len(want))
			}
			if !slices.Equal(sortedCopy(got), sortedCopy(want)) {
				t.Errorf("text search %v, query_class scope %v", sortedCopy(got), sortedCopy(want))
			}
			for _, s := range out["scores"].([]any) {
				if f := s.(float64); math.Abs(f*100-math.Round(f*100)) > 1e-9 {
					t.Errorf("score %v has more than 2 decimals", f)
				}
			}
			// lyrics is protected for every scoped identity: not searchable,
			// and the vectors embedding it are not usable.
			callErr(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "night", "fields": []any{"lyrics"}}, "access_denied")
			callErr(t, c, "find_similar", map[string]any{"class_name": "Song", "object_id": demo.SongWithLyricsID}, "access_denied")
			callErr(t, c, "semantic_search", map[string]any{"query": "night", "class_name": "Song"}, "access_denied")
			if out := callOK(t, c, "semantic_search", map[string]any{"query": "night"}); len(out["chunks"].([]any)) != 0 || len(out["classes"].([]any)) != 0 {
				t.Errorf("semantic_search over a class whose vectors embed a protected field: %v", out)
			}
			callErr(t, c, "atlas_faceted_search", map[string]any{"class_name": "Song", "facets": []any{map[string]any{"field": "lyrics"}}}, "invalid_argument")
			callErr(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "night", "where": map[string]any{"lyrics": map[string]any{"$exists": true}}}, "access_denied")
		})
	}
}

// TestSearchTenantScope: the tenant is in every engine's scope (pre-filter
// and re-check): no hit of another tenant, and naming another tenant is
// refused before anything is sent.
func TestSearchTenantScope(t *testing.T) {
	c := stdioClient(t, policyFile(t, "tenant_scoped"), fixtureEmbedder, "PARSE_MCP_TENANT_ID="+demo.OrgNorth)
	org := map[string]string{}
	for _, s := range activeSongRows(t) {
		org[s.ID] = s.Org
	}
	check := func(tool string, ids []string) {
		if len(ids) == 0 {
			t.Errorf("%s: no hits at all", tool)
		}
		for _, id := range ids {
			if org[id] != demo.OrgNorth {
				t.Errorf("%s returned %s of %q", tool, id, org[id])
			}
		}
	}
	check("atlas_text_search", rowIDs(t, callOK(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "night ocean fire", "limit": 50})))
	check("find_similar", rowIDs(t, callOK(t, c, "find_similar", map[string]any{"class_name": "Song", "vector": vectorOf(embed.FixtureVector("night ocean fire")), "k": 20})))
	var ids []string
	for _, s := range callOK(t, c, "atlas_autocomplete", map[string]any{"class_name": "Song", "field": "title", "prefix": "the", "limit": 20})["suggestions"].([]any) {
		ids = append(ids, s.(map[string]any)["object_id"].(string))
	}
	check("atlas_autocomplete", ids)
	ids = nil
	for _, ch := range callOK(t, c, "semantic_search", map[string]any{"query": "night ocean fire", "k": 10})["chunks"].([]any) {
		ids = append(ids, ch.(map[string]any)["object_id"].(string))
	}
	check("semantic_search", ids)
	out := callOK(t, c, "atlas_faceted_search", map[string]any{"class_name": "Song", "facets": []any{map[string]any{"field": "genre"}}})
	if int(out["total"].(float64)) != demo.ActiveSongsPerOrg[demo.OrgNorth] {
		t.Errorf("faceted total %v, the tenant has %d active songs", out["total"], demo.ActiveSongsPerOrg[demo.OrgNorth])
	}
	// Another tenant's seed object is "not found", like get_object.
	for id, o := range org {
		if o == demo.OrgSouth {
			callErr(t, c, "find_similar", map[string]any{"class_name": "Song", "object_id": id}, "invalid_argument")
			break
		}
	}
	for _, tool := range []map[string]any{
		{"name": "atlas_text_search", "args": map[string]any{"class_name": "Song", "query": "night"}},
		{"name": "atlas_autocomplete", "args": map[string]any{"class_name": "Song", "field": "title", "prefix": "a"}},
		{"name": "atlas_faceted_search", "args": map[string]any{"class_name": "Song", "facets": []any{map[string]any{"field": "genre"}}}},
		{"name": "find_similar", "args": map[string]any{"class_name": "Song", "vector": vectorOf(embed.FixtureVector("x"))}},
		{"name": "semantic_search", "args": map[string]any{"class_name": "Song", "query": "night"}},
	} {
		args := tool["args"].(map[string]any)
		args["where"] = map[string]any{"orgId": demo.OrgSouth}
		callErr(t, c, tool["name"].(string), args, "access_denied")
	}
}

func vectorOf(v []float64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}

// TestSearchAttacks: hidden classes answer as missing ones on every search
// tool, internal fields in where are violations, hidden references never
// match, and the in-process engine refuses beyond its row bound.
func TestSearchAttacks(t *testing.T) {
	r := startRaw(t, policyFile(t, "search_hidden_refs"), fixtureEmbedder)
	r.initialize()
	reqs := func(n string) []string {
		return []string{
			fmt.Sprintf(`{"name":"atlas_text_search","arguments":{"class_name":%q,"query":"key"}}`, n),
			fmt.Sprintf(`{"name":"atlas_autocomplete","arguments":{"class_name":%q,"field":"service","prefix":"s"}}`, n),
			fmt.Sprintf(`{"name":"atlas_faceted_search","arguments":{"class_name":%q,"facets":[{"field":"service"}]}}`, n),
			fmt.Sprintf(`{"name":"find_similar","arguments":{"class_name":%q,"object_id":"abcdefghij"}}`, n),
			fmt.Sprintf(`{"name":"semantic_search","arguments":{"class_name":%q,"query":"key"}}`, n),
		}
	}
	hidden, missing := "VaultSecret", "VaultSecrez"
	hr, mr := reqs(hidden), reqs(missing)
	for i := range hr {
		a := strings.ReplaceAll(answer(rpc(r, fmt.Sprintf("h%d", i), "tools/call", hr[i])), hidden, "NAME")
		b := strings.ReplaceAll(answer(rpc(r, fmt.Sprintf("m%d", i), "tools/call", mr[i])), missing, "NAME")
		if a != b {
			t.Errorf("hidden and missing differ:\n hidden  %s\n missing %s", cut(a, 400), cut(b, 400))
		}
	}
	// Internal fields in where: a security violation (-32602), nothing run.
	for i, args := range []string{
		`{"class_name":"Song","query":"night","where":{"_rperm":{"$in":["*"]}}}`,
		`{"class_name":"Song","query":"night","where":{"$or":[{"_hashed_password":"x"}]}}`,
	} {
		rpcError(t, rpc(r, fmt.Sprintf("v%d", i), "tools/call", fmt.Sprintf(`{"name":"atlas_text_search","arguments":%s}`, args)), -32602)
	}
	// A searched field holding "VaultSecret$id" never matches: no prefix of
	// the hidden reference completes, no word of it is found.
	for i, prefix := range []string{"VaultSecret$", "V", "vault"} {
		ans := answer(rpc(r, fmt.Sprintf("a%d", i), "tools/call", fmt.Sprintf(`{"name":"atlas_autocomplete","arguments":{"class_name":"Song","field":"leak","prefix":%q}}`, prefix)))
		if !strings.Contains(ans, `\"suggestions\":[]`) {
			t.Errorf("autocomplete %q on a hidden reference: %s", prefix, cut(ans, 300))
		}
	}
	ans := answer(rpc(r, "t0", "tools/call", `{"name":"atlas_text_search","arguments":{"class_name":"Song","query":"VaultSecret","fields":["leak"]}}`))
	if !strings.Contains(ans, `\"result_count\":0`) {
		t.Errorf("text search on a hidden reference: %s", cut(ans, 300))
	}
	// The row bound: 540 active songs are more than 100.
	b := stdioClient(t, policyFile(t, "search_fallback_100_rows"), fixtureEmbedder)
	msg := callErr(t, b, "atlas_text_search", map[string]any{"class_name": "Song", "query": "night"}, "invalid_query")
	if !strings.Contains(msg, "more than 100 rows") || !strings.Contains(msg, "text index") {
		t.Errorf("row bound message: %s", msg)
	}
	callErr(t, b, "find_similar", map[string]any{"class_name": "Song", "vector": vectorOf(embed.FixtureVector("x"))}, "invalid_query")
	// Within the bound (a narrower where) it answers.
	callOK(t, b, "atlas_text_search", map[string]any{"class_name": "Song", "query": "night", "where": map[string]any{"genre": "jazz"}})
}

// TestSearchEmbeddingsEndpoint: semantic_search against an OpenAI-compatible
// endpoint served here: the query is embedded there, and a cancelled call
// cancels the embeddings request it waits on.
func TestSearchEmbeddingsEndpoint(t *testing.T) {
	block := make(chan struct{})
	cancelled := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in struct {
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(req.Body).Decode(&in)
		if req.Header.Get("Authorization") != "Bearer sk-e2e-secret" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		if len(in.Input) == 1 && in.Input[0] == "block me" {
			select {
			case <-req.Context().Done():
				cancelled <- struct{}{}
			case <-block:
			}
			return
		}
		var data []map[string]any
		for i, s := range in.Input {
			data = append(data, map[string]any{"index": i, "embedding": embed.FixtureVector(s)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	defer close(block)
	env := []string{policyFile(t, "demo"), "PARSE_MCP_EMBEDDINGS_URL=" + srv.URL + "/v1", "PARSE_MCP_EMBEDDINGS_MODEL=test-model", "PARSE_MCP_EMBEDDINGS_API_KEY=sk-e2e-secret"}
	c := stdioClient(t, env...)
	out := callOK(t, c, "semantic_search", map[string]any{"query": "harbor", "k": 2})
	if out["embedder"] != "test-model" || len(out["chunks"].([]any)) == 0 {
		t.Fatalf("semantic_search via the endpoint: %v", out)
	}
	r := startRaw(t, env...)
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"semantic_search","arguments":{"query":"block me"}}}`)
	time.Sleep(300 * time.Millisecond) // let the request reach the endpoint; the assertion below waits for the event
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}`)
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the embeddings request was not cancelled with the call")
	}
	// The server goes on answering; the cancelled call never does.
	if m := rpc(r, "after", "tools/call", `{"name":"atlas_text_search","arguments":{"class_name":"Song","query":"harbor","limit":1}}`); m["result"] == nil {
		t.Fatalf("after cancelling: %v", m)
	}
}

// TestSearchEmbedBackfill: parse-mcp embed CLASS writes the vectors a class
// lacks, resumably; a write to an embed_from field refreshes its row's.
func TestSearchEmbedBackfill(t *testing.T) {
	const prefix = "embed_"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := demo.ForceSeed(ctx, testDB, prefix); err != nil {
		t.Fatal(err)
	}
	env := []string{"PARSE_MCP_COLLECTION_PREFIX=" + prefix, policyFile(t, "demo"), fixtureEmbedder}
	coll := testDB.Collection(prefix + "Song")
	if _, err := coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$unset", Value: bson.D{{Key: demo.SongVectorField, Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, env, "embed", "Song")
	if code != 0 || !strings.Contains(stderr, fmt.Sprintf("done, %d rows embedded", demo.SongCount)) || !strings.Contains(stderr, fmt.Sprintf("64/%d rows", demo.SongCount)) {
		t.Fatalf("embed: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Title  string    `bson:"title"`
		Lyrics string    `bson:"lyrics"`
		Vector []float64 `bson:"lyricsEmbedding"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: demo.SongWithLyricsID}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if embed.Cosine(doc.Vector, embed.FixtureVector(doc.Title+"\n"+doc.Lyrics)) < 0.9999 {
		t.Fatal("the backfilled vector is not the fixture embedding of title and lyrics")
	}
	// Nothing left to do: a second run embeds nothing (resumable).
	if _, stderr, code = runCLI(t, env, "embed", "Song"); code != 0 || !strings.Contains(stderr, "done, 0 rows embedded") {
		t.Fatalf("second run: %d %s", code, stderr)
	}
	_, stderr, code = runCLI(t, env, "embed", "Artist")
	if code == 0 || !strings.Contains(stderr, "no search.vector_field") || strings.Contains(stderr, "run it again") {
		t.Fatalf("embed of a class without vectors: %d %s", code, stderr)
	}
	// A write to an embed_from field recomputes the vector.
	wc := stdioClient(t, append(env, "PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=1", "PARSE_AGENT_ALLOW_RAW_CRUD=1")...)
	callOK(t, wc, "update_object", map[string]any{"class_name": "Song", "object_id": demo.SongWithLyricsID, "fields": map[string]any{"lyrics": "a brand new song about the harbor"}})
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: demo.SongWithLyricsID}}, options.FindOne()).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Lyrics != "a brand new song about the harbor" || embed.Cosine(doc.Vector, embed.FixtureVector(doc.Title+"\na brand new song about the harbor")) < 0.9999 {
		t.Fatal("the vector was not refreshed after the write")
	}
}

// TestSearchIndexEngines: with a MongoDB text index on the searched fields
// the text search runs on $text (engine text_index), and with a native
// vector index (DocumentDB's cosmosSearch) find_similar runs $vectorSearch
// (engine vector_index); each gives the rows the in-process engine gives.
// FerretDB 1.24 has neither index: the test skips there, naming it; on the
// second engine (FerretDB 2 + DocumentDB) and MongoDB it runs.
func TestSearchIndexEngines(t *testing.T) {
	const prefix = "sidx_"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := demo.ForceSeed(ctx, testDB, prefix); err != nil {
		t.Fatal(err)
	}
	env := []string{"PARSE_MCP_COLLECTION_PREFIX=" + prefix, policyFile(t, "demo"), fixtureEmbedder}
	coll := testDB.Collection(prefix + "Song")
	songs := activeSongRows(t)
	t.Run("text index", func(t *testing.T) {
		if _, err := coll.Indexes().CreateOne(ctx, mongoIndex(bson.D{{Key: "title", Value: "text"}, {Key: "lyrics", Value: "text"}}, nil)); err != nil {
			t.Skipf("the database has no text indexes: %v", err)
		}
		c := stdioClient(t, env...)
		out := callOK(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "harbor", "limit": 50, "where": map[string]any{"genre": "jazz"}})
		if out["engine"] != "text_index" {
			t.Fatalf("engine %v, want text_index", out["engine"])
		}
		var want []string
		for _, s := range songs {
			if s.Genre == "jazz" && (hasWord(s.Title, "harbor") || hasWord(s.Lyrics, "harbor")) {
				want = append(want, s.ID)
			}
		}
		if got := rowIDs(t, out); !slices.Equal(sortedCopy(got), sortedCopy(want)) {
			t.Errorf("$text rows %v, in-process rows %v", sortedCopy(got), sortedCopy(want))
		}
		// Fields other than the index's: the in-process engine answers.
		if out := callOK(t, c, "atlas_text_search", map[string]any{"class_name": "Song", "query": "harbor", "fields": []any{"title"}}); out["engine"] != "in_process" {
			t.Errorf("engine %v for a field subset", out["engine"])
		}
	})
	t.Run("vector index", func(t *testing.T) {
		err := testDB.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: prefix + "Song"}, {Key: "indexes", Value: bson.A{bson.D{
			{Key: "name", Value: "vec"}, {Key: "key", Value: bson.D{{Key: demo.SongVectorField, Value: "cosmosSearch"}}},
			{Key: "cosmosSearchOptions", Value: bson.D{{Key: "kind", Value: "vector-hnsw"}, {Key: "similarity", Value: "COS"}, {Key: "dimensions", Value: embed.FixtureDimensions}}},
		}}}}).Err()
		if err != nil {
			t.Skipf("the database has no native vector indexes: %v", err)
		}
		c := stdioClient(t, env...)
		seed := songs[7]
		out := callOK(t, c, "find_similar", map[string]any{"class_name": "Song", "vector": vectorOf(seed.Vector), "k": 5})
		if out["engine"] != "vector_index" {
			t.Fatalf("engine %v, want vector_index", out["engine"])
		}
		if got := rowIDs(t, out); len(got) == 0 || got[0] != seed.ID {
			t.Errorf("the nearest row to a row's own vector is %v, want %s", got, seed.ID)
		}
	})
}

func mongoIndex(keys bson.D, opts *options.IndexOptionsBuilder) mongo.IndexModel {
	return mongo.IndexModel{Keys: keys, Options: opts}
}

// TestSearchPrompt: search_and_summarize is listed with a searchable class
// and names the tools with the question.
func TestSearchPrompt(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	got := answer(rpc(r, "p", "prompts/get", `{"name":"search_and_summarize","arguments":{"question":"songs about the sea","class_name":"Song"}}`))
	for _, want := range []string{"semantic_search", `\"query\":\"songs about the sea\"`, "atlas_text_search", "find_similar", "not instructions"} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %s: %s", want, cut(got, 600))
		}
	}
	hidden := answer(rpc(r, "h", "prompts/get", `{"name":"search_and_summarize","arguments":{"question":"x","class_name":"VaultSecret"}}`))
	missing := answer(rpc(r, "m", "prompts/get", `{"name":"search_and_summarize","arguments":{"question":"x","class_name":"VaultSecrez"}}`))
	if strings.ReplaceAll(hidden, "VaultSecret", "N") != strings.ReplaceAll(missing, "VaultSecrez", "N") {
		t.Errorf("hidden and missing differ: %s / %s", hidden, missing)
	}
}

// TestSearchMissingEqualsHiddenReference: a searched field holding a
// reference to a class missing from _SCHEMA matches exactly as one holding
// a reference to a hidden class: never (the in-process engines).
func TestSearchMissingEqualsHiddenReference(t *testing.T) {
	const prefix = "shref_"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := demo.ForceSeed(ctx, testDB, prefix); err != nil {
		t.Fatal(err)
	}
	coll := testDB.Collection(prefix + "Song")
	var two []songRow
	cur, err := coll.Find(ctx, bson.D{{Key: "leak", Value: bson.D{{Key: "$exists", Value: false}}}, {Key: "archived", Value: false}, {Key: "_rperm", Value: bson.D{{Key: "$exists", Value: false}}}}, options.Find().SetLimit(2))
	if err != nil || cur.All(ctx, &two) != nil || len(two) != 2 {
		t.Fatalf("two plain songs: %v %d", err, len(two))
	}
	for i, ref := range []string{"VaultSecret$abcdefghij", "Ghostclass$abcdefghij"} {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: two[i].ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "leak", Value: ref}}}}); err != nil {
			t.Fatal(err)
		}
	}
	r := startRaw(t, "PARSE_MCP_COLLECTION_PREFIX="+prefix, policyFile(t, "search_hidden_refs"), fixtureEmbedder)
	r.initialize()
	ask := func(id, tool, args string) string {
		return answer(rpc(r, id, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)))
	}
	for i, pair := range [][2]string{
		{`{"class_name":"Song","field":"leak","prefix":"VaultSecret"}`, `{"class_name":"Song","field":"leak","prefix":"Ghostclass"}`},
	} {
		h, m := ask(fmt.Sprint("ah", i), "atlas_autocomplete", pair[0]), ask(fmt.Sprint("am", i), "atlas_autocomplete", pair[1])
		if h != m || !strings.Contains(h, `\"suggestions\":[]`) {
			t.Errorf("autocomplete: hidden %s\nmissing %s", cut(h, 300), cut(m, 300))
		}
	}
	h := ask("th", "atlas_text_search", `{"class_name":"Song","query":"VaultSecret","fields":["leak"]}`)
	m := ask("tm", "atlas_text_search", `{"class_name":"Song","query":"Ghostclass","fields":["leak"]}`)
	if h != m || !strings.Contains(h, `\"result_count\":0`) {
		t.Errorf("text search: hidden %s\nmissing %s", cut(h, 300), cut(m, 300))
	}
	// Both rows are left out of a search of their other fields alike.
	for _, s := range two {
		got := ask("x"+s.ID, "atlas_text_search", fmt.Sprintf(`{"class_name":"Song","query":%q,"fields":["title","leak"],"limit":50}`, s.Title))
		if strings.Contains(got, s.ID) {
			t.Errorf("a row whose searched field is an invisible reference was returned: %s", s.ID)
		}
	}
}
