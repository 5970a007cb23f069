package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// The trust suites (leak classes 4, 5, 7 and the Parse-exactness rules)
// through the binary, on a database of their own: the Tunebase seed plus
// Parse's _Installation class, a Device class pointing to it, and bob's
// _User row readable by everyone (so that another user's protected email
// is within reach of a scoped identity).

var (
	trustOnce sync.Once
	trustURI  string
	trustErr  error
)

// trustDatabase seeds the trust database once and returns its URI.
func trustDatabase(t testing.TB) string {
	t.Helper()
	trustOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		db := testDB.Client().Database(dbName + "_trust")
		if trustErr = demo.ForceSeed(ctx, db, ""); trustErr != nil {
			return
		}
		trustErr = seedTrustExtras(ctx, db)
		u, _ := url.Parse(mongoURI)
		u.Path = "/" + db.Name()
		trustURI = u.String()
	})
	if trustErr != nil {
		t.Fatalf("seeding the trust database: %v", trustErr)
	}
	return trustURI
}

// Installation ids of the trust database.
var trustInstallationIDs = []string{"inst000001", "inst000002", "inst000003"}

func seedTrustExtras(ctx context.Context, db *mongo.Database) error {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var insts []any
	for i, id := range trustInstallationIDs {
		insts = append(insts, bson.D{{Key: "_id", Value: id}, {Key: "deviceToken", Value: "tok-" + id},
			{Key: "deviceType", Value: "ios"}, {Key: "installationId", Value: "iid-" + id},
			{Key: "_p_user", Value: "_User$" + []string{demo.UserAliceID, demo.UserBobID, demo.UserAliceID}[i]},
			{Key: "_rperm", Value: bson.A{"*"}}, {Key: "_wperm", Value: bson.A{}},
			{Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}})
	}
	if _, err := db.Collection("_Installation").InsertMany(ctx, insts); err != nil {
		return err
	}
	var devices []any
	for i, id := range trustInstallationIDs {
		devices = append(devices, bson.D{{Key: "_id", Value: "dev00000" + string(rune('1'+i))}, {Key: "name", Value: "device " + id},
			{Key: "_p_installation", Value: "_Installation$" + id}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}})
	}
	if _, err := db.Collection("Device").InsertMany(ctx, devices); err != nil {
		return err
	}
	if _, err := db.Collection("_SCHEMA").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "_Installation"}, {Key: "objectId", Value: "string"}, {Key: "createdAt", Value: "date"}, {Key: "updatedAt", Value: "date"},
			{Key: "deviceToken", Value: "string"}, {Key: "deviceType", Value: "string"}, {Key: "installationId", Value: "string"}, {Key: "user", Value: "*_User"}},
		bson.D{{Key: "_id", Value: "Device"}, {Key: "objectId", Value: "string"}, {Key: "createdAt", Value: "date"}, {Key: "updatedAt", Value: "date"},
			{Key: "name", Value: "string"}, {Key: "installation", Value: "*_Installation"}},
	}); err != nil {
		return err
	}
	// Blob: 20 distinct values of 256 KiB (5 MiB together, over the 4 MiB
	// response cap) for the streaming byte accounting of distinct/group_by.
	var blobs []any
	for i := range 20 {
		blobs = append(blobs, bson.D{{Key: "_id", Value: fmt.Sprintf("blob%06d", i)}, {Key: "big", Value: strings.Repeat(string(rune('a'+i)), 256<<10)},
			{Key: "kind", Value: "k"}, {Key: "_created_at", Value: now}, {Key: "_updated_at", Value: now}})
	}
	if _, err := db.Collection("Blob").InsertMany(ctx, blobs); err != nil {
		return err
	}
	if _, err := db.Collection("_SCHEMA").InsertOne(ctx, bson.D{{Key: "_id", Value: "Blob"}, {Key: "objectId", Value: "string"},
		{Key: "createdAt", Value: "date"}, {Key: "updatedAt", Value: "date"}, {Key: "big", Value: "string"}, {Key: "kind", Value: "string"}}); err != nil {
		return err
	}
	// bob's row readable by everyone: his email is then one query away.
	_, err := db.Collection("_User").UpdateOne(ctx, bson.D{{Key: "_id", Value: demo.UserBobID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "_rperm", Value: bson.A{"*", demo.UserBobID}}}}})
	return err
}

