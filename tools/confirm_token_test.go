package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
)

func confirmCall(d *Deps, tool, args string) *confirmScope {
	return confirmCallAs(context.Background(), d, tool, args)
}

func confirmCallAs(ctx context.Context, d *Deps, tool, args string) *confirmScope {
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.RawArguments = json.RawMessage(args)
	return d.confirmScopeOf(withToolCall(ctx, req))
}

// TestConfirmTokenAttacks: a 2026-07-28 confirmation token authorises one
// execution of one request (tool, canonical arguments, question) by one
// identity, before it expires; everything else is not taken (asked anew).
func TestConfirmTokenAttacks(t *testing.T) {
	ctx := context.Background()
	defer func(f func() time.Time) { confirmNow = f }(confirmNow)
	now := time.Unix(1_900_000_000, 0)
	confirmNow = func() time.Time { return now }

	ledger := newLocalLedger()
	user := &Deps{Config: &config.Config{ACLUser: "u1", MongoDBURI: "mongodb://h/app"}, Confirmations: ledger}
	otherUser := &Deps{Config: &config.Config{ACLUser: "u2", MongoDBURI: "mongodb://h/app"}, Confirmations: ledger}
	otherTenant := &Deps{Config: &config.Config{ACLUser: "u1", TenantID: "t2", MongoDBURI: "mongodb://h/app"}, Confirmations: ledger}
	otherDB := &Deps{Config: &config.Config{ACLUser: "u1", MongoDBURI: "mongodb://h/other"}, Confirmations: ledger}
	otherKey := &Deps{Config: user.Config, Confirmations: newLocalLedger()}
	const args = `{"class_name":"Memo","fields":{"title":"a","n":1.50}}`
	const question = "create Memo?"
	accept := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}
	decline := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}

	fresh := func() string {
		t.Helper()
		s, err := issue(ctx, confirmCall(user, "create_object", args), question)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	refused := []struct {
		name     string
		info     *confirmScope
		question string
		state    func(string) string
	}{
		{"other tool", confirmCall(user, "update_object", args), question, nil},
		{"other arguments", confirmCall(user, "create_object", `{"class_name":"Memo","fields":{"title":"b","n":1.50}}`), question, nil},
		{"other number digits", confirmCall(user, "create_object", `{"class_name":"Memo","fields":{"title":"a","n":1.5}}`), question, nil},
		{"other question", confirmCall(user, "create_object", args), "delete everything?", nil},
		{"other identity", confirmCall(otherUser, "create_object", args), question, nil},
		{"other caller (named API key)", confirmCallAs(callinfo.With(ctx, callinfo.Info{Credential: "bob"}), user, "create_object", args), question, nil},
		{"other tenant", confirmCall(otherTenant, "create_object", args), question, nil},
		{"other database", confirmCall(otherDB, "create_object", args), question, nil},
		{"other signing key", confirmCall(otherKey, "create_object", args), question, nil},
		{"tampered", confirmCall(user, "create_object", args), question, func(s string) string {
			b := []byte(s)
			i := len(confirmTokenPrefix) + 3
			b[i] ^= 1
			return string(b)
		}},
		{"truncated", confirmCall(user, "create_object", args), question, func(s string) string { return s[:len(s)-4] }},
		{"old digest format", confirmCall(user, "create_object", args), question, func(string) string { return "parse-mcp.confirm.0123456789abcdef0123456789abcdef" }},
	}
	for _, tc := range refused {
		state := fresh()
		if tc.state != nil {
			state = tc.state(state)
		}
		if _, ok, err := redeem(ctx, tc.info, tc.question, state, accept); ok || err != nil {
			t.Errorf("%s: taken (err %v)", tc.name, err)
		}
	}

	// Key order and spacing are not part of the request.
	same := confirmCall(user, "create_object", ` { "fields" : {"n":1.50, "title":"a"}, "class_name":"Memo" }`)
	state := fresh()
	if answer, ok, err := redeem(ctx, same, question, state, decline); !ok || err != nil || answer != ConfirmDeclined {
		t.Fatalf("declined: %v %v %v", answer, ok, err)
	}
	// A declined answer spent nothing: the accepted one is taken, once.
	if answer, ok, err := redeem(ctx, same, question, state, accept); !ok || err != nil || answer != ConfirmAccepted {
		t.Fatalf("accepted: %v %v %v", answer, ok, err)
	}
	for range 3 {
		if _, ok, _ := redeem(ctx, same, question, state, accept); ok {
			t.Fatal("a replayed token was taken")
		}
	}

	// Expired: a token is good for ConfirmTTL.
	state = fresh()
	now = now.Add(ConfirmTTL)
	if _, ok, _ := redeem(ctx, same, question, state, accept); ok {
		t.Fatal("an expired token was taken")
	}
	state = fresh()
	now = now.Add(ConfirmTTL - time.Second)
	if _, ok, _ := redeem(ctx, same, question, state, accept); !ok {
		t.Fatal("a token inside its lifetime was not taken")
	}
	if !strings.HasPrefix(state, confirmTokenPrefix) {
		t.Fatalf("token %q", state)
	}
}
