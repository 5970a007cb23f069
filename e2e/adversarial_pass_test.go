package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// An independent adversarial pass (SECURITY.md "Outputs: one rule"): each test is one attack a prompt-injected caller would try; it
// fails on the code before its fix. Hidden and missing classes must answer
// byte for byte alike (modulo the name the caller typed).

// advAnswer runs a tool and returns its whole answer (text and error flag),
// with the class name the caller typed masked.
func advAnswer(t *testing.T, call func(string, map[string]any) string, tool string, args map[string]any, name string) string {
	t.Helper()
	return strings.ReplaceAll(call(tool, args), name, "<C>")
}

// TestAdvConfirmationLedgerUnreachable: parse-mcp's own collections — the
// confirmation ledger (the HMAC secret of 2026-07-28 confirmation tokens)
// and the oauth grants — live in the app's database under names that are
// valid class names. No tool may read them, write them, or create a class
// of that name, and every answer about them is the answer about a missing
// class: knowing the secret forges a user's "yes" for any write, and the
// grants map tokens to Parse sessions.
func TestAdvConfirmationLedgerUnreachable(t *testing.T) {
	for _, internal := range []string{parsedb.ConfirmationCollection, parsedb.OAuthCollection} {
		t.Run(internal, func(t *testing.T) { advInternalUnreachable(t, internal) })
	}
}

func advInternalUnreachable(t *testing.T, internal string) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, internal, bson.D{{Key: "_id", Value: "signing-secret"}, {Key: "secret", Value: "deadbeefcafe0123456789"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	run := func(tool string, args map[string]any) string {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
		if err != nil {
			return "protocol error: " + err.Error()
		}
		return fmt.Sprint(res.IsError, " ", text(res))
	}
	answers := map[string][]string{}
	for _, cls := range []string{internal, "_parse_mcp_nothing"} {
		for _, a := range []struct {
			tool string
			args map[string]any
		}{
			{"query_class", map[string]any{"class_name": cls}},
			{"count_objects", map[string]any{"class_name": cls}},
			{"get_object", map[string]any{"class_name": cls, "object_id": "signing-secret"}},
			{"get_schema", map[string]any{"class_name": cls}},
			{"aggregate", map[string]any{"class_name": cls, "pipeline": []any{map[string]any{"$match": map[string]any{}}}}},
			{"aggregate", map[string]any{"class_name": "Memo", "pipeline": []any{map[string]any{"$unionWith": map[string]any{"coll": cls}}}}},
			{"aggregate", map[string]any{"class_name": "Memo", "pipeline": []any{map[string]any{"$lookup": map[string]any{"from": cls, "as": "j", "pipeline": []any{}}}}}},
			{"update_object", map[string]any{"class_name": cls, "object_id": "signing-secret", "fields": map[string]any{"secret": "00"}}},
			{"delete_object", map[string]any{"class_name": cls, "object_id": "signing-secret"}},
			{"create_object", map[string]any{"class_name": cls, "fields": map[string]any{"secret": "00"}}},
			{"create_class", map[string]any{"class_name": cls, "fields": map[string]any{"secret": map[string]any{"type": "String"}}}},
		} {
			ans := advAnswer(t, run, a.tool, a.args, cls)
			if strings.Contains(ans, "deadbeef") {
				t.Errorf("%s %v shows the confirmation secret: %s", a.tool, a.args, ans)
			}
			answers[cls] = append(answers[cls], a.tool+": "+ans)
		}
	}
	h, m := answers[internal], answers["_parse_mcp_nothing"]
	t.Logf("answers: %s", strings.Join(h, "\n"))
	for i := range h {
		if h[i] != m[i] {
			t.Errorf("the ledger answers apart from a missing class:\n ledger  %s\n missing %s", h[i], m[i])
		}
	}
	var doc bson.M
	if err := db.Collection(internal).FindOne(context.Background(), bson.D{{Key: "_id", Value: "signing-secret"}}).Decode(&doc); err != nil || doc["secret"] != "deadbeefcafe0123456789" {
		t.Errorf("the ledger was changed: %v %v", doc, err)
	}
	if n := count(t, db, "_SCHEMA"); n != int64(len(writeOutSchemas())) {
		t.Errorf("a class was created over an internal collection (%d _SCHEMA documents)", n)
	}
}

// TestAdvObjectKeyNamesClass: an object key in the reference shape
// ("Vault$abcdefghij") is redacted on output when the class is hidden; if a
// write took it and stored it, reading it back would tell a hidden class
// from a missing one. Writing it must answer alike for hidden and missing
// classes, and what is read back must too.
func TestAdvObjectKeyNamesClass(t *testing.T) {
	_, uri := writeDB(t, writeOutSchemas()...)
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	answers := map[string]string{}
	for _, cls := range []string{"Vault", "Nowhere", "Memo"} {
		key := cls + "$abcdefghij"
		res := call(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"meta": map[string]any{key: true, "list": []any{map[string]any{key: 1}}}}})
		ans := fmt.Sprint(res.IsError, " ", text(res))
		if !res.IsError {
			var out map[string]any
			_ = json.Unmarshal([]byte(text(res)), &out)
			got := call(t, c, "get_object", map[string]any{"class_name": "Memo", "object_id": out["object_id"], "shape": "rest", "keys": []any{"meta"}})
			ans += " / " + text(got)
			if oid, _ := out["object_id"].(string); oid != "" {
				ans = strings.ReplaceAll(ans, oid, "<id>")
			}
		}
		answers[cls] = strings.ReplaceAll(ans, cls, "<C>")
	}
	t.Logf("answers: %v", answers)
	if answers["Vault"] != answers["Nowhere"] {
		t.Errorf("object keys tell a hidden class from a missing one:\n hidden  %s\n missing %s", answers["Vault"], answers["Nowhere"])
	}
}

