package parsedb

// Hidden references as operator inputs (SECURITY.md, "Hidden references").
//
// A value that refers to an object of a hidden class — a "Hidden$id"
// string, or an embedded {className: Hidden, …} object — is redacted by the
// row codec, but a constraint evaluated by MongoDB sees the stored value:
// {$regex:"^VaultSecret\\$a"}, a $gt/$lt range, $in with guessed ids or
// $exists on a sub-path would reveal the id by bisection or membership. So
// every constraint whose field may hold such a value is AND-ed with a
// "not a hidden reference" conjunct over every prefix of its path: rows
// whose value there is a hidden reference never match, whatever the
// operator, the operand or the enclosing $or/$nor. Pointer fields whose
// target class is hidden cannot be constrained at all.

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// HiddenRefs describes the hidden classes to the data layer.
type HiddenRefs struct {
	// Names are the hidden class names a stored reference can carry.
	Names []string
	// Known are the classes of _SCHEMA (nil: not known). A typed reference
	// (an embedded {__type: Pointer|Object|Relation, className}) to a class
	// outside it is shown as the marker like one to a hidden class
	// (SECURITY.md "Missing classes are redacted like hidden ones"), so the
	// conjunct keeps it from matching too.
	Known []string
	// Hidden reports whether one class is hidden.
	Hidden func(class string) bool
}

var refClassRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// NewHiddenRefs builds HiddenRefs from a set of names (names that cannot
// appear in a "Class$id" reference, such as _Join:…, are left out).
func NewHiddenRefs(names []string, hidden func(string) bool) *HiddenRefs {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if refClassRe.MatchString(n) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return &HiddenRefs{Names: out, Hidden: hidden}
}

// IsHidden reports whether class is hidden (false on a nil receiver).
func (h *HiddenRefs) IsHidden(class string) bool {
	return h != nil && h.Hidden != nil && h.Hidden(class)
}

// MayHoldHiddenRef reports whether a REST field path of cls can hold a
// reference to a hidden class in stored form: dotted paths, fields missing
// from the schema, and String, File, Object and Array fields. Typed fields
// (numbers, dates, booleans, geo, bytes, pointers — whose target the schema
// fixes) and objectId cannot.
func MayHoldHiddenRef(cls *Class, path string) bool {
	if strings.Contains(path, ".") {
		return true
	}
	if path == "objectId" {
		return false
	}
	var f *Field
	if cls != nil {
		f = cls.Field(path)
	}
	if f == nil {
		if d, ok := defaultFields[path]; ok {
			f = d
		}
	}
	if f == nil {
		return true
	}
	switch f.Type {
	case TypeString, TypeFile, TypeObject, TypeArray, "":
		return true
	}
	return false
}

// NotHiddenRef is the conjunct that keeps rows whose value at path (a REST
// path of cls) is, or passes through, a reference to a hidden class from
// matching: for every prefix q of the storage path, q is not a
// "Hidden$…" string and q.className is not a hidden class name. On arrays
// both hold for every element (MongoDB's array semantics), so an array
// holding any hidden reference never matches either. nil when the path
// cannot hold a hidden reference or nothing is hidden.
func (h *HiddenRefs) NotHiddenRef(cls *Class, path string) bson.A {
	if !MayHoldHiddenRef(cls, path) {
		return nil
	}
	return h.NotHiddenRefAnyType(cls, path)
}

// NotHiddenRefAnyType is NotHiddenRef whatever the schema says the field
// holds. A typed field (Number, Boolean, Date, Pointer…) holds a hidden
// reference only when the data drifted from the schema (direct writes,
// imports, a field re-typed after data was written); a constraint whose
// operand can match a stored string (a string, a $regex) or a group key on
// such a field gets this conjunct, so drift cannot be bisected either.
// nil when nothing is hidden or path is objectId.
func (h *HiddenRefs) NotHiddenRefAnyType(cls *Class, path string) bson.A {
	if h == nil || len(h.Names) == 0 || path == "objectId" {
		return nil
	}
	storage := StorageFieldName(cls, path)
	segs := strings.Split(storage, ".")
	names, re := h.conjunctValues()
	var out bson.A
	for i := range segs {
		q := strings.Join(segs[:i+1], ".")
		// A String/File column has no className below it.
		className := i > 0 || strings.Contains(path, ".") || MayHoldObject(cls, path)
		out = append(out, notRefClauses(q, className, names, re, h.knownValue())...)
	}
	return out
}

