package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestExamplePolicyFileValidates keeps the README's commented policy example
// honest: it must pass start-up validation against the demo schema, and the
// rules it demonstrates must hold.
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
	callErr(t, c, "count_objects", map[string]any{"class_name": "VaultSecret"}, "access_denied")
	got := callOK(t, c, "count_objects", map[string]any{"class_name": "Playlist"})
	if got["constraints"] == nil {
		t.Fatalf("constraints missing: %v", got)
	}
	if !strings.Contains(mustJSON(t, got["constraints"]), "isPublic") {
		t.Fatalf("the agent filter on Playlist was not applied: %v", got["constraints"])
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
