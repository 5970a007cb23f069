package policy

// Small policy accessors used by the query/export tools (tools/query.go,
// tools/objects.go, tools/export.go).

// JoinFields are the fields projected when class is included from elsewhere
// with the bare pointer named in keys (classes.C.join_fields).
func (e *Engine) JoinFields(class string) []string {
	if cp := e.Class(class); cp != nil {
		return cp.JoinFields
	}
	return nil
}

// LargeFields are the class's large_fields.
func (e *Engine) LargeFields(class string) []string {
	if cp := e.Class(class); cp != nil {
		return cp.LargeFields
	}
	return nil
}