// trustServer starts the binary on the trust database.
func trustServer(t *testing.T, extraEnv ...string) *rawServer {
	t.Helper()
	r := startRaw(t, append([]string{"PARSE_MCP_MONGODB_URI=" + trustDatabase(t)}, extraEnv...)...)
	r.initialize()
	return r
}

// okResult sends a tools/call that must succeed and returns its JSON text.
func okResult(t *testing.T, r *rawServer, id, tool, args string) string {
	t.Helper()
	resp := aggRPC(r, id, tool, args)
	res := obj(resp["result"])
	if res == nil || res["isError"] == true {
		t.Errorf("%s: want success, got %v", id, resp)
		return ""
	}
	return obj(list(res["content"])[0])["text"].(string)
}

// TestTrustMasterOnlyClasses: _Installation find/count and every sub-read
// of it (include, $inQuery, $notInQuery, $select, $dontSelect, pipeline
// joins) are refused to every scoped identity exactly where Parse Server
// refuses them (its enforceRoleSecurity); get by id is allowed; the master
// posture reads it all.
func TestTrustMasterOnlyClasses(t *testing.T) {
	inst := trustInstallationIDs[0]
	positions := []struct{ id, tool, args string }{
		{"find", "query_class", `{"class_name":"_Installation"}`},
		{"find-by-id-where", "query_class", `{"class_name":"_Installation","where":{"objectId":"` + inst + `"}}`},
		{"count", "count_objects", `{"class_name":"_Installation"}`},
		{"sample", "get_sample_objects", `{"class_name":"_Installation"}`},
		{"distinct", "distinct", `{"class_name":"_Installation","field":"deviceType"}`},
		{"group", "group_by", `{"class_name":"_Installation","field":"deviceType"}`},
		{"export", "export_data", `{"class_name":"_Installation","format":"csv"}`},
		{"aggregate", "aggregate", `{"class_name":"_Installation","pipeline":[{"$limit":1}]}`},
		{"explain", "explain_query", `{"class_name":"_Installation","where":{}}`},
		{"include", "query_class", `{"class_name":"Device","include":["installation"]}`},
		{"include-get", "get_object", `{"class_name":"Device","object_id":"dev000001","include":["installation"]}`},
		{"inQuery", "count_objects", `{"class_name":"Device","where":{"installation":{"$inQuery":{"className":"_Installation","where":{"deviceType":"ios"}}}}}`},
		{"notInQuery", "count_objects", `{"class_name":"Device","where":{"installation":{"$notInQuery":{"className":"_Installation","where":{"deviceType":"ios"}}}}}`},
		{"select", "count_objects", `{"class_name":"Device","where":{"name":{"$select":{"query":{"className":"_Installation","where":{}},"key":"deviceToken"}}}}`},
		{"dontSelect", "count_objects", `{"class_name":"Device","where":{"name":{"$dontSelect":{"query":{"className":"_Installation","where":{}},"key":"deviceToken"}}}}`},
		{"lookup", "aggregate", `{"class_name":"Device","pipeline":[{"$lookup":{"from":"_Installation","localField":"installation","foreignField":"objectId","as":"i"}}]}`},
		{"unionWith", "aggregate", `{"class_name":"Device","pipeline":[{"$unionWith":{"coll":"_Installation"}}]}`},
	}
	for _, ident := range []string{"PARSE_MCP_SESSION_TOKEN=" + demo.AliceSessionToken, "PARSE_MCP_ACL_USER=" + demo.UserBobID, "PARSE_MCP_ACL_ROLE=" + demo.RoleAdmin} {
		t.Run(strings.SplitN(ident, "=", 2)[0], func(t *testing.T) {
			r := trustServer(t, ident)
			for _, p := range positions {
				msg := toolError(t, r, p.id, p.tool, p.args, "access_denied", "master_only")
				if msg != "" && !strings.Contains(msg, "Clients aren't allowed to perform the find operation on the installation collection.") {
					t.Errorf("%s: message %q", p.id, msg)
				}
			}
			// get by id is not master-only in Parse.
			if s := okResult(t, r, "get", "get_object", `{"class_name":"_Installation","object_id":"`+inst+`"}`); !strings.Contains(s, "tok-"+inst) {
				t.Errorf("get_object _Installation: %s", s)
			}
			okResult(t, r, "gets", "get_objects", `{"class_name":"_Installation","ids":["`+inst+`"]}`)
		})
	}
	t.Run("master", func(t *testing.T) {
		r := trustServer(t)
		for _, p := range positions {
			if p.id == "lookup" || p.id == "unionWith" {
				continue // FerretDB has no $lookup/$unionWith; the validator is covered by the unit suite
			}
			okResult(t, r, p.id, p.tool, p.args)
		}
	})
}

