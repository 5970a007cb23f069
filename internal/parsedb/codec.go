package parsedb

// The row codec: Parse storage-format documents (bson.Raw, straight off a
// cursor) → the token-lean Parse REST JSON shown to the model (docs/reading.md
// "Row shapes"). JSON is appended directly from the raw BSON bytes, with no
// intermediate map, so rows can be streamed with exact byte
// accounting; the hot path makes no allocations beyond growing dst.
//
// Decisions where the specs are silent (tests pin each one):
//   - `_p_f: null` (an unset pointer) is omitted, like Parse Server does. A
//     `_p_` value that is not a "Class$id" string is shown as its plain value.
//   - Pointer columns are rendered even when the field is missing from the
//     (possibly stale, 30 s cached) schema; Parse Server would drop them.
//   - Relation fields are NOT added to rows. Parse REST appends
//     {"__type":"Relation","className":…} for every relation field of the
//     class to every object, which would cost tokens on every row while
//     saying nothing about the row; get_schema shows relations.
//   - objectId is always a string: string _id as is, ObjectId _id as its hex,
//     numeric _id (_GlobalConfig) as its digits.
//   - createdAt/updatedAt: `_created_at`/`_updated_at`, else the legacy
//     `createdAt`/`updatedAt` keys; BSON dates become ISO strings with
//     milliseconds, UTC; legacy string values are passed through verbatim.
//     The legacy keys never appear a second time in stored order.
//   - `_expiresAt` and `_last_used` (legacy _Session keys Parse Server reads)
//     become `expiresAt` ({"__type":"Date"}) and `lastUsed` (ISO string), as
//     Parse REST shows them. Every other top-level `_` key is dropped.
//   - NaN and ±Inf doubles are rendered as null (JSON has no NaN).
//   - Doubles use encoding/json's float formatting (shortest round-trip
//     representation, exponent only below 1e-6 or from 1e21); int32/int64 are
//     exact digits (an int64 above 2^53 is not rounded); Decimal128 is a
//     JSON string.
//   - Strings are escaped like encoding/json with HTML escaping OFF: "<", ">"
//     and "&" stay raw (the output goes to a model, not a browser; \u003c
//     costs tokens). Invalid UTF-8 becomes \ufffd and U+2028/U+2029 are
//     escaped, as encoding/json does.
//   - Redaction (SECURITY.md "Hidden references") replaces, at any depth: a top-level `_p_` pointer to a
//     hidden class, any string value "Hidden$<id>" (id = 1–32 of
//     [A-Za-z0-9_-]), and any embedded object whose "className" is a string
//     naming a hidden class (embedded pointers, included objects, relation
//     markers…) with the class-free marker {"__redacted":true}. References
//     BY TYPE to a class that does not exist (a `_p_` column, an embedded
//     object whose __type is Pointer, Object or Relation) get the same
//     marker, so a hidden class and a missing one give the same bytes.
//   - Internal-floor keys (SECURITY.md "Fields") are dropped at every depth, not only at the
//     top level. ACL is dropped at the top level only (a nested key "ACL" is
//     ordinary user data).
//   - Keys and Drop are not consulted for objectId, createdAt and updatedAt:
//     those are always kept (ids are needed for paging and follow-up calls).
//   - Rare BSON types Parse never writes are shown in a lossy readable form:
//     ObjectId → hex string, regex → "/pattern/options", JavaScript and
//     symbol → string, DBPointer → hex id string, timestamp → {"t":…,"i":…},
//     undefined → null, MinKey/MaxKey → "MinKey"/"MaxKey".
//   - A nested legacy {__type:"Date", iso:<BSON date>} gets iso as an ISO
//     string, as Parse Server renders it.
//   - A stored top-level "objectId" key is ignored when _id is present.
//   - BinData of any subtype is Bytes (subtype 2's inner length prefix is
//     stripped).

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
)

// RowEncoder turns stored documents of one class into JSON objects, compact
// or REST-shaped (Compact).
//
// A RowEncoder holds no mutable state: one value may be shared by concurrent
// goroutines as long as its fields are not changed meanwhile.
type RowEncoder struct {
	Class *Class
	// FileURLBase, if set, gives a File field's REST value its url (the
	// base + the encoded name, as Parse's files adapters build it); write
	// results set it (docs/writes.md "Writes").
	FileURLBase string
	// Keys, if non-empty, restricts output to these REST top-level field names (objectId, createdAt, updatedAt always kept).
	Keys map[string]bool
	// Drop, if non-nil, is called for each REST top-level field name; returning true omits the field (field allowlists, protectedFields, internal floor is applied regardless).
	// It is not called for objectId, createdAt and updatedAt, which are always kept.
	Drop func(field string) bool
	// Protected, if non-nil, is consulted like Drop for fields hidden from the
	// identity on every row but its own: a row whose objectId equals Owner
	// keeps them (Parse shows a user all of their own _User row, credentials
	// aside).
	Protected func(field string) bool
	// UserFieldRules are the protectedFields "userField:<field>" audiences
	// that apply to this identity (UserID): on a row whose <field> points
	// to the user (a Pointer, or an Array holding one), only the fields in
	// every matching rule's Keep (and Protected) stay hidden, as Parse
	// Server's filterSensitiveData computes it.
	UserFieldRules []UserFieldRule
	UserID         string
	Owner          string
	// HiddenClass, if non-nil, reports classes whose references must be redacted (SECURITY.md "Hidden references"): any embedded {__type:"Pointer",className:Hidden,...} object
	// and any string of the form "Hidden$<id>" under ANY key at any depth (incl. top-level _p_ pointers and plain string fields) → {"__redacted":true}.
	// (Any embedded object whose "className" names a hidden class is redacted, whatever its __type.)
	// The marker never names the class: it would tell a hidden class from a missing one.
	HiddenClass func(className string) bool
	// MissingClass, if non-nil, reports classes that do not exist. A
	// reference BY TYPE to one — a top-level `_p_` pointer, an embedded
	// object whose __type is Pointer, Object or Relation — is redacted
	// exactly like a reference to a hidden class. Free "Class$id" strings
	// and untyped objects with a className key are redacted for hidden
	// classes only: a string that merely looks like a reference ("Ke$ha")
	// is user data (SECURITY.md "Hidden references").
	MissingClass func(className string) bool
	// Paths, if non-nil, selects sub-paths of top-level fields (set by
	// SelectKeys): the codec walks them after redaction, so a path into a
	// reference to a hidden class yields the redaction marker (codec_paths.go).
	Paths map[string]*KeyPaths
	// MaxBytesLen truncates Bytes (BinData) values: shown as {"__type":"Bytes","base64":"<first N bytes>…","truncated":true,"size":n}. Default 64.
	// Zero or negative means the default.
	MaxBytesLen int
	// Compact selects the compact row shape (docs/reading.md "Row shapes"): a
	// pointer whose class is its schema field's target class as its bare
	// objectId, every date as an ISO string, a File field as its name, a
	// GeoPoint field as [latitude, longitude], and createdAt/updatedAt only
	// when Keys is empty or names them. Every other value, the key order,
	// redaction and the removal of internal fields are those of the REST
	// shape.
	Compact bool
	// Legend, if non-nil in compact mode, collects what a reader needs to
	// read compact values back: the class of every compacted pointer field
	// and the path of every date shown as a string. An encoder with a
	// Legend must not be shared between goroutines.
	Legend *Legend
	// path is the dotted path of the value being written (Legend only).
	path []byte
}

