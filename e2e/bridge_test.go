package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

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
	// The log line precedes the response on the server, but stderr is
	// another pipe: wait for it (a generous ceiling for a loaded machine).
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(r.stderr.String(), "watching class through Parse LiveQuery"); {
		if time.Now().After(deadline) || strings.Contains(r.stderr.String(), "Parse LiveQuery unavailable") {
			t.Fatalf("the subscription does not use LiveQuery:\n%s", r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
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

// bridgePolicy allows every write without confirmation and declares Cloud
// functions as actions.
const bridgePolicy = `settings: {confirm_writes: never}
actions:
  greet_someone:
    description: Greet a person by name through the app's Cloud Code.
    cloud_function: greet
    params:
      type: object
      properties:
        name: {type: string, minLength: 1}
        times: {type: integer, minimum: 1, maximum: 3}
      required: [name]
  add_note:
    description: Add a note through the app's Cloud Code.
    cloud_function: addNote
    supports_dry_run: true
    params:
      type: object
      properties:
        title: {type: string, minLength: 1}
      required: [title]
`

// waitAudit polls Parse until the afterSave/afterDelete trigger wrote the
// NoteAudit row of (noteID, action); Parse answers before afterSave ends.
func waitAudit(t *testing.T, ps *parsetest.Server, noteID, action string) map[string]any {
	t.Helper()
	where := url.QueryEscape(fmt.Sprintf(`{"noteId":%q,"action":%q}`, noteID, action))
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := ps.MustDo(t, "GET", "/classes/NoteAudit?where="+where, nil, parsetest.AsMaster)
		if rows, _ := out["results"].([]any); len(rows) > 0 {
			return rows[0].(map[string]any)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no NoteAudit row %s/%s after 30 s", noteID, action)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func noteCount(t *testing.T, ps *parsetest.Server) float64 {
	t.Helper()
	out := ps.MustDo(t, "GET", "/classes/Note?count=1&limit=0", nil, parsetest.AsMaster)
	n, _ := out["count"].(float64)
	return n
}

// TestBridgeWrites: the write tools and Cloud function actions go through
// the real Parse Server in the master posture: triggers run (visible in the
// stored object and the audit row), a validation error is a clear tool
// error with nothing written, dry_run shows the REST request with the key
// masked, params are validated before anything is sent.
func TestBridgeWrites(t *testing.T) {
	ps := startParse(t)
	benv := append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, bridgePolicy)), writeEnv...)
	c := stdioClient(t, benv...)

	created := callOK(t, c, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{"title": "  Hello  ", "priority": 2}})
	obj, _ := created["object"].(map[string]any)
	id, _ := created["object_id"].(string)
	if created["write_path"] != "parse_server" || id == "" || obj["title"] != "Hello" || obj["checkedBy"] != "beforeSave" {
		t.Fatalf("create through Parse: %v", created)
	}
	if got := ps.MustDo(t, "GET", "/classes/Note/"+id, nil, parsetest.AsMaster); got["title"] != "Hello" {
		t.Fatalf("stored note %v", got)
	}
	if row := waitAudit(t, ps, id, "create"); row["user"] != "master" {
		t.Errorf("audit row %v", row)
	}

	// Parse's validation error: a clear tool error, nothing written.
	before := noteCount(t, ps)
	msg := callErr(t, c, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{"title": "x", "priority": 9}}, "parse_error")
	if !strings.Contains(msg, "Note priority must be a number from 1 to 5") || !strings.Contains(msg, "142") {
		t.Errorf("validation error message: %s", msg)
	}
	if after := noteCount(t, ps); after != before {
		t.Errorf("a refused write changed the class: %v → %v notes", before, after)
	}

	// dry_run: the exact REST request, key masked, nothing sent.
	dry := callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": id, "fields": map[string]any{"priority": map[string]any{"__op": "Increment", "amount": 1}}, "dry_run": true})
	change, _ := dry["change"].(map[string]any)
	rest, _ := change["rest_request"].(map[string]any)
	headers, _ := rest["headers"].(map[string]any)
	if rest["method"] != "PUT" || rest["url"] != ps.URL+"/classes/Note/"+id || headers["X-Parse-Master-Key"] != "********" {
		t.Fatalf("dry run: %v", dry)
	}
	if strings.Contains(fmt.Sprint(dry), ps.MasterKey) {
		t.Fatal("the dry run shows the master key")
	}
	if got := ps.MustDo(t, "GET", "/classes/Note/"+id, nil, parsetest.AsMaster); got["priority"] != float64(2) {
		t.Fatalf("the dry run wrote: %v", got)
	}
	upd := callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": id, "fields": map[string]any{"priority": map[string]any{"__op": "Increment", "amount": 1}}})
	if o, _ := upd["object"].(map[string]any); o["priority"] != float64(3) {
		t.Fatalf("update: %v", upd)
	}
	waitAudit(t, ps, id, "update")
	callOK(t, c, "delete_object", map[string]any{"class_name": "Note", "object_id": id})
	waitAudit(t, ps, id, "delete")
	if status, _, _ := ps.Do("GET", "/classes/Note/"+id, nil, parsetest.AsMaster); status != 404 {
		t.Errorf("deleted note still there: HTTP %d", status)
	}

	// Classes through /schemas.
	callOK(t, c, "create_class", map[string]any{"class_name": "Memo", "fields": map[string]any{"body": map[string]any{"type": "String"}}})
	if sch := ps.MustDo(t, "GET", "/schemas/Memo", nil, parsetest.AsMaster); sch["className"] != "Memo" {
		t.Fatalf("schema %v", sch)
	}
	callOK(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"body": "hi"}})
	if msg := callErr(t, c, "delete_class", map[string]any{"class_name": "NoteAudit"}, "parse_error"); !strings.Contains(msg, "255") {
		t.Errorf("deleting a non-empty class: %s", msg)
	}

	// Cloud functions as actions, params validated before anything is sent.
	res := callOK(t, c, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"name": "Ada", "times": 2}})
	fn, _ := res["result"].(map[string]any)
	if fn["greeting"] != "Hello, Ada!" || fn["master"] != true || fn["times"] != float64(2) {
		t.Fatalf("greet: %v", res)
	}
	callErr(t, c, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"times": 2}}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"name": "Ada", "times": 9}}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"name": "Ada", "evil": true}}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"name": "Ada"}, "dry_run": true}, "invalid_argument") // not declared dry-runnable
	listed := text(call(t, c, "list_tools", map[string]any{}))
	if !strings.Contains(listed, "greet_someone") || !strings.Contains(listed, `"cloud_function":"greet"`) {
		t.Errorf("list_tools does not list the Cloud function action:\n%s", listed)
	}
	// The write tools' descriptions say what this write path does.
	if !strings.Contains(listed, "Cloud Code triggers and validation run") || strings.Contains(listed, "skip Cloud Code triggers") {
		t.Errorf("list_tools describes the write tools as if writes skipped Parse Server:\n%s", listed)
	}
	before = noteCount(t, ps)
	dryFn := callOK(t, c, "call_action", map[string]any{"action": "add_note", "arguments": map[string]any{"title": "dry"}, "dry_run": true})
	if r, _ := dryFn["result"].(map[string]any); r["dryRun"] != true || noteCount(t, ps) != before {
		t.Fatalf("dry run of a function: %v", dryFn)
	}
	added := callOK(t, c, "call_action", map[string]any{"action": "add_note", "arguments": map[string]any{"title": " via function "}})
	r, _ := added["result"].(map[string]any)
	nid, _ := r["objectId"].(string)
	if got := ps.MustDo(t, "GET", "/classes/Note/"+nid, nil, parsetest.AsMaster); got["title"] != "via function" {
		t.Fatalf("addNote stored %v", got)
	}

	// The audit event names the Parse Server write path; no output carries the key.
	out, stderr, code := runCLI(t, append(benv, "PARSE_MCP_LOG_LEVEL=info"), "call", "create_object", `{"class_name":"Note","fields":{"title":"from the CLI"}}`)
	if code != 0 || !strings.Contains(stderr, `"tool_call"`) || !strings.Contains(stderr, "parse_server") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out+stderr, ps.MasterKey) {
		t.Fatal("the master key is in the output")
	}
}

