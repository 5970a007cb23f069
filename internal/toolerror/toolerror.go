// Package toolerror defines how a tool call can fail. There is a hard line
// between failures the model can fix (an *Error, returned to the client as an
// isError tool result carrying parse.error_code) and security violations (a
// *Violation, answered as JSON-RPC -32602 with a generic message so that the
// forbidden operator or field is never echoed back). Anything else is an
// internal failure: logged for the operator, shown as "<tool> failed: internal
// error".
package toolerror

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

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
	Internal             Code = "internal_error"
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
}

func (e *Error) Error() string { return e.Message }

// New builds an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Denied builds an access_denied error with details of the given kind.
func Denied(kind, format string, args ...any) *Error {
	return &Error{Code: AccessDenied, Message: fmt.Sprintf(format, args...), Details: &Details{Kind: kind}}
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
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// AsViolation returns err as a *Violation if it is (or wraps) one.
func AsViolation(err error) (*Violation, bool) {
	var v *Violation
	if errors.As(err, &v) {
		return v, true
	}
	return nil, false
}

// recorderKey carries a request's *Recorder through the context.
type recorderKey struct{}

// Recorder remembers a security violation raised while handling one request.
// The transport layer creates it; the policy middleware fills it; the
// transport then answers -32602 instead of the -32603 a Go error would become.
type Recorder struct {
	v atomic.Pointer[Violation]
}

// WithRecorder returns a context carrying a fresh Recorder.
func WithRecorder(ctx context.Context) (context.Context, *Recorder) {
	r := &Recorder{}
	return context.WithValue(ctx, recorderKey{}, r), r
}

// RecordViolation stores v in the context's Recorder, if there is one.
func RecordViolation(ctx context.Context, v *Violation) {
	if r, ok := ctx.Value(recorderKey{}).(*Recorder); ok {
		r.v.Store(v)
	}
}

// Violation returns the recorded violation, or nil.
func (r *Recorder) Violation() *Violation { return r.v.Load() }