// Legend describes the compact values of a run of rows.
type Legend struct {
	// PointerClasses maps a top-level pointer field shown as a bare
	// objectId to its class.
	PointerClasses map[string]string
	// DateFields holds the dotted paths (array elements share their
	// array's path) of the dates shown as ISO strings.
	DateFields map[string]bool
}

// Dates is DateFields sorted, createdAt and updatedAt first.
func (l *Legend) Dates() []string {
	if l == nil || len(l.DateFields) == 0 {
		return nil
	}
	out := make([]string, 0, len(l.DateFields))
	for _, k := range []string{"createdAt", "updatedAt"} {
		if l.DateFields[k] {
			out = append(out, k)
		}
	}
	rest := make([]string, 0, len(l.DateFields))
	for k := range l.DateFields {
		if k != "createdAt" && k != "updatedAt" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Merge adds another legend's entries, their paths under prefix (an
// included object's field path; "" for none).
func (l *Legend) Merge(prefix string, o *Legend) {
	if o == nil {
		return
	}
	if prefix != "" {
		prefix += "."
	}
	for k, v := range o.PointerClasses {
		l.addPointer(prefix+k, v)
	}
	for k := range o.DateFields {
		l.addDate(prefix + k)
	}
}

func (l *Legend) addPointer(field, cls string) {
	if l.PointerClasses == nil {
		l.PointerClasses = map[string]string{}
	}
	l.PointerClasses[field] = cls
}

func (l *Legend) addDate(path string) {
	if l.DateFields == nil {
		l.DateFields = map[string]bool{}
	}
	l.DateFields[path] = true
}

// noteDate records the current path as a date.
func (e *RowEncoder) noteDate() {
	if e.Legend != nil && len(e.path) > 0 && (e.Legend.DateFields == nil || !e.Legend.DateFields[string(e.path)]) {
		e.Legend.addDate(string(e.path))
	}
}

// DefaultMaxBytesLen is how many bytes of a Bytes value are shown by default.
const DefaultMaxBytesLen = 64

// maxDepth bounds recursion into embedded documents. MongoDB itself refuses
// documents nested deeper than 100 levels.
const maxDepth = 200

// ErrMalformedBSON is wrapped by every error AppendRow returns.
var ErrMalformedBSON = errors.New("parsedb: malformed BSON document")

// BSON element types.
const (
	bsonDouble     = 0x01
	bsonString     = 0x02
	bsonDocument   = 0x03
	bsonArray      = 0x04
	bsonBinary     = 0x05
	bsonUndefined  = 0x06
	bsonObjectID   = 0x07
	bsonBoolean    = 0x08
	bsonDateTime   = 0x09
	bsonNull       = 0x0A
	bsonRegex      = 0x0B
	bsonDBPointer  = 0x0C
	bsonJavaScript = 0x0D
	bsonSymbol     = 0x0E
	bsonCodeScope  = 0x0F
	bsonInt32      = 0x10
	bsonTimestamp  = 0x11
	bsonInt64      = 0x12
	bsonDecimal128 = 0x13
	bsonMinKey     = 0xFF
	bsonMaxKey     = 0x7F
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedBSON, fmt.Sprintf(format, args...))
}

// docBody validates a document's framing and returns its element bytes
// (without the length prefix and the trailing NUL).
func docBody(doc []byte) ([]byte, error) {
	if len(doc) < 5 {
		return nil, malformed("document too short (%d bytes)", len(doc))
	}
	n := int(int32(binary.LittleEndian.Uint32(doc)))
	if n < 5 || n > len(doc) || doc[n-1] != 0 {
		return nil, malformed("bad document length %d", n)
	}
	return doc[4 : n-1], nil
}

// element is one parsed BSON element.
type element struct {
	t   byte
	key []byte
	val []byte
}

// nextElement parses the element at b[pos:] and returns it with the position
// of the next one.
func nextElement(b []byte, pos int) (element, int, error) {
	var el element
	if pos >= len(b) {
		return el, pos, malformed("truncated element")
	}
	el.t = b[pos]
	pos++
	start := pos
	for pos < len(b) && b[pos] != 0 { // keys are short: a loop beats IndexByte
		pos++
	}
	if pos >= len(b) {
		return el, pos, malformed("unterminated key")
	}
	el.key = b[start:pos]
	pos++
	n, err := valueSize(el.t, b[pos:])
	if err != nil {
		return el, pos, err
	}
	el.val = b[pos : pos+n]
	return el, pos + n, nil
}

// valueSize is the byte size of a value of type t at the start of b.
// fixedSizes are the sizes of the fixed-size BSON value types (0: not one).
var fixedSizes = [256]int{bsonDouble: 8, bsonDateTime: 8, bsonTimestamp: 8, bsonInt64: 8, bsonObjectID: 12, bsonBoolean: 1, bsonInt32: 4, bsonDecimal128: 16}

func valueSize(t byte, b []byte) (int, error) {
	var n int
	switch t {
	case bsonString, bsonJavaScript, bsonSymbol:
		if len(b) < 4 {
			return 0, malformed("truncated string")
		}
		l := int(int32(binary.LittleEndian.Uint32(b)))
		if l < 1 || l > len(b)-4 || b[3+l] != 0 {
			return 0, malformed("bad string length")
		}
		return 4 + l, nil
	case bsonDocument, bsonArray, bsonCodeScope:
		if len(b) < 4 {
			return 0, malformed("truncated document")
		}
		n = int(int32(binary.LittleEndian.Uint32(b)))
		if n < 5 {
			return 0, malformed("bad embedded document length")
		}
	case bsonBinary:
		if len(b) < 5 {
			return 0, malformed("truncated binary")
		}
		l := int(int32(binary.LittleEndian.Uint32(b)))
		if l < 0 {
			return 0, malformed("bad binary length")
		}
		n = 5 + l
	case bsonUndefined, bsonNull, bsonMinKey, bsonMaxKey:
		return 0, nil
	case bsonRegex:
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return 0, malformed("unterminated regex")
		}
		j := bytes.IndexByte(b[i+1:], 0)
		if j < 0 {
			return 0, malformed("unterminated regex options")
		}
		return i + 1 + j + 1, nil
	case bsonDBPointer:
		if len(b) < 4 {
			return 0, malformed("truncated DBPointer")
		}
		l := int(int32(binary.LittleEndian.Uint32(b)))
		if l < 1 || l > len(b)-4 {
			return 0, malformed("bad DBPointer length")
		}
		n = 4 + l + 12
	default:
		if n = fixedSizes[t]; n == 0 {
			return 0, malformed("unknown element type 0x%02x", t)
		}
	}
	if n > len(b) {
		return 0, malformed("truncated value of type 0x%02x", t)
	}
	return n, nil
}

