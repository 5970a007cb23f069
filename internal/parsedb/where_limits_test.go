package parsedb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// TestWhereSizeLimits: every logical operator, every list operator and the
// total node count are capped at every depth (top level, inside $or/$and,
// inside a sub-query's where), with an invalid_query naming the limit; at
// the limit itself the where is accepted.
// deepKeys is an object of n keys, each a path of MaxPathSegments segments.
func deepKeys(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"meta.k%d.%sb":1`, i, strings.Repeat("a.", MaxPathSegments-3))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestWhereSizeLimits(t *testing.T) {
	list := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("%q", fmt.Sprint("v", i))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	branches := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"title":"t%d"}`, i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	wrap := map[string]func(string) string{
		"top":     func(w string) string { return w },
		"in-or":   func(w string) string { return `{"$or":[` + w + `,{"title":"x"}]}` },
		"in-and":  func(w string) string { return `{"$and":[{"$nor":[` + w + `]}]}` },
		"inQuery": func(w string) string { return `{"artist":{"$inQuery":{"className":"Artist","where":` + w + `}}}` },
	}
	cases := []struct {
		name, where, msg string
	}{
		{"$or over", `{"$or":` + branches(MaxLogicalBranches+1) + `}`, "$or has 101 branches"},
		{"$and over", `{"$and":` + branches(MaxLogicalBranches+1) + `}`, "$and has 101 branches"},
		{"$nor over", `{"$nor":` + branches(MaxLogicalBranches+1) + `}`, "$nor has 101 branches"},
		{"$in over", `{"title":{"$in":` + list(MaxListValues+1) + `}}`, "$in has 1001 values"},
		{"$nin over", `{"title":{"$nin":` + list(MaxListValues+1) + `}}`, "$nin has 1001 values"},
		{"$all over", `{"tags":{"$all":` + list(MaxListValues+1) + `}}`, "$all has 1001 values"},
		{"nodes over", `{"$or":[` + strings.TrimSuffix(strings.Repeat(`{"tags":{"$in":`+list(990)+`}},`, 6), ",") + `]}`, "more than 5000 constraint nodes"},
		{"path too deep", `{"meta.` + strings.Repeat("a.", MaxPathSegments-1) + `b":1}`, "segments; at most 16"},
		{"path at limit", `{"meta.` + strings.Repeat("a.", MaxPathSegments-2) + `b":1}`, ""},
		// Deep paths pay per segment: 100 keys × 15 extra segments, × 4
		// branches, pass the node cap that their key count alone would not.
		{"segments count as nodes", `{"$or":[` + strings.TrimSuffix(strings.Repeat(deepKeys(100)+",", 4), ",") + `]}`, "more than 5000 constraint nodes"},
		{"$or at limit", `{"$or":` + branches(MaxLogicalBranches) + `}`, ""},
		{"$in at limit", `{"title":{"$in":` + list(MaxListValues) + `}}`, ""},
	}
	for wname, w := range wrap {
		for _, c := range cases {
			sub := newWhereFakeSub()
			_, err := WhereToFilter(context.Background(), whereSong(), decodeWhere(t, w(c.where)), WhereOptions{Schema: whereSchema(), Sub: sub})
			if c.msg == "" {
				if err != nil && !strings.Contains(err.Error(), "nesting") {
					t.Errorf("%s/%s: %v", wname, c.name, err)
				}
				continue
			}
			te, ok := toolerror.As(err)
			if !ok || te.Code != toolerror.InvalidQuery || !strings.Contains(te.Message, c.msg) {
				t.Errorf("%s/%s: got %v, want invalid_query %q", wname, c.name, err, c.msg)
			}
		}
	}
}

func TestUnsafeRegex(t *testing.T) {
	bad := []string{`(a+)+`, `.*a.*b.*c`, `\w+\s+\d+`, `[a-z]*x[0-9]+y.+`, `.+.+.+`, `(.*)(.*)(.*)`, `\d{2,}\d{2,}\d{2,}`, `.*?a.*?b.*?c`}
	for _, p := range bad {
		if !UnsafeRegex(p) {
			t.Errorf("UnsafeRegex(%q) = false", p)
		}
	}
	good := []string{``, `^abc`, `.*foo.*`, `^\w+@\w+`, `a+b+c+d+`, `\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`, `[abc]`, `\.+\.+\.+`}
	for _, p := range good {
		if UnsafeRegex(p) {
			t.Errorf("UnsafeRegex(%q) = true", p)
		}
	}
}