// TestBridgeSessionIdentity: with a session token every bridge request acts
// as that user: the triggers see the user, Parse's ACL and CLP refuse what
// the user may not write, and an acl_user identity cannot use the bridge.
func TestBridgeSessionIdentity(t *testing.T) {
	ps := startParse(t)
	ps.CreateClass(t, "Locked", map[string]string{"title": "String"}, map[string]any{
		"find": map[string]any{"*": true}, "get": map[string]any{"*": true}, "count": map[string]any{"*": true},
		"create": map[string]any{}, "update": map[string]any{}, "delete": map[string]any{}, "addField": map[string]any{},
	})
	aliceID, alice := ps.SignUp(t, "alice", "pw")
	bobID, bob := ps.SignUp(t, "bob", "pw")
	readOnly := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "read me", "ACL": map[string]any{"*": map[string]any{"read": true}, aliceID: map[string]any{"read": true, "write": true}}}, parsetest.AsSession(alice))
	roID := readOnly["objectId"].(string)

	c := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_SESSION_TOKEN="+bob, policyEnv(t, bridgePolicy)), writeEnv...)...)
	created := callOK(t, c, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{"title": "bob's"}})
	id := created["object_id"].(string)
	if row := waitAudit(t, ps, id, "create"); row["user"] != bobID {
		t.Fatalf("the trigger did not see bob: %v", row)
	}
	callErr(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": roID, "fields": map[string]any{"title": "hijacked"}}, "parse_error")
	callErr(t, c, "delete_object", map[string]any{"class_name": "Note", "object_id": roID}, "parse_error")
	if got := ps.MustDo(t, "GET", "/classes/Note/"+roID, nil, parsetest.AsMaster); got["title"] != "read me" {
		t.Fatalf("bob changed alice's note: %v", got)
	}
	res := call(t, c, "create_object", map[string]any{"class_name": "Locked", "fields": map[string]any{"title": "no"}})
	if !res.IsError {
		t.Fatalf("bob created an object in a class whose CLP forbids it: %s", text(res))
	}
	if n := ps.MustDo(t, "GET", "/classes/Locked?count=1&limit=0", nil, parsetest.AsMaster)["count"]; n != float64(0) {
		t.Fatalf("Locked holds %v objects", n)
	}
	fn := callOK(t, c, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"name": "Ada"}})
	if r, _ := fn["result"].(map[string]any); r["user"] != "bob" || r["master"] != false {
		t.Fatalf("the function did not run as bob: %v", fn)
	}

	// acl_user has no REST equivalent: bridge writes and functions are refused.
	c2 := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_ACL_USER="+bobID, policyEnv(t, bridgePolicy)), writeEnv...)...)
	msg := callErr(t, c2, "create_object", map[string]any{"class_name": "Note", "fields": map[string]any{"title": "x"}}, "permission_denied")
	if !strings.Contains(msg, "session token") {
		t.Errorf("acl_user refusal: %s", msg)
	}
	callErr(t, c2, "call_action", map[string]any{"action": "greet_someone", "arguments": map[string]any{"name": "Ada"}}, "permission_denied")
}

