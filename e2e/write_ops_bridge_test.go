package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestWriteOperationsAnswerAlikeOnBothPaths: what Parse Server 9.10 fails
// on with an internal error (HTTP 500, code 1, "Internal server error.") —
// an unknown __op, an Increment/Add/AddUnique/Remove on a dotted path whose
// stored value has another type, a sub-key below a number — is answered by
// the direct path and the bridge alike, with Parse's 107 or 111 and a
// sentence the caller can act on, dry run or not; through the bridge the
// request never reaches Parse Server, and nothing changes.
func TestWriteOperationsAnswerAlikeOnBothPaths(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	db := parseDatabase(t, ps)
	ps.CreateClass(t, "Ref", map[string]string{"title": "String", "meta": "Object", "n": "Number"}, nil)
	direct := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, policyEnv(t, "settings: {confirm_writes: never}\n"))
	bridge := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, "settings: {confirm_writes: never}\n")), writeEnv...)...)
	start := map[string]any{"title": "t", "n": 1, "meta": map[string]any{"k": 1, "deep": map[string]any{"a": 1}, "s": "x"}}
	id := ps.MustDo(t, "POST", "/classes/Ref", start, parsetest.AsMaster)["objectId"].(string)
	before := storedForCompare(storedD(t, db, "Ref", id))
	for _, tc := range []struct {
		fields map[string]any
		code   string
	}{
		{map[string]any{"n": map[string]any{"__op": "Bogus"}}, "107"},
		{map[string]any{"meta.k": map[string]any{"__op": "Bogus"}}, "107"},
		{map[string]any{"meta.deep": map[string]any{"__op": "Increment", "amount": 1}}, "111"},
		{map[string]any{"meta.s": map[string]any{"__op": "Increment", "amount": 1}}, "111"},
		{map[string]any{"meta.deep": map[string]any{"__op": "Add", "objects": []any{1}}}, "111"},
		{map[string]any{"meta.s": map[string]any{"__op": "AddUnique", "objects": []any{1}}}, "111"},
		{map[string]any{"meta.s": map[string]any{"__op": "Remove", "objects": []any{1}}}, "111"},
		{map[string]any{"meta.deep.a.b": 1}, "111"},
	} {
		var answers []string
		for _, c := range []struct {
			name string
			dry  bool
		}{{"direct", true}, {"direct", false}, {"bridge", false}} {
			cl := direct
			if c.name == "bridge" {
				cl = bridge
			}
			res := call(t, cl, "update_object", map[string]any{"class_name": "Ref", "object_id": id, "fields": tc.fields, "dry_run": c.dry})
			code := ""
			if res.Meta != nil {
				code = fmt.Sprint(res.Meta.AdditionalFields["parse.parse_code"])
			}
			if !res.IsError || code != tc.code {
				t.Errorf("%v %s dry_run=%v: want Parse %s, got %s", tc.fields, c.name, c.dry, tc.code, text(res))
			}
			answers = append(answers, text(res))
		}
		if answers[0] != answers[1] || answers[1] != answers[2] || strings.Contains(answers[0], "internal error") {
			t.Errorf("%v: the answers differ:\n%s", tc.fields, strings.Join(answers, "\n"))
		}
	}
	if now := storedForCompare(storedD(t, db, "Ref", id)); now != before {
		t.Errorf("a refused write changed the object: %s\nwas %s", now, before)
	}
	// Parse Server is still up and the object still reads.
	if got := ps.MustDo(t, "GET", "/classes/Ref/"+id, nil, parsetest.AsMaster); got["title"] != "t" {
		t.Errorf("Parse reads %v", got)
	}
}

// TestNestedKeysAnswerAlikeOnBothPaths: an object key holding "$" or "."
// anywhere inside a value (depth 1 or 2, in an array element, in the
// objects of Add/AddUnique/Remove, under a dotted key) is refused with
// Parse's 121 by the direct path's encoder; the bridge runs the same
// encoder before sending, so create_object and update_object answer alike
// on both paths, dry run or not, and nothing is written.
func TestNestedKeysAnswerAlikeOnBothPaths(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	db := parseDatabase(t, ps)
	ps.CreateClass(t, "Memo", map[string]string{"meta": "Object", "list": "Array"}, nil)
	direct := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, policyEnv(t, "settings: {confirm_writes: never}\n"))
	bridge := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, "settings: {confirm_writes: never}\n")), writeEnv...)...)
	id := ps.MustDo(t, "POST", "/classes/Memo", map[string]any{"meta": map[string]any{"ok": map[string]any{"a": 1}}, "list": []any{1}}, parsetest.AsMaster)["objectId"].(string)
	before := storedForCompare(storedD(t, db, "Memo", id))
	obj := func(k string) map[string]any { return map[string]any{k: true} }
	values := []map[string]any{
		{"meta": obj("X$abcdefghij")},
		{"meta": obj("a.b")},
		{"meta": map[string]any{"ok": obj("$y")}},
		{"meta": map[string]any{"ok": obj("y.z")}},
		{"list": []any{1, obj("a$")}},
		{"list": []any{map[string]any{"k": obj("b.c")}}},
		{"list": map[string]any{"__op": "Add", "objects": []any{obj("a.b")}}},
		{"list": map[string]any{"__op": "AddUnique", "objects": []any{map[string]any{"k": obj("$b")}}}},
		{"list": map[string]any{"__op": "Remove", "objects": []any{obj("a$")}}},
	}
	type call1 struct {
		tool   string
		fields map[string]any
	}
	var calls []call1
	for _, v := range values {
		calls = append(calls, call1{"create_object", v}, call1{"update_object", v})
	}
	calls = append(calls,
		call1{"update_object", map[string]any{"meta.ok": obj("x$")}},
		call1{"update_object", map[string]any{"meta.ok": map[string]any{"deep": obj("x.y")}}},
		call1{"update_object", map[string]any{"meta.ok": map[string]any{"__op": "Add", "objects": []any{obj("a.b")}}}},
	)
	for _, tc := range calls {
		var answers []string
		for _, c := range []struct {
			name string
			dry  bool
		}{{"direct", true}, {"direct", false}, {"bridge", true}, {"bridge", false}} {
			cl := direct
			if c.name == "bridge" {
				cl = bridge
			}
			args := map[string]any{"class_name": "Memo", "fields": tc.fields, "dry_run": c.dry}
			if tc.tool == "update_object" {
				args["object_id"] = id
			}
			res := call(t, cl, tc.tool, args)
			code := ""
			if res.Meta != nil {
				code = fmt.Sprint(res.Meta.AdditionalFields["parse.parse_code"])
			}
			if !res.IsError || code != "121" {
				t.Errorf("%s %v %s dry_run=%v: want Parse 121, got %s", tc.tool, tc.fields, c.name, c.dry, text(res))
			}
			answers = append(answers, text(res))
		}
		for _, a := range answers[1:] {
			if a != answers[0] {
				t.Errorf("%s %v: the answers differ:\n%s", tc.tool, tc.fields, strings.Join(answers, "\n"))
				break
			}
		}
	}
	if now := storedForCompare(storedD(t, db, "Memo", id)); now != before {
		t.Errorf("a refused write changed the object: %s\nwas %s", now, before)
	}
	if n, err := db.Collection("Memo").CountDocuments(context.Background(), bson.D{}); err != nil || n != 1 {
		t.Errorf("a refused create stored an object: %d documents (%v)", n, err)
	}
}
