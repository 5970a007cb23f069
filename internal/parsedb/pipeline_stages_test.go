package parsedb

import (
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
)

// TestStageTranslationsCoverTable: the translator has a translation for the
// argument grammar of every stage of the shared table, and none for a
// grammar no stage has.
func TestStageTranslationsCoverTable(t *testing.T) {
	used := map[pipelinestage.Arg]bool{}
	for _, st := range pipelinestage.All() {
		used[st.Arg] = true
		if stageTranslations[st.Arg] == nil {
			t.Errorf("%s: no translation for its argument grammar %d", st.Name, st.Arg)
		}
	}
	for arg := range stageTranslations {
		if !used[arg] {
			t.Errorf("a translation for grammar %d, which no stage of the table has", arg)
		}
	}
}
