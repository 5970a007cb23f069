package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/tools"
)

// CallTool runs a catalog tool exactly as tools/call does after routing: the
// same policy middleware as Build installs (tool filter, tier, env gates,
// class gate, audit event, error envelope) around the tool's own handler
// (timeout, progress). Resources use it so that parse://C/schema shows what
// get_schema would, under the same policy. It returns ok=false when the
// catalog has no such tool.
func CallTool(ctx context.Context, d *tools.Deps, name string, args map[string]any) (res *mcp.CallToolResult, ok bool, err error) {
	t := FindTool(d, name)
	if t == nil {
		return nil, false, nil
	}
	schema := d.PolicySchema
	h := d.Policy.Middleware(schema)(t.Handle(d))
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err = h(ctx, req)
	return res, true, err
}

// FindTool returns a catalog tool by name, or nil.
func FindTool(d *tools.Deps, name string) *tools.Tool {
	for _, t := range d.Catalog {
		if t.Name == name {
			return t
		}
	}
	return nil
}
