package jsonenc

import "unicode/utf8"

// AppendString appends s as a JSON string escaped as Marshal escapes it
// (encoding/json with HTML escaping off): invalid UTF-8 becomes \ufffd,
// U+2028 and U+2029 are escaped, control characters take their short form
// where JSON has one.
func AppendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	return appendString(dst, s, &plainSafe)
}

// AppendHTMLString is AppendString with HTML escaping on ("<" is written
// \u003c, and ">" and "&" alike): the bytes json.Marshal writes for s.
func AppendHTMLString[S ~string | ~[]byte](dst []byte, s S) []byte {
	return appendString(dst, s, &htmlSafe)
}

// plainSafe and htmlSafe mark the ASCII bytes written as they are.
var plainSafe, htmlSafe = func() (plain, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}()

const hexDigits = "0123456789abcdef"

func appendString[S ~string | ~[]byte](dst []byte, s S, safe *[utf8.RuneSelf]bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// At most utf8.UTFMax bytes converted: no allocation for a string.
		r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendHTMLEscaped appends compact JSON as json.Marshal writes a
// json.RawMessage holding it: "<", ">" and "&" (only ever inside strings)
// written as \u003c, \u003e and \u0026, U+2028 and U+2029 as \u2028 and
// \u2029. It neither validates nor compacts: src must be compact, valid
// JSON (what Marshal writes).
func AppendHTMLEscaped(dst, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
			i += 2
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}
