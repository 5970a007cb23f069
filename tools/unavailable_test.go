package tools

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// networkError is what the driver returns when a pooled connection fails
// mid-operation (the database restarted): an error labelled NetworkError.
var networkError = mongo.CommandError{Message: "connection reset by peer", Labels: []string{"NetworkError"}}

// TestUnavailableAndReadRetry: a connection failure is retried once for a
// read-only tool (the retry succeeds: the first call after a database
// restart works) and never for a write; a database that cannot be reached
// at all is unavailable with retry_after, never the timeout's advice, even
// though the driver counts a server selection that gave up as a timeout.
func TestUnavailableAndReadRetry(t *testing.T) {
	selection := topology.ServerSelectionError{Wrapped: context.DeadlineExceeded}
	for _, tc := range []struct {
		name     string
		readOnly bool
		errs     []error // the handler's answers, call by call
		calls    int
		code     toolerror.Code // "" = success
	}{
		{"stale connection, read", true, []error{networkError, nil}, 2, ""},
		{"stale connection, write", false, []error{networkError, nil}, 1, toolerror.Unavailable},
		{"read down twice", true, []error{networkError, selection}, 2, toolerror.Unavailable},
		{"no server selectable", true, []error{selection, nil}, 1, toolerror.Unavailable},
		{"other error", true, []error{errors.New("boom"), nil}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			tool := &Tool{ReadOnly: tc.readOnly, Handler: Typed(func(context.Context, *Deps, struct{}) (Dynamic, error) {
				err := tc.errs[calls]
				calls++
				if err != nil {
					return nil, err
				}
				return map[string]any{"count": 1}, nil
			})}
			tool.Name, tool.Timeout = "count_objects", 10*time.Second
			res, err := tool.Handle(&Deps{Log: zerolog.New(io.Discard)})(context.Background(), mcp.CallToolRequest{})
			if calls != tc.calls {
				t.Errorf("handler ran %d times, want %d", calls, tc.calls)
			}
			switch {
			case tc.name == "other error":
				if err == nil || toolerror.KindOf(err) != toolerror.Infrastructure {
					t.Errorf("got %v, want an infrastructure error", err)
				}
			case tc.code == "":
				if err != nil || res == nil || res.IsError {
					t.Errorf("got %v %v, want success", res, err)
				}
			default:
				te, ok := toolerror.As(err)
				if !ok || te.Code != tc.code || te.RetryAfter != UnavailableRetryAfter {
					t.Fatalf("got %v, want %s with retry_after", err, tc.code)
				}
				if want := "count_objects failed: the database is unreachable right now (parse-mcp keeps reconnecting); try again shortly. The request itself is fine: send it unchanged."; te.Message != want {
					t.Errorf("message %q", te.Message)
				}
			}
		})
	}
}

// TestDeadlineMidReadIsTimeout: when the call's deadline passes while a
// read is in flight the driver closes the connection, a network error; the
// answer is timeout with the timeout's advice (a model told "unavailable …
// send it unchanged" resends the same slow call forever). A server that
// could not be selected at all stays unavailable.
func TestDeadlineMidReadIsTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want toolerror.Code
	}{
		{"connection closed at the deadline", networkError, toolerror.Timeout},
		{"no server selectable until the deadline", topology.ServerSelectionError{Wrapped: context.DeadlineExceeded}, toolerror.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := &Tool{ReadOnly: true, Handler: Typed(func(ctx context.Context, _ *Deps, _ struct{}) (Dynamic, error) {
				<-ctx.Done()
				return nil, tc.err
			})}
			tool.Name, tool.Timeout = "atlas_text_search", 20*time.Millisecond
			_, err := tool.Handle(&Deps{Log: zerolog.New(io.Discard)})(context.Background(), mcp.CallToolRequest{})
			te, ok := toolerror.As(err)
			if !ok || te.Code != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			if tc.want == toolerror.Timeout && (te.RetryAfter != 0 || !strings.Contains(te.Message, "narrow the filter")) {
				t.Errorf("timeout answer %q retry_after %v: want the timeout's advice and no retry_after", te.Message, te.RetryAfter)
			}
		})
	}
}
