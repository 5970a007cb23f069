package parsedb

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// TestAsNotSupported: what a server lacks is a model-fixable invalid_query
// naming the feature; any other server error stays what it is.
func TestAsNotSupported(t *testing.T) {
	nested := mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 2,
		Message: `invalid value: { "coordinates": [ [ [ 0, 0 ], [ 1, 0 ] ] ] } (nested arrays are not supported)`}}}
	cases := []struct {
		name string
		err  error
		want string // "" = not a missing feature
	}{
		{"not implemented", mongo.CommandError{Code: 238, Message: "$lookup is not implemented yet"}, "$lookup is not implemented yet"},
		{"command not supported", mongo.CommandError{Code: 115, Message: "no such command"}, "no such command"},
		{"nested arrays on insert", nested, "Polygon"},
		{"nested arrays, wrapped", fmt.Errorf("applying the write: %w", nested), "arrays inside arrays"},
		{"nested arrays on update", mongo.CommandError{Code: 2, Message: `invalid value: { "a": [ [ 1 ] ] } (nested arrays are not supported)`}, "Polygon"},
		{"another bad value", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 2, Message: "invalid value: infinity"}}}, ""},
		{"duplicate key", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000, Message: "E11000 duplicate key"}}}, ""},
		{"not a server error", errors.New("nested arrays are not supported"), ""},
	}
	for _, c := range cases {
		got := AsNotSupported(c.err)
		if c.want == "" {
			if got != nil {
				t.Errorf("%s: %v became %v", c.name, c.err, got)
			}
			continue
		}
		if got == nil || got.Code != toolerror.InvalidQuery || !strings.Contains(got.Message, c.want) || !strings.Contains(got.Message, "does not support") {
			t.Errorf("%s: got %v, want an invalid_query naming %q", c.name, got, c.want)
		}
	}
}