// strVal is the bytes of a string value (without length and NUL).
func strVal(v []byte) []byte { return v[4 : len(v)-1] }

// isFloorKey reports whether a key is on the internal-field floor (SECURITY.md "Fields"),
// which is removed at every depth.
func isFloorKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	switch k[0] {
	case '_', 's', 'a':
	default:
		return false
	}
	switch string(k) {
	case "_hashed_password", "_password_history", "_session_token", "sessionToken",
		"_email_verify_token", "_email_verify_token_expires_at", "_perishable_token",
		"_perishable_token_expires_at", "_failed_login_count", "_account_lockout_expires_at",
		"_rperm", "_wperm", "_acl", "_tombstone", "authData", "_password_changed_at":
		return true
	}
	return bytes.HasPrefix(k, []byte("_auth_data"))
}

func (e *RowEncoder) maxBytes() int {
	if e.MaxBytesLen <= 0 {
		return DefaultMaxBytesLen
	}
	return e.MaxBytesLen
}

// AppendRow appends the JSON object for doc to dst and returns it. Key order: objectId, createdAt, updatedAt, then the document's remaining fields in stored order.
//
// On error (malformed BSON) dst is returned unchanged.
func (e *RowEncoder) AppendRow(dst []byte, doc bson.Raw) ([]byte, error) {
	start := len(dst)
	out, err := e.appendRow(dst, doc)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

func (e *RowEncoder) appendRow(dst []byte, doc []byte) ([]byte, error) {
	body, err := docBody(doc)
	if err != nil {
		return dst, err
	}
	var scan rowScan
	if err := scan.identify(body); err != nil {
		return dst, err
	}
	row := rowState{
		first:     true,
		hasID:     scan.id.t != 0,
		ownRow:    e.Owner != "" && scan.id.t == bsonString && string(strVal(scan.id.val)) == e.Owner,
		userRules: e.matchingUserFieldRules(doc),
	}
	dst = append(dst, '{')
	if dst, err = e.appendObjectID(dst, scan.id, &row); err != nil {
		return dst, err
	}
	if dst, err = e.appendTimestamps(dst, scan.created, scan.updated, &row); err != nil {
		return dst, err
	}
	// Pass 2: everything else, in stored order.
	for i, pos := 0, scan.resume; ; i++ {
		var el element
		if i < scan.nCached {
			el = scan.cache[i]
		} else if scan.cacheAll || pos >= len(body) {
			break
		} else {
			el, pos, _ = nextElement(body, pos) // validated by pass 1
		}
		if dst, err = e.appendMember(dst, &el, &row); err != nil {
			return dst, err
		}
	}
	dst = append(dst, '}')
	return dst, nil
}

// rowScan is pass 1 of appendRow: it locates the identity fields, which are
// written first, and keeps the parsed elements (up to len(cache)) for pass 2.
type rowScan struct {
	cache    [32]element
	nCached  int
	cacheAll bool // every element is in cache
	resume   int  // where pass 2 parses on from, past the cached elements
	// id is _id; created and updated are _created_at/_updated_at, else the
	// legacy createdAt/updatedAt keys.
	id, created, updated element
}

// identify runs pass 1 over a document body, validating every element.
func (s *rowScan) identify(body []byte) error {
	s.cacheAll = true
	var legacyCreated, legacyUpdated element
	for pos := 0; pos < len(body); {
		el, next, err := nextElement(body, pos)
		if err != nil {
			return err
		}
		pos = next
		if s.nCached < len(s.cache) {
			s.cache[s.nCached] = el
			s.nCached++
			s.resume = pos
		} else {
			s.cacheAll = false
		}
		switch string(el.key) {
		case "_id":
			s.id = el
		case "_created_at":
			s.created = el
		case "_updated_at":
			s.updated = el
		case "createdAt":
			legacyCreated = el
		case "updatedAt":
			legacyUpdated = el
		}
	}
	if s.created.t == 0 {
		s.created = legacyCreated
	}
	if s.updated.t == 0 {
		s.updated = legacyUpdated
	}
	return nil
}

// rowState is what appendRow's members share while one row is written.
type rowState struct {
	first         bool // no member written yet (no comma before the next)
	hasID         bool // the document has an _id (a stored "objectId" key is then ignored)
	ownRow        bool // the row is the Owner's own: Protected does not apply
	userRules     []UserFieldRule
	nRedactedKeys int
}

// comma appends the separator before a member unless it is the first.
func (r *rowState) comma(dst []byte) []byte {
	if !r.first {
		dst = append(dst, ',')
	}
	r.first = false
	return dst
}

// appendObjectID writes objectId from _id: always a string (see the
// decisions at the top of this file).
func (e *RowEncoder) appendObjectID(dst []byte, id element, row *rowState) ([]byte, error) {
	if id.t == 0 || id.t == bsonNull {
		return dst, nil
	}
	dst = append(dst, `"objectId":`...)
	row.first = false
	switch id.t {
	case bsonObjectID:
		dst = appendHexString(dst, id.val)
	case bsonString:
		dst = jsonenc.AppendString(dst, strVal(id.val))
	case bsonInt32, bsonInt64, bsonDouble:
		dst = append(dst, '"')
		dst, _ = e.appendValue(dst, id.t, id.val, 0)
		dst = append(dst, '"')
	default:
		return e.appendValue(dst, id.t, id.val, 0)
	}
	return dst, nil
}

// appendTimestamps writes createdAt and updatedAt (BSON dates as ISO
// strings, legacy values as they are).
func (e *RowEncoder) appendTimestamps(dst []byte, created, updated element, row *rowState) ([]byte, error) {
	var err error
	for _, ts := range [2]struct {
		name string
		el   element
	}{{`"createdAt":`, created}, {`"updatedAt":`, updated}} {
		if ts.el.t == 0 || ts.el.t == bsonNull {
			continue
		}
		if e.Compact && len(e.Keys) > 0 && !e.Keys[ts.name[1:len(ts.name)-2]] {
			continue
		}
		dst = row.comma(dst)
		dst = append(dst, ts.name...)
		if e.Compact && e.Legend != nil {
			e.path = append(e.path[:0], ts.name[1:len(ts.name)-2]...)
			e.noteDate()
		}
		if ts.el.t == bsonDateTime {
			dst = appendQuotedISO(dst, ts.el.val)
		} else if dst, err = e.appendValue(dst, ts.el.t, ts.el.val, 0); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendQuotedISO appends a BSON datetime value as a JSON ISO string.
func appendQuotedISO(dst []byte, v []byte) []byte {
	dst = append(dst, '"')
	dst = appendISO(dst, int64(binary.LittleEndian.Uint64(v)))
	return append(dst, '"')
}

// lastUsedName is _last_used's REST name (docs/reading.md "Row shapes").
var lastUsedName = []byte("lastUsed")

// memberName maps a stored top-level key to its REST field name: `_p_f` is
// the pointer f, the legacy _Session keys get their REST names, and ok is
// false for keys the row never shows here (the identity fields, already
// written; ACL storage; the internal floor; every other `_` key).
func memberName(k []byte, hasID bool) (name []byte, pointer, ok bool) {
	if len(k) == 0 {
		return nil, false, false
	}
	name = k
	if k[0] == '_' {
		switch {
		case len(k) > 3 && k[1] == 'p' && k[2] == '_':
			name, pointer = k[3:], true
		case string(k) == "_expiresAt":
			name = k[1:]
		case string(k) == "_last_used":
			name = lastUsedName
		default:
			return nil, false, false
		}
	} else {
		switch string(k) {
		case "createdAt", "updatedAt", "ACL":
			return nil, false, false
		case "objectId":
			if hasID {
				return nil, false, false
			}
		}
	}
	if isFloorKey(name) {
		return nil, false, false
	}
	return name, pointer, true
}

// memberShown applies Keys, Drop and Protected (with the row's own-row and
// userField exceptions) to a top-level field.
func (e *RowEncoder) memberShown(name []byte, field *Field, row *rowState) bool {
	if len(e.Keys) > 0 && !e.Keys[string(name)] {
		return false
	}
	if e.Drop != nil {
		var fname string
		if field != nil && field.Name == string(name) {
			fname = field.Name // no allocation
		} else {
			fname = string(name)
		}
		if e.Drop(fname) {
			return false
		}
	}
	return e.Protected == nil || row.ownRow || !e.Protected(string(name)) || !stillProtected(row.userRules, string(name))
}

// appendMember writes one top-level member of pass 2, or nothing when the
// field is not shown.
func (e *RowEncoder) appendMember(dst []byte, el *element, row *rowState) ([]byte, error) {
	name, pointer, ok := memberName(el.key, row.hasID)
	if !ok {
		return dst, nil
	}
	var field *Field
	if e.Class != nil {
		field = e.Class.Fields[string(name)]
	}
	if !e.memberShown(name, field, row) || pointer && el.t == bsonNull {
		return dst, nil
	}
	if _, ok := e.hiddenRef(name); ok && !pointer {
		// Not a Parse field name, but MongoDB stores such keys.
		dst = row.comma(dst)
		row.nRedactedKeys++
		return appendRedactedMember(dst, row.nRedactedKeys), nil
	}
	mark := len(dst)
	if !row.first {
		dst = append(dst, ',')
	}
	dst = jsonenc.AppendString(dst, name)
	dst = append(dst, ':')
	if e.Compact && e.Legend != nil {
		e.path = append(e.path[:0], name...)
	}
	if sel := e.Paths[string(name)]; sel != nil && !pointer {
		var wrote bool
		var err error
		if dst, wrote, err = e.appendSelected(dst, el.t, el.val, sel, 1); err != nil {
			return dst, err
		}
		if !wrote {
			return dst[:mark], nil
		}
		row.first = false
		return dst, nil
	}
	row.first = false
	return e.appendMemberValue(dst, el, pointer, field)
}

// appendMemberValue writes a top-level member's value by its shape: a
// `_p_` pointer, the legacy _last_used date, a schema field by its type, or
// an unknown field by its BSON type.
func (e *RowEncoder) appendMemberValue(dst []byte, el *element, pointer bool, field *Field) ([]byte, error) {
	switch {
	case pointer:
		return e.appendPointerString(dst, *el, field)
	case string(el.key) == "_last_used" && el.t == bsonDateTime:
		if e.Compact {
			e.noteDate()
		}
		return appendQuotedISO(dst, el.val), nil
	case field != nil:
		return e.appendTyped(dst, field.Type, *el)
	default:
		return e.appendValue(dst, el.t, el.val, 1)
	}
}

// appendPointerString renders a top-level `_p_` value. field, if known, is
// the pointer's schema field.
func (e *RowEncoder) appendPointerString(dst []byte, el element, field *Field) ([]byte, error) {
	if el.t != bsonString {
		return e.appendValue(dst, el.t, el.val, 1)
	}
	s := strVal(el.val)
	i := bytes.IndexByte(s, '$')
	if i <= 0 {
		return e.appendValue(dst, el.t, el.val, 1)
	}
	cls := s[:i]
	if e.HiddenClass != nil {
		var name string
		if field != nil && field.TargetClass == string(cls) {
			name = field.TargetClass // the usual case, without allocating
		} else {
			name = string(cls)
		}
		if e.HiddenClass(name) {
			return appendRedacted(dst, cls), nil
		}
	}
	if e.MissingClass != nil && e.MissingClass(string(cls)) {
		return appendRedacted(dst, cls), nil
	}
	if e.Compact && field != nil && field.Type == TypePointer && field.TargetClass == string(cls) {
		// The class is the field's target: the bare id says everything, and
		// a where on the field takes it back as is.
		if e.Legend != nil {
			if c, ok := e.Legend.PointerClasses[field.Name]; !ok || c != field.TargetClass {
				e.Legend.addPointer(field.Name, field.TargetClass)
			}
		}
		return jsonenc.AppendString(dst, s[i+1:]), nil
	}
	dst = append(dst, `{"__type":"Pointer","className":`...)
	dst = jsonenc.AppendString(dst, cls)
	dst = append(dst, `,"objectId":`...)
	dst = jsonenc.AppendString(dst, s[i+1:])
	dst = append(dst, '}')
	return dst, nil
}

// appendTyped renders a top-level value whose schema type is known, falling
// back to the generic rendering when the stored shape does not match.
func (e *RowEncoder) appendTyped(dst []byte, typ string, el element) ([]byte, error) {
	switch typ {
	case TypeFile:
		if el.t == bsonString {
			s := strVal(el.val)
			if cls, ok := e.hiddenRef(s); ok {
				return appendRedacted(dst, cls), nil
			}
			if e.Compact {
				return jsonenc.AppendString(dst, s), nil
			}
			dst = append(dst, `{"__type":"File","name":`...)
			dst = jsonenc.AppendString(dst, s)
			if e.FileURLBase != "" {
				dst = append(dst, `,"url":`...)
				dst = jsonenc.AppendString(dst, e.FileURLBase+EncodeURIComponent(string(s)))
			}
			return append(dst, '}'), nil
		}
	case TypeGeoPoint:
		if el.t == bsonArray {
			if lng, lat, ok := numberPair(el.val); ok {
				if e.Compact {
					dst = append(dst, '[')
					dst = appendNumber(dst, lat)
					dst = append(dst, ',')
					dst = appendNumber(dst, lng)
					return append(dst, ']'), nil
				}
				dst = append(dst, `{"__type":"GeoPoint","latitude":`...)
				dst = appendNumber(dst, lat)
				dst = append(dst, `,"longitude":`...)
				dst = appendNumber(dst, lng)
				return append(dst, '}'), nil
			}
		}
	case TypePolygon:
		if el.t == bsonDocument {
			if out, ok := appendPolygon(dst, el.val); ok {
				return out, nil
			}
		}
	}
	return e.appendValue(dst, el.t, el.val, 1)
}

// number is a numeric BSON value (type + raw bytes).
type number struct {
	t byte
	v []byte
}

// numberPair returns the two elements of a two-number array.
func numberPair(arr []byte) (a, b number, ok bool) {
	body, err := docBody(arr)
	if err != nil {
		return a, b, false
	}
	i := 0
	for pos := 0; pos < len(body); i++ {
		var el element
		el, pos, err = nextElement(body, pos)
		if err != nil || i >= 2 {
			return a, b, false
		}
		switch el.t {
		case bsonDouble, bsonInt32, bsonInt64:
		default:
			return a, b, false
		}
		if i == 0 {
			a = number{el.t, el.val}
		} else {
			b = number{el.t, el.val}
		}
	}
	return a, b, i == 2
}

func appendNumber(dst []byte, n number) []byte {
	switch n.t {
	case bsonInt32:
		return strconv.AppendInt(dst, int64(int32(binary.LittleEndian.Uint32(n.v))), 10)
	case bsonInt64:
		return strconv.AppendInt(dst, int64(binary.LittleEndian.Uint64(n.v)), 10)
	}
	return appendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(n.v)))
}

// appendPolygon renders a stored GeoJSON polygon as Parse REST does:
// {"__type":"Polygon","coordinates":[[lat,lng],…]} from the outer ring. It
// reports false (writing nothing) when the shape is not a valid polygon.
func appendPolygon(dst []byte, doc []byte) ([]byte, bool) {
	body, err := docBody(doc)
	if err != nil {
		return dst, false
	}
	isPolygon := false
	var coords []byte
	for pos := 0; pos < len(body); {
		var el element
		if el, pos, err = nextElement(body, pos); err != nil {
			return dst, false
		}
		switch string(el.key) {
		case "type":
			isPolygon = el.t == bsonString && string(strVal(el.val)) == "Polygon"
		case "coordinates":
			if el.t == bsonArray {
				coords = el.val
			}
		}
	}
	if !isPolygon || coords == nil {
		return dst, false
	}
	rings, err := docBody(coords)
	if err != nil || len(rings) == 0 {
		return dst, false
	}
	ring, _, err := nextElement(rings, 0)
	if err != nil || ring.t != bsonArray {
		return dst, false
	}
	points, err := docBody(ring.val)
	if err != nil {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, `{"__type":"Polygon","coordinates":[`...)
	for pos, i := 0, 0; pos < len(points); i++ {
		var pt element
		if pt, pos, err = nextElement(points, pos); err != nil || pt.t != bsonArray {
			return dst[:start], false
		}
		lng, lat, ok := numberPair(pt.val)
		if !ok {
			return dst[:start], false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		dst = appendNumber(dst, lat)
		dst = append(dst, ',')
		dst = appendNumber(dst, lng)
		dst = append(dst, ']')
	}
	return append(dst, "]}"...), true
}

// appendValue renders any value generically (dates as {"__type":"Date"},
// embedded documents and arrays recursively with the floor and redaction).
func (e *RowEncoder) appendValue(dst []byte, t byte, v []byte, depth int) ([]byte, error) {
	switch t {
	case bsonString, bsonSymbol, bsonJavaScript:
		s := strVal(v)
		if cls, ok := e.hiddenRef(s); ok {
			return appendRedacted(dst, cls), nil
		}
		return jsonenc.AppendString(dst, s), nil
	case bsonInt32:
		return strconv.AppendInt(dst, int64(int32(binary.LittleEndian.Uint32(v))), 10), nil
	case bsonInt64:
		return strconv.AppendInt(dst, int64(binary.LittleEndian.Uint64(v)), 10), nil
	case bsonDouble:
		return appendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(v))), nil
	case bsonBoolean:
		if v[0] != 0 {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case bsonNull, bsonUndefined:
		return append(dst, "null"...), nil
	case bsonDateTime:
		if e.Compact {
			e.noteDate()
			dst = append(dst, '"')
			dst = appendISO(dst, int64(binary.LittleEndian.Uint64(v)))
			return append(dst, '"'), nil
		}
		dst = append(dst, `{"__type":"Date","iso":"`...)
		dst = appendISO(dst, int64(binary.LittleEndian.Uint64(v)))
		return append(dst, `"}`...), nil
	case bsonDocument:
		return e.appendDocument(dst, v, depth)
	case bsonArray:
		return e.appendArray(dst, v, depth)
	case bsonObjectID:
		return appendHexString(dst, v), nil
	case bsonBinary:
		return e.appendBytes(dst, v), nil
	}
	return appendRareValue(dst, t, v)
}

// appendRareValue renders the BSON types a Parse app rarely stores.
func appendRareValue(dst []byte, t byte, v []byte) ([]byte, error) {
	switch t {
	case bsonCodeScope:
		if len(v) < 8 {
			return dst, malformed("truncated code with scope")
		}
		n, err := valueSize(bsonString, v[4:])
		if err != nil {
			return dst, err
		}
		return jsonenc.AppendString(dst, strVal(v[4:4+n])), nil
	case bsonRegex:
		i := bytes.IndexByte(v, 0)
		pat, opts := v[:i], v[i+1:len(v)-1]
		buf := make([]byte, 0, len(pat)+len(opts)+2)
		buf = append(buf, '/')
		buf = append(buf, pat...)
		buf = append(buf, '/')
		buf = append(buf, opts...)
		return jsonenc.AppendString(dst, buf), nil
	case bsonDecimal128:
		d := bson.NewDecimal128(binary.LittleEndian.Uint64(v[8:]), binary.LittleEndian.Uint64(v))
		dst = append(dst, '"')
		dst = append(dst, d.String()...)
		return append(dst, '"'), nil
	case bsonDBPointer:
		return appendHexString(dst, v[len(v)-12:]), nil
	case bsonTimestamp:
		dst = append(dst, `{"t":`...)
		dst = strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(v[4:])), 10)
		dst = append(dst, `,"i":`...)
		dst = strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(v)), 10)
		return append(dst, '}'), nil
	case bsonMinKey:
		return append(dst, `"MinKey"`...), nil
	case bsonMaxKey:
		return append(dst, `"MaxKey"`...), nil
	}
	return dst, malformed("unknown element type 0x%02x", t)
}

