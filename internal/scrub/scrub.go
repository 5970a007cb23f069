// Package scrub is the one scrubber of the secrets the process holds: every
// log line, every error and every byte the CLI commands print passes it, so
// a secret an endpoint, a model or a row echoes back prints as
// config.Masked (SECURITY.md "Secrets in output").
package scrub

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/terminal"
)

// MinLen is the shortest secret scrubbed: replacing every "a" or "db" of the
// output would make it unreadable and protect nothing.
const MinLen = 4

// Scrubber replaces secrets by config.Masked.
type Scrubber struct {
	secrets [][]byte // longest first, so a secret holding another goes whole
	first   [256]bool
}

var masked = []byte(config.Masked)

// New scrubs each secret as written and as JSON, a URL or a form escapes it
// (a log line is JSON; a password sits percent-encoded in a connection
// string).
func New(secrets []string) *Scrubber {
	s := &Scrubber{}
	seen := map[string]bool{}
	for _, secret := range secrets {
		jsonText, _ := json.Marshal(secret)
		var htmlSafe bytes.Buffer
		enc := json.NewEncoder(&htmlSafe)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(secret)
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret),
			strings.Trim(string(jsonText), `"`), strings.Trim(strings.TrimSpace(htmlSafe.String()), `"`)} {
			if len(form) < MinLen || seen[form] || strings.Contains(config.Masked, form) {
				continue
			}
			seen[form] = true
			s.secrets = append(s.secrets, []byte(form))
			s.first[form[0]] = true
		}
	}
	slices.SortFunc(s.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return s
}

// String is s with every secret masked.
func (s *Scrubber) String(text string) string {
	out, _ := s.scrub([]byte(text), true)
	return string(out)
}

// scrub masks every secret in b. Unless final, it stops at the first
// position where b's tail could still become a secret with more bytes, and
// returns that tail as held.
func (s *Scrubber) scrub(b []byte, final bool) (out, held []byte) {
	if len(s.secrets) == 0 {
		return b, nil
	}
	out = make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if !s.mayStart(b[i:]) {
			out = append(out, b[i])
			i++
			continue
		}
		rest, matched, partial := b[i:], 0, false
		for _, secret := range s.secrets {
			n, more := matchAt(rest, secret)
			if n > 0 {
				matched = n
				break
			}
			if !final && more && len(rest) <= maxHeld {
				partial = true // a longer secret may be under way: wait for it
				break
			}
		}
		switch {
		case partial:
			return out, append([]byte(nil), rest...)
		case matched > 0:
			out = append(out, masked...)
			i += matched
		default:
			out = append(out, b[i])
			i++
		}
	}
	return out, nil
}

// mayStart reports whether a secret may begin at b[0]: its first byte as
// written, or escaped (\u0073, %73), or an escape not yet complete.
func (s *Scrubber) mayStart(b []byte) bool {
	switch {
	case s.first[b[0]]:
		return true
	case b[0] == '%':
		if len(b) < 3 {
			_, ok := hexValue(b[1:])
			return ok // a percent escape may still be under way
		}
		c, ok := hexValue(b[1:3])
		return ok && s.first[byte(c)]
	case b[0] == '\\':
		r, size, more := unescape(b)
		if size == 0 {
			return more
		}
		var first [utf8.UTFMax]byte
		utf8.EncodeRune(first[:], r)
		return s.first[first[0]]
	}
	return false
}

