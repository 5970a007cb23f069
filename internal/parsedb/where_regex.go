package parsedb

// Regex safety of the where translator: $regex/$options operands and the
// nested-quantifier detector that refuses patterns with catastrophic
// backtracking.

import (
	"strings"
	"unicode/utf8"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// regexOperands validates $regex and $options.
func regexOperands(key string, pat, opts any) (string, string, error) {
	p, ok := pat.(string)
	if !ok {
		return "", "", invalidQuery("%s: $regex needs a string pattern, got %s", key, whereDescribe(pat))
	}
	if utf8.RuneCountInString(p) > MaxRegexLength {
		return "", "", toolerror.Violationf("$regex longer than %d characters", MaxRegexLength)
	}
	if strings.ContainsRune(p, 0) {
		return "", "", invalidQuery("%s: $regex must not contain NUL", key)
	}
	if UnsafeRegex(p) {
		return "", "", toolerror.Violationf("$regex with a nested or polynomial quantifier")
	}
	if opts == nil {
		return p, "", nil
	}
	o, ok := opts.(string)
	if !ok {
		return "", "", toolerror.Violationf("$options is not a string")
	}
	seen := map[rune]bool{}
	var b strings.Builder
	for _, c := range o {
		if c != 'i' && c != 'm' && c != 'x' {
			return "", "", toolerror.Violationf("$options %q outside i, m, x", o)
		}
		if !seen[c] {
			seen[c] = true
			b.WriteRune(c)
		}
	}
	return p, b.String(), nil
}

// regexGroup is the state of one open group in hasNestedQuantifier.
type regexGroup struct {
	quant   bool     // contains a quantified atom (directly or in a child group)
	alts    []string // literal text of each alternative so far
	complex bool     // some alternative is not plain literal text
}

func (g *regexGroup) lit(c byte) { g.alts[len(g.alts)-1] += string(c) }

// riskyAlternation: an alternation whose branches could match the same
// input start ((a|aa), (x|.), (|a)). Alternatives of plain literals that
// start with different characters, like (red|blue), are safe to repeat.
func (g *regexGroup) riskyAlternation() bool {
	if len(g.alts) < 2 {
		return false
	}
	if g.complex {
		return true
	}
	first := map[byte]bool{}
	for _, a := range g.alts {
		if a == "" {
			return true
		}
		c := strings.ToLower(a[:1])[0]
		if first[c] {
			return true
		}
		first[c] = true
	}
	return false
}

// hasNestedQuantifier is a small, conservative detector of catastrophic
// backtracking: a group that contains a quantifier (or an ambiguous
// alternation) and is itself repeated: (a+)+, (a*)*, (\w+)*, (a|aa)+,
// ((ab)?c){2,}. It errs on the side of refusing.
func hasNestedQuantifier(p string) bool {
	stack := []*regexGroup{{alts: []string{""}}}
	top := func() *regexGroup { return stack[len(stack)-1] }
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\\':
			top().complex = true
			i++ // the escaped character is one atom
		case '[':
			top().complex = true
			j := i + 1
			if j < len(p) && p[j] == '^' {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				if p[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case '(':
			top().complex = true
			g := &regexGroup{alts: []string{""}}
			stack = append(stack, g)
			if i+1 < len(p) && p[i+1] == '?' {
				// (?:…) (?=…) (?!…) (?<=…) (?<!…) (?<name>…) (?P<name>…) (?i)
				i += 2
				if i < len(p) && (p[i] == '<' || p[i] == 'P') {
					for i < len(p) && p[i] != '>' && p[i] != '=' && p[i] != '!' {
						i++
					}
				}
			}
		case ')':
			if len(stack) == 1 {
				top().complex = true
				continue
			}
			g := top()
			stack = stack[:len(stack)-1]
			n, repeats := quantifierAt(p, i+1)
			if repeats && (g.quant || g.riskyAlternation()) {
				return true
			}
			parent := top()
			if n > 0 || g.quant || g.riskyAlternation() {
				parent.quant = true
			}
			i += n
		case '|':
			top().alts = append(top().alts, "")
		case '*', '+', '?', '{':
			n, _ := quantifierAt(p, i)
			if n == 0 { // a literal '{'
				top().lit(c)
				continue
			}
			top().quant = true
			top().complex = true
			i += n - 1
		case '.', '^', '$':
			top().complex = true
		default:
			top().lit(c)
		}
	}
	return false
}

// quantifierAt reports the length of the quantifier starting at p[i]
// (including a lazy '?' or possessive '+' suffix; 0 if none) and whether it
// can repeat more than once.
func quantifierAt(p string, i int) (n int, repeats bool) {
	if i >= len(p) {
		return 0, false
	}
	switch p[i] {
	case '*', '+':
		n, repeats = 1, true
	case '?':
		n = 1
	case '{':
		j := i + 1
		lo, hi, sawComma, digitsLo, digitsHi := 0, 0, false, 0, 0
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			if lo < 1e6 {
				lo = lo*10 + int(p[j]-'0')
			}
			digitsLo++
			j++
		}
		if j < len(p) && p[j] == ',' {
			sawComma = true
			j++
			for j < len(p) && p[j] >= '0' && p[j] <= '9' {
				if hi < 1e6 {
					hi = hi*10 + int(p[j]-'0')
				}
				digitsHi++
				j++
			}
		}
		if digitsLo == 0 || j >= len(p) || p[j] != '}' {
			return 0, false
		}
		n = j - i + 1
		switch {
		case !sawComma:
			repeats = lo > 1
		case digitsHi == 0:
			repeats = true
		default:
			repeats = hi > 1
		}
	default:
		return 0, false
	}
	if i+n < len(p) && (p[i+n] == '?' || p[i+n] == '+') {
		n++
	}
	return n, repeats
}

