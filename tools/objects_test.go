package tools

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

func TestIndexedFields(t *testing.T) {
	cls := &parsedb.Class{Name: "Song", Indexes: bson.M{
		"_id_":          bson.D{{Key: "_id", Value: 1}},
		"genre_plays":   bson.D{{Key: "genre", Value: 1}, {Key: "plays", Value: -1}},
		"artist_1":      bson.M{"_p_artist": 1},
		"created":       map[string]any{"_created_at": -1},
		"ambiguous_map": bson.M{"a": 1, "b": 1},
	}}
	got := indexedFields(cls)
	want := map[string]string{"objectId": "_id_", "genre": "genre_plays", "artist": "artist_1", "createdAt": "created"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s → %q, want %q", k, got[k], v)
		}
	}
	for storage, rest := range map[string]string{"_id": "objectId", "_updated_at": "updatedAt", "_p_owner": "owner", "title": "title"} {
		if restFieldName(storage) != rest {
			t.Errorf("restFieldName(%s) = %s", storage, restFieldName(storage))
		}
	}
}

func TestPipelineColumns(t *testing.T) {
	cols := pipelineColumns([]map[string]any{{"title": "a", "objectId": "x"}, {"genre": "g", "createdAt": "c"}})
	if got := strings.Join(columnHeaders(cols), ","); got != "objectId,createdAt,genre,title" {
		t.Errorf("got %s", got)
	}
	if got := columnHeaders(pipelineColumns(nil)); len(got) != 1 {
		t.Errorf("no rows: %v", got)
	}
}
