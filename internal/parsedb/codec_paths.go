package parsedb

// Sub-path selection (REST keys such as "meta.credential.source") done by
// the codec, after redaction, instead of by a MongoDB projection.
//
// Why: a MongoDB projection of "meta.credential.objectId" returns
// {meta:{credential:{objectId:"…"}}} — the className that marks the
// embedded pointer as a reference to a hidden class is gone before the
// codec sees the row, so the id of a hidden object would be shown. The
// find therefore projects the whole top-level field (Projection) and the
// codec walks the requested sub-paths itself; every value it descends
// through is checked first, so a path that reaches into a reference to a
// hidden class (an embedded object whose className is hidden, or a
// "Hidden$id" string), at any depth and inside arrays, yields the
// redaction marker {"__redacted":true} at that position and
// nothing below it. See SECURITY.md ("Hidden references").
//
// Selection follows MongoDB's projection semantics otherwise: a path into
// a scalar leaves the field out, arrays are walked element by element
// (scalar elements dropped, documents projected), and an embedded document
// without any requested key is rendered as {}.

import (
	"encoding/binary"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
)

// KeyPaths is the tree of requested sub-paths below one top-level field:
// a nil *KeyPaths means "the whole value".
type KeyPaths struct {
	children map[string]*KeyPaths
}

// add records a path (segments below the current node). A nil result from
// lookup later means the whole value is wanted.
func (k *KeyPaths) add(segs []string) {
	if len(segs) == 0 {
		return
	}
	if k.children == nil {
		k.children = map[string]*KeyPaths{}
	}
	child, seen := k.children[segs[0]]
	if len(segs) == 1 {
		k.children[segs[0]] = nil // whole value wins
		return
	}
	if seen && child == nil {
		return // already the whole value
	}
	if child == nil {
		child = &KeyPaths{}
		k.children[segs[0]] = child
	}
	child.add(segs[1:])
}

// SelectKeys restricts the encoder to REST keys: top-level names, and dotted
// paths into non-pointer fields, which the codec selects itself after
// redaction (see the file comment). Dotted keys into a Pointer field select
// fields of the included object, so the pointer itself is kept whole.
// Leading "-" (order syntax) is ignored. Empty keys select every field.
func (e *RowEncoder) SelectKeys(keys []string) {
	e.Keys, e.Paths = nil, nil
	if len(keys) == 0 {
		return
	}
	e.Keys = make(map[string]bool, len(keys))
	whole := map[string]bool{}
	for _, k := range keys {
		k = strings.TrimPrefix(k, "-")
		root, rest, dotted := strings.Cut(k, ".")
		e.Keys[root] = true
		if !dotted || rest == "" {
			whole[root] = true
			continue
		}
		if e.Class != nil {
			if f := e.Class.Field(root); f != nil && (f.Type == TypePointer || f.Type == TypeRelation) {
				whole[root] = true
				continue
			}
		}
		if e.Paths == nil {
			e.Paths = map[string]*KeyPaths{}
		}
		p := e.Paths[root]
		if p == nil {
			p = &KeyPaths{}
			e.Paths[root] = p
		}
		p.add(strings.Split(rest, "."))
	}
	for root := range whole {
		delete(e.Paths, root)
	}
	if len(e.Paths) == 0 {
		e.Paths = nil
	}
}

// appendSelected renders the parts of a value that paths select. It reports
// false (dst unchanged) when nothing is selected (a path into a scalar).
func (e *RowEncoder) appendSelected(dst []byte, t byte, v []byte, paths *KeyPaths, depth int) ([]byte, bool, error) {
	if depth > maxDepth {
		return dst, false, malformed("nesting deeper than %d", maxDepth)
	}
	switch t {
	case bsonString, bsonSymbol, bsonJavaScript:
		// A path into a "Hidden$id" string: the marker, never the string.
		if cls, ok := e.hiddenRef(strVal(v)); ok {
			return appendRedacted(dst, cls), true, nil
		}
		return dst, false, nil
	case bsonArray:
		return e.appendSelectedArray(dst, v, paths, depth)
	case bsonDocument:
	default:
		return dst, false, nil
	}
	body, err := docBody(v)
	if err != nil {
		return dst, false, err
	}
	if cls, ok := e.hiddenObject(body); ok {
		return appendRedacted(dst, cls), true, nil
	}
	track := e.Compact && e.Legend != nil
	pathLen := len(e.path)
	if track {
		defer func() { e.path = e.path[:pathLen] }()
	}
	dst = append(dst, '{')
	first := true
	for pos := 0; pos < len(body); {
		var el element
		if el, pos, err = nextElement(body, pos); err != nil {
			return dst, false, err
		}
		if isFloorKey(el.key) {
			continue
		}
		sub, want := paths.children[string(el.key)]
		if !want {
			continue
		}
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, el.key)
		dst = append(dst, ':')
		if track {
			e.path = append(append(e.path[:pathLen], '.'), el.key...)
		}
		if sub == nil {
			if el.t == bsonDateTime && string(el.key) == "iso" && isTypedDate(body) {
				dst = append(dst, '"')
				dst = appendISO(dst, int64(binary.LittleEndian.Uint64(el.val)))
				dst = append(dst, '"')
			} else if dst, err = e.appendValue(dst, el.t, el.val, depth+1); err != nil {
				return dst, false, err
			}
			first = false
			continue
		}
		var wrote bool
		if dst, wrote, err = e.appendSelected(dst, el.t, el.val, sub, depth+1); err != nil {
			return dst, false, err
		}
		if !wrote {
			dst = dst[:mark]
			continue
		}
		first = false
	}
	return append(dst, '}'), true, nil
}

// appendSelectedArray applies paths to every element: documents (and
// nested arrays) are projected, scalars dropped, as MongoDB does; a hidden
// reference element becomes the marker.
func (e *RowEncoder) appendSelectedArray(dst []byte, arr []byte, paths *KeyPaths, depth int) ([]byte, bool, error) {
	body, err := docBody(arr)
	if err != nil {
		return dst, false, err
	}
	dst = append(dst, '[')
	first := true
	for pos := 0; pos < len(body); {
		var el element
		if el, pos, err = nextElement(body, pos); err != nil {
			return dst, false, err
		}
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		var wrote bool
		if dst, wrote, err = e.appendSelected(dst, el.t, el.val, paths, depth+1); err != nil {
			return dst, false, err
		}
		if !wrote {
			dst = dst[:mark]
			continue
		}
		first = false
	}
	return append(dst, ']'), true, nil
}

// hiddenObject reports whether a document body is a reference to an
// invisible class: a string className naming a hidden class (whatever the
// __type), or a typed reference ({__type: Pointer, Object or Relation})
// whose className names a class that does not exist.
func (e *RowEncoder) hiddenObject(body []byte) ([]byte, bool) {
	if e.HiddenClass == nil && e.MissingClass == nil {
		return nil, false
	}
	var cls []byte
	hasClass, typed := false, false
	for pos := 0; pos < len(body); {
		el, next, err := nextElement(body, pos)
		if err != nil {
			return nil, false
		}
		pos = next
		if el.t != bsonString {
			continue
		}
		switch string(el.key) {
		case "className":
			cls, hasClass = strVal(el.val), true
			if e.HiddenClass != nil && e.HiddenClass(string(cls)) {
				return cls, true
			}
		case "__type":
			switch string(strVal(el.val)) {
			case "Pointer", "Object", "Relation":
				typed = true
			}
		}
	}
	if hasClass && typed && e.MissingClass != nil && e.MissingClass(string(cls)) {
		return cls, true
	}
	return nil, false
}
