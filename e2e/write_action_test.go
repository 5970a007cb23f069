package e2e

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Declared actions (call_action) through the binary.

const actionPolicy = `classes:
  Vault: {hidden: true}
actions:
  archive_memo:
    description: "Archive a memo with a reason"
    class: Memo
    params:
      type: object
      properties:
        reason: {type: string, maxLength: 40}
      required: [reason]
    keys: [reason]
    fixed: {archived: true}
  add_memo:
    description: "File a new memo"
    class: Memo
    operation: create
    params:
      type: object
      properties:
        title: {type: string}
    keys: [title]
  purge_memo:
    description: "Admin-only action"
    class: Memo
    tier: admin
    fixed: {purged: true}
  notify:
    description: "Cloud function"
    cloud_function: notifyOwner
    params: {type: object, properties: {msg: {type: string}}}
settings: {confirm_writes: never, direct_schema_changes: true}
`

func TestWriteDeclaredActions(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	if _, err := db.Collection("Memo").InsertOne(context.Background(), bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	// Actions need only the broad write gate of their tier, not RAW_CRUD.
	c := stdioClient(t, uri, policyEnv(t, actionPolicy), "PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true")

	list := callOK(t, c, "list_tools", nil)
	var names []string
	for _, a := range list["actions"].([]any) {
		names = append(names, a.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "add_memo,archive_memo,notify" {
		t.Fatalf("list_tools actions: %v (an admin action or one on a hidden class is listed, or one is missing)", names)
	}
	for _, x := range list["tools"].([]any) {
		if n := x.(map[string]any)["name"]; n == "update_object" || n == "create_object" {
			t.Fatalf("raw CRUD listed without PARSE_AGENT_ALLOW_RAW_CRUD")
		}
	}

	// dry_run, then the write: permitted keys and fixed values only.
	out := callOK(t, c, "call_action", map[string]any{"action": "archive_memo", "object_id": "m1", "arguments": map[string]any{"reason": "done"}, "dry_run": true})
	if out["dry_run"] != true || out["action"] != "archive_memo" {
		t.Fatalf("dry run: %v", out)
	}
	if doc := stored(t, db, "Memo", "m1"); doc["archived"] != nil {
		t.Fatalf("dry run wrote: %v", doc)
	}
	callOK(t, c, "call_action", map[string]any{"action": "archive_memo", "object_id": "m1", "arguments": map[string]any{"reason": "done"}})
	if doc := stored(t, db, "Memo", "m1"); doc["archived"] != true || doc["reason"] != "done" {
		t.Fatalf("after archive_memo: %v", doc)
	}
	out = callOK(t, c, "call_action", map[string]any{"action": "add_memo", "arguments": map[string]any{"title": "new"}})
	if doc := stored(t, db, "Memo", out["object_id"].(string)); doc["title"] != "new" {
		t.Fatalf("after add_memo: %v", doc)
	}

	// Refusals: params schema, extra arguments, unknown, tier, hidden class, no bridge.
	callErr(t, c, "call_action", map[string]any{"action": "archive_memo", "object_id": "m1", "arguments": map[string]any{}}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "archive_memo", "object_id": "m1", "arguments": map[string]any{"reason": strings.Repeat("x", 50)}}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "archive_memo", "object_id": "m1", "arguments": map[string]any{"reason": "a", "title": "overwrite"}}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "archive_memo", "arguments": map[string]any{"reason": "a"}}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "nope"}, "invalid_argument")
	callErr(t, c, "call_action", map[string]any{"action": "purge_memo", "object_id": "m1"}, "permission_denied")
	msg := callErr(t, c, "call_action", map[string]any{"action": "notify", "arguments": map[string]any{"msg": "hi"}}, "invalid_argument")
	if !strings.Contains(msg, "PARSE_MCP_SERVER_URL") {
		t.Fatalf("cloud function without the bridge: %s", msg)
	}
	if doc := stored(t, db, "Memo", "m1"); doc["title"] != "x" || doc["purged"] != nil {
		t.Fatalf("a refused action wrote: %v", doc)
	}

	// describe and audit show the write surface.
	for _, cmd := range []string{"describe", "audit"} {
		out, stderr, code := runCLI(t, []string{uri, policyEnv(t, actionPolicy), "PARSE_MCP_PERMISSIONS=write", "PARSE_AGENT_ALLOW_WRITE_TOOLS=true"}, cmd)
		if code != 0 || !strings.Contains(out, `"confirm_writes"`) || !strings.Contains(out, `"archive_memo"`) || !strings.Contains(out, "Cloud Code triggers do not run") {
			t.Errorf("%s does not show the write surface (exit %d): %s %s", cmd, code, out, stderr)
		}
	}
}

func TestWriteActionPolicyValidation(t *testing.T) {
	_, uri := writeDB(t, attackSchemas()...)
	for _, bad := range []string{
		"actions:\n  x:\n    class: Memo\n",                                           // sets nothing
		"actions:\n  x:\n    class: _User\n    fixed: {a: 1}\n",                       // system class
		"actions:\n  x:\n    class: Memo\n    keys: [a]\n",                            // key not in params
		"actions:\n  x:\n    class: Memo\n    cloud_function: f\n    fixed: {a: 1}\n", // both
		"actions:\n  Bad-Name:\n    class: Memo\n    fixed: {a: 1}\n",
		"actions:\n  x:\n    class: Memo\n    fixed: {a: 1}\n    tier: readonly\n",
		"actions:\n  x:\n    class: Memo\n    fixed: {a: 1}\n    params: {type: object, properties: {a: {type: nosuch}}}\n",
		"actions:\n  x:\n    class: Nope\n    fixed: {a: 1}\n",                                     // no such class
		"actions:\n  x:\n    class: Memo\n    fixed: {_rperm: [\"*\"]}\n",                          // internal field
		"classes:\n  Memo:\n    writable_fields: [nosuch]\n",                                       // not a field
		"classes:\n  Vault: {hidden: true}\nactions:\n  x:\n    class: Vault\n    fixed: {a: 1}\n", // hidden class
	} {
		_, stderr, code := runCLI(t, []string{uri, policyEnv(t, bad)})
		if code == 0 || !strings.Contains(stderr, "actions") && !strings.Contains(stderr, "writable_fields") {
			t.Errorf("policy accepted (exit %d):\n%s\n%s", code, bad, stderr)
		}
	}
}