// TestAdvPointerTargetsOfNewFields: create_class, and a create that adds a
// field, naming a hidden or a missing target class answer alike, and so
// does the schema read back.
func TestAdvPointerTargetsOfNewFields(t *testing.T) {
	_, uri := writeDB(t, writeOutSchemas()...)
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	answers := map[string]string{}
	for i, cls := range []string{"Vault", "Nowhere"} {
		name := fmt.Sprintf("Fresh%d", i)
		var parts []string
		for _, typ := range []string{"Pointer", "Relation"} {
			res := call(t, c, "create_class", map[string]any{"class_name": name + typ, "fields": map[string]any{"p": map[string]any{"type": typ, "targetClass": cls}}})
			parts = append(parts, fmt.Sprint(res.IsError, " ", strings.ReplaceAll(text(res), name, "<N>")))
			res = call(t, c, "get_schema", map[string]any{"class_name": name + typ})
			parts = append(parts, fmt.Sprint(res.IsError, " ", strings.ReplaceAll(text(res), name, "<N>")))
		}
		res := call(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{fmt.Sprintf("np%d", i): map[string]any{"__type": "Pointer", "className": cls, "objectId": "abcdefghij"}}})
		parts = append(parts, fmt.Sprint(res.IsError, " ", strings.ReplaceAll(text(res), fmt.Sprintf("np%d", i), "<F>")))
		res = call(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{fmt.Sprintf("nr%d", i): map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": cls, "objectId": "abcdefghij"}}}}})
		parts = append(parts, fmt.Sprint(res.IsError, " ", strings.ReplaceAll(text(res), fmt.Sprintf("nr%d", i), "<F>")))
		answers[cls] = strings.ReplaceAll(strings.Join(parts, "\n"), cls, "<C>")
	}
	t.Logf("answers: %v", answers)
	if answers["Vault"] != answers["Nowhere"] {
		t.Errorf("new fields' targets tell a hidden class from a missing one:\n hidden  %s\n missing %s", answers["Vault"], answers["Nowhere"])
	}
}

// TestAdvSortPositionOfHiddenReference: a String field holding a hidden
// reference ("Vault$<id>") is shown as the marker, but if the sort places the
// row by its stored string, rows of known text around it bisect the id.
func TestAdvSortPositionOfHiddenReference(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "hid"}, {Key: "title", Value: "Vault$m1secretid"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	for _, s := range []string{"Vault$a~", "Vault$g~", "Vault$t~", "Vault$z~"} {
		callOK(t, c, "create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"title": s}})
	}
	position := func(rows []any) int {
		for i, r := range rows {
			if obj(r)["objectId"] == "hid" {
				return i
			}
		}
		return -1
	}
	for _, o := range []string{"title", "-title"} {
		out := callOK(t, c, "query_class", map[string]any{"class_name": "Memo", "order": o, "keys": []any{"title"}, "shape": "rest"})
		rows := rowObjects(out, "results")
		t.Logf("order %s: %s", o, toJSON(t, rows))
		if p := position(rows); p > 0 && p < len(rows)-1 {
			t.Errorf("order %s places the hidden reference among the text by its id: %s", o, toJSON(t, rows))
		}
	}
	dir := map[string]any{"title": 1}
	res := call(t, c, "aggregate", map[string]any{"class_name": "Memo", "pipeline": []any{map[string]any{"$sort": dir}, map[string]any{"$project": map[string]any{"title": 1}}}})
	t.Logf("aggregate: %s", text(res))
	if !res.IsError {
		var out map[string]any
		_ = json.Unmarshal([]byte(text(res)), &out)
		rows := rowObjects(out, "results")
		if p := position(rows); p > 0 && p < len(rows)-1 {
			t.Errorf("aggregate $sort places the hidden reference among the text by its id: %s", text(res))
		}
	}
}

// TestAdvPointerFieldTargetInErrors: a Pointer field whose target class is
// hidden (Doc.sec → Vault) and one whose target is missing (Doc.gone →
// Nowhere) answer alike to every mismatching write and query: a type
// error in Parse's wording ("expected Pointer<Vault>") names the target.
func TestAdvPointerFieldTargetInErrors(t *testing.T) {
	schemas := writeOutSchemas()
	schemas[1] = append(schemas[1], bson.E{Key: "qsecq", Value: "*Vault"}, bson.E{Key: "qgoneq", Value: "*Nowhere"}, bson.E{Key: "qrelhq", Value: "relation<Vault>"}, bson.E{Key: "qrelmq", Value: "relation<Nowhere>"})
	db, uri := writeDB(t, schemas...)
	insert(t, db, "Doc", bson.D{{Key: "_id", Value: "d1"}, {Key: "title", Value: "x"}})
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}})
	for _, ident := range [][]string{nil, {"PARSE_MCP_ACL_USER=u1"}} {
		c := writeClient(t, uri, append([]string{policyEnv(t, outputPolicy)}, ident...)...)
		run := func(tool string, args map[string]any) string {
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
			if err != nil {
				return "protocol error: " + err.Error()
			}
			return fmt.Sprint(res.IsError, " ", text(res))
		}
		answers := map[string][]string{}
		for _, f := range [][2]string{{"qsecq", "Vault"}, {"qgoneq", "Nowhere"}, {"qrelhq", "Vault"}, {"qrelmq", "Nowhere"}} {
			field, cls := f[0], f[1]
			memo := map[string]any{"__type": "Pointer", "className": "Memo", "objectId": "m1"}
			for _, a := range []struct {
				tool string
				args map[string]any
			}{
				{"create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"title": "t", "ref": nil, "note": nil, "meta": nil, field: memo}}},
				{"update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "fields": map[string]any{field: memo}}},
				{"update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "fields": map[string]any{field: "text"}}},
				{"update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "fields": map[string]any{field: map[string]any{"__op": "AddRelation", "objects": []any{memo}}}}},
				{"update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "fields": map[string]any{field: map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": cls, "objectId": "abcdefghij"}}}}}},
				{"update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "dry_run": true, "fields": map[string]any{field: map[string]any{"__op": "Increment", "amount": 1}}}},
				{"count_objects", map[string]any{"class_name": "Doc", "where": map[string]any{field: memo}}},
				{"count_objects", map[string]any{"class_name": "Doc", "where": map[string]any{field: map[string]any{"$inQuery": map[string]any{"className": "Memo", "where": map[string]any{}}}}}},
				{"count_objects", map[string]any{"class_name": "Doc", "where": map[string]any{field: map[string]any{"$exists": true}}}},
				{"count_objects", map[string]any{"class_name": "Doc", "where": map[string]any{field: "text"}}},
				{"query_class", map[string]any{"class_name": "Doc", "include": []any{field}, "keys": []any{field + ".title"}}},
				{"query_class", map[string]any{"class_name": "Doc", "where": map[string]any{"$relatedTo": map[string]any{"object": map[string]any{"__type": "Pointer", "className": cls, "objectId": "abcdefghij"}, "key": "x"}}}},
				{"distinct", map[string]any{"class_name": "Doc", "field": field}},
				{"group_by", map[string]any{"class_name": "Doc", "field": field}},
			} {
				ans := strings.ReplaceAll(strings.ReplaceAll(run(a.tool, a.args), field, "<F>"), cls, "<C>")
				answers[field] = append(answers[field], a.tool+": "+ans)
			}
		}
		for _, pair := range [][2]string{{"qsecq", "qgoneq"}, {"qrelhq", "qrelmq"}} {
			h, m := answers[pair[0]], answers[pair[1]]
			for i := range h {
				hh := strings.ReplaceAll(strings.ReplaceAll(h[i], pair[0], "<F>"), "Vault", "<C>")
				mm := strings.ReplaceAll(strings.ReplaceAll(m[i], pair[1], "<F>"), "Nowhere", "<C>")
				if hh != mm {
					t.Errorf("%v: a field's hidden target answers apart from a missing one:\n hidden  %s\n missing %s", ident, hh, mm)
				}
			}
		}
	}
}

