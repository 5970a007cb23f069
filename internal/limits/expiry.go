package limits

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Expiry removes a collection's documents once the time in their Field has
// passed: a TTL index where the server has them (MongoDB, FerretDB 2), and,
// for a server without (FerretDB 1.x, which refuses or ignores the index),
// a sweep at most once a minute.
type Expiry struct {
	Coll  *mongo.Collection
	Field string
	// Background runs the index creation and the sweep off the caller's
	// path (with a context of their own) instead of inline with its ctx.
	Background bool

	mu        sync.Mutex
	indexed   bool
	lastSweep time.Time
}

// Maintain creates the index the first time and sweeps when a minute has
// passed since the last sweep.
func (x *Expiry) Maintain(ctx context.Context, now time.Time) {
	x.mu.Lock()
	index := !x.indexed
	x.indexed = true
	sweep := now.Sub(x.lastSweep) >= time.Minute
	if sweep {
		x.lastSweep = now
	}
	x.mu.Unlock()
	if !index && !sweep {
		return
	}
	work := func(ctx context.Context) {
		if index {
			// An error (no TTL indexes) changes nothing: the sweep covers it.
			_, _ = x.Coll.Indexes().CreateOne(ctx, mongo.IndexModel{
				Keys:    bson.D{{Key: x.Field, Value: 1}},
				Options: options.Index().SetExpireAfterSeconds(0).SetName(x.Field + "_ttl"),
			})
		}
		if sweep {
			_, _ = x.Coll.DeleteMany(ctx, bson.D{{Key: x.Field, Value: bson.D{{Key: "$lt", Value: now}}}})
		}
	}
	if !x.Background {
		work(ctx)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		work(ctx)
	}()
}
