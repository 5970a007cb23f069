package policy

import (
	"encoding/json"
	"testing"
)

// TestGetShapedWhereUsesGetCLP: a find whose where is exactly
// {objectId: "X"} is checked against the get CLP, as Parse Server does;
// any other shape (an operator, a second key, a non-string id) stays a
// find, and so does a sub-read of another class.
func TestGetShapedWhereUsesGetCLP(t *testing.T) {
	for where, want := range map[string]bool{
		`{"objectId":"abc"}`: true, `{"objectId":{"$eq":"abc"}}`: false, `{"objectId":"a","name":"x"}`: false,
		`{"objectId":1}`: false, `{}`: false, `null`: false, `{"name":"abc"}`: false,
	} {
		if got := getShapedWhere(decodeJSON(t, where)); got != want {
			t.Errorf("getShapedWhere(%s) = %v", where, got)
		}
	}
	schema := trustSchema()
	e := secEngine(t, "", withACLUser(secUserID))
	for _, c := range []struct {
		tool      string
		getShaped bool
		want      string
	}{
		{"query_class", true, "ok"},
		{"query_class", false, "access_denied/clp_denied"},
		{"export_data", true, "ok"},
		{"count_objects", true, "access_denied/clp_denied"}, // a count stays a count, as in Parse
		{"get_object", false, "ok"},
	} {
		ctx := callCtx(e, c.tool, "")
		callStateOf(ctx).getShaped = c.getShaped && callStateOf(ctx).op == OpFind
		_, err := e.ResolveClass(ctx, schema, "GetOnly")
		if got := outcome(err); got != c.want {
			t.Errorf("%s getShaped=%v: %s (%v), want %s", c.tool, c.getShaped, got, err, c.want)
		}
		if err == nil {
			if _, err := e.StorageScope(ctx, schema.Class("GetOnly")); err != nil {
				t.Errorf("%s getShaped=%v: storage scope: %v", c.tool, c.getShaped, err)
			}
		}
	}
	// A get-shaped find of _Installation is still Parse's refused find.
	ctx := callCtx(e, "query_class", "")
	callStateOf(ctx).getShaped = true
	if _, err := e.ResolveClass(ctx, schema, "_Installation"); outcome(err) != "access_denied/master_only" {
		t.Errorf("get-shaped find of _Installation: %v", err)
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
