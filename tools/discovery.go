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
		InputSchema:  `{"type":"object","properties":{"category":{"type":"string"}}}`,
		ReadOnly:     true,
		OutputSchema: listToolsOut,
		Handler:      listTools,
	}}
}

type toolSummary struct {
	Name        string          `json:"name"`
	Category    policy.Category `json:"category"`
	Description string          `json:"description"`
}

func listTools(_ context.Context, d *Deps, args Args) (any, error) {
	category, err := args.String("category", false)
	if err != nil {
		return nil, err
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
	out := map[string]any{"tools": list, "categories": cats}
	if runsActions {
		if acts := d.permittedActions(); len(acts) > 0 {
			out["actions"] = acts
		}
	}
	return out, nil
}
