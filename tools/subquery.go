package tools

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// MaxSubQueryResults caps the ids or values a cross-class operator may
// resolve to; a larger set would make an unbounded $in list.
const MaxSubQueryResults = 10000

// subQueries resolves $inQuery/$notInQuery/$select/$dontSelect/$relatedTo
// through the same policy as a top-level read: the sub-query's class passes
// the class gate and carries every filter and the identity's ACL scope.
type subQueries struct {
	d      *Deps
	schema *parsedb.Schema
}

func (s *subQueries) target(ctx context.Context, className string, where map[string]any) (*readTarget, error) {
	cls, err := s.d.Policy.ResolveClass(ctx, s.schema, className)
	if err != nil {
		return nil, err
	}
	return buildFilter(ctx, s.d, s.schema, cls, where, true)
}

func (s *subQueries) MatchingIDs(ctx context.Context, className string, where map[string]any) ([]string, error) {
	t, err := s.target(ctx, className, where)
	if err != nil {
		return nil, err
	}
	cur, err := s.d.Store.Find(ctx, t.Class.Name, parsedb.FindSpec{Filter: t.Filter, Projection: bson.D{{Key: "_id", Value: 1}}, Limit: MaxSubQueryResults + 1})
	if err != nil {
		return nil, err
	}
	return collectStrings(ctx, cur, "_id", toolerror.New(toolerror.InvalidQuery, "the sub-query on %s matches more than %d objects; narrow its where", className, MaxSubQueryResults))
}

func (s *subQueries) SelectValues(ctx context.Context, className string, where map[string]any, key string) ([]any, error) {
	t, err := s.target(ctx, className, where)
	if err != nil {
		return nil, err
	}
	if err := s.d.Policy.CheckReadField(t.Class, key); err != nil {
		return nil, err
	}
	hidden := s.d.Policy.HiddenRefs(s.schema)
	if f := t.Class.Field(key); f != nil && f.Type == parsedb.TypePointer && s.d.Policy.TargetInvisible(s.schema, f.TargetClass) {
		return nil, toolerror.New(toolerror.InvalidQuery, "%s points to a class that does not exist or is not accessible: it cannot be used in a where", key)
	}
	// Values that are references to a hidden class are never selected.
	filter := andFilters(t.Filter, hidden.NotHiddenRefFilter(t.Class, []string{key}))
	storage := parsedb.StorageFieldName(t.Class, key)
	cur, err := s.d.Store.Find(ctx, t.Class.Name, parsedb.FindSpec{Filter: filter, Projection: bson.D{{Key: storage, Value: 1}}, Limit: MaxSubQueryResults + 1})
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var values []any
	for cur.Next(ctx) {
		if len(values) == MaxSubQueryResults {
			return nil, toolerror.New(toolerror.InvalidQuery, "the $select sub-query on %s matches more than %d objects; narrow its where", className, MaxSubQueryResults)
		}
		var doc bson.M
		if err := bson.Unmarshal(cur.Current, &doc); err != nil {
			return nil, err
		}
		if v, ok := doc[storage]; ok {
			values = append(values, v)
		}
	}
	return values, cur.Err()
}

func (s *subQueries) RelatedIDs(ctx context.Context, ownerClass, ownerID, key string) ([]string, error) {
	owner, err := s.d.Policy.ResolveClass(ctx, s.schema, ownerClass)
	if err != nil {
		return nil, err
	}
	// The relation is a field of the owner: it must be one this session may
	// read there (internal floor, agent_fields, protectedFields).
	if err := s.d.Policy.CheckReadField(owner, key); err != nil {
		return nil, err
	}
	f := owner.Field(key)
	if f == nil || f.Type != parsedb.TypeRelation {
		return nil, toolerror.New(toolerror.InvalidQuery, "$relatedTo: %s.%s is not a relation field", ownerClass, key)
	}
	if s.d.Policy.TargetInvisible(s.schema, f.TargetClass) {
		return nil, s.d.Policy.TargetUnavailable(ctx, "$relatedTo: the relation %s.%s", ownerClass, key)
	}
	// The owner must itself be readable by this session.
	ot, err := buildFilter(ctx, s.d, s.schema, owner, map[string]any{"objectId": ownerID}, false)
	if err != nil {
		return nil, err
	}
	n, err := s.d.Store.Count(ctx, owner.Name, ot.Filter)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []string{}, nil
	}
	join := s.d.Store.JoinCollection(key, owner.Name)
	pipeline := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "owningId", Value: ownerID}}}}, bson.D{{Key: "$limit", Value: MaxSubQueryResults + 1}}}
	cur, err := s.d.Store.AggregateCollection(ctx, join.Name(), pipeline)
	if err != nil {
		return nil, err
	}
	return collectStrings(ctx, cur, "relatedId", toolerror.New(toolerror.InvalidQuery, "$relatedTo: the relation has more than %d members", MaxSubQueryResults))
}

// OwningIDs answers a where on a relation field ({"songs": <Song pointer>}):
// the owners whose relation contains one of relatedIDs. The relation's target
// class must be visible; the owners' own policy is applied by the query that
// uses the ids.
func (s *subQueries) OwningIDs(ctx context.Context, ownerClass, key string, relatedIDs []string) ([]string, error) {
	owner, err := s.d.Policy.ResolveClass(ctx, s.schema, ownerClass)
	if err != nil {
		return nil, err
	}
	if err := s.d.Policy.CheckReadField(owner, key); err != nil {
		return nil, err
	}
	f := owner.Field(key)
	if f == nil || f.Type != parsedb.TypeRelation {
		return nil, toolerror.New(toolerror.InvalidQuery, "%s.%s is not a relation field", ownerClass, key)
	}
	if s.d.Policy.TargetInvisible(s.schema, f.TargetClass) {
		return nil, s.d.Policy.TargetUnavailable(ctx, "the relation %s.%s", ownerClass, key)
	}
	ids := make(bson.A, len(relatedIDs))
	for i, id := range relatedIDs {
		ids[i] = id
	}
	join := s.d.Store.JoinCollection(key, owner.Name)
	pipeline := bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "relatedId", Value: bson.D{{Key: "$in", Value: ids}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$owningId"}}}},
		bson.D{{Key: "$limit", Value: MaxSubQueryResults + 1}},
	}
	cur, err := s.d.Store.AggregateCollection(ctx, join.Name(), pipeline)
	if err != nil {
		return nil, err
	}
	return collectStrings(ctx, cur, "_id", toolerror.New(toolerror.InvalidQuery, "the relation constraint on %s.%s matches more than %d owners", ownerClass, key, MaxSubQueryResults))
}

var _ parsedb.RelationOwners = (*subQueries)(nil)

// collectStrings reads the string field of every document of cur (closing
// it), failing with tooMany past MaxSubQueryResults values.
func collectStrings(ctx context.Context, cur *mongo.Cursor, field string, tooMany error) ([]string, error) {
	defer cur.Close(ctx)
	out := []string{}
	for cur.Next(ctx) {
		if len(out) == MaxSubQueryResults {
			return nil, tooMany
		}
		if s, ok := cur.Current.Lookup(field).StringValueOK(); ok {
			out = append(out, s)
		}
	}
	return out, cur.Err()
}
