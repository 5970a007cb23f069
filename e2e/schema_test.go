package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/tools"
)

// TestToolSchemas: every property of every inputSchema has a type (some
// model providers reject one without), and the real results of the tools,
// in each mode and format, validate against their declared outputSchema
// (JSON Schema 2020-12). It also reports the size of tools/list.
func TestToolSchemas(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_PERMISSIONS=admin", "PARSE_MCP_EMBEDDINGS_URL=fixture")...)
	r.initialize()
	list := result(t, r.rpc("l", "tools/list", `{}`))
	raw, _ := json.Marshal(list)
	t.Logf("tools/list: %d tools, %d bytes", len(list["tools"].([]any)), len(raw))

	schemas := outputSchemas(t, list)

	// An objectId to fetch.
	first := result(t, r.rpc("id", "tools/call", `{"name":"query_class","arguments":{"class_name":"Song","limit":1,"keys":["title"]}}`))
	id := rowObjects(first["structuredContent"].(map[string]any), "results")[0].(map[string]any)["objectId"].(string)

	// Every tool's Example (the registry's), then the modes and formats the
	// examples do not reach.
	var calls []string
	for _, tool := range tools.Catalog() {
		if tool.Example != "" {
			calls = append(calls, fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool.Name, strings.ReplaceAll(tool.Example, `"$objectId"`, strconv.Quote(id))))
		}
	}
	calls = append(calls,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":3,"include":["artist"]}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":1000}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":1000,"keys":["lyrics","title"]}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","where":{"title":"no such title"}}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":3,"format":"csv"}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":3,"format":"markdown"}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":1000,"format":"table"}}`,
		`{"name":"count_objects","arguments":{"class_name":"Song"}}`,
		`{"name":"count_objects","arguments":{"class_name":"Song","where":{"plays":{"$gt":1000}},"apply_canonical_filter":false}}`,
		`{"name":"export_data","arguments":{"class_name":"Song","limit":3,"format":"markdown","columns":"title,genre"}}`,
		`{"name":"export_data","arguments":{"class_name":"Song","row_cap":5,"format":"table"}}`,
		`{"name":"group_by","arguments":{"class_name":"Song","field":"genre"}}`,
		`{"name":"list_tools","arguments":{}}`,
		`{"name":"get_all_schemas","arguments":{}}`,
		`{"name":"distinct","arguments":{"class_name":"Song","field":"genre","dry_run":true}}`,
		`{"name":"group_by","arguments":{"class_name":"Song","field":"genre","dry_run":true}}`,
		`{"name":"aggregate","arguments":{"class_name":"Song","pipeline":[{"$match":{"genre":"rock"}}],"dry_run":true}}`,
		`{"name":"group_by_date","arguments":{"class_name":"Song","field":"createdAt","interval":"day","timezone":"Europe/Paris","dry_run":true}}`,
		`{"name":"atlas_text_search","arguments":{"class_name":"Song","query":"no-such-word"}}`,
		`{"name":"atlas_faceted_search","arguments":{"class_name":"Song","query":"harbor","facets":[{"field":"genre"},{"field":"releasedAt","boundaries":["2019-01-01","2022-01-01"]}]}}`,
	)
	validated, undeclared := validateResults(t, r, schemas, calls)
	for _, tool := range tools.Catalog() {
		if tool.Category != policy.CategoryMutation && validated[tool.Name] == 0 {
			t.Errorf("%s: no result validated against its outputSchema (is its Example a call that succeeds on the demo app?)", tool.Name)
		}
	}
	var gaps []string
	for n := range undeclared {
		gaps = append(gaps, n)
	}
	sort.Strings(gaps)
	t.Logf("validated: %v", validated)
	if len(gaps) > 0 {
		t.Errorf("structuredContent without an outputSchema: %v", gaps)
	}
}

// checkTyped fails for a property schema without a type.
func checkTyped(t *testing.T, tool, path string, s any) {
	t.Helper()
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			pm, _ := v.(map[string]any)
			if _, typed := pm["type"]; !typed {
				t.Errorf("%s: %s.%s has no type: %v", tool, path, k, v)
			}
			checkTyped(t, tool, path+"."+k, v)
		}
	}
	if items, ok := m["items"]; ok {
		checkTyped(t, tool, path+"[]", items)
	}
}

