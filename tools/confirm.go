package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
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
// write tool refuses, see docs/decisions.md "Decisions where the spec is silent").
//
// In 2026-07-28 the answer comes back with the client's retry, so it must be
// bound to the call: requestState is a signed, expiring, single-use token
// (confirm_token.go) for exactly this tool, these arguments, this question
// and this identity. An answer with a token for anything else, an expired
// token or one already used (by this process or any other on the database)
// is not taken: the question is asked again.

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

// confirmScope is what a confirmation of the current tool call is bound to,
// derived from the request's callinfo and the server's configuration.
type confirmScope struct {
	req *mcp.CallToolRequest
	// binding is a digest of the tool name, the canonical arguments, the
	// identity the server acts as and the caller's named credential
	// (callinfo's Credential, over HTTP a PARSE_MCP_API_KEYS name, so one
	// caller's answer is not taken from another): what a 2026-07-28
	// confirmation token is bound to (with the question).
	binding [32]byte
	ledger  ConfirmationLedger
}

// confirmScopeOf is the current tool call's confirmScope (nil outside a tool
// call).
func (d *Deps) confirmScopeOf(ctx context.Context) *confirmScope {
	if req := callinfo.From(ctx).ToolCall; req != nil {
		return d.confirmScopeFor(ctx, req)
	}
	return nil
}

// confirmScopeFor is the confirmScope of the call req by this request's
// caller.
func (d *Deps) confirmScopeFor(ctx context.Context, req *mcp.CallToolRequest) *confirmScope {
	info := callinfo.From(ctx)
	return &confirmScope{req: req, ledger: d.confirmationLedger(),
		binding: callBinding(req.Params.Name, *req, identityBinding(d.Config)+"\x00caller="+info.Credential)}
}

// callBinding digests what one confirmation authorises: this tool, with
// these arguments (canonical JSON: key order and spacing do not matter,
// numbers keep their digits), for this identity.
func callBinding(tool string, req mcp.CallToolRequest, identity string) [32]byte {
	raw := []byte(req.Params.RawArguments)
	if len(raw) == 0 {
		raw, _ = jsonenc.Marshal(req.Params.Arguments)
	}
	canonical := raw
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil {
		if b, err := jsonenc.Marshal(v); err == nil {
			canonical = b
		}
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(tool), canonical, []byte(identity)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// identityBinding names the identity the server acts as (kind and value,
// the session token only as a digest), its tenant and its database: a
// confirmation given to one of them is not valid for another.
func identityBinding(cfg *config.Config) string {
	if cfg == nil {
		return ""
	}
	value := cfg.ACLUser + cfg.ACLRole
	if cfg.SessionToken != "" {
		h := sha256.Sum256([]byte(cfg.SessionToken))
		value = hex.EncodeToString(h[:])
	}
	return strings.Join([]string{cfg.Identity(), value, "tenant=" + cfg.TenantID, "db=" + cfg.DatabaseName(), "prefix=" + cfg.CollectionPrefix}, "\x00")
}

// Confirm asks the user to confirm what message describes (plain text,
// shown by the client as is). See the package comment above for the two
// eras. It returns an error for *InputRequired (2026-07-28: return it from
// the handler), when the call was cancelled while waiting, or when the
// confirmation ledger cannot be reached (an infrastructure error: nothing
// may be written then).
func Confirm(ctx context.Context, d *Deps, message string) (Confirmation, error) {
	info := d.confirmScopeOf(ctx)
	if info == nil {
		return ConfirmUnsupported, nil
	}
	if token := viewToken(info.req); token != "" {
		// The person confirmed this exact write in the confirm view
		// (view_confirm.go); a token for anything else is not an answer.
		answer, ok, err := redeem(ctx, info, viewQuestion(message), token, acceptedInView)
		if err != nil || ok {
			return answer, err
		}
	}
	params := mcp.ElicitationParams{Message: message, RequestedSchema: confirmSchema}

	if mcpserver.IsModernRequest(ctx) {
		if pi := mcpserver.RequestProtocolInfoFromContext(ctx); pi.ClientCapabilities == nil || pi.ClientCapabilities.Elicitation == nil {
			return ConfirmUnsupported, nil
		}
		mrt := info.req.Params.MultiRoundTripParams
		if res := mcpserver.ElicitationResponse(mrt.InputResponses, confirmInputKey); res != nil && mrt.RequestState != "" {
			answer, ok, err := redeem(ctx, info, message, mrt.RequestState, res)
			if err != nil || ok {
				return answer, err
			}
		}
		state, err := issue(ctx, info, message)
		if err != nil {
			return ConfirmUnsupported, err
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
