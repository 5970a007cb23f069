package parsedb

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The v2 driver sends no maxTimeMS derived from a context deadline for
// operations that return a cursor, and it dropped the per-operation MaxTime
// options. Every read therefore runs as an explicit database command carrying
// maxTimeMS, so that the server itself stops work when a tool times out,
// instead of the client merely walking away from a still-running query.

// FindSpec describes a find.
type FindSpec struct {
	Filter     bson.D
	Projection bson.D
	Sort       bson.D
	Skip       int64
	Limit      int64
	BatchSize  int32
}

func withMaxTime(ctx context.Context, cmd bson.D) bson.D {
	if mt := MaxTimeMS(ctx); mt > 0 {
		cmd = append(cmd, bson.E{Key: "maxTimeMS", Value: mt.Milliseconds()})
	}
	return cmd
}

// FindCommand builds the exact find command sent for a class (golden tests).
func (s *Store) FindCommand(ctx context.Context, class string, spec FindSpec) bson.D {
	filter := spec.Filter
	if filter == nil {
		filter = bson.D{}
	}
	cmd := bson.D{{Key: "find", Value: s.Prefix + class}, {Key: "filter", Value: filter}}
	if len(spec.Projection) > 0 {
		cmd = append(cmd, bson.E{Key: "projection", Value: spec.Projection})
	}
	if len(spec.Sort) > 0 {
		cmd = append(cmd, bson.E{Key: "sort", Value: spec.Sort})
	}
	if spec.Skip > 0 {
		cmd = append(cmd, bson.E{Key: "skip", Value: spec.Skip})
	}
	if spec.Limit > 0 {
		cmd = append(cmd, bson.E{Key: "limit", Value: spec.Limit})
	}
	if spec.BatchSize > 0 {
		cmd = append(cmd, bson.E{Key: "batchSize", Value: spec.BatchSize})
	}
	return withMaxTime(ctx, cmd)
}

// Find runs a find and returns the cursor.
func (s *Store) Find(ctx context.Context, class string, spec FindSpec) (*mongo.Cursor, error) {
	return s.runCursor(ctx, s.FindCommand(ctx, class, spec))
}

// runCursor sends a command that carries our own maxTimeMS. The driver may
// add another maxTimeMS from the context deadline to a RunCommand (a
// duplicate key that servers reject — FerretDB even drops the connection),
// so the command is sent on a context that has no deadline but is cancelled
// together with ctx, deadline included.
func (s *Store) runCursor(ctx context.Context, cmd bson.D) (*mongo.Cursor, error) {
	opCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	defer func() {
		stop()
		cancel()
	}()
	cur, err := s.DB.RunCommandCursor(opCtx, cmd)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return cur, err
}

// AggregateCollection runs a pipeline on a collection given by its full name
// (e.g. a _Join:* collection).
func (s *Store) AggregateCollection(ctx context.Context, collection string, pipeline bson.A) (*mongo.Cursor, error) {
	return s.runCursor(ctx, s.AggregateCommand(ctx, collection, pipeline))
}

// AggregateCommand builds the exact aggregate command sent (golden tests).
func (s *Store) AggregateCommand(ctx context.Context, collection string, pipeline bson.A) bson.D {
	return withMaxTime(ctx, bson.D{
		{Key: "aggregate", Value: collection},
		{Key: "pipeline", Value: pipeline},
		{Key: "cursor", Value: bson.D{}},
	})
}

// Aggregate runs a pipeline on a class's collection.
func (s *Store) Aggregate(ctx context.Context, class string, pipeline bson.A) (*mongo.Cursor, error) {
	return s.runCursor(ctx, s.AggregateCommand(ctx, s.Prefix+class, pipeline))
}

// Count counts a class's documents matching filter the way the driver's
// CountDocuments does ($match + $group $sum), with maxTimeMS.
func (s *Store) Count(ctx context.Context, class string, filter bson.D) (int64, error) {
	return s.CountUpTo(ctx, class, filter, 0)
}

// CollectionCount is a collection's document count from $collStats: its
// metadata on MongoDB and DocumentDB, SQLite's page cells on FerretDB 1.24
// (where a count command reads every document), summed over shards.
func (s *Store) CollectionCount(ctx context.Context, class string) (int64, error) {
	cur, err := s.Collection(class).Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
	if err != nil {
		return 0, err
	}
	var shards []struct {
		Count int64 `bson:"count"`
	}
	if err := cur.All(ctx, &shards); err != nil {
		return 0, err
	}
	var n int64
	for _, sh := range shards {
		n += sh.Count
	}
	return n, nil
}

// CountUpTo is Count that stops counting at upTo (0: no bound), so the
// server reads at most upTo matching documents.
func (s *Store) CountUpTo(ctx context.Context, class string, filter bson.D, upTo int64) (int64, error) {
	if filter == nil {
		filter = bson.D{}
	}
	pipeline := bson.A{bson.D{{Key: "$match", Value: filter}}}
	if upTo > 0 {
		pipeline = append(pipeline, bson.D{{Key: "$limit", Value: upTo}})
	}
	pipeline = append(pipeline, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}})
	cur, err := s.Aggregate(ctx, class, pipeline)
	if err != nil {
		return 0, err
	}
	defer cur.Close(ctx)
	if !cur.Next(ctx) {
		return 0, cur.Err()
	}
	// Read straight from the reply's bytes: decoding into a struct goes
	// through the driver's reflection for one number.
	n := cur.Current.Lookup("n")
	switch n.Type {
	case bson.TypeInt32:
		return int64(n.Int32()), nil
	case bson.TypeInt64:
		return n.Int64(), nil
	case bson.TypeDouble:
		return int64(n.Double()), nil
	}
	return 0, fmt.Errorf("count: unexpected type %v", n.Type)
}