// TestBridgeConfirmation: under the default confirm_writes (destructive) a
// bridge delete asks the person first, showing the REST request with the key
// masked; declined, Parse is never called; a Cloud function action declared
// confirm: true asks too.
func TestBridgeConfirmation(t *testing.T) {
	ps := startParse(t)
	pol := policyEnv(t, `actions:
  add_note:
    cloud_function: addNote
    confirm: true
    params: {type: object, properties: {title: {type: string}}, required: [title]}
`)
	r := startRaw(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, pol), writeEnv...)...)
	initializeWith(r, `{"elicitation":{}}`)
	keep := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "keep"}, parsetest.AsMaster)["objectId"].(string)
	gone := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "gone"}, parsetest.AsMaster)["objectId"].(string)

	r.send(`{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"delete_object","arguments":{"class_name":"Note","object_id":"` + keep + `"}}}`)
	m := answerElicitation(t, r, "d1", `{"action":"decline"}`, "rest_request", `"DELETE"`, "/classes/Note/"+keep, "********")
	if sc := obj(obj(m["result"])["structuredContent"]); sc["written"] != false {
		t.Fatalf("declined delete: %v", m)
	}
	if status, _, _ := ps.Do("GET", "/classes/Note/"+keep, nil, parsetest.AsMaster); status != 200 {
		t.Fatalf("a declined delete reached Parse: HTTP %d", status)
	}
	r.send(`{"jsonrpc":"2.0","id":"d2","method":"tools/call","params":{"name":"delete_object","arguments":{"class_name":"Note","object_id":"` + gone + `"}}}`)
	m = answerElicitation(t, r, "d2", `{"action":"accept","content":{"confirm":true}}`)
	if sc := obj(obj(m["result"])["structuredContent"]); sc["deleted"] != true {
		t.Fatalf("accepted delete: %v", m)
	}
	waitAudit(t, ps, gone, "delete")
	if strings.Contains(r.stderr.String(), ps.MasterKey) {
		t.Fatal("the master key is in the log")
	}

	before := noteCount(t, ps)
	r.send(`{"jsonrpc":"2.0","id":"f1","method":"tools/call","params":{"name":"call_action","arguments":{"action":"add_note","arguments":{"title":"asked"}}}}`)
	m = answerElicitation(t, r, "f1", `{"action":"decline"}`, "addNote", `"asked"`)
	if sc := obj(obj(m["result"])["structuredContent"]); sc["run"] != false || noteCount(t, ps) != before {
		t.Fatalf("declined function: %v", m)
	}
}

