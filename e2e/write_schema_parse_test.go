package e2e

import (
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// Schema changes and a running Parse Server (docs/writes.md "Writes"): Parse
// Server 9.10 caches its schema without expiry by default, so a field
// parse-mcp adds to _SCHEMA directly is read wrongly by a running Parse
// Server (a Pointer dropped) until it reloads. Through the bridge, Parse
// Server adds the field itself and reads it right away; on the direct path
// the write is refused unless settings.direct_schema_changes allows it, and
// then the result says how Parse Server must reload its schema.
func TestSchemaChangesReachParseServer(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	uid, _ := ps.SignUp(t, "schemer", "schemer-pw")
	ps.CreateClass(t, "Doc", map[string]string{"title": "String"}, nil)
	// Parse Server loads (and caches) the schema of Doc.
	ps.MustDo(t, "POST", "/classes/Doc", map[string]any{"title": "seed"}, parsetest.AsMaster)
	owner := map[string]any{"__type": "Pointer", "className": "_User", "objectId": uid}
	restGet := func(id string) map[string]any {
		return ps.MustDo(t, "GET", "/classes/Doc/"+id, nil, parsetest.AsMaster)
	}

	t.Run("direct without the setting refuses", func(t *testing.T) {
		c := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, policyEnv(t, "settings: {confirm_writes: never}\n"))
		msg := callErr(t, c, "create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"title": "x", "owner": owner}}, "access_denied")
		if !strings.Contains(msg, "owner") || !strings.Contains(msg, "direct_schema_changes") {
			t.Errorf("refusal does not name the field and the setting: %s", msg)
		}
		callErr(t, c, "create_class", map[string]any{"class_name": "Fresh"}, "access_denied")
		// Existing fields stay writable.
		out := callOK(t, c, "create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"title": "only known fields"}})
		if _, has := out["schema_reload"]; has {
			t.Errorf("a write of existing fields carries schema_reload: %v", out)
		}
		if got := restGet(out["object_id"].(string))["title"]; got != "only known fields" {
			t.Errorf("Parse reads title %v", got)
		}
		if s := ps.MustDo(t, "GET", "/schemas/Doc", nil, parsetest.AsMaster); s["fields"].(map[string]any)["owner"] != nil {
			t.Errorf("the refused write changed _SCHEMA: %v", s["fields"])
		}
	})

	t.Run("direct with the setting says how to reload", func(t *testing.T) {
		c := writeClient(t, "PARSE_MCP_MONGODB_URI="+ps.MongoURI, policyEnv(t, "settings: {confirm_writes: never, direct_schema_changes: true}\n"))
		out := callOK(t, c, "create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"title": "direct", "owner": owner}})
		note, _ := out["schema_reload"].(string)
		if !strings.Contains(note, "GET /schemas") || !strings.Contains(note, "master key") {
			t.Fatalf("schema_reload does not say how to reload: %v", out)
		}
		id := out["object_id"].(string)
		// What the note warns about: Parse's cached schema lacks owner, so
		// its REST read drops the pointer …
		if got := restGet(id); got["owner"] != nil {
			t.Logf("Parse Server already reads the new pointer (its schema cache was reloaded): %v", got["owner"])
		}
		// … until it reloads its schema as the note says.
		ps.MustDo(t, "GET", "/schemas", nil, parsetest.AsMaster)
		got, _ := restGet(id)["owner"].(map[string]any)
		if got["objectId"] != uid || got["className"] != "_User" {
			t.Errorf("after GET /schemas Parse reads owner %v", got)
		}
		out = callOK(t, c, "create_class", map[string]any{"class_name": "DirectClass", "fields": map[string]any{"name": map[string]any{"type": "String"}}})
		if out["schema_reload"] == nil {
			t.Errorf("create_class result without schema_reload: %v", out)
		}
	})

	t.Run("bridge: Parse adds the field and reads it at once", func(t *testing.T) {
		c := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, "settings: {confirm_writes: never}\n")), writeEnv...)...)
		file := map[string]any{"__type": "File", "name": "abc_scan.pdf", "url": ps.URL + "/files/" + ps.AppID + "/abc_scan.pdf"}
		// One new field per Parse write: Parse Server adds the fields of one
		// write in parallel upserts of _SCHEMA, which FerretDB 1.24 does not
		// serialise ("Could not add field", 107).
		out := callOK(t, c, "create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"title": "bridged", "editor": owner}})
		if out["schema_reload"] != nil {
			t.Errorf("a bridge write carries schema_reload: %v", out)
		}
		upd := callOK(t, c, "update_object", map[string]any{"class_name": "Doc", "object_id": out["object_id"], "fields": map[string]any{"scan": file}})
		got := restGet(out["object_id"].(string))
		// The write result shows the File with the url Parse gives it.
		mine, _ := upd["object"].(map[string]any)["scan"].(map[string]any)
		if theirs, _ := got["scan"].(map[string]any); mine["url"] == nil || mine["url"] != theirs["url"] {
			t.Errorf("write result file %v, Parse reads %v", mine, got["scan"])
		}
		if ed, _ := got["editor"].(map[string]any); ed["objectId"] != uid || ed["__type"] != "Pointer" {
			t.Errorf("Parse reads the bridged pointer as %v", got["editor"])
		}
		if sc, _ := got["scan"].(map[string]any); sc["__type"] != "File" || sc["name"] != "abc_scan.pdf" {
			t.Errorf("Parse reads the bridged file as %v", got["scan"])
		}
		// A field Parse added moments ago (another client) is typed: a
		// compact Date and a bare-id Pointer are sent in Parse's typed form.
		ps.MustDo(t, "POST", "/classes/Doc", map[string]any{"due": map[string]any{"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}}, parsetest.AsMaster)
		ps.MustDo(t, "POST", "/classes/Doc", map[string]any{"reviewer": owner}, parsetest.AsMaster)
		out = callOK(t, c, "create_object", map[string]any{"class_name": "Doc", "fields": map[string]any{"due": "2024-05-01T10:00:00.000Z", "reviewer": uid}})
		got = restGet(out["object_id"].(string))
		if d, _ := got["due"].(map[string]any); d["iso"] != "2024-05-01T10:00:00.000Z" {
			t.Errorf("compact date on a new Parse field: %v", got["due"])
		}
		if r, _ := got["reviewer"].(map[string]any); r["objectId"] != uid {
			t.Errorf("bare-id pointer on a new Parse field: %v", got["reviewer"])
		}
		// A class created through the bridge is Parse's at once, and usable
		// by parse-mcp at once.
		callOK(t, c, "create_class", map[string]any{"class_name": "Bridged", "fields": map[string]any{"name": map[string]any{"type": "String"}}})
		out = callOK(t, c, "create_object", map[string]any{"class_name": "Bridged", "fields": map[string]any{"name": "n"}})
		if got := ps.MustDo(t, "GET", "/classes/Bridged/"+out["object_id"].(string), nil, parsetest.AsMaster); got["name"] != "n" {
			t.Errorf("Parse reads %v", got)
		}
		// A class Parse created moments ago is found by the next write.
		ps.CreateClass(t, "ParseMade", map[string]string{"name": "String"}, nil)
		callOK(t, c, "create_object", map[string]any{"class_name": "ParseMade", "fields": map[string]any{"name": "found"}})
	})
}
