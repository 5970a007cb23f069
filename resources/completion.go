package resources

import (
	"context"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// MaxCompletionValues is the most values one completion/complete returns
// (the MCP limit).
const MaxCompletionValues = 100

// CompleteResourceArgument completes {className} of the three templates with
// the classes this session may see.
func (p *Provider) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if arg.Name != "className" || !strings.HasPrefix(uri, Scheme+"{className}/") {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return p.CompleteClassName(ctx, arg.Value)
}

// CompleteClassName returns the visible class names that start with prefix
// (case-insensitive; names containing it follow), at most 100, with the total.
func (p *Provider) CompleteClassName(ctx context.Context, prefix string) (*mcp.Completion, error) {
	classes, err := p.visibleClasses(ctx)
	if err != nil {
		return nil, err
	}
	return Complete(classes, prefix), nil
}

// Complete filters candidates by a typed prefix: case-insensitive prefix
// matches first, then (from two typed characters on) names merely
// containing it, each group sorted.
func Complete(candidates []string, typed string) *mcp.Completion {
	lt := strings.ToLower(typed)
	var starts, contains []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		switch {
		case strings.HasPrefix(lc, lt):
			starts = append(starts, c)
		case len(lt) >= 2 && strings.Contains(lc, lt):
			contains = append(contains, c)
		}
	}
	sort.Strings(starts)
	sort.Strings(contains)
	all := append(starts, contains...)
	out := &mcp.Completion{Values: all, Total: len(all)}
	if len(all) > MaxCompletionValues {
		out.Values = all[:MaxCompletionValues]
		out.HasMore = true
	}
	if out.Values == nil {
		out.Values = []string{}
	}
	return out
}
