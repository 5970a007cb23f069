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
