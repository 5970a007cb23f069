package enginetest_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/enginetest"
)

// TestSecondEngineRunsWhatFerretDB1Cannot proves the harness serves the
// second engine: a $lookup with a date expression and a nested array, none
// of which the embedded FerretDB 1.24 executes.
func TestSecondEngineRunsWhatFerretDB1Cannot(t *testing.T) {
	uri := enginetest.DatabaseURI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(ctx)
	db := cl.Database(mustDatabase(t, uri))
	at := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	if _, err := db.Collection("Author").InsertOne(ctx, bson.D{{Key: "_id", Value: "a1"}, {Key: "name", Value: "Ada"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("Book").InsertOne(ctx, bson.D{
		{Key: "_id", Value: "b1"}, {Key: "author", Value: "a1"}, {Key: "_created_at", Value: at},
		{Key: "poly", Value: bson.A{bson.A{1.0, 2.0}, bson.A{3.0, 4.0}}},
	}); err != nil {
		t.Fatal(err)
	}
	cur, err := db.Collection("Book").Aggregate(ctx, mongo.Pipeline{
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "Author"}, {Key: "localField", Value: "author"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "a"}}}},
		{{Key: "$project", Value: bson.D{
			{Key: "name", Value: bson.D{{Key: "$first", Value: "$a.name"}}},
			{Key: "month", Value: bson.D{{Key: "$dateTrunc", Value: bson.D{{Key: "date", Value: "$_created_at"}, {Key: "unit", Value: "month"}}}}},
			{Key: "corners", Value: bson.D{{Key: "$size", Value: "$poly"}}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Name    string    `bson:"name"`
		Month   time.Time `bson:"month"`
		Corners int       `bson:"corners"`
	}
	if err := cur.All(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if len(rows) != 1 || rows[0].Name != "Ada" || !rows[0].Month.Equal(want) || rows[0].Corners != 2 {
		t.Fatalf("got %+v, want Ada, %v, 2 corners", rows, want)
	}
}

func mustDatabase(t *testing.T, uri string) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil || len(u.Path) < 2 {
		t.Fatalf("no database in %q (%v)", uri, err)
	}
	return u.Path[1:]
}