// hexValue is b read as hexadecimal digits.
func hexValue(b []byte) (rune, bool) {
	var v rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// maxHeld bounds what a stream holds back while a secret may be under way.
const maxHeld = 64 << 10

// matchAt reports how many bytes at the start of b spell secret, or (n = 0)
// whether b ends before it is known (more). A secret's byte may be written
// as itself, JSON-escaped at any depth (\u002d, \\u002d, \/) or
// percent-encoded in either case (%2f); between its bytes, characters the
// terminal filter removes or a terminal shows as nothing (zero-width and
// bidi characters, controls, tag characters, variation selectors), raw or
// as their JSON escapes, are skipped: inserted into a secret, they would
// hide it from the scrubber but not from whoever reads the log.
func matchAt(b, secret []byte) (n int, more bool) {
	p := 0
	for j := 0; j < len(secret); {
		if p >= len(b) {
			return 0, true
		}
		c := secret[j]
		if b[p] == c {
			p, j = p+1, j+1
			continue
		}
		switch b[p] {
		case '%':
			if p+3 > len(b) {
				_, ok := hexValue(b[p+1:])
				return 0, ok
			}
			if v, ok := hexValue(b[p+1 : p+3]); ok && byte(v) == c {
				p, j = p+3, j+1
				continue
			}
			return 0, false
		case '\\':
			r, size, ok := unescape(b[p:])
			if size == 0 {
				return 0, ok // ok: the escape is not complete yet
			}
			want, wsize := utf8.DecodeRune(secret[j:])
			switch {
			case r == want:
				p, j = p+size, j+wsize
			case j > 0 && hidden(r):
				p += size
			default:
				return 0, false
			}
			continue
		}
		r, size := utf8.DecodeRune(b[p:])
		if r == utf8.RuneError && !utf8.FullRune(b[p:]) {
			return 0, true
		}
		if j == 0 || r == utf8.RuneError || !hidden(r) {
			return 0, false
		}
		p += size
	}
	return p, false
}

// hidden reports whether r is never seen between two visible characters.
func hidden(r rune) bool {
	return terminal.Unsafe(r) || unicode.Is(unicode.Variation_Selector, r)
}

// unescape reads one JSON escape (or one of Go's \x and \U, which the
// console log writer quotes with), behind any number of backslashes (a JSON
// string quoted in another): the rune, its length, and, with size 0,
// whether more bytes could complete it.
func unescape(b []byte) (r rune, size int, more bool) {
	p := 0
	for p < len(b) && b[p] == '\\' {
		p++
	}
	if p == len(b) {
		return 0, 0, true
	}
	switch b[p] {
	case '/', '"':
		return rune(b[p]), p + 1, false
	case 'b':
		return '\b', p + 1, false
	case 'f':
		return '\f', p + 1, false
	case 'r':
		return '\r', p + 1, false
	case 'a':
		return '\a', p + 1, false
	case 'v':
		return '\v', p + 1, false
	}
	var digits int
	switch b[p] {
	case 'u':
		digits = 4
	case 'x': // Go's strconv.Quote, as \U
		digits = 2
	case 'U':
		digits = 8
	default:
		return 0, 0, false
	}
	if p+1+digits > len(b) {
		_, ok := hexValue(b[p+1:])
		return 0, 0, ok // more only while the digits so far are hex
	}
	v, ok := hexValue(b[p+1 : p+1+digits])
	if !ok || v < 0 || v > unicode.MaxRune {
		return 0, 0, false
	}
	r, size = v, p+1+digits
	if r >= 0xd800 && r < 0xdc00 { // a high surrogate: its pair follows
		lo, losize, more := unescape(b[size:])
		if losize == 0 {
			return 0, 0, more
		}
		r, size = utf16.DecodeRune(r, lo), size+losize
	}
	return r, size, false
}

// Writer is a stream through the scrubber: the bytes that may begin a secret
// still being written (an answer streams in chunks) are held until the next
// write shows what follows them, or until Flush. Safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	s    *Scrubber
	w    io.Writer
	held []byte
}

// Writer wraps w.
func (s *Scrubber) Writer(w io.Writer) *Writer { return &Writer{s: s, w: w} }

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := p
	if len(w.held) > 0 {
		b = append(w.held, p...)
	}
	out, held := w.s.scrub(b, false)
	w.held = held
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held, scrubbed as the end of the stream.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	out, _ := w.s.scrub(w.held, true)
	w.held = nil
	_, err := w.w.Write(out)
	return err
}
