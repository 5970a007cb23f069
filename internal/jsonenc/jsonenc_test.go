package jsonenc

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{map[string]any{"a": "<b> & c"}, `{"a":"<b> & c"}`},
		{json.RawMessage(`{"r":"<x>&"}`), `{"r":"<x>&"}`},
		{struct {
			R json.RawMessage `json:"r"`
		}{json.RawMessage(`["\u003c"]`)}, `{"r":["\u003c"]}`}, // an escape already in raw bytes stays as it is
		{"\u2028", `"\u2028"`}, // line separators stay escaped, as encoding/json does
	} {
		got, err := Marshal(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// The string appenders write exactly what encoding/json writes, with HTML
// escaping off (Marshal) and on (json.Marshal); AppendHTMLEscaped writes a
// compact raw message as json.Marshal writes it.
func TestAppendersMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "<", ">", "&", "é", "😀", "\u2028",
		"\u2029", "\xff", "\xc3", "\xe2\x80", "\xe2\x80\xa8", "\xed\xa0\x80", "\xf0\x9f", "$", "\t", "\b", "\f", "\u00e2\u0080"}
	for range 50000 {
		var sb strings.Builder
		for range rng.Intn(12) {
			sb.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		appendersMatchEncodingJSON(t, sb.String())
	}
}

// appendersMatchEncodingJSON fails t unless AppendString (of s as a string
// and as []byte), AppendHTMLString and AppendHTMLEscaped (of a compact
// message holding s as a key and a value, as a tool's structuredContent
// holds its rows) write what encoding/json writes.
func appendersMatchEncodingJSON(t *testing.T, s string) {
	t.Helper()
	plain, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendString(nil, []byte(s)); !bytes.Equal(got, plain) {
		t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, plain)
	}
	if got := AppendString([]byte("x"), s); !bytes.Equal(got[1:], plain) {
		t.Fatalf("AppendString(string %q) = %s, encoding/json %s", s, got[1:], plain)
	}
	html, _ := json.Marshal(s)
	if got := AppendHTMLString(nil, s); !bytes.Equal(got, html) {
		t.Fatalf("AppendHTMLString(%q) = %s, json.Marshal %s", s, got, html)
	}
	raw := []byte(`{` + string(plain) + `:[` + string(plain) + `,1.5e3,null]}`)
	want, _ := json.Marshal(json.RawMessage(raw))
	if got := AppendHTMLEscaped(nil, raw); !bytes.Equal(got, want) {
		t.Fatalf("AppendHTMLEscaped(%s) = %s, json.Marshal %s", raw, got, want)
	}
}

func TestAppendStringAllocatesOnlyItsResult(t *testing.T) {
	s := strings.Repeat("é<\u2028x", 100)
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { _ = AppendString(buf[:0], s) }); n != 0 {
		t.Fatalf("AppendString allocated %v times", n)
	}
}
