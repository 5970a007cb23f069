package resources

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestURIPattern(t *testing.T) {
	for _, ok := range []string{"parse://Song/schema", "parse://_User/count", "parse://A_1/samples"} {
		if _, _, valid := parseURI(ok); !valid {
			t.Errorf("%s refused", ok)
		}
	}
	if class, kind, _ := parseURI("parse://_User/count"); class != "_User" || kind != "count" {
		t.Errorf("parse://_User/count: class %q, kind %q", class, kind)
	}
	for _, bad := range []string{"parse://Song", "parse://Song/", "parse:///count", "parse://" + strings.Repeat("a", 129) + "/count", "parse://1Song/count", "parse://Song/count/x", "parse://Song/count?x", "parse://_Join:a:B/count", "PARSE://Song/count", " parse://Song/count", "parse://Song/Count"} {
		if _, _, valid := parseURI(bad); valid {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestComplete(t *testing.T) {
	classes := []string{"Album", "Artist", "Playlist", "Song", "_Installation", "_User"}
	cases := map[string]string{
		"":   "Album Artist Playlist Song _Installation _User",
		"a":  "Album Artist",
		"AL": "Album _Installation",
		"so": "Song",
		"zz": "",
		"_u": "_User",
	}
	for typed, want := range cases {
		if got := strings.Join(Complete(classes, typed).Values, " "); got != want {
			t.Errorf("%q: %q, want %q", typed, got, want)
		}
	}
	var many []string
	for i := range 150 {
		many = append(many, fmt.Sprintf("C%03d", i))
	}
	c := Complete(many, "c")
	if len(c.Values) != MaxCompletionValues || c.Total != 150 || !c.HasMore {
		t.Fatalf("%d values, total %d, hasMore %v", len(c.Values), c.Total, c.HasMore)
	}
}

func TestSampledRows(t *testing.T) {
	newest := time.Date(2024, 11, 23, 20, 51, 16, 856e6, time.UTC)
	for _, tc := range []struct {
		name, result string
		ids          []string
		newest       time.Time
	}{
		{"columns", `{"columns":["objectId","createdAt","updatedAt","title"],"rows":[["a1","2023-11-11T01:19:53.248Z","2024-11-23T20:51:16.856Z","x"],["b2","2023-11-11T01:10:53.082Z","2023-11-11T01:10:53.082Z","y"]]}`,
			[]string{"a1", "b2"}, newest},
		{"objects", `{"samples":[{"objectId":"a1","updatedAt":"2023-11-11T01:10:53.082Z"},{"objectId":"b2","updatedAt":"2024-11-23T20:51:16.856Z"}]}`,
			[]string{"a1", "b2"}, newest},
		{"no updatedAt column", `{"columns":["objectId"],"rows":[["a1"]]}`, []string{"a1"}, time.Time{}},
		{"short row", `{"columns":["objectId","updatedAt"],"rows":[[]]}`, nil, time.Time{}},
		{"not JSON", `{`, nil, time.Time{}},
	} {
		ids, got := sampledRows([]byte(tc.result))
		if strings.Join(ids, ",") != strings.Join(tc.ids, ",") || !got.Equal(tc.newest) {
			t.Errorf("%s: ids %v newest %v, want %v %v", tc.name, ids, got, tc.ids, tc.newest)
		}
	}
}
