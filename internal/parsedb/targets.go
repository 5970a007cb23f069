package parsedb

// Pointer and Relation targets that the caller may not learn about.
//
// A field's target class is invisible when it is hidden or missing from
// the schema: both must answer alike on every surface that names or acts
// on the target — schema output, error hints, prompts, envelopes, where,
// order and pipelines (SECURITY.md "Hidden references", "Hidden equals
// missing"). This is the one predicate they all use.

// InvisibleTargetLabel is shown in place of an invisible target's name.
const InvisibleTargetLabel = "<targetClass>"

// TargetInvisible reports whether a Pointer or Relation target class is
// hidden (by hidden) or, when schema is non-nil, missing from it.
func TargetInvisible(schema *Schema, hidden func(class string) bool, class string) bool {
	if hidden != nil && hidden(class) {
		return true
	}
	return schema != nil && class != "" && schema.Class(class) == nil
}

// TargetLabel is the target class as a message may name it: the class, or
// InvisibleTargetLabel when the target is invisible.
func TargetLabel(schema *Schema, hidden func(class string) bool, class string) string {
	if TargetInvisible(schema, hidden, class) {
		return InvisibleTargetLabel
	}
	return class
}