// TestTrustProtectedEmail: Parse Server's default protectedFields
// {_User: {"*": ["email"]}} through the binary — another user's email is
// never shown and cannot be filtered, sorted, grouped or exported on; a user
// sees their own row's email; the master posture sees every email;
// settings.protected_fields: {} turns the default off.
func TestTrustProtectedEmail(t *testing.T) {
	aliceEmail, bobEmail := "alice@tunebase.example", "bob@tunebase.example"
	r := trustServer(t, "PARSE_MCP_SESSION_TOKEN="+demo.AliceSessionToken)
	s := okResult(t, r, "find", "query_class", `{"class_name":"_User","order":"username"}`)
	if !strings.Contains(s, aliceEmail) || strings.Contains(s, bobEmail) || !strings.Contains(s, `"bob"`) {
		t.Errorf("query_class _User as alice: %s", s)
	}
	if s := okResult(t, r, "get-own", "get_object", `{"class_name":"_User","object_id":"`+demo.UserAliceID+`"}`); !strings.Contains(s, aliceEmail) || strings.Contains(s, "_hashed_password") {
		t.Errorf("own row: %s", s)
	}
	if s := okResult(t, r, "get-bob", "get_object", `{"class_name":"_User","object_id":"`+demo.UserBobID+`"}`); strings.Contains(s, bobEmail) || !strings.Contains(s, `"bob"`) {
		t.Errorf("bob's row: %s", s)
	}
	if s := okResult(t, r, "gets", "get_objects", `{"class_name":"_User","ids":["`+demo.UserAliceID+`","`+demo.UserBobID+`"]}`); strings.Contains(s, bobEmail) || !strings.Contains(s, aliceEmail) {
		t.Errorf("get_objects: %s", s)
	}
	for _, p := range []struct{ id, tool, args string }{
		{"where", "count_objects", `{"class_name":"_User","where":{"email":"` + bobEmail + `"}}`},
		{"where-regex", "count_objects", `{"class_name":"_User","where":{"email":{"$regex":"^b"}}}`},
		{"where-or", "query_class", `{"class_name":"_User","where":{"$or":[{"username":"x"},{"email":{"$gt":"b"}}]}}`},
		{"keys", "query_class", `{"class_name":"_User","keys":["email"]}`},
		{"order", "query_class", `{"class_name":"_User","order":"-email"}`},
		{"distinct", "distinct", `{"class_name":"_User","field":"email"}`},
		{"group", "group_by", `{"class_name":"_User","field":"email"}`},
		{"export", "export_data", `{"class_name":"_User","columns":"username,email","format":"csv"}`},
		{"select", "count_objects", `{"class_name":"Song","where":{"title":{"$select":{"query":{"className":"_User","where":{}},"key":"email"}}}}`},
	} {
		toolError(t, r, p.id, p.tool, p.args, "access_denied", "protected_field")
	}
	// A pipeline cannot read it either (it is outside the visible fields).
	resp := aggRPC(r, "agg", "aggregate", `{"class_name":"_User","pipeline":[{"$group":{"_id":"$email"}}]}`)
	if res := obj(resp["result"]); resp["error"] == nil && (res == nil || res["isError"] != true) {
		t.Errorf("aggregate on email: %v", resp)
	}

	m := trustServer(t)
	if s := okResult(t, m, "master", "query_class", `{"class_name":"_User"}`); !strings.Contains(s, bobEmail) || !strings.Contains(s, aliceEmail) {
		t.Errorf("master posture: %s", s)
	}
	off := trustServer(t, "PARSE_MCP_SESSION_TOKEN="+demo.AliceSessionToken, policyEnv(t, "settings: {protected_fields: {}}\n"))
	if s := okResult(t, off, "off", "get_object", `{"class_name":"_User","object_id":"`+demo.UserBobID+`"}`); !strings.Contains(s, bobEmail) {
		t.Errorf("protected_fields {}: %s", s)
	}
}

