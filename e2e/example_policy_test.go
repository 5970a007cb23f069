package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestExamplePolicyFileValidates keeps policy.example.yaml, the commented
// policy example docs/policy.md links, honest: it must pass start-up
// validation against the demo schema, and the rules it demonstrates must hold.
func TestExamplePolicyFileValidates(t *testing.T) {
	cmd := exec.Command(binary, "audit")
	cmd.Env = env("PARSE_MCP_POLICY_FILE=../policy.example.yaml")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "configuration error") {
		t.Fatalf("policy.example.yaml does not validate: %v\n%s", err, out)
	}

	c := stdioClient(t, "PARSE_MCP_POLICY_FILE=../policy.example.yaml")
	callErr(t, c, "count_objects", map[string]any{"class_name": "AuditLog"}, "access_denied")
	callErr(t, c, "query_class", map[string]any{"class_name": "Song", "keys": []any{"mood"}}, "access_denied")
	callErr(t, c, "count_objects", map[string]any{"class_name": "VaultSecret"}, "invalid_argument") // hidden = missing
	got := callOK(t, c, "count_objects", map[string]any{"class_name": "Playlist"})
	if got["constraints"] == nil {
		t.Fatalf("constraints missing: %v", got)
	}
	if !strings.Contains(mustJSON(t, got["constraints"]), "isPublic") {
		t.Fatalf("the agent filter on Playlist was not applied: %v", got["constraints"])
	}

	// The write settings: the declared action is listed and dry-runs; raw
	// CRUD stays off without its gate; the writable set holds.
	w := stdioClient(t, "PARSE_MCP_POLICY_FILE=../policy.example.yaml", "PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true")
	list := callOK(t, w, "list_tools", nil)
	if !strings.Contains(mustJSON(t, list["actions"]), "archive_song") {
		t.Fatalf("archive_song not listed: %v", list["actions"])
	}
	song := callOK(t, w, "query_class", map[string]any{"class_name": "Song", "limit": 1, "keys": []any{"title"}})
	id := rowObjects(song, "results")[0].(map[string]any)["objectId"].(string)
	dry := callOK(t, w, "call_action", map[string]any{"action": "archive_song", "object_id": id, "arguments": map[string]any{"tags": []any{"old"}}, "dry_run": true})
	if !strings.Contains(mustJSON(t, dry["change"]), `"archived":true`) {
		t.Fatalf("archive_song dry run: %v", dry)
	}
	callErr(t, w, "create_object", map[string]any{"class_name": "Song", "fields": map[string]any{"title": "x"}}, "access_denied")
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
