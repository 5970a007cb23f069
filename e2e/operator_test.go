package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// Operator commands: describe, would-permit, audit.

func cliJSON(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	return m
}

func TestOperatorDescribe(t *testing.T) {
	stdout, stderr, code := runCLI(t, []string{policyFile(t, "tenant_scoped"), "PARSE_MCP_SESSION_TOKEN=" + demo.BobSessionToken, "PARSE_MCP_TENANT_ID=" + demo.OrgNorth}, "describe")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, demo.BobSessionToken) || strings.Contains(stdout, strings.TrimPrefix(demo.BobSessionToken, "r:")) {
		t.Fatal("describe prints the session token")
	}
	d := cliJSON(t, stdout)
	id := d["identity"].(map[string]any)
	if id["type"] != "session_token" || !strings.HasPrefix(id["session_token"].(string), "sha256:") || len(id["session_token"].(string)) != len("sha256:")+12 {
		t.Errorf("identity: %v", id)
	}
	if id["user_id"] != demo.UserBobID || strings.Join(toStrings(id["roles"]), ",") != "Moderator" {
		t.Errorf("identity: %v", id)
	}
	if d["permissions"] != "readonly" || d["tenant"].(map[string]any)["id"] != demo.OrgNorth {
		t.Errorf("describe: %v", d)
	}
	hidden := strings.Join(toStrings(d["hidden_classes"]), ",")
	for _, c := range []string{"VaultSecret", "_Session", "_SCHEMA"} {
		if !strings.Contains(hidden, c) {
			t.Errorf("hidden_classes lacks %s: %s", c, hidden)
		}
	}
	song := d["classes"].(map[string]any)["Song"].(map[string]any)
	if song["protected_fields"] == nil || song["clp"] == nil || song["filters"] == nil {
		t.Errorf("Song: %v", song)
	}
	// Tools: readonly ones allowed, write ones refused with the gate.
	for _, tl := range d["tools"].([]any) {
		m := tl.(map[string]any)
		switch m["name"] {
		case "count_objects":
			if m["allowed"] != true {
				t.Errorf("count_objects: %v", m)
			}
		case "create_object":
			if m["allowed"] != false || m["gate"] != "permission_tier" {
				t.Errorf("create_object: %v", m)
			}
		}
	}
	// An API key is shown as a fingerprint.
	stdout, _, _ = runCLI(t, []string{"PARSE_MCP_API_KEY=supersecretkey-0123456789", "PARSE_MCP_HTTP_ADDR=127.0.0.1:0"}, "describe")
	if strings.Contains(stdout, "supersecretkey") || !strings.Contains(stdout, `"api_key": "sha256:`) {
		t.Errorf("api key: %s", stdout)
	}
}

func TestOperatorWouldPermit(t *testing.T) {
	pol := policyFile(t, "demo")
	cases := []struct {
		env   []string
		args  []string
		allow bool
		gate  string
		kind  string
	}{
		{nil, []string{"query_class", "Song"}, true, "", ""},
		{nil, []string{"query_class", "VaultSecret"}, false, "class_gate", "hidden_class"},
		{nil, []string{"query_class", "_SCHEMA"}, false, "class_gate", "hidden_class"},
		{[]string{"PARSE_MCP_ACL_USER=" + demo.UserCarolID}, []string{"count_objects", "_Session"}, false, "class_gate", "hidden_class"},
		{nil, []string{"count_objects", "_Session"}, true, "", ""},
		{nil, []string{"create_object", "Song"}, false, "permission_tier", ""},
		{[]string{"PARSE_MCP_PERMISSIONS=write"}, []string{"create_object", "Song"}, false, "env_gate", "env_gate"},
		{[]string{"PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=1"}, []string{"update_object", "Song"}, false, "env_gate", "env_gate"},
		{[]string{"PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=yes", "PARSE_AGENT_ALLOW_RAW_CRUD=ON"}, []string{"create_object", "Song"}, true, "", ""},
		{[]string{"PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=1", "PARSE_AGENT_ALLOW_RAW_CRUD=1"}, []string{"delete_object", "Song"}, false, "permission_tier", ""},
		{[]string{"PARSE_MCP_PERMISSIONS=admin", "PARSE_AGENT_ALLOW_SCHEMA_OPS=1"}, []string{"create_class"}, false, "env_gate", "env_gate"},
		{[]string{"PARSE_MCP_PERMISSIONS=admin", "PARSE_AGENT_ALLOW_SCHEMA_OPS=1", "PARSE_AGENT_ALLOW_RAW_SCHEMA=true"}, []string{"create_class"}, true, "", ""},
		{nil, []string{"drop_database"}, false, "tool_filter", ""},
	}
	for _, tc := range cases {
		stdout, stderr, code := runCLI(t, append([]string{pol}, tc.env...), append([]string{"would-permit"}, tc.args...)...)
		v := cliJSON(t, stdout)
		if v["allowed"] != tc.allow || (tc.gate != "" && v["gate"] != tc.gate) || (tc.kind != "" && v["kind"] != tc.kind) {
			t.Errorf("%v %v: %v (stderr %s)", tc.env, tc.args, v, stderr)
		}
		if wantCode := map[bool]int{true: 0, false: 1}[tc.allow]; code != wantCode {
			t.Errorf("%v %v: exit %d", tc.env, tc.args, code)
		}
		if tc.gate == "env_gate" && !strings.Contains(v["reason"].(string), "PARSE_AGENT_ALLOW_") {
			t.Errorf("env gate reason does not name the variables: %v", v)
		}
	}
	// agent.tools narrows before the tier.
	stdout, _, _ := runCLI(t, []string{policyFile(t, "tools_except_count_objects")}, "would-permit", "count_objects", "Song")
	if v := cliJSON(t, stdout); v["gate"] != "tool_filter" || v["error_code"] != "tool_filtered" {
		t.Errorf("agent.tools: %v", v)
	}
}

func TestOperatorAudit(t *testing.T) {
	stdout, stderr, code := runCLI(t, []string{policyFile(t, "demo")}, "audit")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	a := cliJSON(t, stdout)
	undocumented := strings.Join(toStrings(a["classes_without_description"]), ",")
	if !strings.Contains(undocumented, "_Role") || strings.Contains(undocumented, "Song") || strings.Contains(undocumented, "VaultSecret") {
		t.Errorf("classes_without_description: %s", undocumented)
	}
	if _, ok := a["canonical_filters"].(map[string]any)["Song"]; !ok {
		t.Errorf("canonical_filters: %v", a["canonical_filters"])
	}
	// A policy with entries matching no _SCHEMA field is reported, not fatal.
	pol := policyFile(t, "entries_not_in_schema")
	stdout, stderr, code = runCLI(t, []string{pol}, "audit")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	a = cliJSON(t, stdout)
	entries := strings.Join(toStrings(a["entries_not_in_schema"]), "\n")
	for _, want := range []string{"classes.Song.agent_fields[3]: no field ratng", "classes.Song.large_fields[1]: no field lyrix"} {
		if !strings.Contains(entries, want) {
			t.Errorf("entries_not_in_schema lacks %q:\n%s", want, entries)
		}
	}
	// The same policy refuses to serve.
	_, stderr, code = runCLI(t, []string{pol}, "call", "list_tools")
	if code != 2 || !strings.Contains(stderr, "(and 1 more problem(s); `parse-mcp audit` lists them all)") {
		t.Errorf("serve with a bad policy: exit %d, %s", code, stderr)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
