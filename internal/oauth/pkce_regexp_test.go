package oauth

import (
	"regexp"
	"strings"
	"testing"
)

// TestPKCEShapesEqualOldRegexps: the byte-loop checks accept exactly what
// the anchored regular expressions they replaced accepted, on the boundary
// and character attacks (lengths, multibyte, NUL, %, +, /, =, space, a
// trailing newline).
func TestPKCEShapesEqualOldRegexps(t *testing.T) {
	oldVerifier := regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)
	oldChallenge := regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
	var inputs []string
	for _, n := range []int{0, 1, 21, 22, 41, 42, 43, 44, 64, 127, 128, 129, 256} {
		inputs = append(inputs, strings.Repeat("a", n))
		for _, c := range []string{"é", "ａ", "\x00", "%", "+", "/", "=", " ", "\n", "\r\n", "\t", ".", "~", "_", "-", "\xff", "\u00e9"[:1], "Ａ"} {
			if n > 0 {
				inputs = append(inputs, strings.Repeat("a", n-1)+c, c+strings.Repeat("a", n-1), strings.Repeat("a", n)+c)
			}
		}
	}
	for _, s := range inputs {
		if got, want := validVerifier(s), oldVerifier.MatchString(s); got != want {
			t.Errorf("validVerifier(%q) (len %d) = %v, old regexp %v", s, len(s), got, want)
		}
		if got, want := validChallenge(s), oldChallenge.MatchString(s); got != want {
			t.Errorf("validChallenge(%q) (len %d) = %v, old regexp %v", s, len(s), got, want)
		}
	}
}