// appendDocument renders an embedded document: floor keys dropped, objects of
// hidden classes redacted.
func (e *RowEncoder) appendDocument(dst []byte, doc []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, malformed("nesting deeper than %d", maxDepth)
	}
	body, err := docBody(doc)
	if err != nil {
		return dst, err
	}
	if cls, ok := e.hiddenObject(body); ok {
		return appendRedacted(dst, cls), nil
	}
	if e.Compact {
		if out, ok := e.appendCompactDate(dst, body); ok {
			return out, nil
		}
	}
	track := e.Compact && e.Legend != nil
	pathLen := len(e.path)
	dst = append(dst, '{')
	first := true
	nRedactedKeys := 0
	for pos := 0; pos < len(body); {
		var el element
		if el, pos, err = nextElement(body, pos); err != nil {
			return dst, err
		}
		if isFloorKey(el.key) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if _, ok := e.hiddenRef(el.key); ok {
			nRedactedKeys++
			dst = appendRedactedMember(dst, nRedactedKeys)
			continue
		}
		dst = jsonenc.AppendString(dst, el.key)
		dst = append(dst, ':')
		if track {
			e.path = append(append(e.path[:pathLen], '.'), el.key...)
		}
		if el.t == bsonDateTime && string(el.key) == "iso" && isTypedDate(body) {
			// Legacy nested {__type:"Date", iso:<BSON date>}: Parse Server
			// renders iso as a string.
			dst = append(dst, '"')
			dst = appendISO(dst, int64(binary.LittleEndian.Uint64(el.val)))
			dst = append(dst, '"')
			continue
		}
		if dst, err = e.appendValue(dst, el.t, el.val, depth+1); err != nil {
			return dst, err
		}
	}
	if track {
		e.path = e.path[:pathLen]
	}
	return append(dst, '}'), nil
}

