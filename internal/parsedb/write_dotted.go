package parsedb

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Dotted-key updates (docs/writes.md "Writes"): {"meta.x": v} changes one
// sub-field of an Object field, as Parse Server's REST update does. Parse
// types the top field as Object ("meta.0" on an Array: Array) — adding it
// when it is missing — and applies the value with MongoDB's dotted path:
// an atomic REST value (number, string, boolean, null, and a typed value:
// Date, Pointer, File, GeoPoint, Bytes, Polygon) is stored as given, an
// object or array as an interior value, and the operations Delete,
// Increment, Add, AddUnique and Remove become $unset, $inc, $push,
// $addToSet and $pullAll on the path.

// dottedChange is one dotted key's part of an update.
type dottedChange struct {
	op    string // $set, $unset, $inc, $push, $addToSet, $pullAll
	path  string
	value any
}

// dottedType is the type Parse gives the top field of a dotted key: Array
// when the first sub-key is an index, else Object.
func dottedType(key string) string {
	parts := strings.Split(key, ".")
	if len(parts) > 1 && parts[1] != "" && strings.Trim(parts[1], "0123456789") == "" {
		return TypeArray
	}
	return TypeObject
}

// checkDottedKey refuses what Parse refuses in a dotted key: an empty
// segment, $ anywhere, an invalid top field name.
func checkDottedKey(key string) error {
	for seg := range strings.SplitSeq(key, ".") {
		if seg == "" || strings.Contains(seg, "$") {
			return ParseErr(ParseInvalidKeyName, "Invalid field name for update: %s", truncateMsg(key, 60))
		}
	}
	top := TopField(key)
	if implicitField(top) || !ValidFieldName(top) {
		return ParseErr(ParseInvalidKeyName, "Invalid field name for update: %s", truncateMsg(key, 60))
	}
	return nil
}

// dotted encodes one dotted key of an update. It returns the change and
// the type of the top field when the write adds it to _SCHEMA.
func (s *fieldState) dotted(key string, v any) (*dottedChange, error) {
	if err := checkDottedKey(key); err != nil {
		return nil, err
	}
	top := TopField(key)
	want := valueType{Type: dottedType(key)}
	// The value's own type is checked (a bad __type or __op is refused as
	// Parse refuses it), then the top field is typed as Parse types it.
	t, typed, err := typeOf(key, v)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		switch m["__op"] {
		case "AddRelation", "RemoveRelation", "Batch":
			return nil, ParseErr(ParseInvalidJSON, "%s is not supported on a dotted key (%s): relations are top-level fields", m["__op"], truncateMsg(key, 60))
		}
	}
	_ = t
	if f := s.cls.Field(top); f != nil {
		if f.Type != want.Type {
			return nil, ParseErr(ParseIncorrectType, "schema mismatch for %s.%s; expected %s but got %s", s.cls.Name, top, fieldType(f), want)
		}
	} else if typed {
		if s.added == nil {
			s.added = map[string]valueType{}
		}
		if _, done := s.added[top]; !done {
			s.added[top] = want
			s.adds = append(s.adds, bson.E{Key: top, Value: want.schemaString()})
		}
	}
	if m, ok := v.(map[string]any); ok {
		if op, has := m["__op"].(string); has {
			switch op {
			case "Delete":
				return &dottedChange{op: "$unset", path: key, value: ""}, nil
			case "Increment":
				n, ok := storageNumber(m["amount"])
				if !ok {
					return nil, ParseErr(ParseInvalidJSON, "incrementing must provide a number")
				}
				return &dottedChange{op: "$inc", path: key, value: n}, nil
			case "Add", "AddUnique", "Remove":
				objs, err := opObjects(key, m, s.ord)
				if err != nil {
					return nil, err
				}
				switch op {
				case "Add":
					return &dottedChange{op: "$push", path: key, value: bson.D{{Key: "$each", Value: objs}}}, nil
				case "AddUnique":
					return &dottedChange{op: "$addToSet", path: key, value: bson.D{{Key: "$each", Value: objs}}}, nil
				}
				return &dottedChange{op: "$pullAll", path: key, value: objs}, nil
			}
		}
		if _, isTyped := m["__type"]; isTyped {
			// An atomic typed value is stored as given (Parse's
			// transformKeyValueForUpdate keeps the REST value on a dotted
			// key), after the same validity checks as elsewhere.
			if err := checkTypedAtom(key, m); err != nil {
				return nil, err
			}
			return &dottedChange{op: "$set", path: key, value: orderedBSON(key, m, s.ord)}, nil
		}
	}
	iv, err := interiorAt(key, key, v, 0, s.ord)
	if err != nil {
		return nil, err
	}
	return &dottedChange{op: "$set", path: key, value: iv}, nil
}