// TestAdvFieldRulesOnWriteAnswers: a field the identity may not read — a
// protected field (Memo CLP protectedFields {"*": [email]}) for a user, a
// field outside agent_fields for anyone — is in no write answer: not in
// the object of a create, update or delete (real or dry run), not in the
// dry run's change as a default the app set, not in get_schema's
// defaults.
func TestAdvFieldRulesOnWriteAnswers(t *testing.T) {
	schemas := writeOutSchemas()
	schemas[0] = append(schemas[0], bson.E{Key: "secret", Value: "string"}, bson.E{Key: "_metadata", Value: bson.D{
		{Key: "fields_options", Value: bson.D{
			{Key: "email", Value: bson.D{{Key: "defaultValue", Value: "DEFAULT-EMAIL-SECRET"}}},
			{Key: "secret", Value: bson.D{{Key: "defaultValue", Value: "DEFAULT-FIELD-SECRET"}}},
		}},
		{Key: "class_permissions", Value: bson.D{
			{Key: "get", Value: bson.D{{Key: "*", Value: true}}}, {Key: "find", Value: bson.D{{Key: "*", Value: true}}},
			{Key: "count", Value: bson.D{{Key: "*", Value: true}}}, {Key: "create", Value: bson.D{{Key: "*", Value: true}}},
			{Key: "update", Value: bson.D{{Key: "*", Value: true}}}, {Key: "delete", Value: bson.D{{Key: "*", Value: true}}},
			{Key: "addField", Value: bson.D{{Key: "*", Value: true}}},
			{Key: "protectedFields", Value: bson.D{{Key: "*", Value: bson.A{"email"}}}},
		}},
	}})
	db, uri := writeDB(t, schemas...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}, {Key: "email", Value: "STORED-EMAIL-SECRET"}, {Key: "secret", Value: "STORED-FIELD-SECRET"}})
	policy := "classes:\n  Vault: {hidden: true}\n  Memo: {agent_fields: [title, n, email], writable_fields: [title, n]}\nsettings: {confirm_writes: never}\n"
	for _, ident := range [][]string{nil, {"PARSE_MCP_ACL_USER=u1"}} {
		c := writeClient(t, uri, append([]string{policyEnv(t, policy)}, ident...)...)
		leaks := []string{"FIELD-SECRET"}
		if ident != nil {
			leaks = append(leaks, "EMAIL-SECRET")
		}
		for _, a := range []struct {
			tool string
			args map[string]any
		}{
			{"get_schema", map[string]any{"class_name": "Memo"}},
			{"create_object", map[string]any{"class_name": "Memo", "dry_run": true, "fields": map[string]any{"title": "t"}}},
			{"create_object", map[string]any{"class_name": "Memo", "fields": map[string]any{"title": "t"}}},
			{"update_object", map[string]any{"class_name": "Memo", "object_id": "m1", "dry_run": true, "fields": map[string]any{"title": "y"}}},
			{"update_object", map[string]any{"class_name": "Memo", "object_id": "m1", "fields": map[string]any{"n": map[string]any{"__op": "Increment", "amount": 1}}}},
			{"delete_object", map[string]any{"class_name": "Memo", "object_id": "m1", "dry_run": true}},
		} {
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: a.tool, Arguments: a.args}})
			ans := fmt.Sprint(err)
			if res != nil {
				ans += text(res)
			}
			for _, l := range leaks {
				if strings.Contains(ans, l) {
					t.Errorf("%v %s %v shows a field it may not read (%s): %s", ident, a.tool, a.args, l, ans)
				}
			}
		}
	}
}

