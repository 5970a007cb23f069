package policy

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Dotted updates are judged against the object as this identity sees it
// (SECURITY.md "Writes", "Dotted updates"): {"meta.ref.className": "X"}
// merges into the stored value at meta.ref, so a write that reaches into,
// or lands beside, a value the row codec redacts — a hidden reference, a
// reference to a missing class, a protected or unlisted field, a row the
// identity cannot read — could turn what the reader hides into something it
// shows (a hidden pointer renamed to a visible class keeps the hidden id).
// The rule is built on the shown row, so it covers every cause of
// redaction the codec knows, not one key name.

// CheckDottedWrite refuses every dotted key of an update whose path passes
// through a redacted value, or whose parent object (the object the key is
// merged into) is or holds one at any depth. existing is the stored object
// the update applies to; readable says whether get_object would show it to
// this identity at all (an unreadable row shows nothing, so every dotted key
// is refused). The refusal is one sentence for every cause, naming only the
// key and its top-level field.
func (e *Engine) CheckDottedWrite(schema *parsedb.Schema, cls *parsedb.Class, existing bson.Raw, readable bool, fields map[string]any) error {
	var keys []string
	for k := range fields {
		if strings.Contains(k, ".") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	var shown map[string]any
	if readable {
		row, err := e.RowEncoder(schema, cls, nil).AppendRow(nil, existing)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(row))
		dec.UseNumber()
		if err := dec.Decode(&shown); err != nil {
			return err
		}
	}
	for _, key := range keys {
		segs := strings.Split(key, ".")
		if _, ok := shown[segs[0]]; !readable || !ok && !e.FieldVisible(cls, segs[0]) || !dottedTargetShown(shown, segs) {
			return dottedIntoRedacted(key)
		}
	}
	return nil
}

// dottedIntoRedacted is the refusal of a dotted key that would write into
// or beside a value this identity does not see whole. Its text depends on
// the key alone: which value is redacted, and why, is not said.
func dottedIntoRedacted(key string) error {
	top := parsedb.TopField(key)
	return toolerror.New(toolerror.InvalidArgument, "%s: a dotted key changes part of a stored value, and %s holds a value this agent does not see (redacted or not readable) at or beside that path; write the whole field %s instead",
		truncateText(key, 60), truncateText(top, 40), truncateText(top, 40))
}

// dottedTargetShown walks the shown row along segs: every value the path
// passes through must not be the redaction marker, and the parent object
// of the last segment must hold none at any depth. A path that leaves the
// shown row inside a field (a missing sub-key, an index past the end) adds
// to the object or array where it leaves, so that one must hold none
// either: `meta.fresh.k` lands beside a redacted `meta.ref` as `meta.n`
// does. A new top-level field, or a path through a scalar, is MongoDB's to
// answer: the write creates it or is refused as Parse refuses it.
func dottedTargetShown(shown map[string]any, segs []string) bool {
	var cur any = shown
	for i, seg := range segs {
		if i == len(segs)-1 {
			return !holdsRedacted(cur)
		}
		if i > 0 && isRedactedMarker(cur) {
			return false
		}
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				return i == 0 || !holdsRedacted(c)
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				return !holdsRedacted(c)
			}
			cur = c[n]
		default:
			return true
		}
	}
	return true
}

// isRedactedMarker reports whether a shown value is the codec's marker.
func isRedactedMarker(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["__redacted"] == true
}

// holdsRedacted reports whether a shown value is, or holds at any depth, the
// marker or a redacted object key.
func holdsRedacted(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if isRedactedMarker(t) {
			return true
		}
		for k, x := range t {
			if strings.HasPrefix(k, parsedb.RedactedKeyPrefix) || holdsRedacted(x) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(t, holdsRedacted)
	}
	return false
}