// outputSchemas compiles the outputSchema of every tool in a tools/list
// result (JSON Schema 2020-12), closed at the top level (every member of a
// result must be declared), checking on the way that every input property
// has a type.
func outputSchemas(t *testing.T, list map[string]any) map[string]*jsonschema.Schema {
	t.Helper()
	schemas := map[string]*jsonschema.Schema{}
	for _, x := range list["tools"].([]any) {
		tool := x.(map[string]any)
		name := tool["name"].(string)
		checkTyped(t, name, "inputSchema", tool["inputSchema"])
		if os, ok := tool["outputSchema"]; ok {
			b, _ := json.Marshal(os)
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			// Complete at the top level: a result member the schema does
			// not declare fails validation.
			if m, ok := doc.(map[string]any); ok {
				if _, set := m["additionalProperties"]; !set {
					m["additionalProperties"] = false
				}
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			if err := c.AddResource(name+".json", doc); err != nil {
				t.Fatal(err)
			}
			s, err := c.Compile(name + ".json")
			if err != nil {
				t.Fatalf("%s: outputSchema does not compile: %v", name, err)
			}
			schemas[name] = s
		}
	}

	return schemas
}

// validateResults makes each call and validates every successful result's
// structuredContent against the tool's outputSchema; it returns how many
// results of each tool were validated and which tools answered with
// structuredContent but declare no outputSchema.
func validateResults(t *testing.T, r *rawServer, schemas map[string]*jsonschema.Schema, calls []string) (map[string]int, map[string]bool) {
	t.Helper()
	validated := map[string]int{}
	undeclared := map[string]bool{}
	for i, c := range calls {
		m := r.rpc(fmt.Sprint("c", i), "tools/call", c)
		res, _ := m["result"].(map[string]any)
		var call struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal([]byte(c), &call)
		if res == nil || res["isError"] == true {
			t.Logf("%s: not a success (%v), nothing to validate", c, m)
			continue
		}
		sc, ok := res["structuredContent"]
		if !ok {
			continue
		}
		s := schemas[call.Name]
		if s == nil {
			undeclared[call.Name] = true
			continue
		}
		b, _ := json.Marshal(sc)
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err := s.Validate(inst); err != nil {
			if len(b) > 400 {
				b = b[:400]
			}
			t.Errorf("%s: structuredContent does not match the outputSchema: %v\n%s", c, err, b)
		}
		validated[call.Name]++
	}
	return validated, undeclared
}

// TestWriteToolSchemas: the results of every write tool and of call_action —
// applied, dry run, an __op update, class operations and a declared action —
// validate against their outputSchema too.
func TestWriteToolSchemas(t *testing.T) {
	uri, exists := confirmDB(t)
	r := startRaw(t, append(append([]string{}, writeEnv...), uri, policyEnv(t, actionPolicy))...)
	r.initialize()
	schemas := outputSchemas(t, result(t, r.rpc("l", "tools/list", `{}`)))
	calls := []string{
		`{"name":"create_object","arguments":{"class_name":"Memo","fields":{"title":"new","reason":"r"},"dry_run":true}}`,
		`{"name":"create_object","arguments":{"class_name":"Memo","fields":{"title":"new"}}}`,
		`{"name":"update_object","arguments":{"class_name":"Memo","object_id":"m1","fields":{"title":"t1"}}}`,
		`{"name":"update_object","arguments":{"class_name":"Memo","object_id":"m2","fields":{"title":"t2"},"dry_run":true}}`,
		`{"name":"delete_object","arguments":{"class_name":"Memo","object_id":"m3","dry_run":true}}`,
		`{"name":"delete_object","arguments":{"class_name":"Memo","object_id":"m4"}}`,
		`{"name":"create_class","arguments":{"class_name":"Scratch","fields":{"label":{"type":"String"}},"dry_run":true}}`,
		`{"name":"create_class","arguments":{"class_name":"Scratch","fields":{"label":{"type":"String"}}}}`,
		`{"name":"delete_class","arguments":{"class_name":"Scratch","dry_run":true}}`,
		`{"name":"delete_class","arguments":{"class_name":"Scratch"}}`,
		`{"name":"call_action","arguments":{"action":"archive_memo","object_id":"m5","arguments":{"reason":"done"}}}`,
		`{"name":"call_action","arguments":{"action":"add_memo","arguments":{"title":"via action"}}}`,
	}
	validated, undeclared := validateResults(t, r, schemas, calls)
	for _, tool := range tools.Catalog() {
		if tool.Category == policy.CategoryMutation && validated[tool.Name] < 1 {
			t.Errorf("%s: no result validated against its outputSchema: add a call above", tool.Name)
		}
	}
	if len(undeclared) > 0 {
		t.Errorf("structuredContent without an outputSchema: %v", undeclared)
	}
	if exists("m4") || !exists("m3") {
		t.Errorf("the applied delete did not delete m4, or the dry run deleted m3")
	}
	t.Logf("validated: %v", validated)
}
