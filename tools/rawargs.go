package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Tool arguments reach handlers as map[string]any, which loses the key order
// of JSON objects. Aggregation pipelines depend on it ({"$sort": {"a": 1,
// "b": -1}}, $project output order), so OrderedArgument decodes one of them
// from the call's raw arguments (callinfo's ToolCall, recorded by
// Tool.Handle) with its order intact.

// maxOrderedDepth bounds the recursion of the ordered decoder (the pipeline
// validator refuses far less).
const maxOrderedDepth = 64

// OrderedArgument decodes argument name from the call's raw JSON arguments
// with objects as bson.D (key order kept), arrays as []any and numbers as
// json.Number. found is false when the raw arguments are not available (a
// handler called directly) or do not contain name; callers then fall back
// to Args.
func OrderedArgument(ctx context.Context, name string) (v any, found bool, err error) {
	raw := callinfo.From(ctx).RawArguments()
	if len(raw) == 0 {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false, nil
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, false, nil
		}
		k, _ := kt.(string)
		if k != name {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, false, nil
			}
			continue
		}
		v, err := decodeOrdered(dec, 0)
		if err != nil {
			return nil, true, err
		}
		return v, true, nil
	}
	return nil, false, nil
}

func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > maxOrderedDepth {
		return nil, toolerror.Violationf("argument nesting deeper than %d levels", maxOrderedDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("malformed JSON argument")
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := bson.D{}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, invalid("malformed JSON argument")
				}
				k, _ := kt.(string)
				if seen[k] {
					return nil, invalid("duplicate key %q in an object", truncate(k, 40))
				}
				seen[k] = true
				v, err := decodeOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d = append(d, bson.E{Key: k, Value: v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, invalid("malformed JSON argument")
			}
			return d, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, invalid("malformed JSON argument")
			}
			return a, nil
		}
		return nil, invalid("malformed JSON argument")
	case string, json.Number, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %T", tok)
}
