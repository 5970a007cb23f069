package server

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", MaxMessageBytes+10)
	tests := []struct {
		name    string
		in      string
		want    []string
		tooLong int
	}{
		{"simple", "a\nb\n", []string{"a", "b"}, 0},
		{"no final newline", "a\nb", []string{"a", "b"}, 0},
		{"blank lines skipped", "\n  \na\r\n\n", []string{"a"}, 0},
		{"oversized then ok", long + "\nok\n", []string{"ok"}, 1},
		{"oversized at EOF", long, nil, 1},
		{"exactly the cap", strings.Repeat("y", MaxMessageBytes) + "\n", []string{strings.Repeat("y", MaxMessageBytes)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make(chan []byte, 16)
			n := 0
			err := readLines(context.Background(), strings.NewReader(tt.in), func(l []byte) bool { out <- l; return true }, func() { n++ })
			close(out)
			if err != io.EOF {
				t.Fatalf("err = %v", err)
			}
			var got []string
			for l := range out {
				got = append(got, string(l))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("line %d differs", i)
				}
			}
			if n != tt.tooLong {
				t.Fatalf("tooLong = %d, want %d", n, tt.tooLong)
			}
		})
	}
}

func TestJSONDepth(t *testing.T) {
	tests := []struct {
		in    string
		depth int
		ok    bool
	}{
		{`{}`, 1, true},
		{`{"a":{"b":[1,[2]]}}`, 4, true},
		{`{"a":"{{{{"}`, 1, true},
		{`{"a":"\"{"}`, 1, true},
		{`{`, 1, false},
		{`}`, 0, false},
	}
	for _, tt := range tests {
		d, ok := jsonDepth([]byte(tt.in))
		if d != tt.depth || ok != tt.ok {
			t.Errorf("jsonDepth(%s) = %d,%v want %d,%v", tt.in, d, ok, tt.depth, tt.ok)
		}
	}
}
