package terminal

import (
	"strings"
	"testing"
)

// TestFilter: what a model, a row or an endpoint puts in text cannot drive
// the terminal or hide in it: escape sequences, C0/C1 controls, bidi
// controls, zero-width and other format characters, tag characters,
// separators, runs of variation selectors and those the character before
// has no variant for are dropped, also when a chunk
// boundary splits a UTF-8 sequence; ordinary text (accents, CJK, emoji with
// one variation selector) stays.
func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"OSC 52", []string{"There are \x1b]52;c;ZXZpbA==\x07600 songs.\n"}, "There are ]52;c;ZXZpbA==600 songs.\n"},
		{"controls and bidi", []string{"a\x1b[2Jb\rc\x7fd\u009be\u202eevil\u2066x\u2069\tok"}, "a[2Jbcdeevilx\tok"},
		{"split UTF-8", []string{"caf", "\xc3", "\xa9 ", "\xe2\x80", "\xae", "!"}, "café !"},
		{"invalid byte", []string{"bad \xff byte"}, "bad  byte"},
		{"zero-width", []string{"s\u200bk\u200c-\u200dk\u2060e\ufeffy"}, "sk-key"},
		{"LRM RLM ALM", []string{"a\u200eb\u200fc\u061cd"}, "abcd"},
		{"soft hyphen", []string{"pass\u00adword"}, "password"},
		{"separators", []string{"one\u2028two\u2029three"}, "onetwothree"},
		{"tag characters", []string{"hi\U000E0049\U000E0047\U000E004E\U000E007F!"}, "hi!"},
		{"split tag character", []string{"x\xf3\xa0", "\x81\x89y"}, "xy"},
		{"Hangul filler, CGJ", []string{"a\u3164b\u034fc\u115fd"}, "abcd"},
		{"other Cf", []string{"\u0600\u2061\u2064\ufff9x\U0001d173"}, "x"},
		{"one variation selector after a base", []string{"\u2764\ufe0f ok"}, "\u2764\ufe0f ok"},
		{"variation selector run", []string{"\u2229\ufe00\ufe01\ufe02\U000E0100b"}, "\u2229\ufe00b"},
		{"keycap, ideograph, Mongolian", []string{"1\ufe0f\u20e3 \u845b\U000E0100 \u1820\u180b"}, "1\ufe0f\u20e3 \u845b\U000E0100 \u1820\u180b"},
		{"a hidden byte per letter", []string{"H\U000E0173i\U000E0165 a\ufe0fl\ufe00l \u00e9\U000E0101"}, "Hi all \u00e9"},
		{"variation selector alone", []string{" \ufe0f\U000E0101x"}, " x"},
		{"text stays", []string{"日本語 Ünïcödé — “quotes” 🎵\n"}, "日本語 Ünïcödé — “quotes” 🎵\n"},
	} {
		var b strings.Builder
		w := Filter(&b)
		for _, c := range tc.chunks {
			if n, err := w.Write([]byte(c)); err != nil || n != len(c) {
				t.Fatalf("%s: write %q: %d, %v", tc.name, c, n, err)
			}
		}
		if b.String() != tc.want {
			t.Errorf("%s: %q → %q, want %q", tc.name, tc.chunks, b.String(), tc.want)
		}
	}
}

// TestJSON: in JSON output the same characters are written as \u escapes,
// so the JSON means the same and the terminal shows the escape.
func TestJSON(t *testing.T) {
	var b strings.Builder
	in := "{\n  \"t\": \"a\u202eb\u200bc\U000E0041 é\"\n}\n"
	if _, err := JSON(&b).Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"t\": \"a\\u202eb\\u200bc\\udb40\\udc41 é\"\n}\n"; b.String() != want {
		t.Fatalf("%q, want %q", b.String(), want)
	}
}
