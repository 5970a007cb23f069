package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// ParamsError is a request the client must fix: a prompt argument that is
// not an identifier, an id or an ISO date; a resource URI that names no
// visible class; a resource that cannot be subscribed to. The dispatcher
// answers it as JSON-RPC -32602 with Message. mcp-go turns every handler
// error into -32603, which the dispatcher scrubs to "Internal error", so the
// error is also recorded in the request's context (see RecordParamsError);
// the prompt and resource handler middlewares of Build do that for handlers.
type ParamsError struct {
	Message string
}

func (e *ParamsError) Error() string { return e.Message }

// InvalidParams builds a *ParamsError with a formatted message.
func InvalidParams(format string, args ...any) *ParamsError {
	return &ParamsError{Message: fmt.Sprintf(format, args...)}
}

// AsParamsError returns err as a *ParamsError if it is (or wraps) one.
func AsParamsError(err error) (*ParamsError, bool) {
	var pe *ParamsError
	if errors.As(err, &pe) {
		return pe, true
	}
	return nil, false
}

type paramsRecorderKey struct{}

// paramsRecorder remembers the *ParamsError raised while handling a request.
type paramsRecorder struct {
	err atomic.Pointer[ParamsError]
}

func withParamsRecorder(ctx context.Context) (context.Context, *paramsRecorder) {
	r := &paramsRecorder{}
	return context.WithValue(ctx, paramsRecorderKey{}, r), r
}

// RecordParamsError stores err in the request's recorder when it is a
// *ParamsError, and returns err unchanged, so handlers can write
// `return nil, server.RecordParamsError(ctx, err)`.
func RecordParamsError(ctx context.Context, err error) error {
	if pe, ok := AsParamsError(err); ok {
		if r, ok := ctx.Value(paramsRecorderKey{}).(*paramsRecorder); ok {
			r.err.Store(pe)
		}
	}
	return err
}

func (r *paramsRecorder) get() *ParamsError { return r.err.Load() }