// TestAdvSubPipelineLiftsHiddenId: a hidden pointer nested two arrays deep
// (Memo.meta.list = [[Pointer<Vault>]]) lifted out by $unwind, $project,
// $replaceRoot or $group inside $facet, $lookup and $unionWith (and at the
// top level) never shows its id, in any output position.
func TestAdvSubPipelineLiftsHiddenId(t *testing.T) {
	if ferretDB1 {
		t.Skip("FerretDB 1.24 stores no nested arrays and runs no $lookup/$facet/$unionWith (the second engine does)")
	}
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "n1"}, {Key: "title", Value: "x"},
		{Key: "meta", Value: bson.D{{Key: "list", Value: bson.A{bson.A{bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Vault"}, {Key: "objectId", Value: "v1secretv1"}}}}}}}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	inners := []string{
		`[{"$unwind":"$meta.list"},{"$unwind":"$meta.list"},{"$group":{"_id":"$meta.list.objectId","n":{"$sum":1}}}]`,
		`[{"$project":{"x":"$meta.list"}},{"$unwind":"$x"},{"$unwind":"$x"},{"$project":{"id":"$x.objectId","c":"$x.className"}}]`,
		`[{"$unwind":"$meta.list"},{"$unwind":"$meta.list"},{"$replaceRoot":{"newRoot":"$meta.list"}}]`,
		`[{"$unwind":"$meta.list"},{"$unwind":"$meta.list"},{"$project":{"t":{"$concat":["$meta.list.objectId","-"]}}}]`,
		`[{"$unwind":"$meta.list"},{"$unwind":"$meta.list"},{"$group":{"_id":null,"ids":{"$addToSet":"$meta.list.objectId"}}}]`,
		`[{"$unwind":"$meta.list"},{"$unwind":"$meta.list"},{"$sortByCount":"$meta.list.objectId"}]`,
		`[{"$unwind":"$meta.list"},{"$unwind":"$meta.list"},{"$project":{"l":{"$strLenCP":"$meta.list.objectId"},"s":{"$substrCP":["$meta.list.objectId",0,2]}}}]`,
	}
	for _, inner := range inners {
		for _, wrap := range []string{`%s`, `[{"$facet":{"a":%s}}]`, `[{"$lookup":{"from":"Memo","as":"j","pipeline":%s}}]`, `[{"$unionWith":{"coll":"Memo","pipeline":%s}}]`} {
			var pipeline []any
			if err := json.Unmarshal([]byte(fmt.Sprintf(wrap, inner)), &pipeline); err != nil {
				t.Fatal(err)
			}
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "aggregate", Arguments: map[string]any{"class_name": "Memo", "pipeline": pipeline}}})
			ans := fmt.Sprint(err)
			if res != nil {
				ans += text(res)
			}
			if strings.Contains(ans, "v1secretv1") || strings.Contains(ans, "Vault") || strings.Contains(ans, `"v1"`) || strings.Contains(ans, `"l":10`) || strings.Contains(ans, `,10]`) {
				t.Errorf("%s shows the hidden pointer: %s", fmt.Sprintf(wrap, inner), ans)
			}
		}
	}
}

