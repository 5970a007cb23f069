package parsedb

import (
	"context"
	"encoding/json"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func projSongClass() *Class {
	return ClassFromSchemaDoc(bson.M{
		"_id": "Song", "title": "string", "artist": "*Artist", "album": "*Album", "genre": "string",
		"plays": "number", "releasedAt": "date", "tags": "array", "meta": "object", "lyrics": "string",
	})
}

// ext renders a value as canonical extended JSON for golden comparison.
func ext(t *testing.T, v any) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseOrder(t *testing.T) {
	cases := []struct {
		in   []string
		want []OrderKey
		err  bool
	}{
		{nil, nil, false},
		{[]string{"-plays,title"}, []OrderKey{{"plays", true}, {"title", false}}, false},
		{[]string{"-plays", " +title ", ""}, []OrderKey{{"plays", true}, {"title", false}}, false},
		{[]string{"meta.importedAt"}, []OrderKey{{"meta.importedAt", false}}, false},
		{[]string{"-createdAt,objectId"}, []OrderKey{{"createdAt", true}, {"objectId", false}}, false},
		{[]string{"plays,-plays"}, nil, true},
		{[]string{"$where"}, nil, true},
		{[]string{"_p_artist"}, nil, true},
		{[]string{"--x"}, nil, true},
	}
	for _, c := range cases {
		got, err := ParseOrder(c.in)
		if (err != nil) != c.err {
			t.Errorf("ParseOrder(%q) err = %v, want error %v", c.in, err, c.err)
			continue
		}
		if !c.err && ext(t, got) != ext(t, c.want) {
			t.Errorf("ParseOrder(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestFindCommandGolden pins the exact find command of each read option.
func TestFindCommandGolden(t *testing.T) {
	song := projSongClass()
	s := &Store{Prefix: "app_"}
	order := func(e ...string) []OrderKey {
		k, err := ParseOrder(e)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	cases := []struct {
		name string
		spec FindSpec
		want string
	}{
		{"defaults: empty filter, _id sort", FindSpec{Sort: SortDoc(song, nil), Limit: 101, BatchSize: 101},
			`{"find":"app_Song","filter":{},"sort":{"_id":{"$numberInt":"1"}},"limit":{"$numberLong":"101"},"batchSize":{"$numberInt":"101"}}`},
		{"filter", FindSpec{Filter: bson.D{{Key: "genre", Value: "rock"}}},
			`{"find":"app_Song","filter":{"genre":"rock"}}`},
		{"keys → projection with identity columns and _p_ pointers", FindSpec{Projection: Projection(song, []string{"title", "artist", "objectId", "meta.importedAt"})},
			`{"find":"app_Song","filter":{},"projection":{"_created_at":{"$numberInt":"1"},"_updated_at":{"$numberInt":"1"},"title":{"$numberInt":"1"},"_p_artist":{"$numberInt":"1"},"meta":{"$numberInt":"1"}}}`},
		{"pointer sub-path projects the pointer", FindSpec{Projection: Projection(song, []string{"artist.name", "artist.country"})},
			`{"find":"app_Song","filter":{},"projection":{"_created_at":{"$numberInt":"1"},"_updated_at":{"$numberInt":"1"},"_p_artist":{"$numberInt":"1"}}}`},
		{"overlapping paths collapse", FindSpec{Projection: Projection(song, []string{"meta.a", "meta", "meta.b.c", "title", "title"})},
			`{"find":"app_Song","filter":{},"projection":{"_created_at":{"$numberInt":"1"},"_updated_at":{"$numberInt":"1"},"meta":{"$numberInt":"1"},"title":{"$numberInt":"1"}}}`},
		{"order with tie-breaker", FindSpec{Sort: SortDoc(song, order("-plays,artist,createdAt"))},
			`{"find":"app_Song","filter":{},"sort":{"plays":{"$numberInt":"-1"},"_p_artist":{"$numberInt":"1"},"_created_at":{"$numberInt":"1"},"_id":{"$numberInt":"1"}}}`},
		{"objectId in order: no tie-breaker", FindSpec{Sort: SortDoc(song, order("-objectId"))},
			`{"find":"app_Song","filter":{},"sort":{"_id":{"$numberInt":"-1"}}}`},
		{"skip and limit", FindSpec{Skip: 200, Limit: 101},
			`{"find":"app_Song","filter":{},"skip":{"$numberLong":"200"},"limit":{"$numberLong":"101"}}`},
		{"exclusion projection", FindSpec{Projection: ExclusionProjection(song, []string{"lyrics", "artist"})},
			`{"find":"app_Song","filter":{},"projection":{"lyrics":{"$numberInt":"0"},"_p_artist":{"$numberInt":"0"}}}`},
	}
	for _, c := range cases {
		got, err := bson.MarshalExtJSON(s.FindCommand(context.Background(), "Song", c.spec), true, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestProjectionEmptyKeys(t *testing.T) {
	if p := Projection(projSongClass(), nil); p != nil {
		t.Errorf("Projection(nil) = %v, want nil (every field)", p)
	}
	if p := ExclusionProjection(projSongClass(), nil); p != nil {
		t.Errorf("ExclusionProjection(nil) = %v", p)
	}
	if r := KeyRoots([]string{"artist.name", "title", "meta.a.b"}); len(r) != 3 || !r["artist"] || !r["title"] || !r["meta"] {
		t.Errorf("KeyRoots = %v", r)
	}
}

func TestExplainCommandGolden(t *testing.T) {
	s := &Store{}
	got, _ := bson.MarshalExtJSON(s.ExplainCommand(context.Background(), "Song", bson.D{{Key: "genre", Value: "rock"}}), true, false)
	want := `{"explain":{"find":"Song","filter":{"genre":"rock"}},"verbosity":"queryPlanner"}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestSummarizeExplain(t *testing.T) {
	raw := func(js string) bson.Raw {
		var d bson.D
		if err := bson.UnmarshalExtJSON([]byte(js), false, &d); err != nil {
			t.Fatal(err)
		}
		b, _ := bson.Marshal(d)
		return b
	}
	cases := []struct {
		name, in, want string
	}{
		{"classic IXSCAN",
			`{"queryPlanner":{"winningPlan":{"stage":"FETCH","inputStage":{"stage":"IXSCAN","indexName":"genre_1"}}},"ok":1}`,
			`{"available":true,"stages":["FETCH","IXSCAN"],"indexes":["genre_1"],"collscan":false}`},
		{"COLLSCAN",
			`{"queryPlanner":{"winningPlan":{"stage":"COLLSCAN"}}}`,
			`{"available":true,"stages":["COLLSCAN"],"collscan":true}`},
		{"SBE queryPlan wrapper and OR inputStages",
			`{"queryPlanner":{"winningPlan":{"queryPlan":{"stage":"SUBPLAN","inputStage":{"stage":"OR","inputStages":[{"stage":"IXSCAN","indexName":"a_1"},{"stage":"IXSCAN","indexName":"b_1"},{"stage":"IXSCAN","indexName":"a_1"}]}},"slotBasedPlan":{}}}}`,
			`{"available":true,"stages":["SUBPLAN","OR","IXSCAN","IXSCAN","IXSCAN"],"indexes":["a_1","b_1"],"collscan":false}`},
		{"FerretDB: no winningPlan",
			`{"queryPlanner":{"Plan":[{"id":2,"detail":"SCAN"}]},"ok":1}`,
			`{"available":false,"collscan":false}`},
		{"empty", `{}`, `{"available":false,"collscan":false}`},
	}
	for _, c := range cases {
		got, _ := json.Marshal(SummarizeExplain(raw(c.in)))
		if string(got) != c.want {
			t.Errorf("%s: got %s want %s", c.name, got, c.want)
		}
	}
}
