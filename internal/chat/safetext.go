package chat

import (
	"io"
	"unicode/utf8"
)

// SafeText wraps a writer that a terminal shows (the answer, traces,
// /history): it drops the control characters a model could copy from
// untrusted rows into its answer — escape sequences (ESC, C1 controls) that
// retitle the window, write the clipboard (OSC 52) or hide text, other C0
// controls and DEL, and the bidirectional overrides and isolates that
// reorder what is shown (U+202A–U+202E, U+2066–U+2069). Newlines and tabs
// stay. A UTF-8 sequence split across writes (streamed chunks) is carried to
// the next write.
func SafeText(w io.Writer) io.Writer { return &safeText{w: w} }

type safeText struct {
	w     io.Writer
	carry []byte
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func (s *safeText) Write(p []byte) (int, error) {
	b := append(s.carry, p...)
	s.carry = nil
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(b[i:]) {
				s.carry = append([]byte(nil), b[i:]...)
				break
			}
			i++ // invalid byte: dropped
			continue
		}
		if !unsafeRune(r) {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
