// Package toolerror is parse-mcp's one error path: every way a request can
// fail, its kind, and how it reaches the client. ARCHITECTURE.md ("Errors")
// has the same table for readers of the docs.
//
//	Go error     Kind            tools/call                           prompts/get, resources/*
//	*Error       model-fixable   isError result: text = Message,      JSON-RPC -32602, message = Message
//	                             _meta parse.error_code (+ details
//	                             for access_denied, retry_after)
//	*Refusal     refusal         isError result: text and             JSON-RPC -32602, message = Reason
//	                             structuredContent {"refused":true,
//	                             "reason","suggestion"}, error_code
//	*Violation   violation       JSON-RPC -32602 ViolationMessage     JSON-RPC -32602 ViolationMessage
//	                             (Reason only in the operator log)    (Reason only in the operator log)
//	anything     infrastructure  isError "<tool> failed: internal     JSON-RPC -32603 "Internal error"
//	else                         error", code internal_error; the     (logged)
//	                             error is logged
//
// A context deadline or cancellation inside a tool becomes an *Error
// (timeout, cancelled), and an unreachable database an *Error unavailable,
// before the table applies (tools.classify). An *Error
// may carry the Go error that caused it (Cause, Unwrap): the client sees only
// Message, the operator log gets the cause.
//
// JSON-RPC answers are the transport's job, but mcp-go turns every handler
// error into -32603: so the policy middleware and the prompt/resource
// handler middlewares Record the error in the request's Recorder, and the
// dispatcher answers from there.
package toolerror

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Kind is how a failure reaches the client (see the package table).
type Kind int

const (
	// Infrastructure failures are the server's problem: logged, never
	// shown (database down, a bug, an unexpected driver error).
	Infrastructure Kind = iota
	// ModelFixable failures are *Error: the model can change the request.
	ModelFixable
	// RefusalKind failures are *Refusal: a guard refused with a structured
	// reason and suggestion.
	RefusalKind
	// ViolationKind failures are *Violation: a security violation answered
	// with a generic message.
	ViolationKind
)

func (k Kind) String() string {
	switch k {
	case ModelFixable:
		return "model-fixable"
	case RefusalKind:
		return "refusal"
	case ViolationKind:
		return "violation"
	}
	return "infrastructure"
}

// KindOf classifies err (nil is Infrastructure; callers test nil first). A
// violation anywhere in the chain wins over everything else.
func KindOf(err error) Kind {
	if _, ok := AsViolation(err); ok {
		return ViolationKind
	}
	if _, ok := AsRefusal(err); ok {
		return RefusalKind
	}
	if _, ok := As(err); ok {
		return ModelFixable
	}
	return Infrastructure
}

// Code is the parse.error_code of a model-visible failure.
type Code string

const (
	AccessDenied         Code = "access_denied"
	ToolFiltered         Code = "tool_filtered"
	PermissionDenied     Code = "permission_denied"
	InvalidArgument      Code = "invalid_argument"
	InvalidQuery         Code = "invalid_query"
	Timeout              Code = "timeout"
	RateLimited          Code = "rate_limited"
	ParseError           Code = "parse_error"
	PointerShapeMismatch Code = "pointer_shape_mismatch"
	Cancelled            Code = "cancelled"
	// Unavailable: the database cannot be reached (an outage, a restart);
	// the request is fine and should be sent again shortly.
	Unavailable Code = "unavailable"
	Internal    Code = "internal_error"
)

// Details is parse.details of an access_denied failure.
type Details struct {
	Kind             string   `json:"kind"`
	DeniedField      string   `json:"denied_field,omitempty"`
	AllowedFields    []string `json:"allowed_fields,omitempty"`
	SuggestedRewrite any      `json:"suggested_rewrite,omitempty"`
}