// appendCompactDate renders a nested {__type:"Date", iso:…} object as its
// ISO string (compact shape). It reports false, writing nothing, for any
// other document.
func (e *RowEncoder) appendCompactDate(dst []byte, body []byte) ([]byte, bool) {
	var iso element
	typed, n := false, 0
	for pos := 0; pos < len(body); n++ {
		el, next, err := nextElement(body, pos)
		if err != nil {
			return dst, false
		}
		pos = next
		switch string(el.key) {
		case "__type":
			typed = el.t == bsonString && string(strVal(el.val)) == "Date"
		case "iso":
			iso = el
		}
	}
	if !typed || n != 2 {
		return dst, false
	}
	switch iso.t {
	case bsonDateTime:
		e.noteDate()
		dst = append(dst, '"')
		dst = appendISO(dst, int64(binary.LittleEndian.Uint64(iso.val)))
		return append(dst, '"'), true
	case bsonString:
		e.noteDate()
		return jsonenc.AppendString(dst, strVal(iso.val)), true
	}
	return dst, false
}

// isTypedDate reports whether a document body has __type:"Date".
func isTypedDate(body []byte) bool {
	for pos := 0; pos < len(body); {
		el, next, err := nextElement(body, pos)
		if err != nil {
			return false
		}
		pos = next
		if el.t == bsonString && string(el.key) == "__type" {
			return string(strVal(el.val)) == "Date"
		}
	}
	return false
}