// checkTypedAtom checks a typed REST value (Date, Pointer, File, GeoPoint,
// Bytes, Polygon) without converting it.
func checkTypedAtom(key string, m map[string]any) error {
	var err error
	switch m["__type"] {
	case "Date":
		_, err = restDate(m)
	case "Pointer":
		_, _, err = pointerParts(m)
	case "GeoPoint":
		_, _, err = restGeoPoint(m)
	case "Polygon":
		_, err = polygon(m)
	case "File":
		if n, _ := m["name"].(string); n == "" {
			err = ParseErr(ParseIncorrectType, "%s needs a File: {\"__type\":\"File\",\"name\":…}", key)
		}
	case "Bytes":
		if _, ok := m["base64"].(string); !ok {
			err = ParseErr(ParseIncorrectType, "%s needs Bytes: {\"__type\":\"Bytes\",\"base64\":…}", key)
		}
	case "Relation":
		err = ParseErr(ParseIncorrectType, "%s: a Relation is a top-level field", truncateMsg(key, 60))
	}
	return err
}

// pathConflict reports two update paths MongoDB refuses together: equal,
// or one a prefix of the other ("meta" and "meta.x").
func pathConflict(a, b string) bool {
	if a == b {
		return true
	}
	return strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// updatePath applies f to the value at a dotted path of a stored document
// (the dry run's simulated update, as MongoDB applies it): f gets the old
// value and whether it exists, and returns the new value or drop. Missing
// intermediate documents are created unless onlyExisting (an $unset of a
// missing path changes nothing); an intermediate that is not a document is
// refused as MongoDB refuses it.
func updatePath(d bson.D, path string, onlyExisting bool, f func(old any, exists bool) (any, bool)) (bson.D, error) {
	key, rest, deeper := strings.Cut(path, ".")
	i := indexOf(d, key)
	if !deeper {
		var old any
		if i >= 0 {
			old = d[i].Value
		}
		nv, drop := f(old, i >= 0)
		switch {
		case drop && i >= 0:
			return append(d[:i:i], d[i+1:]...), nil
		case drop:
			return d, nil
		case i >= 0:
			d[i].Value = nv
			return d, nil
		}
		return append(d, bson.E{Key: key, Value: nv}), nil
	}
	var sub bson.D
	if i >= 0 {
		s, ok := d[i].Value.(bson.D)
		if !ok {
			if onlyExisting {
				return d, nil
			}
			return nil, ParseErr(ParseIncorrectType, "Cannot create field '%s' in element {%s: %s}", truncateMsg(rest, 40), truncateMsg(key, 40), describeStored(d[i].Value))
		}
		sub = s
	} else if onlyExisting {
		return d, nil
	}
	sub, err := updatePath(sub, rest, onlyExisting, f)
	if err != nil {
		return nil, err
	}
	if i >= 0 {
		d[i].Value = sub
		return d, nil
	}
	return append(d, bson.E{Key: key, Value: sub}), nil
}

func indexOf(d bson.D, key string) int {
	for i, e := range d {
		if e.Key == key {
			return i
		}
	}
	return -1
}

func describeStored(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bson.A:
		return "an array"
	case int32, int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case bson.D:
		return "an object"
	case nil:
		return "null"
	case bson.DateTime:
		return "a date"
	}
	return "a value of another type"
}

// orderedBSON converts a REST value to BSON as given, objects in the
// client's key order.
func orderedBSON(path string, v any, ord KeyOrder) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		d := bson.D{}
		for _, k := range ord.keysOf(path, keys) {
			d = append(d, bson.E{Key: k, Value: orderedBSON(path+"."+k, t[k], ord)})
		}
		return d
	case []any:
		a := make(bson.A, len(t))
		for i, x := range t {
			a[i] = orderedBSON(path+"."+fmt.Sprint(i), x, ord)
		}
		return a
	case float64:
		n, _ := storageNumber(t)
		return n
	}
	return v
}
