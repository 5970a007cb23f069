package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Names an app or operator chose are data (SECURITY.md "Names as data"):
// an index, field, class or CLP entry whose name holds a reference's shape
// is left out of every metadata output, for a hidden, a missing and a
// visible class alike; and create_class refuses what would make every
// later create fail.

// TestTrustNamesAsData plants names holding references to a hidden class
// (Vault), a missing one (Nowhere) and a visible one (Memo): _SCHEMA index
// names and keys, a real index's name, a field name, a class name and CLP
// entries. No metadata output of any identity shows the ids.
func TestTrustNamesAsData(t *testing.T) {
	schemas := append(writeOutSchemas(),
		bson.D{{Key: "_id", Value: "Board"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "meta", Value: "object"},
			{Key: "owner", Value: "*_User"}, {Key: "Vault$fieldname01", Value: "string"},
			{Key: "_metadata", Value: bson.D{
				{Key: "indexes", Value: bson.D{
					{Key: "_id_", Value: bson.D{{Key: "_id", Value: 1}}},
					{Key: "Vault$indexname01", Value: bson.D{{Key: "title", Value: 1}}},
					{Key: "Nowhere$indexname02", Value: bson.D{{Key: "title", Value: -1}}},
					{Key: "Memo$indexname03", Value: bson.D{{Key: "owner", Value: 1}}},
					{Key: "plain_1", Value: bson.D{{Key: "Vault$indexkey04", Value: 1}}},
					{Key: "title_1", Value: bson.D{{Key: "title", Value: 1}}},
				}},
				{Key: "class_permissions", Value: bson.D{
					{Key: "find", Value: bson.D{{Key: "*", Value: true}, {Key: "Vault$clpentry05", Value: true}}},
					{Key: "get", Value: bson.D{{Key: "*", Value: true}}},
					{Key: "count", Value: bson.D{{Key: "*", Value: true}}},
					{Key: "readUserFields", Value: bson.A{"owner", "Nowhere$clpfield06"}},
					{Key: "protectedFields", Value: bson.D{{Key: "Vault$audience07", Value: bson.A{"title"}}}},
				}},
			}}},
		bson.D{{Key: "_id", Value: "Vault$classname08"}, {Key: "objectId", Value: "string"}},
	)
	db, uri := writeDB(t, schemas...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}})
	insert(t, db, "Board", bson.D{{Key: "_id", Value: "b1"}, {Key: "title", Value: "t"}, {Key: "_p_owner", Value: "_User$u1"}, {Key: "_rperm", Value: bson.A{"*"}}})
	if _, err := db.Collection("Board").Indexes().CreateOne(context.Background(), mongoIndex(bson.D{{Key: "title", Value: 1}, {Key: "_id", Value: 1}}, options.Index().SetName("Nowhere$liveindex09"))); err != nil {
		t.Fatal(err)
	}
	ids := []string{"fieldname01", "indexname01", "indexname02", "indexname03", "indexkey04", "clpentry05", "clpfield06", "audience07", "classname08", "liveindex09"}
	pol := strings.Replace(outputPolicy, "settings: {", "settings: {expose_explain: true, ", 1)
	for _, ident := range [][]string{nil, {"PARSE_MCP_ACL_USER=u1"}} {
		c := writeClient(t, uri, append([]string{policyEnv(t, pol)}, ident...)...)
		outs := map[string]string{}
		for name, tc := range map[string]struct {
			tool string
			args map[string]any
		}{
			"get_schema":      {"get_schema", map[string]any{"class_name": "Board"}},
			"get_all_schemas": {"get_all_schemas", map[string]any{}},
			"explain_query":   {"explain_query", map[string]any{"class_name": "Board", "where": map[string]any{"title": "t"}}},
			"query_class":     {"query_class", map[string]any{"class_name": "Board"}},
		} {
			outs[name] = toJSON(t, callOK(t, c, tc.tool, tc.args))
		}
		res, err := c.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "parse://Board/schema"}})
		b, _ := json.Marshal(res)
		outs["resource"] = string(b) + fmt.Sprint(err)
		for name, txt := range outs {
			for _, id := range ids {
				if strings.Contains(txt, id) {
					t.Errorf("%v %s shows the name holding %s: %s", ident, name, id, txt)
				}
			}
		}
		// The names that hold no reference are still shown.
		if !strings.Contains(outs["get_schema"], "title_1") {
			t.Errorf("%v: get_schema lost an ordinary index: %s", ident, outs["get_schema"])
		}
		if ident == nil && !strings.Contains(outs["get_schema"], `"readUserFields":["owner"]`) {
			t.Errorf("master posture: CLP lost an ordinary field: %s", outs["get_schema"])
		}
	}
}

