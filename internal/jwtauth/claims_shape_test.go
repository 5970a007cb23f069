package jwtauth

import (
	"regexp"
	"strings"
	"testing"
)

// TestClaimShapesEqualOldRegexps: the byte-loop claim checks accept exactly
// what the anchored regular expressions they replaced accepted, on length
// bounds and character attacks (multibyte, NUL, DEL, space, a trailing
// newline).
func TestClaimShapesEqualOldRegexps(t *testing.T) {
	for _, c := range []struct {
		name string
		got  func(string) bool
		old  *regexp.Regexp
	}{
		{"printable", printableRe.MatchString, regexp.MustCompile(`^[\x21-\x7e]{1,256}$`)},
		{"client id", clientIDRe.MatchString, regexp.MustCompile(`^[A-Za-z0-9._:/@+-]{1,128}$`)},
	} {
		for _, n := range []int{0, 1, 127, 128, 129, 255, 256, 257} {
			base := strings.Repeat("a", n)
			for _, s := range []string{base, base + "é", base + "\n", base + " ", base + "\x00", base + "\x7f", base + "ａ", base + "%", base + "=", base + "~", base + "!", base + "+", base + "/", base + ":", base + "@", "\n" + base} {
				if got, want := c.got(s), c.old.MatchString(s); got != want {
					t.Errorf("%s(%q) (len %d) = %v, old regexp %v", c.name, s, len(s), got, want)
				}
			}
		}
	}
}