// TestTrustCrossClassFieldRules (leak class 5): every cross-class operator
// and join checks the field rules of the class it reads — agent_fields,
// protectedFields and the internal floor — for the field it selects, the
// relation key it walks and the where it runs there.
func TestTrustCrossClassFieldRules(t *testing.T) {
	pol := policyFile(t, "playlist_artist_allowlists")
	r := startRaw(t, pol, "PARSE_MCP_SESSION_TOKEN="+demo.AliceSessionToken)
	r.initialize()
	rel := `{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"songs"}}`
	for _, c := range []struct{ id, tool, args, kind string }{
		{"relatedTo-key", "count_objects", `{"class_name":"Song","where":` + rel + `}`, "field_not_allowed"},
		{"relatedTo-key-in-or", "count_objects", `{"class_name":"Song","where":{"$or":[` + rel + `,{"title":"x"}]}}`, "field_not_allowed"},
		{"relation-owner-where", "count_objects", `{"class_name":"Playlist","where":{"songs":{"__type":"Pointer","className":"Song","objectId":"s1"}}}`, "field_not_allowed"},
		{"inQuery-where", "count_objects", `{"class_name":"Album","where":{"artist":{"$inQuery":{"className":"Artist","where":{"country":"US"}}}}}`, "field_not_allowed"},
		{"notInQuery-where", "query_class", `{"class_name":"Album","where":{"artist":{"$notInQuery":{"className":"Artist","where":{"country":"US"}}}}}`, "field_not_allowed"},
		{"inQuery-nested-or", "count_objects", `{"class_name":"Album","where":{"artist":{"$inQuery":{"className":"Artist","where":{"$or":[{"name":"x"},{"formedAt":{"$exists":true}}]}}}}}`, "field_not_allowed"},
		{"select-key", "count_objects", `{"class_name":"Song","where":{"title":{"$select":{"query":{"className":"Artist","where":{}},"key":"country"}}}}`, "field_not_allowed"},
		{"dontSelect-key", "count_objects", `{"class_name":"Song","where":{"title":{"$dontSelect":{"query":{"className":"Artist"},"key":"country"}}}}`, "field_not_allowed"},
		{"select-where", "count_objects", `{"class_name":"Song","where":{"title":{"$select":{"query":{"className":"Artist","where":{"country":"US"}},"key":"name"}}}}`, "field_not_allowed"},
		{"select-protected-key", "count_objects", `{"class_name":"Song","where":{"title":{"$select":{"query":{"className":"_User","where":{}},"key":"email"}}}}`, "protected_field"},
		{"inQuery-protected-where", "count_objects", `{"class_name":"Invoice","where":{"customer":{"$inQuery":{"className":"_User","where":{"email":{"$regex":"^a"}}}}}}`, "protected_field"},
		{"distinct-where-inQuery", "distinct", `{"class_name":"Album","field":"title","where":{"artist":{"$inQuery":{"className":"Artist","where":{"country":"US"}}}}}`, "field_not_allowed"},
		{"group-where-select", "group_by", `{"class_name":"Song","field":"genre","where":{"title":{"$select":{"query":{"className":"Artist","where":{}},"key":"country"}}}}`, "field_not_allowed"},
		{"export-where-inQuery", "export_data", `{"class_name":"Album","format":"csv","where":{"artist":{"$inQuery":{"className":"Artist","where":{"country":"US"}}}}}`, "field_not_allowed"},
		{"lookup-pipeline-match", "aggregate", `{"class_name":"Album","pipeline":[{"$lookup":{"from":"Artist","let":{"a":"$artist"},"pipeline":[{"$match":{"country":"US"}}],"as":"x"}}]}`, "field_not_allowed"},
		{"lookup-foreignField", "aggregate", `{"class_name":"Album","pipeline":[{"$lookup":{"from":"Artist","localField":"title","foreignField":"country","as":"x"}}]}`, "field_not_allowed"},
		{"lookup-user-email", "aggregate", `{"class_name":"Invoice","pipeline":[{"$lookup":{"from":"_User","localField":"status","foreignField":"email","as":"x"}}]}`, ""},
	} {
		toolError(t, r, c.id, c.tool, c.args, "access_denied", c.kind)
	}
	// The internal floor of the other class is a security violation.
	for id, args := range map[string]string{
		"inQuery-floor":   `{"class_name":"Invoice","where":{"customer":{"$inQuery":{"className":"_User","where":{"_hashed_password":{"$exists":true}}}}}}`,
		"select-floor":    `{"class_name":"Song","where":{"title":{"$select":{"query":{"className":"_User","where":{}},"key":"_hashed_password"}}}}`,
		"relatedTo-floor": `{"class_name":"Song","where":{"$relatedTo":{"object":{"__type":"Pointer","className":"Playlist","objectId":"p1"},"key":"_rperm"}}}`,
		"lookup-floor":    `{"class_name":"Invoice","pipeline":[{"$lookup":{"from":"_User","localField":"status","foreignField":"_hashed_password","as":"x"}}]}`,
	} {
		tool := "count_objects"
		if strings.HasPrefix(id, "lookup") {
			tool = "aggregate"
		}
		violation(t, r, id, tool, args)
	}
	// Allowed fields of the other class still work.
	okResult(t, r, "inQuery-allowed", "count_objects", `{"class_name":"Album","where":{"artist":{"$inQuery":{"className":"Artist","where":{"name":{"$exists":true}}}}}}`)
	okResult(t, r, "select-allowed", "count_objects", `{"class_name":"Song","where":{"title":{"$select":{"query":{"className":"Artist","where":{}},"key":"name"}}}}`)
}

