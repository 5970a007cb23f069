package parsedb

import (
	"errors"
	"regexp/syntax"
	"testing"
	"unicode"
)

// A step-counting backtracking matcher (PCRE's strategy, as MongoDB runs
// $regex), for checking what UnsafeRegex lets through: every accepted
// pattern must fail a search over an adversarial input within a
// polynomial budget of degree MaxBroadUnbounded+1 (n start positions times
// n^MaxBroadUnbounded splits).

var errRegexBudget = errors.New("regex step budget exceeded")

type backtracker struct {
	in           []rune
	steps, limit int
}

func (b *backtracker) step() {
	if b.steps++; b.steps > b.limit {
		panic(errRegexBudget)
	}
}

func (b *backtracker) match(re *syntax.Regexp, i int, k func(int) bool) bool {
	b.step()
	in := b.in
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch:
		return k(i)
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		for _, r := range re.Rune {
			if i >= len(in) || !(in[i] == r || fold && unicode.SimpleFold(in[i]) == r || fold && unicode.ToLower(in[i]) == unicode.ToLower(r)) {
				return false
			}
			i++
		}
		return k(i)
	case syntax.OpCharClass:
		if i < len(in) {
			for j := 0; j+1 < len(re.Rune); j += 2 {
				if in[i] >= re.Rune[j] && in[i] <= re.Rune[j+1] {
					return k(i + 1)
				}
			}
		}
		return false
	case syntax.OpAnyCharNotNL:
		return i < len(in) && in[i] != '\n' && k(i+1)
	case syntax.OpAnyChar:
		return i < len(in) && k(i+1)
	case syntax.OpBeginLine:
		return (i == 0 || in[i-1] == '\n') && k(i)
	case syntax.OpEndLine:
		return (i == len(in) || in[i] == '\n') && k(i)
	case syntax.OpBeginText:
		return i == 0 && k(i)
	case syntax.OpEndText:
		return i == len(in) && k(i)
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		w := func(j int) bool {
			return j >= 0 && j < len(in) && (in[j] == '_' || unicode.IsLetter(in[j]) || unicode.IsDigit(in[j]))
		}
		at := w(i-1) != w(i)
		return at == (re.Op == syntax.OpWordBoundary) && k(i)
	case syntax.OpCapture:
		return b.match(re.Sub[0], i, k)
	case syntax.OpConcat:
		return b.seq(re.Sub, i, k)
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if b.match(s, i, k) {
				return true
			}
		}
		return false
	case syntax.OpStar:
		return b.repeat(re.Sub[0], 0, -1, re.Flags&syntax.NonGreedy != 0, i, 0, k)
	case syntax.OpPlus:
		return b.repeat(re.Sub[0], 1, -1, re.Flags&syntax.NonGreedy != 0, i, 0, k)
	case syntax.OpQuest:
		return b.repeat(re.Sub[0], 0, 1, re.Flags&syntax.NonGreedy != 0, i, 0, k)
	case syntax.OpRepeat:
		return b.repeat(re.Sub[0], re.Min, re.Max, re.Flags&syntax.NonGreedy != 0, i, 0, k)
	}
	return false
}

func (b *backtracker) seq(subs []*syntax.Regexp, i int, k func(int) bool) bool {
	if len(subs) == 0 {
		return k(i)
	}
	return b.match(subs[0], i, func(j int) bool { return b.seq(subs[1:], j, k) })
}

func (b *backtracker) repeat(re *syntax.Regexp, lo, hi int, lazy bool, i, n int, k func(int) bool) bool {
	b.step()
	more := func() bool {
		if hi >= 0 && n >= hi {
			return false
		}
		return b.match(re, i, func(j int) bool {
			if j == i && n >= lo {
				return false // an empty iteration: stop, as PCRE does
			}
			return b.repeat(re, lo, hi, lazy, j, n+1, k)
		})
	}
	done := func() bool { return n >= lo && k(i) }
	if lazy {
		return done() || more()
	}
	return more() || done()
}

