package policy

import (
	"context"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy/pipeline"
)

// ValidatePipeline checks a caller's aggregation pipeline for class cls
// (SECURITY.md "Pipelines"): the validator is package policy/pipeline,
// asking this engine about classes, fields and joins.
func (e *Engine) ValidatePipeline(ctx context.Context, schema *parsedb.Schema, cls *parsedb.Class, stages []any) (pipeline.Validated, error) {
	e = e.For(ctx)
	return pipeline.Validate(ctx, e.PipelinePolicy(), schema, cls, stages)
}

// PipelinePolicy is the engine as the pipeline validator sees it.
func (e *Engine) PipelinePolicy() pipeline.Policy { return pipelinePolicy{e} }

// pipelinePolicy adds to the engine's own methods the few the validator
// needs in its terms.
type pipelinePolicy struct{ *Engine }

func (p pipelinePolicy) AgentFields(class string) []string {
	if cp := p.Class(class); cp != nil {
		return cp.AgentFields
	}
	return nil
}

func (p pipelinePolicy) HiddenClassRefusal(ctx context.Context, schema *parsedb.Schema, class string) error {
	return p.hiddenClass(ctx, schema, class)
}

func (p pipelinePolicy) TargetUnavailableRefusal(ctx context.Context, format string, args ...any) error {
	return p.TargetUnavailable(ctx, format, args...)
}
