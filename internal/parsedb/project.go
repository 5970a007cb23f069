package parsedb

// Projection, sort and explain helpers for the read tools (query_class,
// get_object(s), get_sample_objects, explain_query, export_data): REST
// `keys` and `order` → the storage-format projection and sort of a find.
//
// Decisions (tests pin each one):
//   - objectId, createdAt and updatedAt are always returned: _id comes by
//     default and _created_at/_updated_at are always projected.
//   - A pointer key projects its whole `_p_` column, also when named with a
//     sub-path ("artist.name" → `_p_artist`): sub-paths of pointers select
//     fields of the included object, not of the pointer string.
//   - A dotted key into an object field projects the whole top-level field
//     ("meta.importedAt" → meta) and the row codec selects the sub-path
//     after redaction (RowEncoder.SelectKeys): a MongoDB sub-path projection
//     would strip the className that marks an embedded reference to a
//     hidden class (SECURITY.md, "Hidden references").
//   - Every sort ends with `_id` ascending unless objectId is already a sort
//     key, and a read without `order` sorts by `_id`: pages walked with skip
//     are then deterministic.

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// OrderKey is one sort key of a REST order.
type OrderKey struct {
	Field string // REST field path
	Desc  bool
}

// ParseOrder parses REST order entries: each entry may itself be a comma
// list ("-plays,title"); a leading "-" sorts descending. Empty entries are
// skipped; a field named twice is an error.
func ParseOrder(entries []string) ([]OrderKey, error) {
	var out []OrderKey
	seen := map[string]bool{}
	for _, entry := range entries {
		for part := range strings.SplitSeq(entry, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			k := OrderKey{Field: part}
			if strings.HasPrefix(part, "-") {
				k = OrderKey{Field: part[1:], Desc: true}
			} else if strings.HasPrefix(part, "+") {
				k.Field = part[1:]
			}
			if !FieldPathRe.MatchString(k.Field) {
				return nil, toolerror.New(toolerror.InvalidArgument, "order entry %q is not a field name (use \"field\" or \"-field\" for descending, comma-separated)", cut(part, 40))
			}
			if seen[k.Field] {
				return nil, toolerror.New(toolerror.InvalidArgument, "order names %s twice", k.Field)
			}
			seen[k.Field] = true
			out = append(out, k)
		}
	}
	return out, nil
}

// SortDoc is the storage sort for order keys, ending with the `_id`
// tie-breaker (see the decisions above).
func SortDoc(cls *Class, keys []OrderKey) bson.D {
	sort := make(bson.D, 0, len(keys)+1)
	hasID := false
	for _, k := range keys {
		dir := int32(1)
		if k.Desc {
			dir = -1
		}
		name := StorageFieldName(cls, k.Field)
		if name == "_id" {
			hasID = true
		}
		sort = append(sort, bson.E{Key: name, Value: dir})
	}
	if !hasID {
		sort = append(sort, bson.E{Key: "_id", Value: int32(1)})
	}
	return sort
}

// isIdentity reports the fields every row always carries.
func isIdentity(name string) bool {
	return name == "objectId" || name == "createdAt" || name == "updatedAt"
}

// KeyRoots are the top-level REST field names of keys (for
// RowEncoder.Keys). nil when keys is empty (= every field).
func KeyRoots(keys []string) map[string]bool {
	if len(keys) == 0 {
		return nil
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		root, _, _ := strings.Cut(k, ".")
		out[root] = true
	}
	return out
}

// Projection is the storage projection of REST keys; nil when keys is empty
// (every field).
func Projection(cls *Class, keys []string) bson.D {
	if len(keys) == 0 {
		return nil
	}
	proj := bson.D{{Key: "_created_at", Value: int32(1)}, {Key: "_updated_at", Value: int32(1)}}
	var paths []string
	for _, k := range keys {
		root, _, dotted := strings.Cut(k, ".")
		if isIdentity(root) {
			continue
		}
		switch f := cls.Field(root); {
		case f != nil && f.Type == TypePointer:
			paths = append(paths, "_p_"+root)
		case dotted:
			// The whole field: the codec selects the sub-path after
			// redaction (RowEncoder.SelectKeys), because a server-side
			// sub-path projection strips the className that marks an
			// embedded reference to a hidden class.
			paths = append(paths, root)
		default:
			paths = append(paths, StorageFieldName(cls, root))
		}
	}
	// Drop duplicates and paths covered by a shorter requested path.
	for i, p := range paths {
		covered := false
		for j, q := range paths {
			if i == j {
				continue
			}
			if q == p && j < i || strings.HasPrefix(p, q+".") {
				covered = true
				break
			}
		}
		if !covered {
			proj = append(proj, bson.E{Key: p, Value: int32(1)})
		}
	}
	return proj
}

