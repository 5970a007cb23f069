package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
)

// TestViewConfirmationAttacks: the confirm view's token (issued with a dry
// run, for the write without dry_run) is the person's answer for exactly
// that write by that caller, once, before it expires; anything else is not
// an answer (here: no way to ask, so Confirm reports unsupported and the
// write is refused).
func TestViewConfirmationAttacks(t *testing.T) {
	defer func(f func() time.Time) { confirmNow = f }(confirmNow)
	now := time.Unix(1_900_000_000, 0)
	confirmNow = func() time.Time { return now }
	d := &Deps{Config: &config.Config{ACLUser: "u1", MongoDBURI: "mongodb://h/app"}, Confirmations: newLocalLedger()}
	const question = "update Memo m1?"

	call := func(credential, tool, args, token string) context.Context {
		var req mcp.CallToolRequest
		req.Params.Name = tool
		req.Params.RawArguments = json.RawMessage(args)
		if token != "" {
			req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{ViewConfirmationKey: token}}
		}
		info := callinfo.From(context.Background())
		info.Credential = credential
		return withToolCall(callinfo.With(context.Background(), info), req)
	}
	// issueFor is what a dry run with these arguments hands the view.
	issueFor := func(dryArgs string) string {
		t.Helper()
		ctx := call("alice", "update_object", dryArgs, "")
		write, ok := withoutDryRun(*callinfo.From(ctx).ToolCall)
		if !ok {
			t.Fatal("withoutDryRun failed")
		}
		token, err := issue(ctx, d.confirmScopeFor(ctx, &write), viewQuestion(question))
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	const dry = `{"dry_run":true,"class_name":"Memo","object_id":"m1","fields":{"n":7}}`
	const write = `{"class_name":"Memo", "fields":{"n":7}, "object_id":"m1"}` // another key order and spacing

	answer := func(ctx context.Context, q string) Confirmation {
		t.Helper()
		a, err := Confirm(ctx, d, q)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	token := issueFor(dry)
	// A 2026-07-28 requestState for the write itself: the question, not an
	// answer.
	wctx := call("alice", "update_object", write, "")
	requestState, err := issue(wctx, d.confirmScopeOf(wctx), question)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, credential, tool, args, question, token string
	}{
		{"other arguments", "alice", "update_object", `{"class_name":"Memo","object_id":"m1","fields":{"n":8}}`, question, token},
		{"other object", "alice", "update_object", `{"class_name":"Memo","object_id":"m2","fields":{"n":7}}`, question, token},
		{"still a dry run", "alice", "update_object", dry, question, token},
		{"other tool", "alice", "delete_object", `{"class_name":"Memo","object_id":"m1"}`, question, token},
		{"other caller", "mallory", "update_object", write, question, token},
		{"other change", "alice", "update_object", write, "update Memo m1 differently?", token},
		{"forged", "alice", "update_object", write, question, token[:len(token)-2] + "AA"},
		{"a requestState", "alice", "update_object", write, question, requestState},
	} {
		if got := answer(call(c.credential, c.tool, c.args, c.token), c.question); got != ConfirmUnsupported {
			t.Errorf("%s: %v, want no answer", c.name, got)
		}
	}
	if got := answer(call("alice", "update_object", write, token), question); got != ConfirmAccepted {
		t.Fatalf("the write the dry run showed: %v, want accepted", got)
	}
	if got := answer(call("alice", "update_object", write, token), question); got != ConfirmUnsupported {
		t.Errorf("replayed: %v, want no answer", got)
	}
	late := issueFor(dry)
	now = now.Add(ConfirmTTL + time.Second)
	if got := answer(call("alice", "update_object", write, late), question); got != ConfirmUnsupported {
		t.Errorf("expired: %v, want no answer", got)
	}
}
