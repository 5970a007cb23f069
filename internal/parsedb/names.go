package parsedb

import "regexp"

// The syntax of names in Parse, checked before a name reaches a filter, a
// collection name or an error message. One definition for every layer (the
// where translator, the policy file, the tools' and prompts' arguments).
var (
	// ClassNameRe is a Parse class name: letters, digits and _, starting
	// with a letter or _, at most 128 characters.
	ClassNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	// FieldNameRe is a top-level REST field name (no leading _: those
	// are storage names).
	FieldNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,127}$`)
	// FieldPathRe is a field name with optional dotted sub-fields.
	FieldPathRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,127}(\.[A-Za-z][A-Za-z0-9_]{0,127})*$`)
	// ObjectIDRe is an objectId as callers may send it.
	ObjectIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
)