// TestAdvConfirmSwappedArguments: a 2026-07-28 requestState issued for one
// create authorises no other: not the same tool with other arguments.
func TestAdvConfirmSwappedArguments(t *testing.T) {
	db, uri := writeDB(t, attackSchemas()...)
	env := append(append([]string{}, writeEnv...), uri, policyEnv(t, "settings: {confirm_writes: always}\n"))
	r := startRaw(t, env...)
	send := func(body []byte) map[string]any {
		var m struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(body, &m)
		r.send(string(body))
		for {
			if got := r.next(); got["id"] == m.ID {
				return obj(got["result"])
			}
		}
	}
	state, _ := confirmCreate(t, send, "asked", "")["requestState"].(string)
	if state == "" {
		t.Fatal("no requestState")
	}
	for _, other := range []string{"other", "asked ", "Asked"} {
		if res := confirmCreate(t, send, other, state); res["resultType"] != "input_required" {
			t.Errorf("a token for %q authorised %q: %v", "asked", other, res)
		}
	}
	if n := count(t, db, "Memo"); n != 0 {
		t.Errorf("%d objects created with a swapped confirmation", n)
	}
	if res := confirmCreate(t, send, "asked", state); obj(res["structuredContent"])["created"] != true {
		t.Errorf("the token's own request: %v", res)
	}
}

