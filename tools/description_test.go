package tools

import (
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parseserver"
)

// TestWriteDescriptionsFollowTheWritePath: a write tool's description tells
// the model whether Cloud Code triggers run, and it is true for the
// configured write path: direct MongoDB writes skip them, the Parse Server
// bridge runs them. Tools that write no objects keep their description.
func TestWriteDescriptionsFollowTheWritePath(t *testing.T) {
	direct := &Deps{}
	bridged := &Deps{Writes: &parseserver.Writer{}}
	notes := 0
	for _, tool := range Catalog() {
		plain, viaBridge := tool.DescriptionFor(direct), tool.DescriptionFor(bridged)
		if plain != tool.Description || tool.DescriptionFor(nil) != tool.Description {
			t.Errorf("%s: the direct-write description differs from the definition", tool.Name)
		}
		if mcp := tool.MCPTool(bridged); mcp.Description != viaBridge {
			t.Errorf("%s: tools/list shows %q, list_tools %q", tool.Name, mcp.Description, viaBridge)
		}
		if !strings.HasSuffix(tool.Description, noTriggers) {
			if viaBridge != plain {
				t.Errorf("%s: a tool without the trigger note changed with the bridge: %q", tool.Name, viaBridge)
			}
			continue
		}
		notes++
		if strings.Contains(viaBridge, "skip") || !strings.HasSuffix(viaBridge, viaParseServer) {
			t.Errorf("%s with the bridge: %q", tool.Name, viaBridge)
		}
	}
	// create_object, update_object, delete_object, call_action.
	if notes != 4 {
		t.Errorf("%d tools carry the trigger note, want 4", notes)
	}
}
