package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
)

// Asking the user (elicitation) from a tool handler, in both protocol eras.
//
// A handler calls Confirm. In the session revisions (2025-03-26 … 2025-11-25)
// the server sends elicitation/create to the client over the call's own
// channel (stdout, or the call's SSE stream over HTTP) and waits for the
// user's answer. In 2026-07-28 a server may not send requests: Confirm returns
// an *InputRequired error instead, the handler returns it unchanged, and the
// client receives an input_required result; it asks the user and retries the
// same call with the answer in inputResponses, and on that retry Confirm
// returns the answer. A client that declared no elicitation capability is
// never asked: Confirm returns ConfirmUnsupported and the handler decides (a
// write tool refuses, see README "Decisions where the spec is silent").
//
// The answer is bound to the call: requestState is a digest of the tool name,
// its arguments and the question, so an answer given for one call is not
// taken for a retry with other arguments (the question is asked again).

// Confirmation is the user's answer.
type Confirmation int

const (
	// ConfirmUnsupported: the client cannot ask its user (no elicitation
	// capability, or a transport that cannot carry the question).
	ConfirmUnsupported Confirmation = iota
	// ConfirmAccepted: the user confirmed.
	ConfirmAccepted
	// ConfirmDeclined: the user said no.
	ConfirmDeclined
	// ConfirmCancelled: the user dismissed the question without choosing.
	ConfirmCancelled
)

func (c Confirmation) String() string {
	switch c {
	case ConfirmAccepted:
		return "accepted"
	case ConfirmDeclined:
		return "declined"
	case ConfirmCancelled:
		return "cancelled"
	}
	return "unsupported"
}

// confirmInputKey is the inputRequests/inputResponses key of the question.
const confirmInputKey = "confirm"

// InputRequired is returned by Confirm in 2026-07-28 when the client must
// ask its user first; the handler returns it unchanged and Handle answers
// the call with Result, an input_required result.
type InputRequired struct {
	Result *mcp.CallToolResult
}

func (e *InputRequired) Error() string { return "the client must ask the user and retry the call" }

// confirmSchema is the form the client shows: one required checkbox.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"confirm": map[string]any{"type": "boolean", "title": "Confirm", "description": "Check to go ahead"},
	},
	"required": []string{"confirm"},
}

// callInfo is what Handle records about the call for Confirm.
type callInfo struct {
	tool  string
	req   mcp.CallToolRequest
	rawID string // digest of the tool name and arguments
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, tool string, req mcp.CallToolRequest) context.Context {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(req.Params.RawArguments)
	if len(req.Params.RawArguments) == 0 {
		b, _ := jsonenc.Marshal(req.Params.Arguments)
		h.Write(b)
	}
	return context.WithValue(ctx, callInfoKey{}, &callInfo{tool: tool, req: req, rawID: hex.EncodeToString(h.Sum(nil))})
}

// Confirm asks the user to confirm what message describes (plain text,
// shown by the client as is). See the package comment above for the two
// eras. It returns an error only for *InputRequired (2026-07-28: return it
// from the handler) or when the call was cancelled while waiting.
func Confirm(ctx context.Context, message string) (Confirmation, error) {
	info, _ := ctx.Value(callInfoKey{}).(*callInfo)
	if info == nil {
		return ConfirmUnsupported, nil
	}
	state := confirmState(info, message)
	params := mcp.ElicitationParams{Message: message, RequestedSchema: confirmSchema}

	if mcpserver.IsModernRequest(ctx) {
		if pi := mcpserver.RequestProtocolInfoFromContext(ctx); pi.ClientCapabilities == nil || pi.ClientCapabilities.Elicitation == nil {
			return ConfirmUnsupported, nil
		}
		mrt := info.req.Params.MultiRoundTripParams
		if mrt.RequestState == state {
			if res := mcpserver.ElicitationResponse(mrt.InputResponses, confirmInputKey); res != nil {
				return confirmationOf(res), nil
			}
		}
		b := mcpserver.NewInputRequestBuilder(state).Elicit(confirmInputKey, params)
		return 0, &InputRequired{Result: b.ToolResult()}
	}

	srv := mcpserver.ServerFromContext(ctx)
	if srv == nil {
		return ConfirmUnsupported, nil
	}
	res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  params,
	})
	switch {
	case err == nil && res != nil:
		return confirmationOf(res), nil
	case ctx.Err() != nil:
		return ConfirmCancelled, ctx.Err()
	case errors.Is(err, mcpserver.ErrElicitationNotSupported), errors.Is(err, mcpserver.ErrNoActiveSession), err == nil:
		return ConfirmUnsupported, nil
	default:
		// The client answered the request with an error (it could not show
		// the question): nobody confirmed.
		return ConfirmUnsupported, nil
	}
}

// confirmationOf maps the client's answer: accept counts only with the box
// checked (or a client that returns no content for an accepted form).
func confirmationOf(res *mcp.ElicitationResult) Confirmation {
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		if m, ok := res.Content.(map[string]any); ok {
			if v, present := m["confirm"]; present && v != true {
				return ConfirmDeclined
			}
		}
		return ConfirmAccepted
	case mcp.ElicitationResponseActionDecline:
		return ConfirmDeclined
	}
	return ConfirmCancelled
}

func confirmState(info *callInfo, message string) string {
	h := sha256.Sum256([]byte(info.rawID + "\x00" + message))
	return "parse-mcp.confirm." + hex.EncodeToString(h[:16])
}
