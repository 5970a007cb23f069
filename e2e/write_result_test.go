package e2e

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestWriteResultIsGetObject: a write's object is built in memory from the
// stored document when the read scope can be evaluated exactly, else read
// back (ARCHITECTURE.md "Round trips per tool"); either way it is exactly
// what get_object shows the same session right after — protected fields,
// agent_fields, hidden and missing references redacted — and a row the
// session cannot read (its ACL, a CLP pointer permission, an agent filter)
// shows no object, as get_object answers "not found".
func TestWriteResultIsGetObject(t *testing.T) {
	schemas := writeOutSchemas()
	schemas[0] = append(schemas[0], bson.E{Key: "secret", Value: "string"}, bson.E{Key: "ref", Value: "*Vault"},
		bson.E{Key: "gone", Value: "*Nowhere"}, bson.E{Key: "meta", Value: "object"}, bson.E{Key: "_metadata", Value: bson.D{
			{Key: "class_permissions", Value: bson.D{
				{Key: "get", Value: bson.D{{Key: "*", Value: true}}}, {Key: "find", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "count", Value: bson.D{{Key: "*", Value: true}}}, {Key: "create", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "update", Value: bson.D{{Key: "*", Value: true}}}, {Key: "delete", Value: bson.D{{Key: "*", Value: true}}},
				{Key: "protectedFields", Value: bson.D{{Key: "*", Value: bson.A{"email"}}}},
			}},
		}})
	// Owned: reads limited to the owner by a CLP pointer permission (the
	// scope the in-memory path does not evaluate: read back).
	schemas = append(schemas, bson.D{{Key: "_id", Value: "Owned"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"},
		{Key: "owner", Value: "*_User"}, {Key: "_metadata", Value: bson.D{{Key: "class_permissions", Value: bson.D{
			{Key: "get", Value: bson.D{}}, {Key: "find", Value: bson.D{}}, {Key: "readUserFields", Value: bson.A{"owner"}},
			{Key: "create", Value: bson.D{{Key: "*", Value: true}}}, {Key: "update", Value: bson.D{{Key: "*", Value: true}}},
		}}}}})
	db, uri := writeDB(t, schemas...)
	insert(t, db, "_User", bson.D{{Key: "_id", Value: "u1"}, {Key: "username", Value: "ann"}}, bson.D{{Key: "_id", Value: "u2"}, {Key: "username", Value: "bob"}})
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "x"}, {Key: "email", Value: "a@b.c"}})
	// Rows holding references to the hidden and a missing class (a write
	// cannot store them: they come from elsewhere), updated below.
	vault := bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Vault"}, {Key: "objectId", Value: "v1secretid"}}
	nowhere := bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Nowhere"}, {Key: "objectId", Value: "v2secretid"}}
	for i := range 6 {
		insert(t, db, "Memo", bson.D{{Key: "_id", Value: "h" + string(rune('0'+i))}, {Key: "title", Value: "refs"}, {Key: "email", Value: "h@i.j"}, {Key: "secret", Value: "hs"},
			{Key: "_p_ref", Value: "Vault$v0secretid"}, {Key: "_p_gone", Value: "Nowhere$v4secretid"},
			{Key: "meta", Value: bson.D{{Key: "p", Value: vault}, {Key: "list", Value: bson.A{nowhere, "Vault$v3secretid"}}}}})
	}
	memo := map[string]any{"title": "t", "email": "e@f.g", "n": 3, "meta": map[string]any{"k": 1}}
	mine := map[string]any{"u1": map[string]any{"read": true, "write": true}}
	theirs := map[string]any{"u2": map[string]any{"read": true}, "u1": map[string]any{"write": true}}
	policies := map[string]string{
		"plain":          "classes:\n  Vault: {hidden: true}\n  Memo: {writable_fields: [title, n, email, meta, ACL]}\nsettings: {confirm_writes: never}\n",
		"agent_fields":   "classes:\n  Vault: {hidden: true}\n  Memo: {agent_fields: [title, n, email, ref, meta], writable_fields: [title, n, email, meta, ACL]}\nsettings: {confirm_writes: never}\n",
		"agent_filtered": "classes:\n  Vault: {hidden: true}\nagent:\n  filters:\n    Memo: {n: {$lt: 10}}\nsettings: {confirm_writes: never}\n",
	}
	for i, tc := range []struct {
		name, policy string
		ident        []string
		class        string
		fields, acl  map[string]any
		visible      bool
	}{
		{"master", "plain", nil, "Memo", memo, nil, true},
		{"master, agent_fields", "agent_fields", nil, "Memo", memo, nil, true},
		{"user, public row", "plain", []string{"PARSE_MCP_ACL_USER=u1"}, "Memo", memo, nil, true},
		{"user, own row", "plain", []string{"PARSE_MCP_ACL_USER=u1"}, "Memo", memo, mine, true},
		{"user, row only another reads", "plain", []string{"PARSE_MCP_ACL_USER=u1"}, "Memo", memo, theirs, false},
		{"user, agent_fields", "agent_fields", []string{"PARSE_MCP_ACL_USER=u1"}, "Memo", memo, mine, true},
		{"agent filter admits", "agent_filtered", nil, "Memo", map[string]any{"title": "t", "n": 3}, nil, true},
		{"pointer permission, owner", "plain", []string{"PARSE_MCP_ACL_USER=u1"}, "Owned",
			map[string]any{"title": "t", "owner": map[string]any{"__type": "Pointer", "className": "_User", "objectId": "u1"}}, nil, true},
		{"pointer permission, not the owner", "plain", []string{"PARSE_MCP_ACL_USER=u1"}, "Owned",
			map[string]any{"title": "t", "owner": map[string]any{"__type": "Pointer", "className": "_User", "objectId": "u2"}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := writeClient(t, uri, append([]string{policyEnv(t, policies[tc.policy])}, tc.ident...)...)
			args := map[string]any{"class_name": tc.class, "fields": tc.fields}
			if tc.acl != nil {
				args["acl"] = tc.acl
			}
			created := callOK(t, c, "create_object", args)
			id, _ := created["object_id"].(string)
			check := func(op string, out map[string]any) {
				t.Helper()
				res := call(t, c, "get_object", map[string]any{"class_name": tc.class, "object_id": id, "shape": "rest"})
				if !tc.visible {
					if out["object"] != nil || !res.IsError {
						t.Errorf("%s shows %s; get_object: %s", op, toJSON(t, out["object"]), text(res))
					}
					return
				}
				got := callOK(t, c, "get_object", map[string]any{"class_name": tc.class, "object_id": id, "shape": "rest"})
				if out["object"] == nil || toJSON(t, out["object"]) != toJSON(t, got["object"]) {
					t.Errorf("%s result %s\nget_object    %s", op, toJSON(t, out["object"]), toJSON(t, got["object"]))
				}
			}
			check("create", created)
			if tc.class == "Memo" && tc.visible {
				check("update", callOK(t, c, "update_object", map[string]any{"class_name": tc.class, "object_id": id, "fields": map[string]any{"n": 4}}))
				if i < 6 && tc.acl == nil {
					id = "h" + string(rune('0'+i))
					check("update of a row with hidden references", callOK(t, c, "update_object", map[string]any{"class_name": tc.class, "object_id": id, "fields": map[string]any{"n": 5}}))
				}
			}
		})
	}
}
