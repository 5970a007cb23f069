package tools

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/policy"
)

// DiscoveryTools is list_tools.
func DiscoveryTools() []*Tool {
	return []*Tool{{
		ToolInfo:     policy.ToolInfo{Name: "list_tools", Category: policy.CategoryDiscovery, Tier: config.TierReadonly, Operation: policy.OpNone, Timeout: 5 * time.Second},
		Description:  "List the tools this session may call, by category.",
		Example:      `{"category":"query"}`,
		ReadOnly:     true,
		OutputSchema: listToolsOutSchema,
		Handler:      Typed(listTools),
	}}
}

type listToolsIn struct {
	Category string `json:"category"`
}

// listToolsOut's members are in the order the result has always had.
type listToolsOut struct {
	// Actions are the declared actions call_action may run, when it is
	// listed.
	Actions    []actionSummary            `json:"actions,omitempty"`
	Categories map[policy.Category]string `json:"categories"`
	Tools      []toolSummary              `json:"tools"`
}

const listToolsOutSchema = `{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"category":{"type":"string"},"description":{"type":"string"}},"required":["name","category"]}},"categories":{"type":"object","additionalProperties":{"type":"string"}},"actions":{"type":"array","items":{"type":"object"}}},"required":["tools"]}`

type toolSummary struct {
	Name        string          `json:"name"`
	Category    policy.Category `json:"category"`
	Description string          `json:"description"`
}

func listTools(_ context.Context, d *Deps, in listToolsIn) (*listToolsOut, error) {
	category := in.Category
	if category != "" && !knownCategory(category) {
		// An empty list would read as "no such tools here"; a misspelt
		// category ("writes", "read") is a mistake the model can fix.
		names := make([]string, 0, len(policy.Categories))
		for c := range policy.Categories {
			names = append(names, string(c))
		}
		sort.Strings(names)
		return nil, invalid("category must be one of %s, got %q", strings.Join(names, ", "), truncate(category, 40))
	}
	list := []toolSummary{}
	cats := map[policy.Category]string{}
	runsActions := false
	for _, t := range d.Catalog {
		if d.Policy.Permit(t.ToolInfo) != nil {
			continue
		}
		if category != "" && !strings.EqualFold(category, string(t.Category)) {
			continue
		}
		list = append(list, toolSummary{t.Name, t.Category, t.DescriptionFor(d)})
		cats[t.Category] = policy.Categories[t.Category]
		runsActions = runsActions || t.RunsActions
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	out := &listToolsOut{Tools: list, Categories: cats}
	if runsActions {
		out.Actions = d.permittedActions()
	}
	return out, nil
}

// knownCategory reports whether name is a tool category (any case, as the
// filter compares).
func knownCategory(name string) bool {
	for c := range policy.Categories {
		if strings.EqualFold(name, string(c)) {
			return true
		}
	}
	return false
}
