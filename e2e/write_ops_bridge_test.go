package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
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