// TestTrustResourceBounds (leak class 7): regex safety in every where and
// pipeline position of every tool, caps on logical branches, list lengths
// and constraint nodes, and the streaming byte accounting of distinct and
// group_by (refused while reading, before the values are all held).
func TestTrustResourceBounds(t *testing.T) {
	r := trustServer(t)
	regexes := map[string]string{
		"nested":      `{"title":{"$regex":"^(a+)+$"}}`,
		"polynomial":  `{"title":{"$regex":".*a.*b.*c"}}`,
		"alternation": `{"title":{"$regex":"(a|aa)*$"}}`,
		"in-or":       `{"$or":[{"title":"x"},{"title":{"$regex":"(\\w+)*!"}}]}`,
		"options":     `{"title":{"$regex":"a","$options":"s"}}`,
	}
	for name, w := range regexes {
		for _, p := range []struct{ tool, args string }{
			{"query_class", `{"class_name":"Song","where":` + w + `}`},
			{"count_objects", `{"class_name":"Song","where":` + w + `}`},
			{"distinct", `{"class_name":"Song","field":"genre","where":` + w + `}`},
			{"group_by", `{"class_name":"Song","field":"genre","where":` + w + `}`},
			{"export_data", `{"class_name":"Song","format":"csv","where":` + w + `}`},
			{"explain_query", `{"class_name":"Song","where":` + w + `}`},
			{"aggregate", `{"class_name":"Song","pipeline":[{"$match":` + w + `}]}`},
			{"aggregate", `{"class_name":"Song","pipeline":[{"$facet":{"a":[{"$match":` + w + `}]}}]}`},
			{"count_objects", `{"class_name":"Album","where":{"artist":{"$inQuery":{"className":"Artist","where":` + strings.ReplaceAll(w, "title", "name") + `}}}}`},
		} {
			violation(t, r, name+"/"+p.tool, p.tool, p.args)
		}
	}
	for _, op := range []string{"$regexMatch", "$regexFind", "$regexFindAll"} {
		violation(t, r, op, "aggregate", `{"class_name":"Song","pipeline":[{"$addFields":{"m":{"`+op+`":{"input":"$title","regex":".+.+.+"}}}}]}`)
	}
	// Polynomial shapes found by normalising before counting (their own
	// server: the calls above use up a rate-limit window).
	r2 := trustServer(t)
	for name, re := range map[string]string{
		"bounded-large": `.{0,200}.{0,200}.{0,200}.{0,200}z`,
		"group-atom":    `(?:.)*(?:.)*(?:.)*(?:.)*z`,
		"posix":         `[[:alpha:]]*[[:alpha:]]*[[:alpha:]]*z`,
		"unicode":       `\\p{L}*\\p{L}*\\p{L}*z`,
		"literals":      `e*e*e*e*e*e*e*e*z`,
	} {
		violation(t, r2, name+"/where", "count_objects", `{"class_name":"Song","where":{"title":{"$regex":"`+re+`"}}}`)
		violation(t, r2, name+"/match", "aggregate", `{"class_name":"Song","pipeline":[{"$match":{"title":{"$regex":"`+re+`"}}}]}`)
		violation(t, r2, name+"/regexMatch", "aggregate", `{"class_name":"Song","pipeline":[{"$addFields":{"m":{"$regexMatch":{"input":"$title","regex":"`+re+`"}}}}]}`)
	}
	okResult(t, r2, "ordinary-regex", "count_objects", `{"class_name":"Song","where":{"title":{"$regex":"^\\d{1,3}\\.\\d{1,3}|a+b+c+d+|\\.+\\.+\\.+"}}}`)
	many := func(n int, el string) string { return "[" + strings.TrimSuffix(strings.Repeat(el+",", n), ",") + "]" }
	for id, args := range map[string]string{
		"or-branches":   `{"class_name":"Song","where":{"$or":` + many(101, `{"genre":"rock"}`) + `}}`,
		"nor-branches":  `{"class_name":"Song","where":{"$nor":` + many(101, `{"genre":"rock"}`) + `}}`,
		"in-values":     `{"class_name":"Song","where":{"genre":{"$in":` + many(1001, `"rock"`) + `}}}`,
		"all-values":    `{"class_name":"Song","where":{"tags":{"$all":` + many(1001, `"x"`) + `}}}`,
		"nodes":         `{"class_name":"Song","where":{"$or":` + many(6, `{"genre":{"$nin":`+many(990, `"x"`)+`}}`) + `}}`,
		"sub-in-values": `{"class_name":"Album","where":{"artist":{"$inQuery":{"className":"Artist","where":{"name":{"$in":` + many(1001, `"x"`) + `}}}}}}`,
	} {
		toolError(t, r, id, "count_objects", args, "invalid_query", "")
	}
	toolError(t, r, "agg-in-values", "aggregate", `{"class_name":"Song","pipeline":[{"$match":{"genre":{"$in":`+many(1001, `"rock"`)+`}}}]}`, "invalid_query", "")
	for _, tool := range []string{"distinct", "group_by"} {
		msg := toolError(t, r, tool+"-bytes", tool, `{"class_name":"Blob","field":"big"}`, "invalid_query", "")
		if msg != "" && !strings.Contains(msg, "exceed the 4194304-byte response cap after") {
			t.Errorf("%s over the cap: %s", tool, msg)
		}
	}
	// Under the cap they answer.
	okResult(t, r, "distinct-small", "distinct", `{"class_name":"Blob","field":"kind"}`)
	okResult(t, r, "in-at-limit", "count_objects", `{"class_name":"Song","where":{"genre":{"$in":`+many(1000, `"rock"`)+`}}}`)
}

// TestTrustAggregateCompactsGroupKeys: pointer values computed by a
// pipeline — a $group key, a top-level computed value — are pointers in the
// answer (compacted with pointer_classes, or REST pointers with
// shape "rest"), like group_by keys, never "Class$id" storage strings.
func TestTrustAggregateCompactsGroupKeys(t *testing.T) {
	r := trustServer(t)
	for _, shape := range []string{"", `,"shape":"rest"`} {
		s := okResult(t, r, "group"+shape, "aggregate", `{"class_name":"Song"`+shape+`,"pipeline":[{"$group":{"_id":"$artist","n":{"$sum":1}}},{"$limit":3}]}`)
		if strings.Contains(s, "Artist$") {
			t.Errorf("storage-form pointers in the answer (%s): %s", shape, s)
		}
		if shape == "" && !strings.Contains(s, `"pointer_classes"`) {
			t.Errorf("no pointer_classes: %s", s)
		}
		if shape != "" && !strings.Contains(s, `"__type":"Pointer","className":"Artist"`) {
			t.Errorf("rest shape: %s", s)
		}
	}
}