// Error is a failure the model can act on.
type Error struct {
	Code       Code
	Message    string
	Details    *Details
	RetryAfter time.Duration
	// ParseCode is Parse Server's numeric error code of a Parse-worded
	// refusal (111, 142, …; 0: none), sent as _meta parse.parse_code so a
	// client can compare it with Parse's own answer.
	ParseCode int
	// Cause is the Go error behind the failure (a driver error, a context
	// error), for the operator log only; never sent to the client.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause, so errors.Is(err, context.DeadlineExceeded) and
// mongo.IsTimeout see through a model-fixable error.
func (e *Error) Unwrap() error { return e.Cause }

// WithCause records the Go error behind e and returns e.
func (e *Error) WithCause(cause error) *Error {
	e.Cause = cause
	return e
}

// New builds an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Denied builds an access_denied error with details of the given kind.
func Denied(kind, format string, args ...any) *Error {
	return &Error{Code: AccessDenied, Message: fmt.Sprintf(format, args...), Details: &Details{Kind: kind}}
}

// InvalidParams builds the model-fixable error of a request outside
// tools/call (a prompt argument, a resource URI, a subscription): answered
// as JSON-RPC -32602 with the message.
func InvalidParams(format string, args ...any) *Error {
	return New(InvalidArgument, format, args...)
}

// Refusal is a guard's refusal that the model receives as a structured
// result rather than a message: {refused:true, reason, suggestion} (the
// COLLSCAN guard). It is an isError result with parse.error_code = Code
// (invalid_query when empty).
type Refusal struct {
	Refused    bool   `json:"refused"`
	Reason     string `json:"reason"`
	Suggestion string `json:"suggestion,omitempty"`
	Code       Code   `json:"-"`
	// Kind is logged as the audit event's denial_kind (and sent as
	// parse.details for an access_denied refusal).
	Kind string `json:"-"`
	// Cause is the Go error behind the refusal, for the log only.
	Cause error `json:"-"`
}

func (r *Refusal) Error() string { return r.Reason }

// Unwrap returns the cause.
func (r *Refusal) Unwrap() error { return r.Cause }

// Violation is a security violation: a forbidden operator, stage or field.
// Reason is for the operator log only and is never sent to the client.
type Violation struct {
	Reason string
}

func (v *Violation) Error() string { return "security violation: " + v.Reason }

// Violationf builds a *Violation.
func Violationf(format string, args ...any) *Violation {
	return &Violation{Reason: fmt.Sprintf(format, args...)}
}

// ViolationMessage is the only text a client ever sees for a *Violation.
const ViolationMessage = "Invalid params: the request uses an operator, stage or field that is not allowed"

// As returns err as an *Error if it is (or wraps) one.
func As(err error) (*Error, bool) {
	if e, ok := errors.AsType[*Error](err); ok {
		return e, true
	}
	return nil, false
}

// AsRefusal returns err as a *Refusal if it is (or wraps) one.
func AsRefusal(err error) (*Refusal, bool) {
	if r, ok := errors.AsType[*Refusal](err); ok {
		return r, true
	}
	return nil, false
}

// AsViolation returns err as a *Violation if it is (or wraps) one.
func AsViolation(err error) (*Violation, bool) {
	if v, ok := errors.AsType[*Violation](err); ok {
		return v, true
	}
	return nil, false
}

// recorderKey carries a request's *Recorder through the context.
type recorderKey struct{}

// Recorder remembers the error a request must be answered with as a JSON-RPC
// error (a violation, or a model-fixable error outside tools/call), because
// mcp-go turns every handler error into -32603. The transport creates it per
// request; the policy middleware and the prompt/resource middlewares fill
// it; the transport then answers -32602.
type Recorder struct {
	v   atomic.Pointer[Violation]
	err atomic.Pointer[Error]
}

// WithRecorder returns a context carrying a fresh Recorder.
func WithRecorder(ctx context.Context) (context.Context, *Recorder) {
	r := &Recorder{}
	return context.WithValue(ctx, recorderKey{}, r), r
}

// Record stores err in the context's Recorder (if there is one) when it is
// a violation or a model-fixable error (a refusal counts as its reason), and
// returns err unchanged, so handlers can write `return nil,
// toolerror.Record(ctx, err)`.
func Record(ctx context.Context, err error) error {
	r, ok := ctx.Value(recorderKey{}).(*Recorder)
	if !ok || err == nil {
		return err
	}
	if v, ok := AsViolation(err); ok {
		r.v.Store(v)
		return err
	}
	if ref, ok := AsRefusal(err); ok {
		code := ref.Code
		if code == "" {
			code = InvalidQuery
		}
		r.err.Store(&Error{Code: code, Message: ref.Reason, Cause: ref})
		return err
	}
	if e, ok := As(err); ok {
		r.err.Store(e)
	}
	return err
}

// RecordViolation stores v in the context's Recorder, if there is one.
func RecordViolation(ctx context.Context, v *Violation) { _ = Record(ctx, v) }

// Violation returns the recorded violation, or nil.
func (r *Recorder) Violation() *Violation { return r.v.Load() }

// Err returns the recorded model-fixable error, or nil.
func (r *Recorder) Err() *Error { return r.err.Load() }
