package parsetest_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

func TestNodeVersionOK(t *testing.T) {
	for v, want := range map[string]bool{
		"v20.19.0": true, "v20.20.2": true, "v20.18.9": false, "v21.7.0": false,
		"v22.13.0": true, "v22.12.0": false, "v24.11.1": true, "v24.1.0": false,
		"v18.20.0": false, "v25.0.0": false, "garbage": false,
	} {
		if got := parsetest.NodeVersionOK(v); got != want {
			t.Errorf("NodeVersionOK(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestInstall only installs (CI runs it first, so later tests find the cache).
// Under -short (make check) it skips: a fresh install is an npm download of
// about a minute, and every test that needs Parse Server skips there anyway.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping under -short (make check): installing parse-server with npm takes about a minute; make test runs it")
	}
	rt, err := parsetest.Install(t.Context())
	if err != nil {
		if os.Getenv(parsetest.EnvRequire) == "" {
			t.Skipf("skipping: %v", err)
		}
		t.Fatal(err)
	}
	t.Logf("node %s, modules %s", rt.Node, rt.Modules)
}

// TestCloudCodeRuns checks the harness end to end: the default Cloud Code's
// triggers, validation error, function, and ACL enforcement.
func TestCloudCodeRuns(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: parsetest.MongoURI(t)})
	ps.CreateClass(t, "Note", map[string]string{"title": "String", "priority": "Number", "checkedBy": "String"}, nil)
	ps.CreateClass(t, "NoteAudit", map[string]string{"noteId": "String", "action": "String", "user": "String"}, nil)

	_, alice := ps.SignUp(t, "alice", "alice-pw")
	_, bob := ps.SignUp(t, "bob", "bob-pw")

	created := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "  hello  ", "priority": 2}, parsetest.AsSession(alice))
	id, _ := created["objectId"].(string)
	got := ps.MustDo(t, "GET", "/classes/Note/"+id, nil, parsetest.AsMaster)
	if got["title"] != "hello" || got["checkedBy"] != "beforeSave" {
		t.Errorf("beforeSave did not run: %v", got)
	}
	// Parse answers before afterSave finishes: poll for its audit row.
	deadline := time.Now().Add(30 * time.Second)
	for {
		audit := ps.MustDo(t, "GET", `/classes/NoteAudit?where={"noteId":"`+id+`"}`, nil, parsetest.AsMaster)
		if rows, _ := audit["results"].([]any); len(rows) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("afterSave audit row missing after 30 s: %v", audit)
		}
		time.Sleep(100 * time.Millisecond)
	}

	status, body, err := ps.Do("POST", "/classes/Note", map[string]any{"title": "   "}, parsetest.AsSession(alice))
	if err != nil || status != 400 || body["code"] != float64(142) {
		t.Errorf("empty title: HTTP %d %v %v, want 400 code 142", status, body, err)
	}

	fn := ps.MustDo(t, "POST", "/functions/greet", map[string]any{"name": "Ada"}, parsetest.AsSession(bob))
	res, _ := fn["result"].(map[string]any)
	if res["greeting"] != "Hello, Ada!" || res["user"] != "bob" {
		t.Errorf("greet = %v", fn)
	}

	// A private note of alice's: bob can neither read nor change it.
	priv := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "secret", "ACL": map[string]any{}}, parsetest.AsMaster)
	pid, _ := priv["objectId"].(string)
	if status, body, _ := ps.Do("PUT", "/classes/Note/"+pid, map[string]any{"title": "x"}, parsetest.AsSession(bob)); status != 404 || body["code"] != float64(101) {
		t.Errorf("bob updating a private note: HTTP %d %v, want 404 code 101", status, body)
	}
}

// TestInstallWithoutNode: with neither node nor npm in PATH and nothing
// installed, the harness reports a skip naming what is missing.
func TestInstallWithoutNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(parsetest.EnvDir, t.TempDir())
	_, err := parsetest.InstallUncached(t.Context())
	if err == nil || !parsetest.IsUnavailable(err) {
		t.Fatalf("got %v, want an unavailable error", err)
	}
	for _, want := range []string{"Node.js", "npm", "node is not in PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}
}
