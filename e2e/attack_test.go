package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// The attack suite through the binary: every case is an attempt that must
// be refused (JSON-RPC -32602 for security violations, a coded tool error
// otherwise) or redacted.

// violation sends a raw tools/call and requires -32602 with the generic
// message (the forbidden operator or field never echoed).
func violation(t *testing.T, r *rawServer, id, tool, args string, mustNotEcho ...string) {
	t.Helper()
	resp := aggRPC(r, id, tool, args)
	e := obj(resp["error"])
	if e == nil || e["code"] != float64(-32602) {
		t.Errorf("%s: want JSON-RPC -32602, got %v", id, resp)
		return
	}
	msg, _ := e["message"].(string)
	for _, s := range mustNotEcho {
		if strings.Contains(msg, s) {
			t.Errorf("%s: the message echoes %q: %s", id, s, msg)
		}
	}
}

// toolError sends a raw tools/call and requires an isError result with the
// code (and details kind).
func toolError(t *testing.T, r *rawServer, id, tool, args, code, kind string) string {
	t.Helper()
	resp := aggRPC(r, id, tool, args)
	res := obj(resp["result"])
	meta := obj(res["_meta"])
	if res == nil || res["isError"] != true || meta["parse.error_code"] != code || (kind != "" && obj(meta["parse.details"])["kind"] != kind) {
		t.Errorf("%s: want %s/%s, got %v", id, code, kind, resp)
		return ""
	}
	content := list(res["content"])
	return obj(content[0])["text"].(string)
}

func TestAttackWhereOperatorsAndFields(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	for id, where := range map[string]string{
		"where":         `{"$where":"sleep(10000)"}`,
		"where-or":      `{"$or":[{"title":"a"},{"$where":"1"}]}`,
		"function":      `{"title":{"$function":{"body":"x","args":[],"lang":"js"}}}`,
		"accumulator":   `{"title":{"$accumulator":{}}}`,
		"expr":          `{"$expr":{"$gt":["$plays",1]}}`,
		"expr-deep":     `{"$and":[{"$nor":[{"$expr":true}]}]}`,
		"regex-bomb":    `{"title":{"$regex":"^(a+)+$"}}`,
		"regex-options": `{"title":{"$regex":"a","$options":"s"}}`,
		"rperm":         `{"_rperm":{"$in":["*"]}}`,
		"nesting":       `{"meta":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":1}}}}}}}}}`,
	} {
		violation(t, r, id, "count_objects", `{"class_name":"Song","where":`+where+`}`, "$where", "$function", "$accumulator", "$expr", "_rperm", "(a+)+")
	}
	for id, where := range map[string]string{
		"hashed":     `{"_hashed_password":{"$exists":true}}`,
		"hashed-or":  `{"$or":[{"username":"alice"},{"_hashed_password":{"$regex":"^\\$2"}}]}`,
		"password":   `{"password":"x"}`,
		"authData":   `{"authData.github.id":"1"}`,
		"auth_data":  `{"_auth_data_github":{"$exists":true}}`,
		"token":      `{"_email_verify_token":{"$exists":true}}`,
		"perishable": `{"_perishable_token":{"$exists":true}}`,
	} {
		violation(t, r, id, "query_class", `{"class_name":"_User","where":`+where+`}`, "_hashed", "password", "auth", "token")
	}
	violation(t, r, "session-token", "count_objects", `{"class_name":"_Session","where":{"sessionToken":"r:abc"}}`, "sessionToken")
	// Keys and order on internal fields.
	violation(t, r, "keys-hashed", "query_class", `{"class_name":"_User","keys":["username","authData"]}`)
	violation(t, r, "order-hashed", "query_class", `{"class_name":"_User","order":"-authData"}`)
	// The same floor in pipelines.
	violation(t, r, "match-hashed", "aggregate", `{"class_name":"_User","pipeline":[{"$match":{"_hashed_password":{"$exists":true}}}]}`, "_hashed")
	violation(t, r, "project-session", "aggregate", `{"class_name":"_Session","pipeline":[{"$project":{"t":"$sessionToken"}}]}`, "sessionToken")
}

