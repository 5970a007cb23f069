package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestParityWriteAnswers: what a scoped identity's update and delete answer
// with, compared with Parse Server 9.10 on one database written by Parse.
// Parse answers an update with updatedAt and a delete with {} — nothing of
// the row — and lets a caller read the row only as its read ACL allows.
// parse-mcp's write answer shows the object exactly when Parse's GET as
// that identity shows it, and then the same fields; for a row the
// identity may write but not read it shows no object, as Parse shows none.
// (Class Memo: the test app's Note has a beforeSave trigger, and Parse adds
// the fields a trigger changed to its answer.)
func TestParityWriteAnswers(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	aliceID, alice := ps.SignUp(t, "alice", "alice-pw")
	bobID, _ := ps.SignUp(t, "bob", "bob-pw")
	ps.CreateClass(t, "Memo", map[string]string{"title": "String", "n": "Number"}, nil)
	acl := func(readers ...string) map[string]any {
		a := map[string]any{aliceID: map[string]any{"write": true}}
		for _, r := range readers {
			a[r] = map[string]any{"read": true, "write": r == aliceID}
		}
		return a
	}
	rows := map[string]string{}
	for name, readers := range map[string][]string{"readable": {aliceID}, "writeOnly": {bobID}, "writeOnly2": {bobID}} {
		out := ps.MustDo(t, "POST", "/classes/Memo", map[string]any{"title": "SECRET-" + name, "n": 1, "ACL": acl(readers...)}, parsetest.AsMaster)
		rows[name] = out["objectId"].(string)
	}
	c := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, "PARSE_MCP_SESSION_TOKEN="+alice, policyEnv(t, "settings: {confirm_writes: never}\n"))
	as := parsetest.AsSession(alice)
	for _, name := range []string{"readable", "writeOnly"} {
		id := rows[name]
		// Parse: the update's answer, then what a GET shows this identity.
		upd := ps.MustDo(t, "PUT", "/classes/Memo/"+id, map[string]any{"n": 2}, as)
		if keys := mapKeys(upd); !slices.Equal(keys, []string{"updatedAt"}) {
			t.Errorf("%s: Parse's update answer %v", name, upd)
		}
		status, parseRow, _ := ps.Do("GET", "/classes/Memo/"+id, nil, as)
		out := callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": id, "fields": map[string]any{"n": 3}})
		obj, shown := out["object"].(map[string]any)
		switch {
		case status != 200 && shown:
			t.Errorf("%s: Parse shows this identity nothing (%d), parse-mcp's update answer shows %v", name, status, obj)
		case status == 200 && !shown:
			t.Errorf("%s: Parse shows the row, parse-mcp's update answer shows none: %v", name, out)
		case status == 200:
			delete(parseRow, "ACL")
			if got, want := mapKeys(obj), mapKeys(parseRow); !slices.Equal(got, want) {
				t.Errorf("%s: fields shown %v, Parse's GET %v", name, got, want)
			}
		}
		if strings.Contains(toJSON(t, out), "SECRET-writeOnly") {
			t.Errorf("%s: the write answer shows the unreadable row: %v", name, out)
		}
	}
	// Delete: Parse answers {}; parse-mcp's answer shows no row either.
	del := ps.MustDo(t, "DELETE", "/classes/Memo/"+rows["writeOnly2"], nil, as)
	if len(del) != 0 {
		t.Errorf("Parse's delete answer %v", del)
	}
	out := callOK(t, c, "delete_object", map[string]any{"class_name": "Memo", "object_id": rows["writeOnly"], "dry_run": true})
	if out["deleted_object"] != nil {
		t.Errorf("delete dry run of an unreadable row shows it: %v", out)
	}
}

func mapKeys(m map[string]any) []string {
	return sortedKeys(m)
}
