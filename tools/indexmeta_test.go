package tools

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// TestIndexMetadataVisibility: an index is named only when every key is
// readable (Patient has agent_fields name/age/doctor: ssn is not), and
// $text needs every field of the text index to be readable.
func TestIndexMetadataVisibility(t *testing.T) {
	d := aggDeps(t, nil)
	schema, err := d.Store.Schema.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cls := *schema.Class("Patient")
	cls.Indexes = bson.M{
		"name_1":       bson.D{{Key: "name", Value: int32(1)}},
		"name_1_ssn_1": bson.D{{Key: "name", Value: int32(1)}, {Key: "ssn", Value: int32(1)}},
		"_p_doctor_1":  bson.D{{Key: "_p_doctor", Value: int32(1)}},
		"ssn_text":     bson.D{{Key: "ssn", Value: "text"}},
	}
	got := indexNames(d, &cls)
	if len(got) != 2 || got["name_1"] == nil || got["_p_doctor_1"] == nil {
		t.Errorf("visible indexes: %v", got)
	}
	if _, err := textGuard(context.Background(), d, schema, &cls, map[string]any{"$text": map[string]any{"$search": map[string]any{"$term": "x"}}}); err == nil {
		t.Error("$text over a text index on a non-allowlisted field must be refused")
	} else if te, ok := toolerror.As(err); !ok || te.Details == nil || te.Details.Kind != "text_index_not_readable" {
		t.Errorf("refusal: %v", err)
	}
	// A readable text index: allowed, with the not-a-hidden-reference conjunct.
	cls.Indexes = bson.M{"name_text": bson.D{{Key: "name", Value: "text"}}}
	nh, err := textGuard(context.Background(), d, schema, &cls, map[string]any{"$or": []any{map[string]any{"name": map[string]any{"$text": map[string]any{}}}}})
	if err != nil || nh == nil {
		t.Errorf("readable text index: %v %v", nh, err)
	}
	if nh, err := textGuard(context.Background(), d, schema, &cls, map[string]any{"name": "x"}); err != nil || nh != nil {
		t.Errorf("no $text: %v %v", nh, err)
	}
}