// UnsafeRegex reports whether a pattern risks catastrophic or polynomial
// backtracking: a repeated group that itself contains a quantifier
// (hasNestedQuantifier) or three or more unbounded quantifiers over broad
// atoms (hasPolynomialQuantifiers). Every regex position uses it: $regex in
// where and in pipeline $match, and $regexMatch/$regexFind/$regexFindAll.
func UnsafeRegex(p string) bool { return hasNestedQuantifier(p) || hasPolynomialQuantifiers(p) }

// MaxBroadUnbounded is how many unbounded quantifiers over broad atoms a
// pattern may have: with k of them a failing match tries on the order of
// n^k ways (.*a.*b.*c on a long string), so k = 3 is already slow on a
// large document.
const MaxBroadUnbounded = 2

// hasPolynomialQuantifiers counts unbounded quantifiers (*, +, {n,}) applied
// to a broad atom — ., \w \W \d \D \s \S, a character class — anywhere in the
// pattern, group nesting ignored, and reports more than MaxBroadUnbounded.
func hasPolynomialQuantifiers(p string) bool {
	count := 0
	for i := 0; i < len(p); i++ {
		broad := false
		switch c := p[i]; c {
		case '\\':
			if i+1 < len(p) {
				i++
				switch p[i] {
				case 'w', 'W', 'd', 'D', 's', 'S', 'p', 'P', 'X', 'R', 'N', 'H', 'V', 'h', 'v':
					broad = true
				}
			}
		case '.':
			broad = true
		case '[':
			j := i + 1
			if j < len(p) && p[j] == '^' {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				if p[j] == '\\' {
					j++
				}
				j++
			}
			i = j
			broad = true
		default:
			continue
		}
		if !broad {
			continue
		}
		if _, repeats := quantifierAt(p, i+1); repeats && i+1 < len(p) && p[i+1] != '?' && !boundedBrace(p, i+1) {
			count++
			if count > MaxBroadUnbounded {
				return true
			}
		}
	}
	return false
}

// boundedBrace reports whether p[i:] starts a {n} or {n,m} quantifier (an
// upper bound: not unbounded).
func boundedBrace(p string, i int) bool {
	if i >= len(p) || p[i] != '{' {
		return false
	}
	j := strings.IndexByte(p[i:], '}')
	if j < 0 {
		return false
	}
	body := p[i+1 : i+j]
	comma := strings.IndexByte(body, ',')
	return comma < 0 || comma < len(body)-1
}
