package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// TestCallCommand: `parse-mcp call TOOL '{json}'` prints pretty JSON and
// exits 0 on success, 1 on a tool error, 2 on bad usage.
func TestCallCommand(t *testing.T) {
	out, stderr, code := runCLI(t, nil, "call", "count_objects", `{"class_name":"Song","where":{"genre":"rock"}}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Count != demo.SongsPerGenre["rock"] {
		t.Fatalf("count = %d (%v), want %d\n%s", res.Count, err, demo.SongsPerGenre["rock"], out)
	}
	if !strings.Contains(out, "\n  \"") {
		t.Fatalf("output is not pretty-printed: %q", out)
	}

	// The output is for people: <, > and & print as themselves, not as
	// Go's HTML-safe \u003c escapes.
	out, stderr, code = runCLI(t, nil, "call", "count_objects", `{"class_name":"Song","where":{"title":{"$regex":"<a> & <b>"}}}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) || !strings.Contains(out, "<a> & <b>") {
		t.Fatalf("call output escapes HTML characters:\n%s", out)
	}

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"tool error", []string{"call", "count_objects", `{"class_name":"Nope"}`}, 1, "does not exist"},
		{"hidden class", []string{"call", "get_schema", `{"class_name":"_SCHEMA"}`}, 1, "does not exist or is not accessible"},
		{"unknown tool", []string{"call", "drop_database", `{}`}, 1, "drop_database"},
		{"arguments not an object", []string{"call", "count_objects", `[1]`}, 2, "JSON object"},
		{"arguments not JSON", []string{"call", "count_objects", `{class_name:Song}`}, 2, "JSON object"},
		{"missing tool", []string{"call"}, 2, "usage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, nil, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, stderr)
			}
			if !strings.Contains(out+stderr, c.want) {
				t.Fatalf("output does not mention %q\nstdout: %s\nstderr: %s", c.want, out, stderr)
			}
		})
	}
}

// TestDemoMode runs the real --demo path: embedded FerretDB in the process,
// seeded from scratch, then served again from the same directory (the seed is
// skipped the second time).
func TestDemoMode(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"fresh seed", "already seeded"} {
		start := time.Now()
		out, stderr, code := runCLI(t, []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "PARSE_MCP_LOG_LEVEL=debug"},
			"--demo", "call", "count_objects", `{"class_name":"Song","apply_canonical_filter":false}`)
		elapsed := time.Since(start)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var res struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Count != demo.SongCount {
			t.Fatalf("%s: count %d (%v), want %d", name, res.Count, err, demo.SongCount)
		}
		t.Logf("%s: ready and answered in %v", name, elapsed)
		// What the server did, not how long it took: a busy machine can
		// make either start slow.
		want := []string{"demo: sample data seeded", "demo: sample data already in place, seed skipped"}[i]
		if !strings.Contains(stderr, want) {
			t.Errorf("%s: the server did not log %q:\n%s", name, want, stderr)
		}
	}
	// The demo policy hides the class of fake secrets, and at the default
	// log level the demo says nothing on stderr (no seed line, no
	// master-posture warning: the demo runs in master posture by design).
	out, stderr, code := runCLI(t, []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "PARSE_MCP_LOG_LEVEL=info"},
		"--demo", "call", "get_all_schemas", `{}`)
	if code != 0 || strings.Contains(out, demo.HiddenClassName) {
		t.Fatalf("get_all_schemas under --demo: exit %d, mentions %s: %v", code, demo.HiddenClassName, strings.Contains(out, demo.HiddenClassName))
	}
	for line := range strings.Lines(stderr) {
		// The call's own audit event is something happening; nothing else.
		if !strings.Contains(line, `"event":"tool_call"`) {
			t.Errorf("--demo logged at the default level before any client spoke:\n%s", stderr)
			break
		}
	}
	// An operator's policy file replaces the demo policy whole: one that
	// does not hide VaultSecret exposes the fake keys, and start-up says so.
	own := filepath.Join(t.TempDir(), "own.yaml")
	if err := os.WriteFile(own, []byte("classes:\n  Song: {description: \"A track\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, "PARSE_MCP_POLICY_FILE=" + own},
		"--demo", "call", "count_objects", `{"class_name":"Song"}`)
	if code != 0 || !strings.Contains(stderr, "--demo with a policy file that does not hide VaultSecret") {
		t.Errorf("--demo with a policy file exposing VaultSecret: exit %d, no start-up warning:\n%s", code, stderr)
	}
	_, stderr, _ = runCLI(t, []string{"PARSE_MCP_MONGODB_URI=", "PARSE_MCP_DEMO_DIR=" + dir, policyFile(t, "demo")},
		"--demo", "call", "count_objects", `{"class_name":"Song"}`)
	if strings.Contains(stderr, "does not hide VaultSecret") {
		t.Errorf("warned although the policy file hides VaultSecret:\n%s", stderr)
	}
}

// TestWrongDatabaseNameWarns: a mistyped database name connects fine (MongoDB
// creates databases on first write) and would only show as every class
// answering "does not exist"; start-up says so, naming the settings to check.
func TestWrongDatabaseNameWarns(t *testing.T) {
	const warning = "no Parse classes in this database"
	_, stderr, code := runCLI(t, []string{"PARSE_MCP_DATABASE=" + dbName + "_typo"}, "call", "get_all_schemas", `{}`)
	if code != 0 || !strings.Contains(stderr, warning) || !strings.Contains(stderr, "PARSE_MCP_DATABASE") || !strings.Contains(stderr, dbName+"_typo") {
		t.Fatalf("exit %d; stderr does not warn about the empty database:\n%s", code, stderr)
	}
	if _, stderr, _ = runCLI(t, nil, "call", "get_all_schemas", `{}`); strings.Contains(stderr, warning) {
		t.Fatalf("warned on the Parse database itself:\n%s", stderr)
	}
}

// TestMisspeltHiddenClassWarns: `VaultScret: {hidden: true}` hides nothing
// and leaves VaultSecret readable; start-up serves (hiding a class before it
// exists is allowed) but warns, naming the visible class it may mean, and
// `audit` lists it.
func TestMisspeltHiddenClassWarns(t *testing.T) {
	policy := policyEnv(t, "classes:\n  VaultScret: {hidden: true}\n")
	_, stderr, code := runCLI(t, []string{policy}, "call", "get_all_schemas", `{}`)
	if code != 0 || !strings.Contains(stderr, "classes.VaultScret: hidden, but _SCHEMA has no class VaultScret (did you mean VaultSecret? it is not hidden)") {
		t.Fatalf("exit %d; stderr does not warn about the misspelt hidden class:\n%s", code, stderr)
	}
	out, _, code := runCLI(t, []string{policy}, "audit")
	if code != 0 || !strings.Contains(out, `"hidden_classes_not_in_schema"`) || !strings.Contains(out, "did you mean VaultSecret") {
		t.Fatalf("audit (exit %d) does not list it:\n%s", code, out)
	}
	if _, stderr, _ = runCLI(t, []string{policyEnv(t, "classes:\n  VaultSecret: {hidden: true}\n")}, "call", "get_all_schemas", `{}`); strings.Contains(stderr, "hidden, but _SCHEMA has no class") {
		t.Fatalf("warned about an existing hidden class:\n%s", stderr)
	}
}