func (e *RowEncoder) appendArray(dst []byte, arr []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, malformed("nesting deeper than %d", maxDepth)
	}
	body, err := docBody(arr)
	if err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	for pos, i := 0, 0; pos < len(body); i++ {
		var el element
		if el, pos, err = nextElement(body, pos); err != nil {
			return dst, err
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = e.appendValue(dst, el.t, el.val, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendBytes renders BinData as {"__type":"Bytes","base64":…}, truncated to
// MaxBytesLen bytes.
func (e *RowEncoder) appendBytes(dst []byte, v []byte) []byte {
	sub := v[4]
	data := v[5:]
	if sub == 0x02 && len(data) >= 4 {
		data = data[4:] // old binary subtype: inner length prefix
	}
	limit := e.maxBytes()
	dst = append(dst, `{"__type":"Bytes","base64":"`...)
	if len(data) <= limit {
		dst = base64.StdEncoding.AppendEncode(dst, data)
		return append(dst, `"}`...)
	}
	dst = base64.StdEncoding.AppendEncode(dst, data[:limit])
	dst = append(dst, `…","truncated":true,"size":`...)
	dst = strconv.AppendInt(dst, int64(len(data)), 10)
	return append(dst, '}')
}

// hiddenRef reports whether s is a "Class$id" reference (referenceClass)
// to a hidden class.
func (e *RowEncoder) hiddenRef(s []byte) ([]byte, bool) {
	if e.HiddenClass == nil {
		return nil, false
	}
	cls, ok := referenceClass(s)
	if !ok || !e.HiddenClass(string(cls)) {
		return nil, false
	}
	return cls, true
}

// RefIDMin and RefIDMax bound the id part of a reference-shaped string:
// the objectIds Parse generates have 10 characters, custom ids (Parse's
// allowCustomObjectId) at most 32 here; shorter words after a "$" are text.
const (
	RefIDMin = 10
	RefIDMax = 32
)

// referenceClass recognises a string of exactly the shape of a stored
// reference, "Class$objectId" — a class name (ClassNameRe), "$", and
// RefIDMin to RefIDMax of [A-Za-z0-9_-] — and returns its class. It is
// the one definition of "a free string is a reference" that the row
// encoder (which redacts such a string for a hidden class), the
// not-a-hidden-reference conjunct (HiddenRefPattern: the same shape as a
// regex) and the write checkpoint (which refuses one for an invisible
// class) share, so no value is a reference to one of them and text to
// another: "Ke$ha", "US$100", "A$AP Rocky" or "VaultSecret$ab~" are text
// to all three (SECURITY.md "Hidden references").
func referenceClass(s []byte) ([]byte, bool) {
	i := bytes.IndexByte(s, '$')
	if n := len(s) - i - 1; i <= 0 || i > 128 || n < RefIDMin || n > RefIDMax {
		return nil, false
	}
	cls, id := s[:i], s[i+1:]
	for j, c := range cls {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && j > 0:
		default:
			return nil, false
		}
	}
	for _, c := range id {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return nil, false
		}
	}
	return cls, true
}

// ReferenceClass is referenceClass for a string.
func ReferenceClass(s string) (string, bool) {
	cls, ok := referenceClass([]byte(s))
	return string(cls), ok
}

// RedactedMarker is what a reference to a hidden or missing class is
// replaced by. It names no class: the marker of a hidden class and that of
// a missing one must be the same bytes.
const RedactedMarker = `{"__redacted":true}`

// appendRedacted writes the redaction marker in place of a reference to
// cls (unused: the marker is class-free on purpose).
func appendRedacted(dst []byte, _ []byte) []byte {
	return append(dst, RedactedMarker...)
}

// RedactedKeyPrefix starts the key that replaces an object key which is
// itself a reference to a hidden class (a map keyed by "Hidden$id", a
// common way to keep per-object flags or caches): "__redacted_1",
// "__redacted_2", … in the order of the object's members. The member's
// value becomes the marker too: it is data about the hidden object.
const RedactedKeyPrefix = "__redacted_"

// appendRedactedMember writes the n-th redacted member of an object.
func appendRedactedMember(dst []byte, n int) []byte {
	dst = append(dst, '"')
	dst = append(dst, RedactedKeyPrefix...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, `":`...)
	return append(dst, RedactedMarker...)
}

func appendHexString(dst []byte, id []byte) []byte {
	dst = append(dst, '"')
	dst = hex.AppendEncode(dst, id)
	return append(dst, '"')
}

// appendFloat formats like encoding/json; NaN and ±Inf become null.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		// Integral values (the common case for Parse numbers): exact digits.
		if f == 0 && math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return strconv.AppendInt(dst, int64(f), 10)
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		fmtc = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendISO writes a BSON datetime (ms since the epoch) as
// 2006-01-02T15:04:05.000Z.
func appendISO(dst []byte, ms int64) []byte {
	secs := ms / 1000
	msec := ms % 1000
	if msec < 0 {
		msec += 1000
		secs--
	}
	days := secs / 86400
	sod := secs % 86400
	if sod < 0 {
		sod += 86400
		days--
	}
	y, m, d := civilFromDays(days)
	if y < 0 || y > 9999 {
		return time.UnixMilli(ms).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z")
	}
	h, mi, s := sod/3600, sod/60%60, sod%60
	return append(dst,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-',
		byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':',
		byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+msec/100), byte('0'+msec/10%10), byte('0'+msec%10), 'Z')
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (H. Hinnant's algorithm).
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

var rowBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// DecodeRow is AppendRow into a map[string]any (via the same code path or equivalent) for callers that need to post-process (CSV export, includes).
//
// The map holds what encoding/json would decode from AppendRow's output,
// except numbers: integral numbers that fit an int64 are int64 (exact even
// beyond 2^53), every other number is float64.
func (e *RowEncoder) DecodeRow(doc bson.Raw) (map[string]any, error) {
	bp := rowBufPool.Get().(*[]byte)
	buf, err := e.AppendRow((*bp)[:0], doc)
	defer func() {
		if cap(buf) <= 1<<20 { // do not pin huge buffers
			*bp = buf[:0]
			rowBufPool.Put(bp)
		}
	}()
	if err != nil {
		return nil, err
	}
	m, err := DecodeJSONObject(buf)
	if err != nil {
		return nil, fmt.Errorf("parsedb: decoding row: %w", err)
	}
	return m, nil
}

// DecodeJSONObject decodes a JSON object the way DecodeRow reports rows:
// integral numbers that fit an int64 are int64 (exact beyond 2^53), every
// other number is float64.
func DecodeJSONObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	convertNumbers(m)
	return m, nil
}

// convertNumbers replaces json.Number values in place.
func convertNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, vv := range x {
			x[k] = convertNumbers(vv)
		}
	case []any:
		for i, vv := range x {
			x[i] = convertNumbers(vv)
		}
	}
	return v
}