// NotHiddenRefAbove is the conjunct over the proper prefixes of path only:
// rows where a prefix strictly above path is a hidden reference — so path
// lies inside one, and the row codec shows the marker there and nothing
// below — never match. An $exists test answers by what is shown: a hidden
// reference at path itself exists (it is shown as the marker), a path
// below one does not (SECURITY.md "Hidden references"). nil when path has
// no prefix that may hold one.
func (h *HiddenRefs) NotHiddenRefAbove(cls *Class, path string) bson.A {
	if h == nil || len(h.Names) == 0 || !strings.Contains(path, ".") || !MayHoldHiddenRef(cls, path) {
		return nil
	}
	segs := strings.Split(StorageFieldName(cls, path), ".")
	names, re := h.conjunctValues()
	var out bson.A
	for i := range segs[:len(segs)-1] {
		q := strings.Join(segs[:i+1], ".")
		out = append(out, notRefClauses(q, true, names, re, h.knownValue())...)
	}
	return out
}

// conjunctValues are the hidden class names and the "^(?:A|B)\$" pattern
// the conjunct's clauses test, typed so that dry runs show neither.
// knownValue is Known as the conjunct carries it (typed like the hidden
// names: it holds them too, so no echo may print it); nil when unknown.
func (h *HiddenRefs) knownValue() HiddenClassNames {
	if h.Known == nil {
		return nil
	}
	return HiddenClassNames(h.Known)
}

func (h *HiddenRefs) conjunctValues() (HiddenClassNames, HiddenRefPattern) {
	return HiddenClassNames(h.Names), HiddenRefPattern("^(?:" + strings.Join(h.Names, "|") + `)\$[A-Za-z0-9_-]{` + strconv.Itoa(RefIDMin) + `,` + strconv.Itoa(RefIDMax) + `}\z`)
}

// notRefClauses are the conjunct's clauses for the value at storage path
// q: not a "Hidden$…" string, and (className) no hidden className.
func notRefClauses(q string, className bool, names HiddenClassNames, re HiddenRefPattern, known HiddenClassNames) bson.A {
	out := bson.A{bson.D{{Key: q, Value: bson.D{{Key: "$not", Value: re}}}}}
	if className {
		out = append(out, bson.D{{Key: q + ".className", Value: bson.D{{Key: "$nin", Value: names}}}})
		if known != nil {
			// Not a typed reference to a missing class. On an array the two
			// tests may be met by different elements (no $elemMatch of
			// fields: FerretDB 1.24 has none), so an array mixing one with
			// a reference to a known class is not kept from matching
			// (SECURITY.md, accepted limit).
			missing := bson.D{{Key: "$exists", Value: true}, {Key: "$nin", Value: known}}
			out = append(out, bson.D{{Key: "$nor", Value: bson.A{
				bson.D{{Key: q + ".__type", Value: bson.D{{Key: "$in", Value: typedRefTypes}}}, {Key: q + ".className", Value: missing}},
			}}})
		}
	}
	return out
}

// typedRefTypes are the __type values of an embedded reference by type.
var typedRefTypes = bson.A{"Pointer", "Object", "Relation"}

// HiddenClassNames is the list of hidden class names inside a policy
// conjunct ($nin). It is sent to MongoDB as a BSON array of strings, but it
// is typed so that no echo of a filter or pipeline (dry runs) can print
// the names: WithoutHiddenNames replaces it with HiddenNamesPlaceholder.
type HiddenClassNames []string

// MarshalBSONValue encodes the names as a BSON array.
func (n HiddenClassNames) MarshalBSONValue() (byte, []byte, error) {
	a := make(bson.A, len(n))
	for i, s := range n {
		a[i] = s
	}
	t, b, err := bson.MarshalValue(a)
	return byte(t), b, err
}

// HiddenRefPattern is the regex of a policy conjunct ("^(?:A|B)\$"),
// typed for the same reason as HiddenClassNames.
type HiddenRefPattern string

// MarshalBSONValue encodes the pattern as a BSON regex.
func (p HiddenRefPattern) MarshalBSONValue() (byte, []byte, error) {
	t, b, err := bson.MarshalValue(bson.Regex{Pattern: string(p)})
	return byte(t), b, err
}

// HiddenNamesPlaceholder is what an echo shows instead of the hidden class
// names of a policy conjunct.
const HiddenNamesPlaceholder = "<hidden classes>"

