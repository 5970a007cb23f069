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

	"github.com/parse-mcp/parse-mcp/internal/config"
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
		if !s.first[b[i]] {
			out = append(out, b[i])
			i++
			continue
		}
		rest, matched, partial := b[i:], 0, false
		for _, secret := range s.secrets {
			if bytes.HasPrefix(rest, secret) {
				matched = len(secret)
				break
			}
			if !final && len(rest) < len(secret) && bytes.HasPrefix(secret, rest) {
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
