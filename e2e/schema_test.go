package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestToolSchemas: every property of every inputSchema has a type (some
// model providers reject one without), and the real results of the tools,
// in each mode and format, validate against their declared outputSchema
// (JSON Schema 2020-12). It also reports the size of tools/list.
func TestToolSchemas(t *testing.T) {
	r := startRaw(t, scratchEnv(t, "PARSE_MCP_PERMISSIONS=admin")...)
	r.initialize()
	list := result(t, r.rpc("l", "tools/list", `{}`))
	raw, _ := json.Marshal(list)
	t.Logf("tools/list: %d tools, %d bytes", len(list["tools"].([]any)), len(raw))

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

	// An objectId to fetch.
	first := result(t, r.rpc("id", "tools/call", `{"name":"query_class","arguments":{"class_name":"Song","limit":1,"keys":["title"]}}`))
	id := first["structuredContent"].(map[string]any)["results"].([]any)[0].(map[string]any)["objectId"].(string)

	calls := []string{
		`{"name":"query_class","arguments":{"class_name":"Song","limit":3}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":3,"include":["artist"]}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":1000}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":1000,"keys":["lyrics","title"]}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","where":{"title":"no such title"}}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":3,"format":"csv"}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":3,"format":"markdown"}}`,
		`{"name":"query_class","arguments":{"class_name":"Song","limit":1000,"format":"table"}}`,
		`{"name":"count_objects","arguments":{"class_name":"Song"}}`,
		`{"name":"count_objects","arguments":{"class_name":"Song","where":{"plays":{"$gt":1000}},"apply_canonical_filter":false}}`,
		fmt.Sprintf(`{"name":"get_object","arguments":{"class_name":"Song","object_id":%q,"include":["artist"]}}`, id),
		fmt.Sprintf(`{"name":"get_objects","arguments":{"class_name":"Song","ids":[%q,"missingId"]}}`, id),
		`{"name":"get_sample_objects","arguments":{"class_name":"Song","limit":3}}`,
		`{"name":"export_data","arguments":{"class_name":"Song","limit":3}}`,
		`{"name":"export_data","arguments":{"class_name":"Song","limit":3,"format":"markdown","columns":"title,genre"}}`,
		`{"name":"export_data","arguments":{"class_name":"Song","row_cap":5,"format":"table"}}`,
		`{"name":"distinct","arguments":{"class_name":"Song","field":"genre"}}`,
		`{"name":"group_by","arguments":{"class_name":"Song","field":"genre"}}`,
		`{"name":"group_by","arguments":{"class_name":"Song","field":"genre","operation":"sum","value_field":"plays"}}`,
		`{"name":"list_tools","arguments":{}}`,
		`{"name":"list_tools","arguments":{"category":"query"}}`,
		`{"name":"get_schema","arguments":{"class_name":"Song"}}`,
		`{"name":"get_all_schemas","arguments":{}}`,
		`{"name":"group_by_date","arguments":{"class_name":"Song","field":"createdAt","interval":"month"}}`,
		`{"name":"aggregate","arguments":{"class_name":"Song","pipeline":[{"$group":{"_id":"$genre","n":{"$sum":1}}}]}}`,
		`{"name":"explain_query","arguments":{"class_name":"Song","where":{"genre":"rock"}}}`,
	}
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
	for _, name := range []string{"query_class", "count_objects", "get_object", "get_objects", "get_sample_objects", "export_data", "distinct", "group_by", "group_by_date", "aggregate", "explain_query", "get_all_schemas", "get_schema", "list_tools"} {
		if validated[name] == 0 {
			t.Errorf("%s: no result validated against its outputSchema", name)
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
