package scrub

import (
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

// TestScrubberForms: a secret is masked as written, JSON-escaped and
// percent-encoded; too-short secrets and empty ones are not scrubbed.
func TestScrubberForms(t *testing.T) {
	s := New([]string{"sk-live-0123456789", `pa"ss/w@rd<1>`, "ab", "", "sk-live-0123456789-longer"})
	for in, want := range map[string]string{
		"key sk-live-0123456789 end":            "key " + config.Masked + " end",
		"longer sk-live-0123456789-longer.":     "longer " + config.Masked + ".",
		`{"msg":"pw pa\"ss/w@rd\u003c1\u003e"}`: `{"msg":"pw ` + config.Masked + `"}`,
		`{"msg":"pw pa\"ss/w@rd<1>"}`:           `{"msg":"pw ` + config.Masked + `"}`,
		"mongodb://u:pa%22ss%2Fw%40rd%3C1%3E@h": "mongodb://u:" + config.Masked + "@h",
		"ab stays":                              "ab stays",
	} {
		if got := s.String(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// TestWriterStreamed: a secret streamed in pieces (an answer arrives token
// by token) is masked whole; what cannot begin a secret is written at once,
// and Flush writes a held tail.
func TestWriterStreamed(t *testing.T) {
	s := New([]string{"sk-live-0123456789"})
	var b strings.Builder
	w := s.Writer(&b)
	for _, chunk := range []string{"The key is s", "k-li", "ve-01234", "56789", ".\n"} {
		if n, err := w.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatalf("write %q: %d %v", chunk, n, err)
		}
	}
	if want := "The key is " + config.Masked + ".\n"; b.String() != want {
		t.Fatalf("%q, want %q", b.String(), want)
	}
	b.Reset()
	_, _ = w.Write([]byte("partial sk-li"))
	if b.String() != "partial " {
		t.Fatalf("written before the tail is known: %q", b.String())
	}
	_ = w.Flush()
	if b.String() != "partial sk-li" {
		t.Fatalf("after Flush: %q", b.String())
	}
}

// TestScrubberHiddenInsertionsAndEscapes: a secret an endpoint echoes with
// invisible characters inserted (raw, or as the \u escapes the JSON log
// writes for them), with a control character zerolog escapes, JSON-escaped
// character by character at any depth, or percent-encoded in lower case is
// still masked; visible characters inserted are not a secret.
func TestScrubberHiddenInsertionsAndEscapes(t *testing.T) {
	s := New([]string{"emb-adv-secret-key/0001"})
	m := config.Masked
	for in, want := range map[string]string{
		"k emb-a\u200bdv-secret-key/0001.":               "k " + m + ".",
		`k emb-a\u200bdv-secret-key/0001.`:               "k " + m + ".",
		`k emb-a\\u200bdv-secret-key/0001.`:              "k " + m + ".",
		`k emb-a\u0001dv-sec\udb40\udc41ret-key/0001.`:   "k " + m + ".",
		"k emb-a\ufe0fdv-secret-key/0001.":               "k " + m + ".",
		`k emb\u002dadv\u002dsecret\u002dkey\/0001.`:     "k " + m + ".",
		`k emb\\u002dadv\\u002dsecret\\u002dkey\\/0001.`: "k " + m + ".",
		`k \u0065mb-adv-secret-key/0001.`:                "k " + m + ".",
		"k emb-adv-secret-key%2f0001.":                   "k " + m + ".",
		"k %65mb-adv-secret-key%2F0001.":                 "k " + m + ".",
		`k emb-a\x01dv-sec\U000e0041ret-key/0001.`:       "k " + m + ".",
		"k emb-adv-secret-key 0001.":                     "k emb-adv-secret-key 0001.",
		"k emb-adv-secret-key\n/0001.":                   "k emb-adv-secret-key\n/0001.",
		`path C:\Users\x 100% done \u00e9`:               `path C:\Users\x 100% done \u00e9`,
	} {
		if got := s.String(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
	// Streamed: an escape cut between chunks is held until it is whole.
	var b strings.Builder
	w := s.Writer(&b)
	for _, chunk := range []string{"k emb-a\\u2", "00bdv-secret-k", "ey\\", "/0001."} {
		_, _ = w.Write([]byte(chunk))
	}
	_ = w.Flush()
	if want := "k " + m + "."; b.String() != want {
		t.Fatalf("streamed: %q, want %q", b.String(), want)
	}
	// A percent sign or a backslash that can no longer begin an escape is
	// written at once: an answer ending "100%" is not held back.
	b.Reset()
	for _, chunk := range []string{"up 100%", "\\n", " C:\\", "x\n"} {
		_, _ = w.Write([]byte(chunk))
	}
	if want := "up 100%\\n C:\\x\n"; b.String() != want {
		t.Fatalf("held back: %q, want %q", b.String(), want)
	}
}

// BenchmarkEscapedJSON: JSON full of escapes (a result of escaped text)
// through a scrubber of several secrets.
func BenchmarkEscapedJSON(b *testing.B) {
	s := New([]string{"sk-live-0123456789", "emb-adv-secret-key/0001", "confirm-0123456789abcdef", "mongopass-0123"})
	in := []byte(strings.Repeat(`{"t":"a\\u00e9b\\\"c\\n d%20e"},`, 4096))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		_, _ = s.scrub(in, true)
	}
}
