package app

import (
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/prompts"
	"github.com/parse-mcp/parse-mcp/resources"
	"github.com/parse-mcp/parse-mcp/server"
	"github.com/parse-mcp/parse-mcp/tools"
)

// protocolSurface assembles everything besides the tools that the MCP server
// offers: prompts (built-in and from the policy file), parse:// resources
// with their templates, completion and subscriptions. A malformed prompt in the policy file is a
// configuration error.
func protocolSurface(d *tools.Deps, file *policy.File, log zerolog.Logger) (server.Options, error) {
	res := resources.New(d, log)
	var specs []policy.PromptSpec
	if file != nil {
		specs = file.Prompts
	}
	prm, err := prompts.New(d, res, specs)
	if err != nil {
		return server.Options{}, err
	}
	return server.Options{
		Deps:          d,
		Log:           log,
		Subscriptions: server.NewSubscriptions(res, server.SubscriptionLimits{}, log),
		ServerOptions: append(res.ServerOptions(), prm.ServerOptions()...),
		Extra:         []func(*mcpserver.MCPServer){res.Register, prm.Register},
	}, nil
}