// TestAdvSubPipelineRowScope: at the top level and inside $facet, $lookup
// and $unionWith, a row the user may not read (_rperm) counts nothing for
// a guess at its title, and a $match testing $exists at (or below) a path
// holding a Pointer into a hidden class answers exactly as one into a
// missing class.
func TestAdvSubPipelineRowScope(t *testing.T) {
	if ferretDB1 {
		t.Skip("FerretDB 1.24 runs no $lookup/$facet/$unionWith (the second engine does)")
	}
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	insert(t, db, "Memo",
		bson.D{{Key: "_id", Value: "s1"}, {Key: "title", Value: "SECRET"}, {Key: "_rperm", Value: bson.A{"u2"}}},
		bson.D{{Key: "_id", Value: "p1"}, {Key: "title", Value: "pub"}, {Key: "meta", Value: bson.D{{Key: "cred", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Vault"}, {Key: "objectId", Value: "v1secretv1"}}}}}},
		bson.D{{Key: "_id", Value: "p2"}, {Key: "title", Value: "pub"}, {Key: "meta", Value: bson.D{{Key: "cred", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Nowhere"}, {Key: "objectId", Value: "v1secretv1"}}}}}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy), "PARSE_MCP_ACL_USER=u1")
	run := func(pipe string) string {
		var pipeline []any
		if err := json.Unmarshal([]byte(pipe), &pipeline); err != nil {
			t.Fatal(err)
		}
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "aggregate", Arguments: map[string]any{"class_name": "Memo", "pipeline": pipeline}}})
		if err != nil {
			return err.Error()
		}
		return text(res)
	}
	for _, wrap := range []string{`%s`, `[{"$facet":{"a":%s}}]`, `[{"$lookup":{"from":"Memo","as":"j","pipeline":%s}}]`, `[{"$unionWith":{"coll":"Memo","pipeline":%s}}]`} {
		a := run(fmt.Sprintf(wrap, `[{"$match":{"title":"SECRET"}},{"$count":"n"}]`))
		b := run(fmt.Sprintf(wrap, `[{"$match":{"title":"NOPE00"}},{"$count":"n"}]`))
		if strings.ReplaceAll(a, "SECRET", "G") != strings.ReplaceAll(b, "NOPE00", "G") {
			t.Errorf("%s: an unreadable row's title is testable:\n%s\n%s", wrap, a, b)
		}
		for _, p := range []string{"meta.cred", "meta.cred.objectId", "meta.cred.className"} {
			for _, want := range []string{"true", "false"} {
				h := run(fmt.Sprintf(wrap, `[{"$match":{"objectId":"p1","`+p+`":{"$exists":`+want+`}}},{"$count":"n"}]`))
				m := run(fmt.Sprintf(wrap, `[{"$match":{"objectId":"p2","`+p+`":{"$exists":`+want+`}}},{"$count":"n"}]`))
				ids := strings.NewReplacer("p1", "<id>", "p2", "<id>")
				if ids.Replace(h) != ids.Replace(m) {
					t.Errorf("%s %s $exists %s: a hidden and a missing pointer answer apart:\n hidden  %s\n missing %s", wrap, p, want, h, m)
				}
			}
		}
	}
}

// TestAdvMissingTypedReferenceNotTestable: a Pointer embedded in an Object
// field whose className is a missing class is shown as the marker, exactly
// like one into a hidden class; so a where or a pipeline $match must not
// test what lies below it either: a right and a wrong guess at its id
// answer alike, and so do the hidden and the missing pointer.
func TestAdvMissingTypedReferenceNotTestable(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	for i, cls := range []string{"Vault", "Nowhere"} {
		insert(t, db, "Memo", bson.D{{Key: "_id", Value: fmt.Sprintf("p%d", i)}, {Key: "title", Value: "pub"},
			{Key: "meta", Value: bson.D{{Key: "cred", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: cls}, {Key: "objectId", Value: "v1secretv1"}}}}}})
	}
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	for _, id := range []string{"p0", "p1"} {
		got := callOK(t, c, "get_object", map[string]any{"class_name": "Memo", "object_id": id, "shape": "rest"})
		if s := toJSON(t, got); strings.Contains(s, "v1secretv1") {
			t.Fatalf("%s shown: %s", id, s)
		}
	}
	answers := map[string]string{}
	for _, id := range []string{"p0", "p1"} {
		for _, guess := range []string{"v1", "v2"} {
			for _, w := range []map[string]any{
				{"objectId": id, "meta.cred.objectId": map[string]any{"$gte": guess}},
				{"objectId": id, "meta.cred.objectId": map[string]any{"$regex": "^" + guess}},
				{"objectId": id, "meta.cred.className": map[string]any{"$exists": guess == "v1"}},
				{"objectId": id, "meta.cred": map[string]any{"$exists": guess == "v1"}},
			} {
				n := callOK(t, c, "count_objects", map[string]any{"class_name": "Memo", "where": w})["count"]
				res := call(t, c, "aggregate", map[string]any{"class_name": "Memo", "pipeline": []any{map[string]any{"$match": w}, map[string]any{"$count": "n"}}})
				answers[id] += fmt.Sprintf("%v/%s|", n, text(res))
				if guess == "v1" && !strings.Contains(toJSON(t, w), "$exists") {
					answers[id+"right"] += fmt.Sprint(n, text(res))
				} else if !strings.Contains(toJSON(t, w), "$exists") {
					answers[id+"wrong"] += fmt.Sprint(n, text(res))
				}
			}
		}
	}
	if answers["p0"] != answers["p1"] {
		t.Errorf("a hidden and a missing pointer answer apart:\n hidden  %s\n missing %s", answers["p0"], answers["p1"])
	}
	for _, id := range []string{"p0", "p1"} {
		if answers[id+"right"] != answers[id+"wrong"] {
			t.Errorf("%s: a guess at the redacted id is testable:\n right %s\n wrong %s", id, answers[id+"right"], answers[id+"wrong"])
		}
	}
}

// TestAdvTenantFieldWrites: a tenant-scoped session cannot move a row to
// another tenant, unset its tenant, or create one elsewhere, by any
// spelling of the write.
func TestAdvTenantFieldWrites(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Ticket", bson.D{{Key: "_id", Value: "t1"}, {Key: "title", Value: "x"}, {Key: "orgId", Value: "acme"}},
		bson.D{{Key: "_id", Value: "t2"}, {Key: "title", Value: "theirs"}, {Key: "orgId", Value: "other"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy), "PARSE_MCP_TENANT_ID=acme")
	for _, a := range []map[string]any{
		{"class_name": "Ticket", "object_id": "t1", "fields": map[string]any{"orgId": "other"}},
		{"class_name": "Ticket", "object_id": "t1", "fields": map[string]any{"orgId": map[string]any{"__op": "Delete"}}},
		{"class_name": "Ticket", "object_id": "t1", "fields": map[string]any{"orgId": nil}},
		{"class_name": "Ticket", "object_id": "t1", "fields": map[string]any{"orgId": map[string]any{"__op": "Add", "objects": []any{"x"}}}},
		{"class_name": "Ticket", "object_id": "t2", "fields": map[string]any{"title": "mine now"}},
	} {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "update_object", Arguments: a}})
		if err == nil && !res.IsError {
			t.Errorf("update %v succeeded: %s", a, text(res))
		}
	}
	for _, f := range []map[string]any{{"title": "n", "orgId": "other"}, {"title": "n", "orgId": nil}} {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "create_object", Arguments: map[string]any{"class_name": "Ticket", "fields": f}}})
		if err == nil && !res.IsError {
			var out map[string]any
			_ = json.Unmarshal([]byte(text(res)), &out)
			if o := stored(t, db, "Ticket", fmt.Sprint(out["object_id"])); o["orgId"] != "acme" {
				t.Errorf("create %v stored %v", f, o)
			}
		}
	}
	if o := stored(t, db, "Ticket", "t1"); o["orgId"] != "acme" {
		t.Errorf("t1 moved: %v", o)
	}
	if o := stored(t, db, "Ticket", "t2"); o["title"] != "theirs" {
		t.Errorf("t2 changed: %v", o)
	}
}
