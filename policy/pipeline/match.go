package pipeline

import (
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// The $match filters: top-level operators, field conditions with the where
// rules, Parse-only operators refused.

// filter validates a $match filter (top) or a sub-filter.
func (pv *validator) filter(s *fieldState, v any, where string, top bool) error {
	entries, ok := parsedb.Entries(v)
	if !ok {
		return invalidPipeline("%s needs a filter object", where)
	}
	for _, e := range entries {
		switch {
		case e.Key == "$and" || e.Key == "$or" || e.Key == "$nor":
			arr, ok := parsedb.ArrayValues(e.Value)
			if !ok || len(arr) == 0 {
				return invalidPipeline("%s: %s needs a non-empty array of filters", where, e.Key)
			}
			for _, sub := range arr {
				if err := pv.filter(s, sub, where, top); err != nil {
					return err
				}
			}
		case e.Key == "$expr":
			if err := pv.operand(s, e.Value, "used in $expr"); err != nil {
				return err
			}
		case parseOnlyOperators[e.Key]:
			return parseOnlyError(e.Key, where)
		case e.Key == "$text" || e.Key == "$comment":
			// No field references.
		case strings.HasPrefix(e.Key, "$"):
			return invalidPipeline("%s: unknown operator %s at the top of a filter (allowed there: $and, $or, $nor, $expr, $text, $comment)", where, truncateText(e.Key, 40))
		default:
			if err := pv.fieldFilter(s, e.Key, e.Value, where); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldFilter checks one `path: condition` of a $match, with the where
// rules: every stored path it reads gets the not-a-hidden-reference
// conjunct (so do the sub-paths an $elemMatch tests), and on a value that
// may hold an Object or Array a literal naming a hidden or missing class is
// refused, as the where translator refuses it.
func (pv *validator) fieldFilter(s *fieldState, path string, cond any, where string) error {
	v, err := pv.ref(s, path, "")
	if err != nil {
		return err
	}
	if v.opaque && pv.namesInvisibleClass(cond) {
		return invalidPipeline("%s: %s: the value refers to a class that does not exist or is not accessible: it cannot be used in a $match", where, truncateText(path, 60))
	}
	if v.opaque {
		// MongoDB orders objects field by field: a range over a whole
		// Object or Array value with an object literal ({objectId: "m"})
		// bisects what lies below it, as in a where (parsedb rangeOperand).
		if op := orderingWithObject(cond); op != "" {
			return invalidPipeline("%s: %s: %s compares with a single value (a number, string or date), not an object or array: bad atom (compare a sub-field with a dotted path instead)", where, truncateText(path, 60), op)
		}
	}
	return pv.fieldOperators(s, path, cond, where)
}

// fieldOperators looks into a $match field's condition: Parse-only
// operators are refused; $elemMatch conditions on element sub-paths are
// field conditions of path.sub.
func (pv *validator) fieldOperators(s *fieldState, path string, v any, where string) error {
	entries, ok := parsedb.Entries(v)
	if !ok {
		return nil
	}
	for _, e := range entries {
		if parseOnlyOperators[e.Key] {
			return parseOnlyError(e.Key, where)
		}
		switch e.Key {
		case "$not":
			if err := pv.fieldOperators(s, path, e.Value, where); err != nil {
				return err
			}
		case "$elemMatch":
			sub, ok := parsedb.Entries(e.Value)
			if !ok {
				continue
			}
			for _, se := range sub {
				switch {
				case se.Key == "$and" || se.Key == "$or" || se.Key == "$nor":
					arr, _ := parsedb.ArrayValues(se.Value)
					for _, br := range arr {
						if err := pv.fieldOperators(s, path, bsonDoc("$elemMatch", br), where); err != nil {
							return err
						}
					}
				case se.Key == "$expr" || se.Key == "$where":
					return invalidPipeline("%s: %s is not supported inside $elemMatch", where, se.Key)
				case strings.HasPrefix(se.Key, "$"):
					if err := pv.fieldOperators(s, path, bsonDoc(se.Key, se.Value), where); err != nil {
						return err
					}
				default:
					if err := pv.fieldFilter(s, path+"."+se.Key, se.Value, where); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func bsonDoc(key string, v any) map[string]any { return map[string]any{key: v} }

// orderingWithObject returns the ordering operator ($gt, $gte, $lt, $lte)
// of a $match condition whose operand is an object or array (a date
// object aside), at any depth of $not and $elemMatch; "" if none.
func orderingWithObject(cond any) string {
	entries, ok := parsedb.Entries(cond)
	if !ok {
		return ""
	}
	for _, e := range entries {
		switch e.Key {
		case "$gt", "$gte", "$lt", "$lte":
			if _, isArr := parsedb.ArrayValues(e.Value); isArr {
				return e.Key
			}
			if obj, isObj := parsedb.Entries(e.Value); isObj && !isDateObject(obj) {
				return e.Key
			}
		case "$not":
			if op := orderingWithObject(e.Value); op != "" {
				return op
			}
		case "$elemMatch", "$and", "$or", "$nor":
			if op := orderingWithObject(e.Value); op != "" {
				return op
			}
			if arr, ok := parsedb.ArrayValues(e.Value); ok {
				for _, x := range arr {
					if op := orderingWithObject(x); op != "" {
						return op
					}
				}
			}
		default:
			if !strings.HasPrefix(e.Key, "$") {
				// A field condition inside $elemMatch.
				if op := orderingWithObject(e.Value); op != "" {
					return op
				}
			}
		}
	}
	return ""
}

// isDateObject: {"__type":"Date","iso":…} or {"$date":…}.
func isDateObject(obj []parsedb.Entry) bool {
	if t, ok := parsedb.EntryValue(obj, "__type"); ok && t == "Date" {
		return true
	}
	return len(obj) == 1 && obj[0].Key == "$date"
}

func parseOnlyError(op, where string) error {
	return invalidPipeline("%s: %s is a Parse where operator; pipelines use MongoDB syntax (use $lookup to join, or query_class/count_objects for where constraints)", where, op)
}
