package tools

import (
	"regexp"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// goldenScope is a scope as newSearchScope builds it for a tenant-scoped,
// ACL-scoped read: the whole filter, and the tenant in storage form.
func goldenScope() *searchScope {
	return &searchScope{
		filter: bson.D{{Key: "$and", Value: bson.A{
			bson.D{{Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}}},
			bson.D{{Key: "orgId", Value: "org_north"}},
			bson.D{{Key: "_rperm", Value: bson.D{{Key: "$in", Value: bson.A{nil, "*", "u1"}}}}},
		}}},
		tenant: bson.D{{Key: "orgId", Value: "org_north"}},
	}
}

func stagesJSON(t *testing.T, v bson.A) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(bson.D{{Key: "p", Value: v}}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const goldenFilter = `{"$and":[{"archived":{"$ne":true}},{"orgId":"org_north"},{"_rperm":{"$in":[null,"*","u1"]}}]}`

// TestAtlasStagesGolden pins the exact Atlas Search stages sent when Atlas
// (or mongot) is detected: the tenant is in the engine's own pre-filter
// (compound.filter / $vectorSearch.filter) and the whole scope follows as a
// $match, before the limit.
func TestAtlasStagesGolden(t *testing.T) {
	s := goldenScope()
	cases := []struct {
		name string
		got  bson.A
		want string
	}{
		{"text", atlasTextStages("songs", "sea waves", []string{"title", "lyrics"}, s, 10),
			`{"p":[{"$search":{"index":"songs","compound":{"must":[{"text":{"query":"sea waves","path":["title","lyrics"]}}],"filter":[{"equals":{"path":"orgId","value":"org_north"}}]}}},` +
				`{"$match":` + goldenFilter + `},{"$limit":10},{"$project":{"_id":1,"score":{"$meta":"searchScore"}}}]}`},
		{"text without tenant", atlasTextStages("default", "sea", []string{"title"}, &searchScope{filter: bson.D{}}, 5),
			`{"p":[{"$search":{"index":"default","text":{"query":"sea","path":["title"]}}},{"$match":{}},{"$limit":5},{"$project":{"_id":1,"score":{"$meta":"searchScore"}}}]}`},
		{"autocomplete", atlasAutocompleteStages("songs", "Mid", "title", s, 3),
			`{"p":[{"$search":{"index":"songs","compound":{"must":[{"autocomplete":{"query":"Mid","path":"title"}}],"filter":[{"equals":{"path":"orgId","value":"org_north"}}]}}},` +
				`{"$match":` + goldenFilter + `},{"$limit":3},{"$project":{"_id":1,"score":{"$meta":"searchScore"}}}]}`},
		{"vector (Atlas)", vectorStages("vec", "lyricsEmbedding", []float64{0.5, -0.25}, s, "seed1", 5),
			`{"p":[{"$vectorSearch":{"index":"vec","path":"lyricsEmbedding","queryVector":[0.5,-0.25],"numCandidates":500,"limit":50,"filter":{"orgId":{"$eq":"org_north"}}}},` +
				`{"$match":{"$and":[` + goldenFilter + `,{"_id":{"$ne":"seed1"}}]}},{"$limit":5},{"$project":{"_id":1,"score":{"$meta":"vectorSearchScore"}}}]}`},
		{"vector (native index)", vectorStages("", "v", []float64{1}, &searchScope{filter: bson.D{}}, "", 200),
			`{"p":[{"$vectorSearch":{"path":"v","queryVector":[1.0],"numCandidates":10000,"limit":2000}},{"$match":{}},{"$limit":200},{"$project":{"_id":1,"score":{"$meta":"vectorSearchScore"}}}]}`},
		{"text index", textIndexStages("sea", s, 10),
			`{"p":[{"$match":{"$text":{"$search":"sea"},"$and":[` + goldenFilter + `]}},{"$sort":{"score":{"$meta":"textScore"}}},{"$limit":10},{"$project":{"_id":1,"score":{"$meta":"textScore"}}}]}`},
		{"facets", atlasFacetStages("songs", "sea", []string{"title"}, []facetSpec{{field: "genre", kind: "string"}, {field: "plays", kind: "number", boundaries: []any{0.0, 100.0}}}),
			`{"p":[{"$searchMeta":{"index":"songs","facet":{"operator":{"text":{"query":"sea","path":["title"]}},"facets":{"genre":{"type":"string","path":"genre","numBuckets":20},"plays":{"type":"number","path":"plays","boundaries":[0.0,100.0],"default":"other"}}}}}]}`},
		{"facets without query", atlasFacetStages("songs", "", nil, []facetSpec{{field: "genre", kind: "string"}}),
			`{"p":[{"$searchMeta":{"index":"songs","facet":{"operator":{"exists":{"path":"genre"}},"facets":{"genre":{"type":"string","path":"genre","numBuckets":20}}}}}]}`},
	}
	for _, c := range cases {
		if got := stagesJSON(t, c.got); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestPrefixFilterIsLiteral: autocomplete's fallback never runs a caller's
// pattern: every metacharacter is escaped and the match is anchored.
func TestPrefixFilterIsLiteral(t *testing.T) {
	for _, prefix := range []string{"Mid", "(a+)+$", ".*", "a|b", `\d{1000}`, "[x", "^$"} {
		f := PrefixFilter("title", prefix)
		re := f[0].Value.(bson.D)[0].Value.(string)
		if !strings.HasPrefix(re, "^") {
			t.Fatalf("%q: not anchored: %s", prefix, re)
		}
		compiled := regexp.MustCompile("(?i)" + re)
		if !compiled.MatchString(strings.ToUpper(prefix) + "tail") {
			t.Errorf("%q: %s does not match the literal prefix", prefix, re)
		}
		if prefix != "Mid" && compiled.MatchString("xx") {
			t.Errorf("%q: %s matches other text", prefix, re)
		}
		if opt := f[0].Value.(bson.D)[1].Value; opt != "i" {
			t.Errorf("options %v", opt)
		}
	}
}

func TestTopK(t *testing.T) {
	top := &topK{k: 3}
	for i, s := range []float64{0.1, 0.9, 0.5, 0.9, 0.2, 0.7} {
		top.add(hit{id: string(rune('a' + i)), score: s})
	}
	var got []string
	for _, h := range top.hits {
		got = append(got, h.id)
	}
	if strings.Join(got, ",") != "b,d,f" {
		t.Fatalf("top 3: %v", got)
	}
}

func TestTextScore(t *testing.T) {
	terms := queryTerms("The oceans and the Harbors")
	if strings.Join(terms, ",") != "ocean,harbor" {
		t.Fatalf("terms %v", terms)
	}
	if textScore(terms, []string{"a desert song"}) != 0 {
		t.Fatal("no term, yet a score")
	}
	one := textScore(terms, []string{"the ocean"})
	two := textScore(terms, []string{"the ocean by the harbor"})
	if one <= 0 || two <= one {
		t.Fatalf("scores %v %v: more matching terms must rank higher", one, two)
	}
	if textScore(terms, []string{"OCEAN"}) == 0 {
		t.Fatal("case matters")
	}
	if len(queryTerms("the of and")) != 0 {
		t.Fatal("stop words kept")
	}
}

func TestChunkText(t *testing.T) {
	if ChunkText("  ", 800, 100) != nil {
		t.Fatal("blank text gives chunks")
	}
	short := "One sentence."
	if c := ChunkText(short, 800, 100); len(c) != 1 || c[0] != short {
		t.Fatalf("short text: %q", c)
	}
	var sb strings.Builder
	for i := 0; sb.Len() < 3000; i++ {
		sb.WriteString("This is sentence number ")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(" about the sea. ")
	}
	text := sb.String()
	chunks := ChunkText(text, 800, 100)
	if len(chunks) < 4 || len(chunks) > 6 {
		t.Fatalf("%d chunks of %d chars", len(chunks), len(text))
	}
	for i, c := range chunks {
		if len(c) > 800 {
			t.Errorf("chunk %d has %d chars", i, len(c))
		}
		if i < len(chunks)-1 && !strings.HasSuffix(c, ".") {
			t.Errorf("chunk %d does not end at a sentence: …%q", i, c[len(c)-20:])
		}
		if i > 0 {
			// The overlap: the chunk starts inside the previous one.
			if !strings.Contains(chunks[i-1], c[:20]) {
				t.Errorf("chunk %d does not overlap the previous one", i)
			}
		}
	}
	// No boundary at all: still cut, still bounded.
	long := strings.Repeat("y", 2000)
	for _, c := range ChunkText(long, 800, 100) {
		if len(c) > 800 {
			t.Fatalf("unbroken text chunk of %d", len(c))
		}
	}
}

func TestSnippet(t *testing.T) {
	text := strings.Repeat("filler words here ", 40) + "the quiet ocean is calling " + strings.Repeat("more words ", 40)
	s := Snippet(text, queryTerms("oceans"), 120)
	if !strings.Contains(s, "ocean") || len([]rune(s)) > 122 || !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") {
		t.Fatalf("snippet %q", s)
	}
	if Snippet("short", nil, 120) != "short" {
		t.Fatal("short text changed")
	}
}

// TestSearchScopeAtlasFacetsOnlyWithoutHiddenRefs: $searchMeta cannot
// apply the not-a-hidden-reference conjunct, so atlas_faceted_search may
// count on it only when the searched fields get none (a Number facet);
// a String facet field or a text query could show a "VaultSecret$id" as a
// facet key and count rows the search never matches.
func TestSearchScopeAtlasFacetsOnlyWithoutHiddenRefs(t *testing.T) {
	d := testDeps(t, "classes:\n  VaultSecret: {hidden: true}\n")
	schema := testSchema()
	for _, c := range []struct {
		fields []string
		want   bool
	}{
		{[]string{"plays"}, true},
		{[]string{"genre"}, false},
		{[]string{"title", "plays"}, false},
	} {
		s, err := newSearchScope(t.Context(), d, schema, schema.Class("Song"), nil, c.fields)
		if err != nil {
			t.Fatal(err)
		}
		if s.policyOnly != c.want {
			t.Errorf("fields %v: policyOnly %v, want %v (filter %v)", c.fields, s.policyOnly, c.want, s.filter)
		}
	}
}