// The polynomial shapes the detector used to miss — groups around one
// atom, POSIX and \p classes, literals, bounded-but-large quantifiers — are
// refused, every shape refused before still is, and ordinary patterns stay
// allowed.
func TestUnsafeRegexNormalisesBeforeCounting(t *testing.T) {
	nowRefused := []string{
		`.{0,200}.{0,200}.{0,200}.{0,200}z`,
		`(?:.)*(?:.)*(?:.)*(?:.)*z`,
		`(.)*(.)*(.)*(.)*z`,
		`(?:\w)+(?:\w)+(?:\w)+(?:\w)+z`,
		`[^z]{0,255}[^z]{0,255}[^z]{0,255}[^z]{0,255}z`,
		`[[:alpha:]]*[[:alpha:]]*[[:alpha:]]*z`,
		`\p{L}*\p{L}*\p{L}*z`,
		`\pL*\pL*\pL*z`,
		`(?:e|f)*(?:e|f)*(?:e|f)*z`,
		`e*e*e*e*e*e*e*e*z`,
		`a*a*a*a*a*b`,
		`a{0,50}a{0,50}a{0,50}b`,
		`(?<x>.)*(?<y>.)*(?<z>.)*z`,
		`(?i)a*A*a*b`,
		`\.*\.*\.*$`,
		`.{11,}.{11,}.{11,}z`,
		`.*a*.*b`,
		`\s+a+\s+`,
	}
	stillRefused := []string{
		`.*?.*?.*?.*?z`, `\S*\S*\S*z`, `\W*\W*\W*z`, `\D*\D*\D*z`, `\X*\X*\X*z`, `\N*\N*\N*z`, `\H*\H*\H*z`, `\R*\R*\R*z`,
		`(a+)+$`, `(a|aa)*$`, `^(a?){25}a{25}$`, `(x+x+)+y`, `(\1a|a)+b`, `(?i)(A+)+`,
		`(a+)+`, `.*a.*b.*c`, `\w+\s+\d+`, `[a-z]*x[0-9]+y.+`, `.+.+.+`, `(.*)(.*)(.*)`, `\d{2,}\d{2,}\d{2,}`, `.*?a.*?b.*?c`,
	}
	ordinary := []string{
		``, `^abc`, `.*foo.*`, `^\w+@\w+`, `a+b+c+d+`, `\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`, `[abc]`, `\.+\.+\.+`,
		`^The `, `(?i)^rock`, `^[A-Z]`, `colou?r`, `^\d{4}-\d{2}-\d{2}$`, `(red|blue|green)`, `^(?:foo|bar)baz`,
		`\bword\b`, `^[^@]+@[^@]+$`, `^\p{Lu}\p{Ll}+$`, `ab{0,50}c`, `^[[:alpha:]]+$`, `(?:ab)*c`, `^(\d{3})-(\d{4})$`,
		`Ke\$ha`, `^a.*z$`, `x{2,5}y{2,5}z{2,5}`, `(?:a|b)+c`, `^(?i:rock|pop)$`, `\x{41}+B`, `a*b*c*d`, `x*.*y`, `.*foo.*bar`, `^https?://[^/]+/.*$`, `^\s*rock\s*$`, `\d+ (min|minutes)`,
	}
	for _, p := range append(append([]string{}, nowRefused...), stillRefused...) {
		if !UnsafeRegex(p) {
			t.Errorf("UnsafeRegex(%q) = false, want refused", p)
		}
	}
	for _, p := range ordinary {
		if UnsafeRegex(p) {
			t.Errorf("UnsafeRegex(%q) = true, want allowed", p)
		}
	}
}

// FuzzUnsafeRegex: the detector never panics, and appending more of the
// same overlapping large quantifier to a pattern it refuses keeps it
// refused.
func FuzzUnsafeRegex(f *testing.F) {
	for _, s := range []string{`.{0,200}.{0,200}.{0,200}z`, `(?:e|f)*z`, `[[:alpha:]]*`, `\p{L}+`, `(?<n>a)`, `[`, `(`, `\`, `{`, `a{`, `(?`, `(?<`, `[[:`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if UnsafeRegex(p) && !UnsafeRegex(p+".*") {
			t.Errorf("%q refused but %q allowed", p, p+".*")
		}
		_ = UnsafeRegex(p + `.{0,99}.{0,99}.{0,99}z`)
	})
}
