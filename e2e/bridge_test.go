package e2e

import (
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// startParse boots a real Parse Server (internal/parsetest) on a database of
// its own in the test MongoDB, with the test Cloud Code and the classes the
// bridge tests use.
func startParse(t *testing.T, liveQuery ...string) *parsetest.Server {
	t.Helper()
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI, LiveQueryClasses: liveQuery})
	ps.CreateClass(t, "Note", map[string]string{"title": "String", "priority": "Number", "checkedBy": "String", "owner": "Pointer:_User"}, nil)
	ps.CreateClass(t, "NoteAudit", map[string]string{"noteId": "String", "action": "String", "user": "String"}, nil)
	return ps
}

// bridgeEnv points the binary at the Parse Server's database and REST API.
func bridgeEnv(ps *parsetest.Server, extra ...string) []string {
	return append([]string{
		"PARSE_MCP_MONGODB_URI=" + ps.MongoURI,
		"PARSE_MCP_SERVER_URL=" + ps.URL,
		"PARSE_MCP_APPLICATION_ID=" + ps.AppID,
	}, extra...)
}

// TestBridgeStartupChecks: the start-up check of the Parse Server fails with
// one clear line (exit 1 unreachable, exit 2 misconfigured), and the master
// key shows in no output, describe included.
func TestBridgeStartupChecks(t *testing.T) {
	ps := startParse(t)
	key := "PARSE_MCP_MASTER_KEY=" + ps.MasterKey
	_, token := ps.SignUp(t, "carla", "pw")

	cases := []struct {
		name string
		env  []string
		code int
		want string
	}{
		{"unreachable", []string{"PARSE_MCP_MONGODB_URI=" + ps.MongoURI, "PARSE_MCP_SERVER_URL=http://127.0.0.1:1/parse", "PARSE_MCP_APPLICATION_ID=" + ps.AppID, key}, 1, "unreachable"},
		{"wrong mount path", []string{"PARSE_MCP_MONGODB_URI=" + ps.MongoURI, "PARSE_MCP_SERVER_URL=" + strings.TrimSuffix(ps.URL, "/parse") + "/api", "PARSE_MCP_APPLICATION_ID=" + ps.AppID, key}, 2, "PARSE_MCP_SERVER_URL"},
		{"wrong application id", []string{"PARSE_MCP_MONGODB_URI=" + ps.MongoURI, "PARSE_MCP_SERVER_URL=" + ps.URL, "PARSE_MCP_APPLICATION_ID=not-the-app", key}, 2, "PARSE_MCP_APPLICATION_ID"},
		{"wrong master key", bridgeEnv(ps, "PARSE_MCP_MASTER_KEY=wrong-"+ps.MasterKey), 2, "PARSE_MCP_MASTER_KEY"},
		{"master posture without key", bridgeEnv(ps), 2, "PARSE_MCP_MASTER_KEY"},
		{"key next to a session token", bridgeEnv(ps, key, "PARSE_MCP_SESSION_TOKEN="+token), 2, "PARSE_MCP_MASTER_KEY"},
		{"revoked session token", bridgeEnv(ps, "PARSE_MCP_SESSION_TOKEN=r:not-a-session"), 2, "PARSE_MCP_SESSION_TOKEN"},
		{"server url not http", []string{"PARSE_MCP_SERVER_URL=127.0.0.1:1337", "PARSE_MCP_APPLICATION_ID=x", key}, 2, "PARSE_MCP_SERVER_URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, c.env, "describe")
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("want one line naming %s, got:\n%s", c.want, stderr)
			}
			if strings.Contains(out+stderr, ps.MasterKey) {
				t.Fatalf("the master key is in the output:\n%s\n%s", out, stderr)
			}
		})
	}

	// A good configuration starts; describe names the server but not the key;
	// a logged tool call (debug level) does not carry it either.
	out, stderr, code := runCLI(t, bridgeEnv(ps, key, "PARSE_MCP_LOG_LEVEL=debug"), "describe")
	if code != 0 {
		t.Fatalf("describe exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, ps.URL) || !strings.Contains(out, `"master_key_set": true`) {
		t.Errorf("describe does not show the bridge:\n%s", out)
	}
	out2, stderr2, code := runCLI(t, bridgeEnv(ps, key, "PARSE_MCP_LOG_LEVEL=debug"), "call", "get_all_schemas")
	if code != 0 {
		t.Fatalf("call exit %d: %s", code, stderr2)
	}
	if !strings.Contains(stderr2, "tool_call") {
		t.Errorf("no tool_call event logged:\n%s", stderr2)
	}
	for _, s := range []string{out, stderr, out2, stderr2} {
		if strings.Contains(s, ps.MasterKey) {
			t.Fatalf("the master key is in the output:\n%s", s)
		}
	}
	// A session-token identity starts too (no master key needed).
	if _, stderr, code := runCLI(t, bridgeEnv(ps, "PARSE_MCP_SESSION_TOKEN="+token), "describe"); code != 0 {
		t.Fatalf("session identity: exit %d: %s", code, stderr)
	}
}

// TestBridgeLiveQuery: with PARSE_MCP_LIVEQUERY_URL a resource subscription
// is driven by Parse LiveQuery as the configured session: a write Parse lets
// the user read is notified, a write only another user may read is not.
func TestBridgeLiveQuery(t *testing.T) {
	ps := startParse(t, "Note")
	aliceID, alice := ps.SignUp(t, "alice", "pw")
	_, bob := ps.SignUp(t, "bob", "pw")

	r := startRaw(t, bridgeEnv(ps, "PARSE_MCP_SESSION_TOKEN="+bob, "PARSE_MCP_LIVEQUERY_URL="+ps.LiveQueryURL, "PARSE_MCP_LOG_LEVEL=info")...)
	r.initialize()
	result(t, r.rpc("s1", "resources/subscribe", `{"uri":"parse://Note/count"}`))
	if !strings.Contains(r.stderr.String(), "watching class through Parse LiveQuery") {
		t.Fatalf("the subscription does not use LiveQuery:\n%s", r.stderr.String())
	}

	ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "alice only", "ACL": map[string]any{aliceID: map[string]any{"read": true, "write": true}}}, parsetest.AsSession(alice))
	if got := r.updates(settle); len(got) != 0 {
		t.Fatalf("bob was notified of a note only alice can read: %v", got)
	}
	ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "for everyone"}, parsetest.AsSession(alice))
	if got := r.expectUpdates(1); len(got) != 1 || got[0] != "parse://Note/count" {
		t.Fatalf("updates after a public write: %v", got)
	}
}