// ExclusionProjection excludes REST fields (the size-cap fallback of
// query_class when no keys were given).
func ExclusionProjection(cls *Class, fields []string) bson.D {
	if len(fields) == 0 {
		return nil
	}
	proj := make(bson.D, 0, len(fields))
	for _, f := range fields {
		proj = append(proj, bson.E{Key: StorageFieldName(cls, f), Value: int32(0)})
	}
	return proj
}

// ExplainCommand builds the explain of a find (queryPlanner verbosity), with
// maxTimeMS on the explain command itself.
func (s *Store) ExplainCommand(ctx context.Context, class string, filter bson.D) bson.D {
	if filter == nil {
		filter = bson.D{}
	}
	return withMaxTime(ctx, bson.D{
		{Key: "explain", Value: bson.D{{Key: "find", Value: s.Prefix + class}, {Key: "filter", Value: filter}}},
		{Key: "verbosity", Value: "queryPlanner"},
	})
}

// Explain runs ExplainCommand and returns the server's answer.
func (s *Store) Explain(ctx context.Context, class string, filter bson.D) (bson.Raw, error) {
	cmd := s.ExplainCommand(ctx, class, filter)
	// Like runCursor: our own maxTimeMS, on a context without a deadline
	// (the driver would add a second maxTimeMS) but cancelled with ctx.
	opCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	defer func() {
		stop()
		cancel()
	}()
	raw, err := s.DB.RunCommand(opCtx, cmd).Raw()
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return raw, err
}

// PlanSummary is what explain_query shows of a query plan.
type PlanSummary struct {
	// Available is false when the server's explain has no winningPlan
	// (FerretDB): the other fields are then empty.
	Available bool     `json:"available"`
	Stages    []string `json:"stages,omitempty"`
	Indexes   []string `json:"indexes,omitempty"`
	Collscan  bool     `json:"collscan"`
}

// SummarizeExplain extracts the winning plan's stage names (outermost
// first), the indexes it uses and whether it scans the whole collection.
// It understands the classic plan tree (stage/inputStage/inputStages) and
// MongoDB 7+'s winningPlan.queryPlan wrapper.
func SummarizeExplain(raw bson.Raw) PlanSummary {
	var doc bson.D
	if err := bson.Unmarshal(raw, &doc); err != nil {
		return PlanSummary{}
	}
	top := asDoc(doc)
	qp := asDoc(top["queryPlanner"])
	if qp == nil {
		// Aggregate-shaped answers keep the planner in the first stage.
		if st, ok := top["stages"].(bson.A); ok && len(st) > 0 {
			qp = asDoc(asDoc(asDoc(st[0])["$cursor"])["queryPlanner"])
		}
	}
	wp := asDoc(qp["winningPlan"])
	if wp == nil {
		return PlanSummary{}
	}
	if inner := asDoc(wp["queryPlan"]); inner != nil {
		wp = inner
	}
	sum := PlanSummary{Available: true}
	seenIx := map[string]bool{}
	var walk func(m map[string]any, depth int)
	walk = func(m map[string]any, depth int) {
		if m == nil || depth > 50 {
			return
		}
		if st, ok := m["stage"].(string); ok {
			sum.Stages = append(sum.Stages, st)
			if st == "COLLSCAN" {
				sum.Collscan = true
			}
		}
		if ix, ok := m["indexName"].(string); ok && !seenIx[ix] {
			seenIx[ix] = true
			sum.Indexes = append(sum.Indexes, ix)
		}
		walk(asDoc(m["inputStage"]), depth+1)
		if ins, ok := m["inputStages"].(bson.A); ok {
			for _, x := range ins {
				walk(asDoc(x), depth+1)
			}
		}
	}
	walk(wp, 0)
	if len(sum.Stages) == 0 {
		return PlanSummary{}
	}
	return sum
}

// asDoc views a decoded document (bson.D or bson.M) as a map; nil otherwise.
func asDoc(v any) map[string]any {
	switch x := v.(type) {
	case bson.M:
		return x
	case map[string]any:
		return x
	case bson.D:
		m := make(map[string]any, len(x))
		for _, e := range x {
			m[e.Key] = e.Value
		}
		return m
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
