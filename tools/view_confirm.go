package tools

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/views"
)

// The confirm view (docs/views.md): a write's dry run, called by a client
// that declared the MCP Apps extension, carries in its result's _meta a
// confirmation token for exactly that write — the same tool and arguments
// without dry_run, the same identity and caller, the same question Confirm
// would ask (what will change in the database). The view shows the dry run;
// when the person presses Confirm it asks the host to call the tool with
// those arguments and the token in the call's _meta, and Confirm takes the
// token as the person's accepted answer instead of asking again. The token
// is the 2026-07-28 confirmation token (confirm_token.go): signed, expiring
// after ConfirmTTL, spent once in the ConfirmationLedger. Declining sends
// nothing: nothing is written. A write the policy does not ask to confirm
// (settings.confirm_writes) gets no token: the view's call needs none, and
// ignores one.

// ViewConfirmationKey is the _meta key of the token: in a dry run's result
// and in the confirm view's call.
const ViewConfirmationKey = "parse-mcp/confirmation"

// resultMeta collects _meta members a handler adds to its result (Handle
// puts them on the CallToolResult, outside structuredContent and the text).
type resultMeta struct{ fields map[string]any }

type resultMetaKey struct{}

func withResultMeta(ctx context.Context) (context.Context, *resultMeta) {
	m := &resultMeta{}
	return context.WithValue(ctx, resultMetaKey{}, m), m
}

func addResultMeta(ctx context.Context, key string, v any) {
	if m, ok := ctx.Value(resultMetaKey{}).(*resultMeta); ok {
		if m.fields == nil {
			m.fields = map[string]any{}
		}
		m.fields[key] = v
	}
}

// offerViewConfirmation adds the confirm view's token to a dry run's result
// when the client renders views and the write is one the confirm view
// shows, bound to the question Confirm would ask for the write itself.
func (d *Deps) offerViewConfirmation(ctx context.Context, c *writeCall, plan *parsedb.WritePlan) error {
	if c.action != "" || views.ToolViews[c.tool] != views.Confirm || !d.needsConfirmation(c) || !views.Declared(ctx) {
		return nil
	}
	scope := d.confirmScopeOf(ctx)
	if scope == nil {
		return nil
	}
	write, ok := withoutDryRun(*scope.req)
	if !ok {
		return nil
	}
	scope = d.confirmScopeFor(ctx, &write)
	token, err := issue(ctx, scope, viewQuestion(confirmQuestion(c, plan)))
	if err != nil {
		return err
	}
	addResultMeta(ctx, ViewConfirmationKey, token)
	return nil
}

// withoutDryRun is the dry run's request as the write itself: the same
// arguments, without dry_run.
func withoutDryRun(req mcp.CallToolRequest) (mcp.CallToolRequest, bool) {
	raw := []byte(req.Params.RawArguments)
	if len(raw) == 0 {
		b, err := jsonenc.Marshal(req.Params.Arguments)
		if err != nil {
			return req, false
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if dec.Decode(&args) != nil || args == nil {
		return req, false
	}
	delete(args, "dry_run")
	b, err := jsonenc.Marshal(args)
	if err != nil {
		return req, false
	}
	req.Params.Arguments = args
	req.Params.RawArguments = b
	return req, true
}

// viewQuestion is what the confirm view's token is signed for: the question,
// marked as the view's. A 2026-07-28 requestState signs the bare question —
// a question still to be asked, not an answer — so neither token passes for
// the other.
func viewQuestion(question string) string { return "confirm view\x00" + question }

// viewToken is the confirm view's token on a call, if any.
func viewToken(req *mcp.CallToolRequest) string {
	if req == nil || req.Params.Meta == nil {
		return ""
	}
	s, _ := req.Params.Meta.AdditionalFields[ViewConfirmationKey].(string)
	return s
}

// acceptedInView is the answer a valid view token stands for.
var acceptedInView = &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}
