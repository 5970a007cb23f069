package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTrustOutputsTable is SECURITY.md "Outputs: one rule" as a table,
// through the binary: every output position × {hidden reference, missing
// reference, unreadable row, protected field} × every identity kind
// (master posture, user, role, session token). Each condition plants
// values carrying a token; no position's answer may show a token its
// identity may not read — results, errors, metadata, resources, prompts,
// completions, and the audit events of the operator log (log
// notifications carry the same events' codes and names: TestLoggingSetLevel
// pins that they carry no argument value). A positive column (what each identity may see)
// keeps the table honest: a position that answered nothing would pass
// every negative cell.
func TestTrustOutputsTable(t *testing.T) {
	db, uri := writeDB(t,
		bson.D{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "n", Value: "number"},
			{Key: "ssn", Value: "string"}, {Key: "email", Value: "string"}, {Key: "note", Value: "string"}, {Key: "meta", Value: "object"},
			{Key: "ref", Value: "*Zhidden"}, {Key: "gone", Value: "*Nowhere"}, {Key: "hideme", Value: "boolean"},
			{Key: "_metadata", Value: bson.D{{Key: "class_permissions", Value: bson.D{
				{Key: "find", Value: bson.D{{Key: "*", Value: true}}}, {Key: "count", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "get", Value: bson.D{{Key: "*", Value: true}}}, {Key: "create", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "update", Value: bson.D{{Key: "*", Value: true}}}, {Key: "delete", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "addField", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "protectedFields", Value: bson.D{{Key: "*", Value: bson.A{"email"}}}},
			}}}}},
		bson.D{{Key: "_id", Value: "Doc"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "note", Value: "string"},
			{Key: "meta", Value: "object"},
			{Key: "_metadata", Value: bson.D{{Key: "fields_options", Value: bson.D{
				{Key: "note", Value: bson.D{{Key: "defaultValue", Value: "Zhidden$hidsecret03"}}},
				{Key: "meta", Value: bson.D{{Key: "defaultValue", Value: bson.D{{Key: "k", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Nowhere"}, {Key: "objectId", Value: "missecret03"}}}}}}},
			}}}}},
		bson.D{{Key: "_id", Value: "Zhidden"}, {Key: "objectId", Value: "string"}, {Key: "key", Value: "string"}},
		bson.D{{Key: "_id", Value: "_User"}, {Key: "objectId", Value: "string"}, {Key: "username", Value: "string"}},
		bson.D{{Key: "_id", Value: "_Role"}, {Key: "objectId", Value: "string"}, {Key: "name", Value: "string"}},
		bson.D{{Key: "_id", Value: "_Session"}, {Key: "objectId", Value: "string"}},
	)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	insert(t, db, "_Role", bson.D{{Key: "_id", Value: "r1"}, {Key: "name", Value: "Staff"}})
	insert(t, db, "_Join:users:_Role", bson.D{{Key: "owningId", Value: "r1"}, {Key: "relatedId", Value: "u1"}})
	insert(t, db, "_Session", bson.D{{Key: "_id", Value: "s1"}, {Key: "_session_token", Value: "r:tabletoken"}, {Key: "_p_user", Value: "_User$u1"},
		{Key: "expiresAt", Value: time.Now().Add(24 * time.Hour)}})
	insert(t, db, "Zhidden", bson.D{{Key: "_id", Value: "hidsecret01"}, {Key: "key", Value: "k"}})
	insert(t, db, "Memo",
		// m1: readable by everyone; holds every kind of reference and the
		// protected fields.
		bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "VISIBLE"}, {Key: "n", Value: 1}, {Key: "ssn", Value: "TOKSSN"}, {Key: "email", Value: "TOKEMAIL"},
			{Key: "_p_ref", Value: "Zhidden$hidsecret01"}, {Key: "_p_gone", Value: "Nowhere$missecret01"}, {Key: "note", Value: "Zhidden$hidsecret02"},
			{Key: "meta", Value: bson.D{{Key: "k", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Nowhere"}, {Key: "objectId", Value: "missecret02"}}}}},
			{Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{"*"}}},
		// m2: left out by the agent filter — unreadable for every identity.
		bson.D{{Key: "_id", Value: "m2"}, {Key: "title", Value: "TOKUNREAD"}, {Key: "hideme", Value: true}, {Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{"*"}}},
		// m3: writable but not readable by a scoped identity (_wperm yes,
		// _rperm no); master posture reads it.
		bson.D{{Key: "_id", Value: "m3"}, {Key: "title", Value: "TOKACLONLY"}, {Key: "n", Value: 3}, {Key: "_rperm", Value: bson.A{"role:Nobody"}}, {Key: "_wperm", Value: bson.A{"*"}}},
	)
	pol := policyEnv(t, `classes:
  Zhidden: {hidden: true}
  Memo:
    agent_fields: [title, n, email, note, meta, ref, gone, hideme]
  _Session: {hidden: except_master}
agent:
  filters: {Memo: {hideme: {$ne: true}}}
settings: {confirm_writes: never, rate_limit: {requests: 10000, window: 60s}}
`)
	identities := []struct {
		name string
		env  []string
		// may: tokens this identity may read (m3 and email for master).
		may []string
	}{
		{"master", nil, []string{"TOKACLONLY", "TOKEMAIL"}},
		{"user", []string{"PARSE_MCP_ACL_USER=u1"}, nil},
		{"role", []string{"PARSE_MCP_ACL_ROLE=Staff"}, nil},
		{"session", []string{"PARSE_MCP_SESSION_TOKEN=r:tabletoken"}, nil},
	}
	conditions := map[string][]string{
		"hidden reference":  {"Zhidden", "hidsecret"},
		"missing reference": {"Nowhere", "missecret"},
		"unreadable row":    {"TOKUNREAD", "TOKACLONLY"},
		"protected field":   {"TOKSSN", "TOKEMAIL"},
	}
	for _, id := range identities {
		t.Run(id.name, func(t *testing.T) {
			logFile := t.TempDir() + "/server.log"
			c := writeClient(t, uri, append([]string{pol, "PARSE_MCP_LOG_FILE=" + logFile, "PARSE_MCP_LOG_LEVEL=debug"}, id.env...)...)
			out := outputPositions(t, c)
			// Audit events: the tool_call lines of the operator log (which
			// may quote a MongoDB error elsewhere, but never in an event).
			if raw, err := os.ReadFile(logFile); err == nil {
				var events []string
				for line := range strings.SplitSeq(string(raw), "\n") {
					if strings.Contains(line, `"event":"tool_call"`) {
						events = append(events, line)
					}
				}
				if len(events) < 20 {
					t.Errorf("only %d audit events in the log", len(events))
				}
				out["audit events"] = strings.Join(events, "\n")
			}
			for _, pos := range sortedKeys(out) {
				for _, cond := range sortedKeys(conditions) {
					for _, tok := range conditions[cond] {
						if slices.Contains(id.may, tok) || strings.HasPrefix(pos, "error") && tok == "Zhidden" {
							continue // an error may echo the class the caller named
						}
						if strings.Contains(out[pos], tok) {
							t.Errorf("%s × %s: %q shown: %s", pos, cond, tok, cut(out[pos], 400))
						}
					}
				}
			}
			// The positive column: each identity sees m1 and the marker.
			for _, pos := range []string{"query_class", "get_object m1", "aggregate", "update_object m1", "export_data"} {
				if !strings.Contains(out[pos], "VISIBLE") {
					t.Errorf("%s shows nothing of the readable row: %s", pos, cut(out[pos], 300))
				}
			}
			if !strings.Contains(out["get_object m1"], `"__redacted":true`) || !strings.Contains(out["get_schema Doc"], `"__redacted":true`) {
				t.Errorf("no redaction marker: %s / %s", cut(out["get_object m1"], 300), cut(out["get_schema Doc"], 300))
			}
			for _, tok := range id.may {
				if tok == "TOKACLONLY" && !strings.Contains(out["update_object m3"], tok) {
					t.Errorf("master posture reads m3, the write result shows nothing: %s", out["update_object m3"])
				}
			}
		})
	}
}

// outputPositions runs one call per output position and returns each
// answer's whole text (results, errors, resources, prompts, completions).
func outputPositions(t *testing.T, c *client.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	tool := func(pos, name string, args map[string]any) {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil {
			out[pos] = "rpc error: " + err.Error()
			time.Sleep(50 * time.Millisecond) // its notification precedes the response
			return
		}
		b, _ := json.Marshal(res)
		out[pos] = string(b)
	}
	memo := func(extra map[string]any) map[string]any {
		m := map[string]any{"class_name": "Memo"}
		maps.Copy(m, extra)
		return m
	}
	// Reads.
	tool("query_class", "query_class", memo(nil))
	tool("query_class rest", "query_class", memo(map[string]any{"shape": "objects", "keys": []any{"title", "note", "meta", "ref", "gone"}}))
	tool("get_object m1", "get_object", memo(map[string]any{"object_id": "m1"}))
	tool("get_object m2", "get_object", memo(map[string]any{"object_id": "m2"}))
	tool("get_object m3", "get_object", memo(map[string]any{"object_id": "m3"}))
	tool("get_objects", "get_objects", memo(map[string]any{"ids": []any{"m1", "m2", "m3"}}))
	tool("get_sample_objects", "get_sample_objects", memo(nil))
	tool("export_data", "export_data", memo(map[string]any{"format": "csv"}))
	tool("export_data markdown", "export_data", memo(map[string]any{"format": "markdown"}))
	tool("aggregate", "aggregate", memo(map[string]any{"pipeline": []any{map[string]any{"$match": map[string]any{}}}}))
	tool("aggregate group", "aggregate", memo(map[string]any{"pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$note", "n": map[string]any{"$sum": 1}}}}}))
	tool("group_by", "group_by", memo(map[string]any{"field": "note"}))
	tool("distinct", "distinct", memo(map[string]any{"field": "note"}))
	tool("count_objects", "count_objects", memo(nil))
	// Where constraints answer alike for a hidden and a missing guess.
	tool("where $exists", "count_objects", memo(map[string]any{"where": map[string]any{"meta.k.objectId": map[string]any{"$exists": true}}}))
	// Schema metadata.
	tool("include hidden target", "get_object", memo(map[string]any{"object_id": "m1", "include": []any{"ref"}}))
	tool("include missing target", "get_object", memo(map[string]any{"object_id": "m1", "include": []any{"gone"}}))
	tool("get_schema Memo", "get_schema", memo(nil))
	tool("get_schema Doc", "get_schema", map[string]any{"class_name": "Doc"})
	tool("get_all_schemas", "get_all_schemas", map[string]any{})
	// Writes and dry runs.
	tool("update_object m1", "update_object", memo(map[string]any{"object_id": "m1", "fields": map[string]any{"n": map[string]any{"__op": "Increment", "amount": 0}}}))
	tool("update_object m1 dry", "update_object", memo(map[string]any{"object_id": "m1", "dry_run": true, "fields": map[string]any{"title": "VISIBLE"}}))
	tool("update_object m2", "update_object", memo(map[string]any{"object_id": "m2", "fields": map[string]any{"n": 2}}))
	tool("update_object m3", "update_object", memo(map[string]any{"object_id": "m3", "fields": map[string]any{"n": map[string]any{"__op": "Increment", "amount": 0}}}))
	tool("update_object m3 dry", "update_object", memo(map[string]any{"object_id": "m3", "dry_run": true, "fields": map[string]any{"n": 4}}))
	tool("delete_object m3 dry", "delete_object", memo(map[string]any{"object_id": "m3", "dry_run": true}))
	tool("create_object", "create_object", memo(map[string]any{"fields": map[string]any{"title": "new"}}))
	tool("create_object dry", "create_object", memo(map[string]any{"dry_run": true, "fields": map[string]any{"title": "new"}}))
	tool("create_object Doc", "create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"title": "t"}})
	// Errors: hidden and missing classes, a pointer into each.
	tool("error hidden class", "get_object", map[string]any{"class_name": "Zhidden", "object_id": "hidsecret01"})
	tool("error where pointer", "count_objects", memo(map[string]any{"where": map[string]any{"ref": "x"}}))
	// A security violation and a denial: logged with codes and names,
	// never the values (the audit events below).
	tool("violation", "count_objects", memo(map[string]any{"where": map[string]any{"$where": "hidsecret01 TOKSSN"}}))
	tool("denied", "get_schema", map[string]any{"class_name": "_Session"})
	// Resources, prompts, completions.
	for _, uri := range []string{"parse://Memo/schema", "parse://Doc/schema", "parse://Memo/count"} {
		res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		b, _ := json.Marshal(res)
		out["resource "+uri] = string(b) + fmt.Sprint(err)
	}
	if prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{}); err == nil {
		for _, p := range prompts.Prompts {
			args := map[string]string{}
			for _, a := range p.Arguments {
				if a.Required {
					args[a.Name] = "Memo"
				}
			}
			res, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: p.Name, Arguments: args}})
			b, _ := json.Marshal(res)
			out["prompt "+p.Name] = string(b) + fmt.Sprint(err)
		}
	}
	for _, partial := range []string{"", "Z", "N"} {
		res, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
			Ref:      mcp.ResourceReference{Type: "ref/resource", URI: "parse://{class}/schema"},
			Argument: mcp.CompleteArgument{Name: "class", Value: partial}}})
		b, _ := json.Marshal(res)
		out["completion "+partial] = string(b) + fmt.Sprint(err)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sortedStrings(out)
}
