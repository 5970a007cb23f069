package parsedb

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// namePatternCases are the name syntaxes built without regexp, each with the
// regular expression it replaced (and still documents).
var namePatternCases = []struct {
	name string
	p    interface{ MatchString(string) bool }
	re   string
}{
	{"ClassNameRe", ClassNameRe, `^[A-Za-z_][A-Za-z0-9_]{0,127}$`},
	{"FieldNameRe", FieldNameRe, `^[A-Za-z][A-Za-z0-9_]{0,127}$`},
	{"FieldPathRe", FieldPathRe, `^[A-Za-z][A-Za-z0-9_]{0,127}(\.[A-Za-z][A-Za-z0-9_]{0,127})*$`},
	{"ObjectIDRe", ObjectIDRe, `^[A-Za-z0-9_-]{1,32}$`},
	{"fieldNameRe", fieldNameRe, `^[A-Za-z][A-Za-z0-9_]*$`},
	{"aclRoleRe", aclRoleRe, `^role:[A-Za-z0-9_ -]{1,128}$`},
	{"classNameWriteRe", classNameWriteRe, `^[A-Za-z][A-Za-z0-9_]{0,127}$`},
	// The shapes of the policy's, prompts' and tools' names.
	{"tool/action name", NewNamePattern("", "a-z", "a-z0-9_", 64), `^[a-z][a-z0-9_]{0,63}$`},
	{"prompt name", NewNamePattern("", "A-Za-z", "A-Za-z0-9_-", 64), `^[A-Za-z][A-Za-z0-9_-]{0,63}$`},
	{"storage pointer id", NewNamePattern("", "A-Za-z0-9_-", "A-Za-z0-9_-", 64), `^[A-Za-z0-9_-]{1,64}$`},
	{"resource kind", NewNamePattern("", "a-z", "a-z", 0), `^[a-z]+$`},
	{"authProviderRe", authProviderRe, `^[A-Za-z0-9_-]{1,64}$`},
	// The JWT claims' and the PKCE values' shapes (internal/jwtauth,
	// internal/oauth; the PKCE lower bounds are checked apart).
	{"printable claim", NewNamePattern("", "!-~", "!-~", 256), `^[\x21-\x7e]{1,256}$`},
	{"client id claim", NewNamePattern("", "A-Za-z0-9._:/@+-", "A-Za-z0-9._:/@+-", 128), `^[A-Za-z0-9._:/@+-]{1,128}$`},
	{"PKCE verifier", NewNamePattern("", "A-Za-z0-9._~-", "A-Za-z0-9._~-", 128), `^[A-Za-z0-9._~-]{1,128}$`},
	{"ACL entry", NameChoice{Literals: []string{"*"}, Patterns: []*NamePattern{ObjectIDRe, aclRoleRe}}, `^(\*|[A-Za-z0-9_-]{1,32}|role:[A-Za-z0-9_ -]{1,128})$`},
	{"protected audience", NameChoice{Literals: []string{"*", "authenticated"}, Patterns: []*NamePattern{aclRoleRe,
		NewNamePattern("userField:", "A-Za-z", "A-Za-z0-9_", 128), NewNamePattern("", "A-Za-z0-9", "A-Za-z0-9", 64)}},
		`^(\*|authenticated|role:[A-Za-z0-9_ -]{1,128}|userField:[A-Za-z][A-Za-z0-9_]{0,127}|[A-Za-z0-9]{1,64})$`},
}

// nameCorpus: every string of up to 3 characters over the characters the
// classes draw their edges from, and strings around every length bound,
// with and without the literal prefixes, with one character changed.
func nameCorpus() []string {
	alphabet := []string{"", "A", "Z", "a", "z", "0", "9", "_", "-", " ", ".", "$", ":", "*", "\n", "é", "\x00", "`", "{", "@", "[", "/", "!", "~", "+", "\x7f"}
	var out []string
	for _, a := range alphabet {
		for _, b := range alphabet {
			for _, c := range alphabet {
				out = append(out, a+b+c)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	fill := "Aa0_-z9Z ~.!"
	for _, n := range []int{1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 255, 256, 257} {
		for range 20 {
			var sb strings.Builder
			for range n {
				sb.WriteByte(fill[r.IntN(len(fill))])
			}
			s := sb.String()
			for _, prefix := range []string{"", "role:", "userField:", "authenticated", "role", "a.", "a.b."} {
				out = append(out, prefix+s, prefix+s+".b", prefix+s+"."+s, prefix+s+".", prefix+"."+s)
				mut := []byte(prefix + s)
				mut[r.IntN(len(mut))] = alphabet[1+r.IntN(len(alphabet)-1)][0]
				out = append(out, string(mut))
			}
		}
	}
	return out
}

// TestNamePatternsEqualTheirRegexps: each name syntax accepts exactly what
// the regular expression it replaced accepts, and String is that
// expression's language too.
func TestNamePatternsEqualTheirRegexps(t *testing.T) {
	corpus := nameCorpus()
	for _, c := range namePatternCases {
		re := regexp.MustCompile(c.re)
		var self *regexp.Regexp
		if p, ok := c.p.(*NamePattern); ok {
			self = regexp.MustCompile(p.String())
		}
		accepted := 0
		for _, s := range corpus {
			want := re.MatchString(s)
			if got := c.p.MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, %s says %v", c.name, s, got, c.re, want)
			}
			if self != nil && self.MatchString(s) != want {
				t.Errorf("%s: String() %s disagrees with %s on %q", c.name, self, c.re, s)
			}
			if want {
				accepted++
			}
		}
		if accepted == 0 {
			t.Errorf("%s: the corpus has no accepted name", c.name)
		}
	}
}

func FuzzNamePatterns(f *testing.F) {
	for _, s := range []string{"Song", "_User", "a.b", "role:Admin x", "userField:owner", "*", strings.Repeat("a", 128)} {
		f.Add(s)
	}
	res := make([]*regexp.Regexp, len(namePatternCases))
	for i, c := range namePatternCases {
		res[i] = regexp.MustCompile(c.re)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, c := range namePatternCases {
			if got, want := c.p.MatchString(s), res[i].MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, %s says %v", c.name, s, got, c.re, want)
			}
		}
	})
}

func TestNameHoldsReference(t *testing.T) {
	for name, want := range map[string]bool{
		"VaultSecret$abcdefghij":        true,
		"meta.VaultSecret$abcdefghij_1": true,
		"_p_owner_Vault$0123456789":     true,
		"x$abcdefghij":                  true,
		"Vault$abcdefghi":               false, // 9 id characters
		"title_1":                       false,
		"$abcdefghijkl":                 false, // no word before the $
		"Ke$ha":                         false,
		"a-$abcdefghijk":                false, // "-" cannot end a class name
		"A$AP Rocky":                    false,
		"one$two$abcdefghij":            true,
	} {
		if got := NameHoldsReference(name); got != want {
			t.Errorf("NameHoldsReference(%q) = %v, want %v", name, got, want)
		}
	}
}
