// Package terminal is the one filter between what the CLI commands print
// (chat, ask, call, embed and the other one-shot commands) and the terminal
// that shows it: text copied from untrusted rows, a model's answer or an
// endpoint's error message cannot drive the terminal or hide text in it
// (SECURITY.md "Terminal output").
package terminal

import (
	"fmt"
	"io"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Unsafe reports whether r never reaches a terminal as itself: C0 controls
// but newline and tab, DEL, C1 controls (escape sequences that retitle the
// window, write the clipboard or recolour text); every format character
// (Unicode category Cf: bidirectional marks, overrides and isolates,
// zero-width spaces and joiners, the word joiner, the byte-order mark, the
// soft hyphen, the tag characters U+E0000–U+E007F); the line and paragraph
// separators U+2028/U+2029; and every other default-ignorable code point a
// renderer shows as nothing (Hangul fillers, the combining grapheme joiner,
// the Khmer inherent vowels, unassigned U+2065, U+FFF0–U+FFF8, U+E0080–
// U+E0FFF). Variation selectors are judged by the filter (variantOf): one
// a visible character has variants for stays, the others go.
func Unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r <= 0x9f:
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// Filter wraps a writer a terminal shows: the runes Unsafe names are
// dropped (dropped, not shown as placeholders, so that a secret split by
// invisible characters is whole again for the scrubber behind it). A UTF-8
// sequence split across writes (streamed chunks) is carried to the next
// write; an invalid byte is dropped. Safe for concurrent use.
func Filter(w io.Writer) io.Writer { return &filter{w: w} }

// JSON wraps a writer of JSON text (call's result, describe): a rune Unsafe
// names is written as its \u escape instead, so the JSON means the same to
// a program and the terminal shows the escape, not the effect.
func JSON(w io.Writer) io.Writer { return &filter{w: w, escape: true} }

type filter struct {
	mu     sync.Mutex
	w      io.Writer
	escape bool
	carry  []byte
	// base: the last rune written, when visible and not yet given a
	// variation selector (0 otherwise).
	base rune
}

func (f *filter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := append(f.carry, p...)
	f.carry = nil
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if c := b[i]; c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			out = append(out, c) // printable ASCII: the common case
			f.base = 0
			if c > ' ' {
				f.base = rune(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(b[i:]) {
				f.carry = append([]byte(nil), b[i:]...)
				break
			}
			i++ // invalid byte: dropped
			f.base = 0
			continue
		}
		keep := !Unsafe(r)
		if unicode.Is(unicode.Variation_Selector, r) {
			keep = variantOf(f.base, r)
			f.base = 0
		} else if f.base = 0; keep && !unicode.IsSpace(r) {
			f.base = r
		}
		switch {
		case keep:
			out = append(out, b[i:i+size]...)
		case f.escape:
			out = appendEscape(out, r)
		}
		i += size
	}
	if _, err := f.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// variantOf reports whether the variation selector vs after base (0: none)
// is one a text needs: the emoji or text presentation (U+FE0E/U+FE0F) of a
// non-ASCII character or a keycap's digit, #, *; an ideographic variation
// (U+E0100–U+E01EF) of an ideograph; a Mongolian free variation selector of
// a Mongolian letter; a standardized variant (U+FE00–U+FE0D) of a non-ASCII
// character. Others carry hidden text: one of 256 selectors after each
// letter of an ordinary sentence is a hidden byte per letter.
func variantOf(base, vs rune) bool {
	switch {
	case base == 0:
		return false
	case vs == 0xfe0e || vs == 0xfe0f:
		return base >= 0x80 || base >= '0' && base <= '9' || base == '#' || base == '*'
	case vs >= 0xe0100:
		return unicode.Is(unicode.Ideographic, base)
	case vs >= 0x180b && vs <= 0x180f:
		return unicode.Is(unicode.Mongolian, base)
	}
	return base >= 0x80
}

// appendEscape writes r as JSON's \uXXXX (a surrogate pair above U+FFFF).
func appendEscape(out []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		return fmt.Appendf(out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
	}
	return fmt.Appendf(out, `\u%04x`, r)
}
