// Package toolerror is parse-mcp's one error path: every way a request can
// fail, its kind, and how it reaches the client. ARCHITECTURE.md ("Errors")
// has the same table for readers of the docs.
//
// The rest of the code constructs exactly two error types; whatever else
// reaches the envelope is internal:
//
//	Go error     Kind            tools/call                           prompts/get, resources/*
//	*Error       model-fixable   isError result: text = Message,      JSON-RPC -32602, message = Message
//	                             _meta parse.error_code (+ details
//	                             for access_denied, retry_after,
//	                             parse_code); a guard's refusal
//	                             (Refused) as text and
//	                             structuredContent {"refused":true,
//	                             "reason","suggestion"}
//	*Violation   violation       JSON-RPC -32602 ViolationMessage     JSON-RPC -32602 ViolationMessage
//	                             (Reason only in the operator log)    (Reason only in the operator log)
//	anything     internal        isError "<tool> failed: internal     JSON-RPC -32603 "Internal error"
//	else         (Infrastructure) error", code internal_error; the     (logged)
//	                             error is logged
//
// A model-fixable error is everything the model can act on: a bad argument,
// a class that does not exist, an access denial with the fields it may use
// instead, a rate limit with the time to wait, a guard's refusal with a
// suggestion. A violation is a request that breaks a rule the model is not
// told about (a forbidden operator, stage or field): the answer is the same
// fixed sentence whatever the rule. Anything else is the server's problem.
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
// dispatcher answers from there. The dispatcher's own protocol errors (parse
// error, invalid request, method not found: ErrorResponse in
// server/dispatch.go) are not tool errors: codes and fixed messages of the
// protocol layer, with no Go type.
package toolerror

import (
	"context"
	"encoding/json"
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
	// ViolationKind failures are *Violation: a security violation answered
	// with a generic message.
	ViolationKind
)

func (k Kind) String() string {
	switch k {
	case ModelFixable:
		return "model-fixable"
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
	Code    Code
	Message string
	// Details is sent as parse.details, its Kind logged as the audit
	// event's denial_kind, when Code is access_denied.
	Details    *Details
	RetryAfter time.Duration
	// ParseCode is Parse Server's numeric error code of a Parse-worded
	// refusal (111, 142, …; 0: none), sent as _meta parse.parse_code so a
	// client can compare it with Parse's own answer.
	ParseCode int
	// Refused marks a guard's structured refusal (Refuse): the model
	// receives {"refused":true,"reason":Message,"suggestion":Suggestion} as
	// the result's text and structuredContent instead of the bare message.
	Refused    bool
	Suggestion string
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

// Refuse builds a guard's structured refusal (the COLLSCAN guard): an
// isError result whose text and structuredContent are {"refused":true,
// "reason","suggestion"}, with parse.error_code code. kind goes into
// Details (sent and audited only for an access_denied refusal).
func Refuse(code Code, kind, reason, suggestion string) *Error {
	return &Error{Code: code, Message: reason, Details: &Details{Kind: kind}, Refused: true, Suggestion: suggestion}
}

// RefusalJSON is the body of a structured refusal: the result's text and
// structuredContent.
func (e *Error) RefusalJSON() []byte {
	b, _ := json.Marshal(struct {
		Refused    bool   `json:"refused"`
		Reason     string `json:"reason"`
		Suggestion string `json:"suggestion,omitempty"`
	}{true, e.Message, e.Suggestion})
	return b
}

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
// a violation or a model-fixable error (a refusal answers with its reason), and
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
