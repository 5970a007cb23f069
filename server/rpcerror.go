package server

import (
	"context"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// ParamsError is a request the client must fix outside tools/call: a prompt
// argument that is not an identifier, an id or an ISO date; a resource URI
// that names no visible class; a resource that cannot be subscribed to. It
// is toolerror's model-fixable error, answered as JSON-RPC -32602 with its
// message (see the table in package toolerror).
type ParamsError = toolerror.Error

// InvalidParams builds a *ParamsError with a formatted message.
func InvalidParams(format string, args ...any) *ParamsError {
	return toolerror.InvalidParams(format, args...)
}

// AsParamsError returns err as a *ParamsError if it is (or wraps) one.
func AsParamsError(err error) (*ParamsError, bool) { return toolerror.As(err) }

// RecordParamsError records err in the request's toolerror.Recorder and
// returns it unchanged (see toolerror.Record).
func RecordParamsError(ctx context.Context, err error) error { return toolerror.Record(ctx, err) }
