package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
)

// TestDispatcherCallInfo: the dispatcher records who sends a request as
// the policy's rate limit counts it — an HTTP session's client and session,
// a stateless request's client alone, nothing over stdio — and keeps what
// the transport recorded before it (the credential, no server requests).
func TestDispatcherCallInfo(t *testing.T) {
	stdio := NewSession(StdioSessionID)
	session := NewSession("s-1")
	session.client, session.credential = "key:ops", "ops"
	stateless := NewSession("stateless-1")
	stateless.client, stateless.oneRequest = "10.0.0.7", true
	transport := callinfo.With(context.Background(), callinfo.Info{Credential: "ops", NoServerRequests: true})
	cat := "query"
	cases := []struct {
		name string
		ctx  context.Context
		sess *Session
		env  envelope
		want callinfo.Info
	}{
		{"stdio", context.Background(), stdio, envelope{Method: "tools/call"}, callinfo.Info{Method: "tools/call"}},
		{"http session", transport, session, envelope{Method: "tools/call"},
			callinfo.Info{Client: "key:ops", Session: "s-1", Credential: "ops", Method: "tools/call", NoServerRequests: true}},
		{"stateless", context.Background(), stateless, envelope{Method: "tools/call"},
			callinfo.Info{Client: "10.0.0.7", Method: "tools/call"}},
		{"tools/list category", context.Background(), stdio, envelope{Method: "tools/list", Params: json.RawMessage(`{"category":"query"}`)},
			callinfo.Info{Method: "tools/list", ListCategory: &cat}},
		{"tools/list without category", context.Background(), stdio, envelope{Method: "tools/list", Params: json.RawMessage(`{}`)},
			callinfo.Info{Method: "tools/list"}},
	}
	for _, c := range cases {
		got := callinfo.From(withCallInfo(c.ctx, c.sess, c.env))
		gotCat, wantCat := got.ListCategory, c.want.ListCategory
		got.ListCategory, c.want.ListCategory = nil, nil
		if got != c.want || (gotCat == nil) != (wantCat == nil) || gotCat != nil && *gotCat != *wantCat {
			t.Errorf("%s: got %+v (category %v), want %+v (category %v)", c.name, got, gotCat, c.want, wantCat)
		}
	}
}