// TestTrustCreateClassNamesChecked: create_class runs create_object's
// encoder over its defaults — an object key holding "$" or "." (shaped like
// a hidden reference or not) is Parse's 121 now, not on every later
// create — and checks the field names of its CLP as Parse's validateCLP
// does (an internal name is no field of the class: Parse's 107).
// Nothing is written to _SCHEMA by a refused call.
func TestTrustCreateClassNamesChecked(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	fields := map[string]any{"owner": map[string]any{"type": "Pointer", "targetClass": "_User"}, "title": map[string]any{"type": "String"}}
	for name, args := range map[string]map[string]any{
		"default key like a hidden reference": {"fields": map[string]any{"m": map[string]any{"type": "Object", "defaultValue": map[string]any{"Vault$abcdefghij": true}}}},
		"default key like a missing one":      {"fields": map[string]any{"m": map[string]any{"type": "Object", "defaultValue": map[string]any{"ok": map[string]any{"Nowhere$abcdefghij": 1}}}}},
		"default key with a dot":              {"fields": map[string]any{"m": map[string]any{"type": "Array", "defaultValue": []any{map[string]any{"a.b": 1}}}}},
		"readUserFields internal":             {"fields": fields, "permissions": map[string]any{"readUserFields": []any{"_hashed_password"}}},
		"writeUserFields internal":            {"fields": fields, "permissions": map[string]any{"writeUserFields": []any{"_rperm"}}},
		"pointerFields internal":              {"fields": fields, "permissions": map[string]any{"find": map[string]any{"pointerFields": []any{"_wperm"}}}},
		"pointerFields not a user pointer":    {"fields": fields, "permissions": map[string]any{"find": map[string]any{"pointerFields": []any{"title"}}}},
		"protectedFields internal":            {"fields": fields, "permissions": map[string]any{"protectedFields": map[string]any{"*": []any{"_hashed_password"}}}},
		"protectedFields default field":       {"fields": fields, "permissions": map[string]any{"protectedFields": map[string]any{"*": []any{"objectId"}}}},
	} {
		args["class_name"] = "Fresh"
		msg := callErr(t, c, "create_class", args, "parse_error")
		want := "(Parse error 107)"
		if strings.HasPrefix(name, "default") {
			want = "(Parse error 121)"
		}
		if !strings.Contains(msg, want) {
			t.Errorf("%s: %s, want %s", name, msg, want)
		}
	}
	if n := count(t, db, "_SCHEMA"); n != int64(len(writeOutSchemas())) {
		t.Errorf("a refused create_class changed _SCHEMA (%d documents)", n)
	}
	// The same names Parse accepts are accepted.
	callOK(t, c, "create_class", map[string]any{"class_name": "Fresh", "fields": fields, "permissions": map[string]any{
		"readUserFields": []any{"owner"}, "find": map[string]any{"pointerFields": []any{"owner"}}, "protectedFields": map[string]any{"*": []any{"title"}}}})
	callOK(t, c, "create_object", map[string]any{"class_name": "Fresh", "fields": map[string]any{"title": "x"}})
}

// TestTrustCreateClassNamesBridge: through the Parse Server bridge the same
// create_class calls are refused with the same codes — the default's keys
// by the policy before anything is sent (Parse would store them), the CLP
// field names by Parse Server itself — and no class is created.
func TestTrustCreateClassNamesBridge(t *testing.T) {
	ps := startParse(t)
	c := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, bridgePolicy)), writeEnv...)...)
	fields := map[string]any{"owner": map[string]any{"type": "Pointer", "targetClass": "_User"}}
	for want, args := range map[string]map[string]any{
		"(Parse error 121)": {"fields": map[string]any{"m": map[string]any{"type": "Object", "defaultValue": map[string]any{"Vault$abcdefghij": true}}}},
		"(Parse error 107)": {"fields": fields, "permissions": map[string]any{"readUserFields": []any{"_hashed_password"}}},
	} {
		args["class_name"] = "Fresh"
		if msg := callErr(t, c, "create_class", args, "parse_error"); !strings.Contains(msg, want) {
			t.Errorf("%v: %s, want %s", args, msg, want)
		}
	}
	if status, _, _ := ps.Do("GET", "/schemas/Fresh", nil, parsetest.AsMaster); status != 400 && status != 404 {
		t.Errorf("a refused create_class created the class: HTTP %d", status)
	}
}