// EncodeURIComponent escapes s as JavaScript's encodeURIComponent, which
// Parse Server's files adapters use for a file's name in its url.
func EncodeURIComponent(s string) string {
	const keep = "-_.!~*'()"
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || bytes.IndexByte([]byte(keep), c) >= 0 {
			b = append(b, c)
			continue
		}
		b = fmt.Appendf(b, "%%%02X", c)
	}
	return string(b)
}

// UserFieldRule is one "userField:<Field>" protectedFields audience: Keep
// are the fields still protected on a row whose Field points to the user.
type UserFieldRule struct {
	Field string
	Keep  map[string]bool
}

// matchingUserFieldRules are the rules whose pointer field, on this row,
// names the encoder's user.
func (e *RowEncoder) matchingUserFieldRules(doc []byte) []UserFieldRule {
	if len(e.UserFieldRules) == 0 || e.UserID == "" {
		return nil
	}
	var out []UserFieldRule
	raw := bson.Raw(doc)
	for _, r := range e.UserFieldRules {
		if v, err := raw.LookupErr("_p_" + r.Field); err == nil {
			if s, ok := v.StringValueOK(); ok && s == "_User$"+e.UserID {
				out = append(out, r)
			}
			continue
		}
		v, err := raw.LookupErr(r.Field)
		if err != nil {
			continue
		}
		arr, ok := v.ArrayOK()
		if !ok {
			continue
		}
		vals, _ := arr.Values()
		for _, x := range vals {
			if d, ok := x.DocumentOK(); ok {
				if id, err := d.LookupErr("objectId"); err == nil && id.StringValue() == e.UserID {
					out = append(out, r)
					break
				}
			}
		}
	}
	return out
}

// stillProtected: a protected field stays hidden unless a matching
// userField rule leaves it out (the intersection of the matching rules'
// lists).
func stillProtected(rules []UserFieldRule, field string) bool {
	for _, r := range rules {
		if !r.Keep[field] {
			return false
		}
	}
	return true
}
