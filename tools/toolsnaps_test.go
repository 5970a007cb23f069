package tools

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/policy"
)

// toolsnapsDir holds one golden JSON file per tool: its MCP definition (name,
// description, input and output schema, annotations, _meta) and the policy
// facts of its definition. TestToolSnapshots fails on any difference;
// UPDATE_TOOLSNAPS=1 rewrites the files after an intended change (see
// ARCHITECTURE.md).
const toolsnapsDir = "testdata/toolsnaps"

type toolSnapshot struct {
	Definition json.RawMessage `json:"definition"`
	Policy     struct {
		Category        policy.Category `json:"category"`
		Tier            string          `json:"tier"`
		Operation       string          `json:"operation"`
		Gates           []string        `json:"env_gates"`
		Timeout         string          `json:"timeout"`
		UntrustedOutput bool            `json:"untrusted_output"`
	} `json:"policy"`
}

func snapshotOf(t *testing.T, tool *Tool) []byte {
	t.Helper()
	def, err := json.Marshal(tool.MCPTool(nil))
	if err != nil {
		t.Fatalf("%s: %v", tool.Name, err)
	}
	var s toolSnapshot
	s.Definition = def
	s.Policy.Category = tool.Category
	s.Policy.Tier = tool.Tier
	s.Policy.Operation = policy.Operation(tool.ToolInfo)
	s.Policy.Gates = policy.Gates(tool.ToolInfo)
	if s.Policy.Gates == nil {
		s.Policy.Gates = []string{}
	}
	s.Policy.Timeout = tool.Timeout.String()
	s.Policy.UntrustedOutput = policy.MarksUntrusted(tool.ToolInfo)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatalf("%s: %v", tool.Name, err)
	}
	return append(b, '\n')
}

func TestToolSnapshots(t *testing.T) {
	update := os.Getenv("UPDATE_TOOLSNAPS") == "1"
	seen := map[string]bool{}
	for _, tool := range Catalog() {
		seen[tool.Name+".json"] = true
		path := filepath.Join(toolsnapsDir, tool.Name+".json")
		got := snapshotOf(t, tool)
		if update {
			if err := os.MkdirAll(toolsnapsDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s has no snapshot (%v): run UPDATE_TOOLSNAPS=1 go test ./tools/ -run TestToolSnapshots and commit %s", tool.Name, err, path)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s; if the change is intended, run UPDATE_TOOLSNAPS=1 go test ./tools/ -run TestToolSnapshots and commit the file.\ngot:\n%s", tool.Name, path, got)
		}
	}
	entries, err := os.ReadDir(toolsnapsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !seen[e.Name()] {
			if update {
				_ = os.Remove(filepath.Join(toolsnapsDir, e.Name()))
				continue
			}
			t.Errorf("%s/%s belongs to no catalog tool: delete it (UPDATE_TOOLSNAPS=1 does)", toolsnapsDir, e.Name())
		}
	}
}

// TestToolDefinitionsComplete: every catalog tool declares the facts the
// policy reads instead of relying on a default, in a known category, under
// a unique name.
func TestToolDefinitionsComplete(t *testing.T) {
	names := map[string]bool{}
	for _, tool := range Catalog() {
		if names[tool.Name] {
			t.Errorf("tool %s is defined twice", tool.Name)
		}
		names[tool.Name] = true
		if _, ok := policy.Categories[tool.Category]; !ok {
			t.Errorf("%s: category %q is not one of policy.Categories", tool.Name, tool.Category)
		}
		if tool.Operation == "" {
			t.Errorf("%s: no Operation declared (use policy.OpNone for a tool that reads no objects)", tool.Name)
		}
		if tool.Tier == "" || tool.Timeout <= 0 || tool.Description == "" || tool.Handler == nil {
			t.Errorf("%s: tier, timeout, description and handler are required", tool.Name)
		}
		var schema map[string]any
		if err := json.Unmarshal([]byte(tool.Handler.InputSchema()), &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: the input schema is not a JSON object schema: %v", tool.Name, err)
		}
		for _, p := range multiTyped(schema, "") {
			t.Errorf("%s: %s has a union type; clients that map tool schemas to a single-type dialect reject it", tool.Name, p)
		}
		if tool.OutputSchema != "" && !json.Valid([]byte(tool.OutputSchema)) {
			t.Errorf("%s: the output schema is not valid JSON", tool.Name)
		}
	}
}

// multiTyped lists the paths in an input schema whose "type" is a list.
func multiTyped(schema map[string]any, path string) []string {
	var out []string
	if _, ok := schema["type"].([]any); ok {
		out = append(out, strings.TrimPrefix(path, "."))
	}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		if sub, ok := p.(map[string]any); ok {
			out = append(out, multiTyped(sub, path+"."+name)...)
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		out = append(out, multiTyped(items, path+"[]")...)
	}
	return out
}
