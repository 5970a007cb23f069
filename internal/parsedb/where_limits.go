package parsedb

import "strings"

// Size limits of a where (and of a pipeline's filters, see package policy):
// how many branches a logical operator may have, how long a $in/$nin/$all
// list may be and how many constraint nodes a whole where may hold. They
// bound the work one call can ask of the database and of the translator;
// going over them is a model-fixable invalid_query that says which limit
// and how to stay under it.

const (
	// MaxLogicalBranches caps the branches of one $or, $and or $nor.
	MaxLogicalBranches = 100
	// MaxListValues caps the values of one $in, $nin or $all.
	MaxListValues = 1000
	// MaxConstraintNodes caps the objects, keys and array elements of a
	// whole where (or pipeline); every segment of a dotted key or "$path"
	// reference beyond the first counts as one more node.
	MaxConstraintNodes = 5000
	// MaxPathSegments caps the segments of one dotted path. Parse field
	// paths rarely go past five; the bound keeps the policy filters the
	// translator generates per path prefix (the not-a-hidden-reference
	// conjunct: two clauses per prefix, each naming every hidden class)
	// proportional to what the caller sent.
	MaxPathSegments = 16
)

// countPath adds the segments of a dotted path beyond the first to the node
// count, refusing a path deeper than MaxPathSegments: the filters generated
// for a path grow with its depth, so depth is paid for like nodes.
func countPath(path string, n *int) error {
	dots := strings.Count(path, ".")
	if dots == 0 {
		return nil
	}
	if dots+1 > MaxPathSegments {
		return invalidQuery("the path %q has %d segments; at most %d are allowed", truncateMsg(path, 60), dots+1, MaxPathSegments)
	}
	*n += dots
	return nil
}

// listLimited are the operators whose array operand is capped by
// MaxListValues.
var listLimited = map[string]bool{"$in": true, "$nin": true, "$all": true}

// logicalOperators are capped by MaxLogicalBranches.
var logicalOperators = map[string]bool{"$or": true, "$and": true, "$nor": true}

// CheckSizeLimits refuses a where or pipeline whose logical operators,
// list operators or total node count exceed the limits above.
func CheckSizeLimits(v any) error {
	n := 0
	return checkSize(v, "", &n)
}

func checkSize(v any, key string, n *int) error {
	*n++
	if s, ok := v.(string); ok && strings.HasPrefix(s, "$") && !strings.HasPrefix(s, "$$") {
		if err := countPath(s[1:], n); err != nil {
			return err
		}
	}
	if err := countPath(key, n); err != nil {
		return err
	}
	if *n > MaxConstraintNodes {
		return invalidQuery("the query has more than %d constraint nodes (objects, keys and list values); split it into several calls or use $inQuery/$select for long id lists", MaxConstraintNodes)
	}
	if m, ok := whereMap(v); ok {
		for k, child := range m {
			if err := checkSize(child, k, n); err != nil {
				return err
			}
		}
		return nil
	}
	if entries, ok := Entries(v); ok {
		for _, e := range entries {
			if err := checkSize(e.Value, e.Key, n); err != nil {
				return err
			}
		}
		return nil
	}
	a, ok := whereArray(v)
	if !ok {
		a, ok = ArrayValues(v)
	}
	if !ok {
		return nil
	}
	switch {
	case logicalOperators[key] && len(a) > MaxLogicalBranches:
		return invalidQuery("%s has %d branches; at most %d are allowed — use $in for alternatives on one field, or split the query", key, len(a), MaxLogicalBranches)
	case listLimited[key] && len(a) > MaxListValues:
		return invalidQuery("%s has %d values; at most %d are allowed — split the list over several calls or select the ids with $inQuery/$select", key, len(a), MaxListValues)
	}
	for _, child := range a {
		if err := checkSize(child, "", n); err != nil {
			return err
		}
	}
	return nil
}
