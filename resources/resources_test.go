package resources

import (
	"fmt"
	"strings"
	"testing"
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
