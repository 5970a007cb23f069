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
			i = classEnd(p, i)
		case '(':
			top().complex = true
			g := &regexGroup{alts: []string{""}}
			stack = append(stack, g)
			i = groupPrefixEnd(p, i)
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

// classEnd is the index of the ']' closing the character class opened at
// p[i] (len(p) if none).
func classEnd(p string, i int) int {
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
	return j
}

// groupPrefixEnd is the index of the last character of the group opening
// at p[i]: the '(' itself, or the end of its (?…) prefix.
func groupPrefixEnd(p string, i int) int {
	if i+1 < len(p) && p[i+1] == '?' {
		// (?:…) (?=…) (?!…) (?<=…) (?<!…) (?<name>…) (?P<name>…) (?i)
		i += 2
		if i < len(p) && (p[i] == '<' || p[i] == 'P') {
			for i < len(p) && p[i] != '>' && p[i] != '=' && p[i] != '!' {
				i++
			}
		}
	}
	return i
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
// (hasNestedQuantifier) or too many large quantifiers over atoms that can
// match the same text (hasPolynomialQuantifiers). Every regex position uses
// it: $regex in where and in pipeline $match, and
// $regexMatch/$regexFind/$regexFindAll.
func UnsafeRegex(p string) bool { return hasNestedQuantifier(p) || hasPolynomialQuantifiers(p) }

// MaxBroadUnbounded is how many large quantifiers over broad atoms a
// pattern may have: with k of them a failing match tries on the order of
// n^k ways (.*a.*b.*c on a long string), so k = 3 is already slow on a
// large document.
const MaxBroadUnbounded = 2

// MaxSmallRepeat is the largest upper bound of a quantifier counted as
// small: {0,10} stays cheap, {0,200} backtracks like *.
const MaxSmallRepeat = 10

// regexAtom is one atom of a pattern as hasPolynomialQuantifiers sees it.
type regexAtom struct {
	broad bool   // can match many different characters (., \w, a class, \p{…})
	chars string // the literal characters it can match (lower-cased), when not broad
	large bool   // under a quantifier that repeats more than MaxSmallRepeat times
	// kind: 'a' an atom, '|' an alternation, '$' an end anchor (a point
	// where a match can fail without consuming).
	kind byte
}

// overlaps reports whether two atoms can match the same character.
func (a regexAtom) overlaps(b regexAtom) bool {
	if a.broad || b.broad {
		return true
	}
	return strings.ContainsAny(a.chars, b.chars)
}

// hasPolynomialQuantifiers normalises the pattern into atoms — a group
// around quantifier-free content (?:.) (.) (?:e|f) counts as one atom over
// the union of its characters; a character class (POSIX [[:alpha:]]
// included), \p{…}, \w and . are broad; an escaped or plain character is a
// literal; a quantifier is large when unbounded or bounded above
// MaxSmallRepeat — and reports
//   - more than MaxBroadUnbounded large quantifiers over broad atoms,
//     anywhere in the pattern, group nesting ignored (.{0,200} ×3,
//     [[:alpha:]]* ×3, \p{L}* ×3, (?:.)* ×3); or
//   - more than MaxBroadUnbounded large quantifiers over broad atoms and
//     over literal atoms that something after them can fail (.*a*.*b); or
//   - more than MaxBroadUnbounded consecutive large quantifiers over
//     overlapping literal atoms followed by something that can fail
//     (e*e*e*z, (?:e|f)*(?:e|f)*(?:e|f)*z): each split of the run is
//     tried before the failure is known. A run at the end of the pattern
//     or of an alternative cannot fail after it, so \.+\.+\.+ and
//     a+b+c+d+ (no overlap) stay allowed.
func hasPolynomialQuantifiers(p string) bool {
	atoms := regexAtoms(p)
	broad := 0
	for _, a := range atoms {
		if a.kind == 'a' && a.large && a.broad {
			if broad++; broad > MaxBroadUnbounded {
				return true
			}
		}
	}
	if broad > 0 {
		// A broad atom overlaps every literal: large literal atoms that
		// something after them can still fail count with the broad ones
		// (.*a*.*b tries n³ splits before b fails).
		mixed := broad
		for i, a := range atoms {
			if a.kind == 'a' && a.large && !a.broad && canFailAfter(atoms[i+1:]) {
				if mixed++; mixed > MaxBroadUnbounded {
					return true
				}
			}
		}
	}
	run := 0
	var prev regexAtom
	for _, a := range atoms {
		switch {
		case a.kind == 'a' && a.large && !a.broad:
			if run > 0 && a.overlaps(prev) {
				run++
			} else {
				run = 1
			}
			prev = a
		case a.kind == '|':
			run = 0
		default: // a failing point: an atom that must match, or $
			if run > MaxBroadUnbounded {
				return true
			}
			run = 0
		}
	}
	return false
}

// canFailAfter reports whether the atoms up to the end of the alternative
// include a point where the match can fail: an atom or an end anchor.
func canFailAfter(rest []regexAtom) bool {
	for _, a := range rest {
		switch a.kind {
		case '|':
			return false
		case 'a', '$':
			return true
		}
	}
	return false
}

// regexAtoms lists the atoms of a pattern (see hasPolynomialQuantifiers).
// Groups that are not single atoms are transparent: their content is
// listed in place.
func regexAtoms(p string) []regexAtom {
	var out []regexAtom
	for i := 0; i < len(p); {
		var a regexAtom
		var n int
		switch c := p[i]; c {
		case '|':
			out = append(out, regexAtom{kind: '|'})
			i++
			continue
		case '$':
			out = append(out, regexAtom{kind: '$'})
			i++
			continue
		case '^', ')':
			i++
			continue
		case '(':
			if g, ok, m := groupAtom(p, i); ok {
				a, n = g, m
			} else {
				i += groupPrefix(p, i)
				continue
			}
		case '*', '+', '?', '{':
			// A quantifier without an atom (after "(" or "|"), or a
			// literal "{": skip it.
			if m, _ := quantifierAt(p, i); m > 0 {
				i += m
			} else {
				i++
			}
			continue
		default:
			var ok bool
			if a, n, ok = singleAtom(p, i); !ok {
				i += n
				continue
			}
		}
		a.kind = 'a'
		i += n
		a.large = largeQuantifierAt(p, i)
		if m, _ := quantifierAt(p, i); m > 0 {
			i += m
		}
		out = append(out, a)
	}
	return out
}

// singleAtom parses the atom at p[i] that is not a group: it returns the
// atom, its length and false for a zero-width escape (\b, \A…).
func singleAtom(p string, i int) (regexAtom, int, bool) {
	switch c := p[i]; c {
	case '.':
		return regexAtom{broad: true}, 1, true
	case '[':
		return regexAtom{broad: true}, classLen(p, i), true
	case '\\':
		if i+1 >= len(p) {
			return regexAtom{}, 1, false
		}
		e := p[i+1]
		switch e {
		case 'b', 'B', 'A', 'z', 'Z', 'G', 'K':
			return regexAtom{}, 2, false
		case 'p', 'P', 'x', 'N', 'o', 'g', 'k':
			// \p{L}, \x{41}, \N{…}, \g{1}: the braces belong to the escape.
			n := 2
			if i+2 < len(p) && p[i+2] == '{' {
				if j := strings.IndexByte(p[i+2:], '}'); j >= 0 {
					n = 2 + j + 1
				}
			} else if e == 'p' || e == 'P' {
				n = 3 // \pL
			}
			if e == 'x' {
				return regexAtom{broad: true}, n, true // a code point: counted broad, conservatively
			}
			return regexAtom{broad: true}, n, true
		case 'w', 'W', 'd', 'D', 's', 'S', 'X', 'R', 'H', 'V', 'h', 'v', 'C':
			return regexAtom{broad: true}, 2, true
		}
		if e >= '0' && e <= '9' {
			return regexAtom{broad: true}, 2, true // a back-reference
		}
		return regexAtom{chars: strings.ToLower(string(e))}, 2, true
	}
	_, size := utf8.DecodeRuneInString(p[i:])
	return regexAtom{chars: strings.ToLower(p[i : i+size])}, size, true
}

// classLen is the length of the character class starting at p[i] ("["),
// POSIX classes ([:alpha:]) and escapes inside it included.
func classLen(p string, i int) int {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != ']' {
		switch {
		case p[j] == '\\':
			j += 2
		case p[j] == '[' && j+1 < len(p) && (p[j+1] == ':' || p[j+1] == '.' || p[j+1] == '='):
			if k := strings.Index(p[j+2:], string(p[j+1])+"]"); k >= 0 {
				j += 2 + k + 2
			} else {
				j++
			}
		default:
			j++
		}
	}
	if j >= len(p) {
		return len(p) - i
	}
	return j - i + 1
}

// groupPrefix is the length of a group's opening: "(", "(?:", "(?<name>",
// "(?P<name>", "(?'name'", "(?i:", and lookarounds "(?=", "(?!", "(?<=",
// "(?<!" (whose content is listed in place too).
func groupPrefix(p string, i int) int {
	if i+1 >= len(p) || p[i+1] != '?' {
		return 1
	}
	j := i + 2
	if j >= len(p) {
		return j - i
	}
	switch p[j] {
	case ':', '=', '!', '>', '|':
		return j + 1 - i
	case '<':
		if j+1 < len(p) && (p[j+1] == '=' || p[j+1] == '!') {
			return j + 2 - i
		}
		if k := strings.IndexByte(p[j:], '>'); k >= 0 {
			return j + k + 1 - i
		}
	case 'P':
		if k := strings.IndexByte(p[j:], '>'); k >= 0 {
			return j + k + 1 - i
		}
	case '\'':
		if k := strings.IndexByte(p[j+1:], '\''); k >= 0 {
			return j + 1 + k + 1 - i
		}
	}
	// Inline flags: (?i) or (?i-m:
	for j < len(p) && p[j] != ':' && p[j] != ')' {
		j++
	}
	if j < len(p) {
		j++
	}
	return j - i
}

// groupAtom reports whether the group at p[i] is one atom: capturing or
// not, its content quantifier-free and made of single atoms and
// alternations ((?:.), (.), (?:\w), (?:e|f), (ab)). The atom is broad if
// any part is; its characters are the union of its literals.
func groupAtom(p string, i int) (regexAtom, bool, int) {
	pre := groupPrefix(p, i)
	if pre >= 3 && (strings.HasPrefix(p[i:], "(?=") || strings.HasPrefix(p[i:], "(?!") || strings.HasPrefix(p[i:], "(?<=") || strings.HasPrefix(p[i:], "(?<!")) {
		return regexAtom{}, false, 0
	}
	if p[i+pre-1] == ')' { // inline flags (?i): no content
		return regexAtom{}, false, 0
	}
	var a regexAtom
	any := false
	for j := i + pre; j < len(p); {
		switch p[j] {
		case ')':
			return a, any, j + 1 - i
		case '|':
			j++
			continue
		case '(', '*', '+', '?', '{', '^', '$':
			return regexAtom{}, false, 0
		}
		b, n, ok := singleAtom(p, j)
		if !ok {
			return regexAtom{}, false, 0
		}
		any = true
		a.broad = a.broad || b.broad
		if !strings.Contains(a.chars, b.chars) {
			a.chars += b.chars
		}
		j += n
	}
	return regexAtom{}, false, 0
}

// largeQuantifierAt reports whether a quantifier at p[i] repeats more than
// MaxSmallRepeat times: *, +, {n,}, or {n,m} / {n} with the bound above
// MaxSmallRepeat.
func largeQuantifierAt(p string, i int) bool {
	if i >= len(p) {
		return false
	}
	switch p[i] {
	case '*', '+':
		return true
	case '{':
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return false
		}
		body := p[i+1 : i+j]
		lo, hi, comma := body, "", false
		if before, after, ok := strings.Cut(body, ","); ok {
			lo, hi, comma = before, after, true
		}
		if lo == "" || strings.Trim(lo, "0123456789") != "" || strings.Trim(hi, "0123456789") != "" {
			return false // a literal "{"
		}
		bound := lo
		if comma {
			if hi == "" {
				return true
			}
			bound = hi
		}
		return len(bound) > 2 || len(bound) == 2 && bound > "10"
	}
	return false
}
