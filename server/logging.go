package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// notifications/message carry operator-relevant events to clients that ask
// for them with logging/setLevel: refusals by the policy, timeouts, rate
// limits, internal failures, subscription watch problems. They never carry
// row data, argument values or error messages (which can quote a where),
// only tool names, error codes, denial kinds and class names. Until the
// client sets a level nothing is sent (Claude Desktop records the server's
// stderr, where the same events are logged, in its own log file).

// loggerName is notifications/message's "logger".
const loggerName = "parse-mcp"

// toolEventLevels are the tool failures worth telling the client's log
// about, by parse.error_code. invalid_argument/invalid_query are the model's
// own mistakes, already explained in the result.
var toolEventLevels = map[string]mcp.LoggingLevel{
	string(toolerror.AccessDenied):     mcp.LoggingLevelWarning,
	string(toolerror.PermissionDenied): mcp.LoggingLevelWarning,
	string(toolerror.ToolFiltered):     mcp.LoggingLevelWarning,
	string(toolerror.RateLimited):      mcp.LoggingLevelWarning,
	string(toolerror.Timeout):          mcp.LoggingLevelWarning,
	string(toolerror.Internal):         mcp.LoggingLevelError,
	string(toolerror.Cancelled):        mcp.LoggingLevelDebug,
}

// installLogging adds the hook that turns tool failures into
// notifications/message on the calling request's own stream (so, on stdio,
// before its response).
func installLogging(s *mcpserver.MCPServer, hooks *mcpserver.Hooks) {
	hooks.AddAfterCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest, result any) {
		res, ok := result.(*mcp.CallToolResult)
		if !ok || res == nil || !res.IsError || res.Meta == nil {
			return
		}
		code, _ := res.Meta.AdditionalFields["parse.error_code"].(string)
		level, ok := toolEventLevels[code]
		if !ok {
			return
		}
		data := map[string]any{"event": "tool_failed", "tool": req.Params.Name, "error_code": code}
		if det, ok := res.Meta.AdditionalFields["parse.details"].(*toolerror.Details); ok && det != nil {
			data["denial_kind"] = det.Kind
		}
		_ = s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(level, loggerName, data))
	})
}

// sendLog sends notifications/message to one session, if its level admits it.
func sendLog(s *mcpserver.MCPServer, sessionID string, level mcp.LoggingLevel, data map[string]any) {
	if s == nil {
		return
	}
	_ = s.SendLogMessageToSpecificClient(sessionID, mcp.NewLoggingMessageNotification(level, loggerName, data))
}
