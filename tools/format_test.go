package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
)

func TestCSVField(t *testing.T) {
	cases := map[string]string{
		"plain":          "plain",
		"":               "",
		"a,b":            `"a,b"`,
		`say "hi"`:       `"say ""hi"""`,
		"two\nlines":     "\"two\nlines\"",
		"cr\rhere":       "\"cr\rhere\"",
		" leading space": " leading space",
		"=1+1":           "=1+1",
	}
	for in, want := range cases {
		if got := csvField(in); got != want {
			t.Errorf("csvField(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderTextGolden(t *testing.T) {
	headers := []string{"title", "genre", "plays"}
	rows := [][]string{
		{"Blue, Green", "rock", "42"},
		{`Say "hi" | bye`, "jazz", "7"},
		{"line\nbreak", "", "1000000"},
	}
	cases := map[string]string{
		"csv": "title,genre,plays\n" +
			"\"Blue, Green\",rock,42\n" +
			"\"Say \"\"hi\"\" | bye\",jazz,7\n" +
			"\"line\nbreak\",,1000000\n",
		"markdown": "| title | genre | plays |\n" +
			"| --- | --- | --- |\n" +
			"| Blue, Green | rock | 42 |\n" +
			"| Say \"hi\" \\| bye | jazz | 7 |\n" +
			"| line<br>break |  | 1000000 |\n",
		"table": "title           genre  plays\n" +
			"--------------  -----  -------\n" +
			"Blue, Green     rock   42\n" +
			"Say \"hi\" | bye  jazz   7\n" +
			"line break             1000000\n",
	}
	for format, want := range cases {
		if got := renderText(format, headers, rows); got != want {
			t.Errorf("%s:\n got %q\nwant %q", format, got, want)
		}
	}
	// No rows: just the header (and the markdown separator).
	if got := renderText("csv", headers, nil); got != "title,genre,plays\n" {
		t.Errorf("empty csv = %q", got)
	}
}

func TestTableCellWidthCap(t *testing.T) {
	long := strings.Repeat("é", 100)
	out := renderText("table", []string{"x"}, [][]string{{long}})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if got := len([]rune(lines[2])); got != maxTableCell {
		t.Errorf("cell width %d, want %d", got, maxTableCell)
	}
	if !strings.HasSuffix(lines[2], "…") {
		t.Errorf("long cell not ellipsized: %q", lines[2])
	}
}

func TestCellString(t *testing.T) {
	row := decodeOrFail(t, `{"objectId":"s1","plays":2147483648,"ratio":0.25,"big":12345678901234567890,"ok":true,"none":null,
		"released":{"__type":"Date","iso":"2020-01-02T03:04:05.000Z"},
		"artist":{"__type":"Pointer","className":"Artist","objectId":"a1"},
		"album":{"__type":"Object","className":"Album","objectId":"b1","title":"T","artist":{"__type":"Object","className":"Artist","objectId":"a2","name":"N"}},
		"cover":{"__type":"File","name":"c.png"},"loc":{"__type":"GeoPoint","latitude":1.5,"longitude":-2},
		"leak":{"__redacted":true},"tags":["a","b,c"],"meta":{"k":[1,{"z":"<&>"}]}}`)
	cases := map[string]string{
		"objectId":           "s1",
		"plays":              "2147483648",
		"ratio":              "0.25",
		"big":                "12345678901234567890",
		"ok":                 "true",
		"none":               "",
		"missing":            "",
		"released":           "2020-01-02T03:04:05.000Z",
		"artist":             "a1",
		"artist.objectId":    "a1",
		"album.title":        "T",
		"album.artist.name":  "N",
		"album.artist.nope":  "",
		"title.deeper":       "",
		"cover":              "c.png",
		"loc":                "1.5,-2",
		"leak":               "[redacted]",
		"tags":               `["a","b,c"]`,
		"meta":               `{"k":[1,{"z":"<&>"}]}`,
		"meta.k":             `[1,{"z":"<&>"}]`,
		"released.iso":       "2020-01-02T03:04:05.000Z",
		"album.artist.__typ": "",
	}
	for path, want := range cases {
		if got := cellString(columnValue(row, path)); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}

func decodeOrFail(t *testing.T, s string) map[string]any {
	t.Helper()
	var compact strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		compact.WriteString(strings.TrimSpace(line))
	}
	m, err := decodeRow([]byte(compact.String()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestJSONStringLen(t *testing.T) {
	for _, s := range []string{"", "abc", "a\"b\\c\nd\re\tf", "\x01\x1f", "é✓", "<&>"} {
		b, _ := jsonenc.Marshal(s)
		if got, want := jsonStringLen(s), len(b)-2; got != want {
			t.Errorf("jsonStringLen(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestFitText(t *testing.T) {
	rows := make([][]string, 100)
	for i := range rows {
		rows[i] = []string{strings.Repeat("x", 50)}
	}
	out, kept, trimmed := fitText("table", []string{"h"}, rows, 2000)
	if !trimmed || len(kept) == 0 || len(kept) >= 100 || jsonStringLen(out) > 2000 {
		t.Errorf("trimmed=%v kept=%d size=%d", trimmed, len(kept), jsonStringLen(out))
	}
	out, kept, trimmed = fitText("csv", []string{"h"}, rows[:2], 2000)
	if trimmed || len(kept) != 2 || !strings.HasPrefix(out, "h\n") {
		t.Errorf("small: trimmed=%v kept=%d", trimmed, len(kept))
	}
}

func TestColumnsArg(t *testing.T) {
	cols, err := readColumns(context.Background(), Args{"columns": "title, artist.name,plays"}, nil)
	if err != nil || len(cols) != 3 || cols[1] != (column{"artist.name", "artist.name"}) {
		t.Fatalf("string form: %v %v", cols, err)
	}
	var obj map[string]any
	_ = json.Unmarshal([]byte(`{"plays":"Plays","title":"Title","artist.name":"Artist","genre":"Genre"}`), &obj)
	cols, err = readColumns(context.Background(), Args{"columns": obj}, []string{"title", "plays"})
	if err != nil {
		t.Fatal(err)
	}
	if got := columnHeaders(cols); strings.Join(got, ",") != "Title,Plays,Artist,Genre" {
		t.Errorf("object form order = %v (keys order first, then by path)", got)
	}
	for _, bad := range []any{42.0, map[string]any{"title": 1.0}, map[string]any{"title": ""}, "", []any{"$where"}, []any{"a..b"}} {
		if _, err := readColumns(context.Background(), Args{"columns": bad}, nil); err == nil {
			t.Errorf("columns %v: want an error", bad)
		}
	}
	many := make([]any, MaxKeys+1)
	for i := range many {
		many[i] = "f" + strings.Repeat("x", i%5) + string(rune('a'+i%26))
	}
	if _, err := readColumns(context.Background(), Args{"columns": many}, nil); err == nil {
		t.Error("65 columns: want an error")
	}
	if cols, err := readColumns(context.Background(), Args{}, nil); cols != nil || err != nil {
		t.Error("absent columns must be nil")
	}
}
