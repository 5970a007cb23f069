package parsedb

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Entry is one key/value of a pipeline or where object, whichever way it was
// decoded (bson.D keeps order; JSON maps are visited in sorted key order so
// that validation and translation are deterministic).
type Entry struct {
	Key   string
	Value any
}

// Entries returns an object's entries in order, or false if v is not an
// object.
func Entries(v any) ([]Entry, bool) {
	switch m := v.(type) {
	case bson.D:
		out := make([]Entry, len(m))
		for i, e := range m {
			out[i] = Entry{e.Key, e.Value}
		}
		return out, true
	case map[string]any:
		return sortedEntries(m), true
	case bson.M:
		return sortedEntries(m), true
	}
	return nil, false
}

func sortedEntries(m map[string]any) []Entry {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = Entry{k, m[k]}
	}
	return out
}

// ArrayValues returns an array's elements, or false if v is not an array.
func ArrayValues(v any) ([]any, bool) {
	switch a := v.(type) {
	case []any:
		return a, true
	case bson.A:
		return []any(a), true
	}
	return nil, false
}

// EntryValue returns the value of key among entries.
func EntryValue(entries []Entry, key string) (any, bool) {
	for _, e := range entries {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// IsOperatorObject reports whether entries form an operator expression
// ({"$op": …}).
func IsOperatorObject(entries []Entry) bool {
	return len(entries) == 1 && strings.HasPrefix(entries[0].Key, "$")
}