// WithoutHiddenNames returns a copy of a filter or pipeline value in which
// every HiddenClassNames and HiddenRefPattern is replaced by
// HiddenNamesPlaceholder: the form in which a filter may be shown to the
// client (dry runs). The conjunct is built by policy, names every hidden
// class, and would otherwise be an inventory of them (SECURITY.md
// "Hidden references").
func WithoutHiddenNames(v any) any {
	switch t := v.(type) {
	case HiddenClassNames, HiddenRefPattern:
		return HiddenNamesPlaceholder
	case bson.D:
		out := make(bson.D, len(t))
		for i, e := range t {
			out[i] = bson.E{Key: e.Key, Value: WithoutHiddenNames(e.Value)}
		}
		return out
	case bson.E:
		return bson.E{Key: t.Key, Value: WithoutHiddenNames(t.Value)}
	case bson.A:
		out := make(bson.A, len(t))
		for i, x := range t {
			out[i] = WithoutHiddenNames(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = WithoutHiddenNames(x)
		}
		return out
	case []bson.D:
		out := make([]bson.D, len(t))
		for i, x := range t {
			out[i] = WithoutHiddenNames(x).(bson.D)
		}
		return out
	case bson.M:
		out := make(bson.M, len(t))
		for k, x := range t {
			out[k] = WithoutHiddenNames(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = WithoutHiddenNames(x)
		}
		return out
	}
	return v
}

// MayHoldObject reports whether a top-level field can hold an embedded
// object (Object, Array, or a field missing from the schema).
func MayHoldObject(cls *Class, field string) bool {
	var f *Field
	if cls != nil {
		f = cls.Field(field)
	}
	if f == nil {
		return true
	}
	switch f.Type {
	case TypeObject, TypeArray, "":
		return true
	}
	return false
}

// NotHiddenRefAtStoragePath is the conjunct for the value at a storage
// path as a pipeline stage left it — after a $unwind, whose elements may be
// the arrays nested in the stored array, one level deeper than the
// conjunct ahead of the stages reached (MongoDB's array matching looks one
// level into an array, not into arrays inside it): the value is not a
// "Hidden$…" string and its className is not a hidden class. nil when
// nothing is hidden.
func (h *HiddenRefs) NotHiddenRefAtStoragePath(path string) bson.D {
	if h == nil || len(h.Names) == 0 {
		return nil
	}
	names, re := h.conjunctValues()
	return bson.D{{Key: "$and", Value: notRefClauses(path, true, names, re, h.knownValue())}}
}

// NotMissingRefFilter keeps a row from matching when its value at one of
// the REST paths that may hold a reference (MayHoldHiddenRef) is a string
// of a reference's shape (ReferenceClass) to a class outside Known —
// missing from _SCHEMA. The filter lists the known classes, since a
// missing one cannot be named. With NotHiddenRefFilter it leaves out every
// reference to an invisible class: the one membership rule of every search
// engine (in-process, $text, Atlas), which all run the same filter
// (SECURITY.md "Search"). nil when Known is unknown or no path needs it.
func (h *HiddenRefs) NotMissingRefFilter(cls *Class, paths []string) bson.D {
	if h == nil || h.Known == nil || len(paths) == 0 {
		return nil
	}
	quoted := make([]string, 0, len(h.Known))
	for _, n := range h.Known {
		quoted = append(quoted, regexp.QuoteMeta(n))
	}
	// Typed like the conjunct's pattern: it lists the hidden classes too.
	known := HiddenRefPattern(`^(?:` + strings.Join(quoted, "|") + `)\$`)
	shape := `^[A-Za-z_][A-Za-z0-9_]{0,127}\$[A-Za-z0-9_-]{` + strconv.Itoa(RefIDMin) + `,` + strconv.Itoa(RefIDMax) + `}\z`
	var nor bson.A
	seen := map[string]bool{}
	for _, p := range paths {
		q := StorageFieldName(cls, p)
		if seen[q] || !MayHoldHiddenRef(cls, p) {
			continue
		}
		seen[q] = true
		nor = append(nor, bson.D{{Key: "$and", Value: bson.A{
			bson.D{{Key: q, Value: bson.D{{Key: "$regex", Value: shape}}}},
			bson.D{{Key: q, Value: bson.D{{Key: "$not", Value: known}}}},
		}}})
	}
	if len(nor) == 0 {
		return nil
	}
	return bson.D{{Key: "$nor", Value: nor}}
}

// NotHiddenRefFilter ANDs NotHiddenRef over several REST paths; nil when
// none needs it.
func (h *HiddenRefs) NotHiddenRefFilter(cls *Class, paths []string) bson.D {
	return h.notHiddenRefFilter(cls, paths, h.NotHiddenRef)
}

// NotHiddenRefFilterAnyType ANDs NotHiddenRefAnyType over several REST
// paths: for reads whose use of a value is not known to be type-safe — a
// sort key, a path a pipeline's expressions may take apart — where a
// typed field whose data drifted to a "Hidden$id" string would otherwise be
// ranked or computed on.
func (h *HiddenRefs) NotHiddenRefFilterAnyType(cls *Class, paths []string) bson.D {
	return h.notHiddenRefFilter(cls, paths, h.NotHiddenRefAnyType)
}

func (h *HiddenRefs) notHiddenRefFilter(cls *Class, paths []string, conjunct func(*Class, string) bson.A) bson.D {
	var and bson.A
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		and = append(and, conjunct(cls, p)...)
	}
	if len(and) == 0 {
		return nil
	}
	return bson.D{{Key: "$and", Value: and}}
}

func operandList(op string) bool { return op == "$in" || op == "$nin" || op == "$all" }

func subQueryOp(op string) bool {
	return op == "$inQuery" || op == "$notInQuery" || op == "$select" || op == "$dontSelect"
}

// NamesInvisibleClass reports whether a where or $match value names a class
// that invisible reports (hidden or missing) inside a literal: an embedded
// object whose className is one (a Pointer object, say), or a string
// starting with "Class$" nested in a literal object or array. Equality or
// order of a whole Object or Array value with such a literal would
// otherwise test a guessed id against a hidden reference stored below the
// path, where the not-a-hidden-reference conjunct (which covers the path
// and its prefixes) does not reach. Any suffix counts: "VaultSecret$b~"
// orders against a stored "VaultSecret$abc" as well as an id would. Strings
// at the top of the value (inLiteral false) are left to that conjunct, so a
// plain string constraint is never refused here.
func NamesInvisibleClass(v any, inLiteral bool, invisible func(class string) bool) bool {
	if entries, ok := Entries(v); ok {
		return entriesNameInvisibleClass(entries, inLiteral, invisible)
	}
	if a, ok := whereArray(v); ok {
		// Any other array is a literal compared whole ({"tags": [...]},
		// {"$eq": [...]}, an $in element): MongoDB also matches it against
		// an array nested in the stored value, one level deeper than the
		// conjunct reaches.
		for _, x := range a {
			if NamesInvisibleClass(x, true, invisible) {
				return true
			}
		}
		return false
	}
	if str, ok := v.(string); ok && inLiteral {
		class, _, found := strings.Cut(str, "$")
		return found && ClassNameRe.MatchString(class) && invisible(class)
	}
	return false
}

// entriesNameInvisibleClass is NamesInvisibleClass of an object's entries.
func entriesNameInvisibleClass(entries []Entry, inLiteral bool, invisible func(class string) bool) bool {
	for _, e := range entries {
		if c, ok := e.Value.(string); ok && e.Key == "className" && invisible(c) {
			return true
		}
		// A literal's key is compared with stored keys, and the row
		// codec redacts an object key that is a reference: a key
		// "Hidden$…" would test the hidden id (operators start with
		// "$", so they name no class here).
		if class, _, found := strings.Cut(e.Key, "$"); found && ClassNameRe.MatchString(class) && invisible(class) {
			return true
		}
	}
	for _, e := range entries {
		if !inLiteral && subQueryOp(e.Key) {
			// {className, where} names the class a sub-query reads:
			// the sub-query's class gate answers for it (hidden and
			// missing alike), and its where is translated on its own.
			continue
		}
		if a, ok := whereArray(e.Value); ok && !inLiteral && operandList(e.Key) {
			// The operands of $in/$nin/$all are compared one by one
			// like a plain value: a string there is left to the
			// conjunct, an object or array in it is a literal.
			for _, x := range a {
				if NamesInvisibleClass(x, false, invisible) {
					return true
				}
			}
			continue
		}
		if NamesInvisibleClass(e.Value, inLiteral || !strings.HasPrefix(e.Key, "$"), invisible) {
			return true
		}
	}
	return false
}
