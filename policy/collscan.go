package policy

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// CheckCollscan is the refuse_collscan guard (SECURITY.md "Limits and guards"): with
// settings.refuse_collscan on, a read of a class without allow_collscan is
// explained first, and a plan that scans the whole collection — or no plan
// at all (explain failed, or the server gives no winningPlan, as FerretDB
// does) — is refused with {refused:true, reason:"COLLSCAN on C",
// suggestion}. Call it with the exact filter about to be sent, before a find
// or count.
func (e *Engine) CheckCollscan(ctx context.Context, store *parsedb.Store, cls *parsedb.Class, filter bson.D) error {
	e = e.For(ctx)
	if !e.RefuseCollscan() {
		return nil
	}
	if cp := e.Class(cls.Name); cp != nil && cp.AllowCollscan {
		return nil
	}
	if store == nil {
		store = e.store
	}
	refusal := toolerror.Refuse(toolerror.InvalidQuery, "collscan", "COLLSCAN on "+cls.Name,
		"filter on an indexed field (get_schema lists "+cls.Name+"'s indexes), or ask the operator to add an index or set allow_collscan for "+cls.Name)
	if store == nil {
		return refusal
	}
	if filter == nil {
		filter = bson.D{}
	}
	cmd := bson.D{
		{Key: "explain", Value: bson.D{{Key: "find", Value: store.Prefix + cls.Name}, {Key: "filter", Value: filter}}},
		{Key: "verbosity", Value: "queryPlanner"},
	}
	var out bson.M
	if err := store.DB.RunCommand(ctx, cmd).Decode(&out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.log.Warn().Err(err).Str("class", cls.Name).Msg("explain failed: refusing the read (refuse_collscan fails closed)")
		refusal.Message = "COLLSCAN on " + cls.Name + " (the query plan could not be checked)"
		refusal.Cause = err
		return refusal
	}
	plan, found := findWinningPlan(out, 0)
	if !found {
		refusal.Message = "COLLSCAN on " + cls.Name + " (the database gives no query plan to check)"
		return refusal
	}
	if hasStage(plan, "COLLSCAN", 0) {
		return refusal
	}
	return nil
}

// findWinningPlan finds the first "winningPlan" document anywhere in an
// explain output (sharded and SBE outputs nest it differently).
func findWinningPlan(v any, depth int) (any, bool) {
	if depth > 32 {
		return nil, false
	}
	switch t := v.(type) {
	case bson.M, bson.D, map[string]any:
		m := asMap(t)
		if p, ok := m["winningPlan"]; ok && p != nil {
			return p, true
		}
		for _, c := range m {
			if p, ok := findWinningPlan(c, depth+1); ok {
				return p, true
			}
		}
	case bson.A:
		for _, c := range t {
			if p, ok := findWinningPlan(c, depth+1); ok {
				return p, true
			}
		}
	}
	return nil, false
}

// hasStage reports whether a plan tree has a stage named name.
func hasStage(v any, name string, depth int) bool {
	if depth > 64 {
		return true // an absurd plan: fail closed
	}
	switch t := v.(type) {
	case bson.M, bson.D, map[string]any:
		m := asMap(t)
		if s, ok := m["stage"].(string); ok && s == name {
			return true
		}
		for _, c := range m {
			if hasStage(c, name, depth+1) {
				return true
			}
		}
	case bson.A:
		for _, c := range t {
			if hasStage(c, name, depth+1) {
				return true
			}
		}
	}
	return false
}
