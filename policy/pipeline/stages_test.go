package pipeline

import (
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
)

// TestStageValidatorsMatchTable: every stage of the shared table has its
// validate function, and no function validates a stage outside the table
// (the validator refuses those before looking one up).
func TestStageValidatorsMatchTable(t *testing.T) {
	for _, st := range pipelinestage.All() {
		if stageValidators[st.Name] == nil {
			t.Errorf("%s is in the stage table but has no validate function in stageValidators", st.Name)
		}
	}
	for name := range stageValidators {
		if _, ok := pipelinestage.Of(name); !ok {
			t.Errorf("stageValidators has %s, which is not in the stage table", name)
		}
	}
}
