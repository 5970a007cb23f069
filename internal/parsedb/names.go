package parsedb

import (
	"slices"
	"strconv"
	"strings"
)

// The syntax of names in Parse, checked before a name reaches a filter, a
// collection name or an error message. One definition for every layer (the
// where translator, the policy file, the tools' and prompts' arguments).
var (
	// ClassNameRe is a Parse class name: letters, digits and _, starting
	// with a letter or _, at most 128 characters.
	ClassNameRe = NewNamePattern("", "A-Za-z_", "A-Za-z0-9_", 128)
	// FieldNameRe is a top-level REST field name (no leading _: those
	// are storage names).
	FieldNameRe = NewNamePattern("", "A-Za-z", "A-Za-z0-9_", 128)
	// FieldPathRe is a field name with optional dotted sub-fields.
	FieldPathRe = FieldNameRe.Dotted()
	// ObjectIDRe is an objectId as callers may send it.
	ObjectIDRe = NewNamePattern("", "A-Za-z0-9_-", "A-Za-z0-9_-", 32)
)

// NamePattern is a name syntax: an optional literal prefix, one character
// of a first class, then characters of a rest class, at most Max in all
// (0: unbounded), optionally as dot-separated segments of that form. It
// matches exactly as the anchored regular expression String shows, without
// compiling one: the counted repetitions ({0,127}) of those expressions
// compile into programs of hundreds of instructions each, which were built
// at start-up and kept for the life of the process (docs/performance.md,
// "Performance"), and a byte loop is faster on every call too.
type NamePattern struct {
	prefix      string
	first, rest asciiClass
	max         int
	dotted      bool
	firstSpec   string
	restSpec    string
}

// asciiClass is a set of ASCII bytes.
type asciiClass [4]uint64

func (c *asciiClass) has(b byte) bool { return b < 128 && c[b>>6]&(1<<(b&63)) != 0 }

// newASCIIClass reads a bracket-expression body of single characters and
// ranges (a-z); a '-' first or last is literal.
func newASCIIClass(spec string) asciiClass {
	var c asciiClass
	for i := 0; i < len(spec); i++ {
		lo, hi := spec[i], spec[i]
		if i+2 < len(spec) && spec[i+1] == '-' {
			hi = spec[i+2]
			i += 2
		}
		for b := int(lo); b <= int(hi); b++ {
			c[b>>6] |= 1 << (b & 63)
		}
	}
	return c
}

// NewNamePattern is prefix, then one of first, then rest characters, at most
// max characters after the prefix (0: unbounded). first and rest are
// bracket-expression bodies such as "A-Za-z0-9_".
func NewNamePattern(prefix, first, rest string, max int) *NamePattern {
	return &NamePattern{prefix: prefix, first: newASCIIClass(first), rest: newASCIIClass(rest), max: max, firstSpec: first, restSpec: rest}
}

// Dotted is the pattern as one or more dot-separated segments.
func (p *NamePattern) Dotted() *NamePattern {
	d := *p
	d.dotted = true
	return &d
}

// MatchString reports whether s is a whole name of the pattern.
func (p *NamePattern) MatchString(s string) bool {
	s, ok := strings.CutPrefix(s, p.prefix)
	if !ok {
		return false
	}
	for {
		seg, more := s, ""
		if p.dotted {
			if i := strings.IndexByte(s, '.'); i >= 0 {
				seg, more = s[:i], s[i+1:]
			}
		}
		if !p.segment(seg) {
			return false
		}
		if seg == s {
			return true
		}
		s = more
	}
}

func (p *NamePattern) segment(s string) bool {
	if s == "" || p.max > 0 && len(s) > p.max || !p.first.has(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !p.rest.has(s[i]) {
			return false
		}
	}
	return true
}

// String is the equivalent anchored regular expression.
func (p *NamePattern) String() string {
	seg := "[" + p.firstSpec + "]"
	switch {
	case p.max == 0:
		seg += "[" + p.restSpec + "]*"
	case p.max > 1:
		seg += "[" + p.restSpec + "]{0," + strconv.Itoa(p.max-1) + "}"
	}
	if p.firstSpec == p.restSpec && p.max > 0 {
		seg = "[" + p.firstSpec + "]{1," + strconv.Itoa(p.max) + "}"
	}
	if p.dotted {
		seg += `(\.` + seg + `)*`
	}
	return "^" + p.prefix + seg + "$"
}

// NameChoice matches any of its literals or patterns: the alternation
// ^(lit|…|pattern|…)$.
type NameChoice struct {
	Literals []string
	Patterns []*NamePattern
}

// MatchString reports whether s is one of the literals or matches one of
// the patterns.
func (c NameChoice) MatchString(s string) bool {
	return slices.Contains(c.Literals, s) || slices.ContainsFunc(c.Patterns, func(p *NamePattern) bool { return p.MatchString(s) })
}

// NameHoldsReference reports whether a name an app or operator chose — an
// index name or an index key, a field or class name read from _SCHEMA, an
// entry of a class-level permission — holds a part of a stored reference's
// shape anywhere in it: a word of [A-Za-z0-9_], "$", and at least RefIDMin
// of [A-Za-z0-9_-] ("VaultSecret$ab12cd34ef", "meta.VaultSecret$ab12cd34ef_1",
// the name MongoDB gives an index on a map keyed by reference). Names are
// identifiers, not text: Parse's own names never hold a "$", so a name that
// does is left out of every metadata output whatever class it names —
// hidden, missing or visible alike, so no answer tells them apart
// (SECURITY.md "Names as data").
func NameHoldsReference(name string) bool {
	for i := strings.IndexByte(name, '$'); i >= 0; {
		if i > 0 && idByte(name[i-1]) && name[i-1] != '-' {
			n := 0
			for j := i + 1; j < len(name) && idByte(name[j]); j++ {
				n++
			}
			if n >= RefIDMin {
				return true
			}
		}
		next := strings.IndexByte(name[i+1:], '$')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return false
}

// idByte reports a byte of a reference's id ([A-Za-z0-9_-]).
func idByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
