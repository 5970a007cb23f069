package pipeline

import (
	"context"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// ResolveSteps validates stages on cls as Validate does, without the
// structural scan, and returns how many path resolutions it computed (not
// memoized): the cost measure of TestPipelineResolveIsLinear.
func ResolveSteps(ctx context.Context, e Policy, schema *parsedb.Schema, cls *parsedb.Class, stages []any) (int, error) {
	pv := &validator{e: e, ctx: ctx, schema: schema, root: cls, seen: map[string]bool{}}
	_, err := pv.pipeline(pv.classState(cls, false), stages, "pipeline")
	return pv.resolveSteps, err
}

// The operator sets the fuzz oracle shares with the validator.
var (
	CopyAccumulators = copyAccumulators
	ShapeOperators   = shapeOperators
)