// TestBridgeRoleRevokedAfterStart: bob may write a note through role
// Editors when the server starts; the role is then taken from him. Parse
// Server judges the write with its own, current view of bob's roles, so the
// write is refused even if this server still holds the roles it resolved at
// start-up.
func TestBridgeRoleRevokedAfterStart(t *testing.T) {
	ps := startParse(t)
	bobID, bob := ps.SignUp(t, "bob", "pw")
	role := ps.MustDo(t, "POST", "/roles", map[string]any{"name": "Editors", "ACL": map[string]any{"*": map[string]any{"read": true}},
		"users": map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": bobID}}}}, parsetest.AsMaster)
	note := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "edit me", "ACL": map[string]any{"*": map[string]any{"read": true}, "role:Editors": map[string]any{"read": true, "write": true}}}, parsetest.AsMaster)
	id := note["objectId"].(string)

	c := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_SESSION_TOKEN="+bob, policyEnv(t, bridgePolicy)), writeEnv...)...)
	callOK(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": id, "fields": map[string]any{"title": "edited by an editor"}})

	ps.MustDo(t, "PUT", "/roles/"+role["objectId"].(string), map[string]any{
		"users": map[string]any{"__op": "RemoveRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": bobID}}}}, parsetest.AsMaster)
	msg := callErr(t, c, "update_object", map[string]any{"class_name": "Note", "object_id": id, "fields": map[string]any{"title": "edited after revocation"}}, "parse_error")
	t.Logf("refusal: %s", msg)
	if got := ps.MustDo(t, "GET", "/classes/Note/"+id, nil, parsetest.AsMaster); got["title"] != "edited by an editor" {
		t.Fatalf("a revoked editor changed the note: %v", got)
	}
}