// searchSteps runs an unanchored search of pattern over input and returns
// the steps taken, or ok false when the budget ran out.
func searchSteps(re *syntax.Regexp, input string, limit int) (steps int, ok bool) {
	b := &backtracker{in: []rune(input), limit: limit}
	defer func() {
		if r := recover(); r != nil {
			if r != errRegexBudget {
				panic(r)
			}
			steps, ok = b.steps, false
		}
	}()
	for start := 0; start <= len(b.in); start++ {
		if b.match(re, start, func(int) bool { return true }) {
			break
		}
	}
	return b.steps, true
}

// costInput is an adversarial input for a pattern: the seed repeated to n
// runes, so the pattern's own characters recur and a final literal that
// is missing makes every split be tried.
func costInput(seed string, n int) string {
	if seed == "" {
		seed = "a"
	}
	unit := []rune(seed)
	r := make([]rune, 0, n+len(unit))
	for len(r) < n {
		r = append(r, unit...)
	}
	return string(r[:n])
}

const costN = 60

// costBudget allows a search of degree MaxBroadUnbounded+1 in the input
// length: measured, the accepted worst cases (.*a.*b, x*.*y) take about
// 0.6·n³ steps, a fourth large quantifier (.{0,200}×4) about 120·n³.
func costBudget(string) int {
	return 8 * costN * costN * costN
}

func checkRegexCost(t *testing.T, pattern, seed string) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return // a syntax Go's parser lacks (PCRE-only): nothing to measure
	}
	if steps, ok := searchSteps(re, costInput(seed, costN), costBudget(pattern)); !ok {
		t.Errorf("UnsafeRegex accepts %q, but a search over %q ran past %d steps", pattern, costInput(seed, costN), steps)
	}
}

// The budget separates: each shape the detector refuses runs past it, and
// the ordinary patterns stay well within.
func TestRegexCostBudget(t *testing.T) {
	for _, c := range []struct{ pattern, seed string }{
		{`.{0,200}.{0,200}.{0,200}.{0,200}z`, "a"},
		{`(?:.)*(?:.)*(?:.)*(?:.)*z`, "a"},
		{`e*e*e*e*e*e*e*e*z`, "e"},
		{`.*a*.*b`, "a"},
	} {
		re, err := syntax.Parse(c.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := searchSteps(re, costInput(c.seed, costN), costBudget(c.pattern)); ok {
			t.Errorf("%q stays within the budget: the budget does not separate", c.pattern)
		}
		if !UnsafeRegex(c.pattern) {
			t.Errorf("%q accepted", c.pattern)
		}
	}
	for _, p := range []string{`.*foo.*`, `^\w+@\w+`, `a+b+c+d+`, `\.+\.+\.+`, `x*.*y`, `.*a.*b`, `^[^@]+@[^@]+$`} {
		checkRegexCost(t, p, "a")
		checkRegexCost(t, p, "ab")
	}
}

// FuzzRegexCost: every pattern UnsafeRegex accepts finishes a failing
// search over an adversarial input within the polynomial budget.
func FuzzRegexCost(f *testing.F) {
	for _, s := range []struct{ p, seed string }{
		{`.*a.*b`, "a"}, {`a*a*z`, "a"}, {`(?:e|f)*(?:e|f)*z`, "ef"}, {`.{0,10}.{0,10}.{0,10}z`, "a"}, {`\.+\.+\.+`, "."},
		{`[[:alpha:]]*x`, "a"}, {`(a|b)*c`, "ab"}, {`^(\d+)-(\d+)$`, "1"},
	} {
		f.Add(s.p, s.seed)
	}
	f.Fuzz(func(t *testing.T, pattern, seed string) {
		if len(pattern) > 40 || len(seed) > 4 || UnsafeRegex(pattern) {
			return
		}
		checkRegexCost(t, pattern, seed)
	})
}