func TestAttackClassNames(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	for id, name := range map[string]string{
		"sql":       `_User'; DROP`,
		"traversal": `../etc/passwd`,
		"long":      strings.Repeat("A", 200),
		"join":      `_Join:users:_Role`,
		"dollar":    `$cmd`,
		"space":     `Song `,
		"empty":     ``,
	} {
		msg := toolError(t, r, id, "count_objects", fmt.Sprintf(`{"class_name":%q}`, name), "invalid_argument", "")
		if len(msg) > 400 {
			t.Errorf("%s: message too long (%d)", id, len(msg))
		}
	}
	for _, name := range []string{"VaultSecret", "_SCHEMA", "_Hooks", "_GlobalConfig", "_Idempotency", "_JobStatus", "_Product"} {
		toolError(t, r, "hidden-"+name, "query_class", fmt.Sprintf(`{"class_name":%q}`, name), "invalid_argument", "")
		toolError(t, r, "schema-"+name, "get_schema", fmt.Sprintf(`{"class_name":%q}`, name), "invalid_argument", "")
	}
	// "Did you mean" never suggests a hidden class.
	msg := toolError(t, r, "suggest", "count_objects", `{"class_name":"VaultSecre"}`, "invalid_argument", "")
	if strings.Contains(msg, "VaultSecret") {
		t.Errorf("suggests the hidden class: %s", msg)
	}
	// Limits on ids and keys.
	ids := make([]string, 51)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("id%02d", i))
	}
	toolError(t, r, "51-ids", "get_objects", `{"class_name":"Song","ids":[`+strings.Join(ids, ",")+`]}`, "invalid_argument", "")
	keys := make([]string, 65)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"f%d"`, i)
	}
	toolError(t, r, "65-keys", "query_class", `{"class_name":"Song","keys":[`+strings.Join(keys, ",")+`]}`, "invalid_argument", "")
}

func TestAttackHiddenClassEverywhere(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	// names:["VaultSecret"] on get_all_schemas: filtered before names apply.
	resp := aggRPC(r, "all", "get_all_schemas", `{"names":["VaultSecret"]}`)
	out := aggToolResult(t, resp)
	if out["total"] != float64(0) {
		t.Errorf("get_all_schemas names VaultSecret: %v", out)
	}
	resp = aggRPC(r, "all2", "get_all_schemas", `{}`)
	all := fmt.Sprint(aggToolResult(t, resp))
	if strings.Contains(all, "VaultSecret") || strings.Contains(all, "_SCHEMA") || strings.Contains(all, "_Join") {
		t.Errorf("get_all_schemas shows a hidden class: %s", all)
	}
	// Pointer targets into the hidden class are masked in get_schema.
	out = aggToolResult(t, aggRPC(r, "schema", "get_schema", `{"class_name":"AuditLog"}`))
	if s := fmt.Sprint(out); strings.Contains(s, "VaultSecret") {
		t.Errorf("get_schema names the hidden target: %s", s)
	}
	// include into the hidden class.
	toolError(t, r, "include", "query_class", `{"class_name":"AuditLog","include":["secret"]}`, "invalid_query", "")
	// $inQuery into the hidden class.
	toolError(t, r, "inquery", "count_objects", `{"class_name":"AuditLog","where":{"secret":{"$inQuery":{"className":"VaultSecret","where":{}}}}}`, "invalid_query", "")
	// A row whose leak column holds "VaultSecret$id", and an embedded pointer.
	for _, id := range append(append([]string{}, demo.SongLeakIDs...), demo.SongEmbeddedSecretID) {
		got := aggToolResult(t, aggRPC(r, "leak-"+id, "get_object", fmt.Sprintf(`{"class_name":"Song","object_id":%q}`, id)))
		s := fmt.Sprint(got)
		for _, secret := range append(append([]string{}, demo.SongLeakSecretIDs...), demo.SongEmbeddedSecretTarget) {
			if strings.Contains(s, secret) {
				t.Errorf("row %s leaks the hidden id %s: %s", id, secret, s)
			}
		}
		if !strings.Contains(s, "__redacted:true") {
			t.Errorf("row %s is not redacted: %s", id, s)
		}
	}
	// The AuditLog pointer into the hidden class is redacted in query rows.
	rows := fmt.Sprint(aggToolResult(t, aggRPC(r, "audit", "query_class", `{"class_name":"AuditLog","limit":20}`)))
	for _, sid := range demo.VaultSecretIDs {
		if strings.Contains(rows, sid) {
			t.Fatalf("AuditLog rows leak VaultSecret id %s", sid)
		}
	}
}

func TestAttackAllowlist(t *testing.T) {
	pol := policyFile(t, "user_allowlist")
	r := startRaw(t, pol)
	r.initialize()
	toolError(t, r, "keys", "query_class", `{"class_name":"_User","keys":["email"]}`, "access_denied", "field_not_allowed")
	msg := toolError(t, r, "where", "count_objects", `{"class_name":"_User","where":{"email":{"$regex":"alice"}}}`, "access_denied", "field_not_allowed")
	if !strings.Contains(msg, "email") {
		t.Errorf("message: %s", msg)
	}
	toolError(t, r, "where-or", "count_objects", `{"class_name":"_User","where":{"$or":[{"plan":"free"},{"email":"x"}]}}`, "access_denied", "field_not_allowed")
	toolError(t, r, "order", "query_class", `{"class_name":"_User","order":"-email"}`, "access_denied", "field_not_allowed")
	resp := aggRPC(r, "details", "query_class", `{"class_name":"_User","keys":["email"]}`)
	details := obj(obj(obj(resp["result"])["_meta"])["parse.details"])
	if details["denied_field"] != "email" || len(list(details["allowed_fields"])) != 3 {
		t.Errorf("details: %v", details)
	}
	// Rows never carry a field outside the allowlist.
	s := fmt.Sprint(aggToolResult(t, aggRPC(r, "rows", "query_class", `{"class_name":"_User"}`)))
	if strings.Contains(s, "tunebase.example") || strings.Contains(s, "emailVerified") {
		t.Errorf("rows show non-allowlisted fields: %s", s)
	}
	// get_schema lists only allowlisted fields.
	s = fmt.Sprint(aggToolResult(t, aggRPC(r, "schema", "get_schema", `{"class_name":"_User"}`)))
	if strings.Contains(s, "name:email") {
		t.Errorf("get_schema shows email: %s", s)
	}
	// Storage-form names are refused with a rewrite.
	toolError(t, r, "storage", "query_class", `{"class_name":"Song","keys":["_p_artist"]}`, "invalid_argument", "")
}

func TestAttackTenantSpoofing(t *testing.T) {
	pol := policyFile(t, "tenant_scoped")
	r := startRaw(t, pol, "PARSE_MCP_TENANT_ID="+demo.OrgNorth)
	r.initialize()
	for id, where := range map[string]string{
		"other":      `{"orgId":"evil"}`,
		"other-org":  `{"orgId":"org_south"}`,
		"ne":         `{"orgId":{"$ne":"org_north"}}`,
		"in":         `{"orgId":{"$in":["org_north","org_south"]}}`,
		"exists":     `{"orgId":{"$exists":true}}`,
		"regex":      `{"orgId":{"$regex":"org"}}`,
		"snake":      `{"org_id":"org_south"}`,
		"snake-same": `{"org_id":"org_north"}`,
		"camel":      `{"OrgId":"org_south"}`,
		"upper":      `{"ORGID":"org_south"}`,
		"or":         `{"$or":[{"genre":"rock"},{"orgId":"org_south"}]}`,
		"and":        `{"$and":[{"orgId":{"$ne":"x"}}]}`,
		"dotted":     `{"orgId.x":"org_north"}`,
	} {
		toolError(t, r, "spoof-"+id, "count_objects", `{"class_name":"Song","where":`+where+`}`, "access_denied", "tenant_scope")
	}
	// Another tenant's row by id answers exactly as an id that does not
	// exist (a refusal would confirm that the id exists elsewhere), in
	// every by-id position: get_object, get_objects, a where of exactly
	// {objectId}, and count_objects.
	southSong := firstSongOfOrg(t, demo.OrgSouth)
	northSong := firstSongOfOrg(t, demo.OrgNorth)
	const missingID = "zZzZzZzZzZ"
	for i, probe := range []struct{ tool, args string }{
		{"get_object", `{"class_name":"Song","object_id":"ID"}`},
		{"get_objects", `{"class_name":"Song","ids":["` + northSong + `","ID"],"keys":["title"]}`},
		{"query_class", `{"class_name":"Song","where":{"objectId":"ID"}}`},
		{"query_class", `{"class_name":"Song","where":{"objectId":{"$in":["ID"]}}}`},
		{"count_objects", `{"class_name":"Song","where":{"objectId":"ID"}}`},
	} {
		other := answer(aggRPC(r, fmt.Sprintf("cross-%d", i), probe.tool, strings.Replace(probe.args, "ID", southSong, 1)))
		missing := answer(aggRPC(r, fmt.Sprintf("missing-%d", i), probe.tool, strings.Replace(probe.args, "ID", missingID, 1)))
		if strings.ReplaceAll(other, southSong, "ID") != strings.ReplaceAll(missing, missingID, "ID") {
			t.Errorf("%s: another tenant's id answers differently from a missing one:\n %s\n %s", probe.tool, cut(other, 300), cut(missing, 300))
		}
		if strings.Contains(other, "tenant") {
			t.Errorf("%s: the answer mentions the tenant: %s", probe.tool, cut(other, 300))
		}
	}
	got := aggToolResult(t, aggRPC(r, "own-get", "get_object", fmt.Sprintf(`{"class_name":"Song","object_id":%q}`, northSong)))
	if obj(got["object"])["objectId"] != northSong {
		t.Errorf("own tenant's row: %v", got)
	}
	// Joins are refused while the tenant scope is active.
	toolError(t, r, "include", "query_class", `{"class_name":"Song","include":["artist"]}`, "access_denied", "tenant_join_denied")

	// A tenant-less agent cannot read tenant-scoped classes at all.
	r2 := startRaw(t, pol)
	r2.initialize()
	toolError(t, r2, "no-tenant", "count_objects", `{"class_name":"Song"}`, "access_denied", "tenant_required")
	toolError(t, r2, "no-tenant-value", "query_class", `{"class_name":"Song","where":{"orgId":"org_north"}}`, "access_denied", "tenant_required")
	toolError(t, r2, "no-tenant-get", "get_object", fmt.Sprintf(`{"class_name":"Song","object_id":%q}`, northSong), "access_denied", "tenant_required")
	aggToolResult(t, aggRPC(r2, "unscoped", "count_objects", `{"class_name":"Artist"}`))
}

func firstSongOfOrg(t *testing.T, org string) string {
	t.Helper()
	c := stdioClient(t, policyFile(t, "demo"))
	out := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "where": map[string]any{"orgId": org}, "keys": []any{"orgId"}, "limit": 1})
	rows := rowObjects(out, "results")
	if len(rows) == 0 {
		t.Fatalf("no song of %s", org)
	}
	return rows[0].(map[string]any)["objectId"].(string)
}
