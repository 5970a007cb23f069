package pipeline_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/policy/pipeline"
)

// The pipeline validator's world: Song (pointers, dates, canonical filter),
// an allowlisted class (Patient), a hidden class (VaultSecret) and the
// system classes.

func pipeSchema() *parsedb.Schema {
	docs := []bson.M{
		{"_id": "_User", "username": "string", "email": "string"},
		{"_id": "_Role", "name": "string"},
		{"_id": "_Session", "user": "*_User", "sessionToken": "string"},
		{"_id": "_Installation", "deviceType": "string"},
		{"_id": "Artist", "name": "string", "country": "string", "parent": "*Artist"},
		{"_id": "Album", "title": "string", "artist": "*Artist"},
		{"_id": "Song", "title": "string", "genre": "string", "plays": "number", "archived": "boolean",
			"artist": "*Artist", "album": "*Album", "releasedAt": "date", "tags": "array", "meta": "object", "likes": "relation<_User>"},
		{"_id": "Patient", "name": "string", "age": "number", "ssn": "string", "doctor": "*_User"},
		{"_id": "VaultSecret", "apiKey": "string"},
		{"_id": "AuditLog", "action": "string", "secret": "*VaultSecret"},
		{"_id": "Scoped", "orgId": "string", "name": "string"},
	}
	s := &parsedb.Schema{Classes: map[string]*parsedb.Class{}}
	for _, d := range docs {
		c := parsedb.ClassFromSchemaDoc(d)
		s.Classes[c.Name] = c
	}
	return s
}

const pipePolicyYAML = `
classes:
  Song:
    canonical_filter: {archived: {$ne: true}}
  Patient:
    agent_fields: [name, age, doctor]
  Scoped:
    tenant_scope: {field: orgId}
  VaultSecret: {hidden: true}
`

func pipeEngine(t testing.TB, mod func(*config.Config)) *policy.Engine {
	t.Helper()
	f, err := policy.Parse([]byte(pipePolicyYAML), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	if mod != nil {
		mod(cfg)
	}
	return policy.New(cfg, f, zerolog.New(io.Discard))
}

func decodePipeline(t testing.TB, s string) []any {
	t.Helper()
	var p []any
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatalf("bad test pipeline %s: %v", s, err)
	}
	return p
}

// pipeOutcome classifies a validator result: "ok", "violation", an error
// code, or "access_denied:<kind>" (the tools' table tests use the same).
var pipeOutcome = parsetest.Outcome

func validatePipe(t testing.TB, e *policy.Engine, class, pipeline string) (pipeline.Validated, error) {
	t.Helper()
	s := pipeSchema()
	cls := s.Class(class)
	if cls == nil {
		t.Fatalf("no class %s", class)
	}
	return e.ValidatePipeline(context.Background(), s, cls, decodePipeline(t, pipeline))
}

type pipeCase struct {
	name, class, pipeline, want string
}

func runPipeCases(t *testing.T, e *policy.Engine, cases []pipeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class := c.class
			if class == "" {
				class = "Song"
			}
			_, err := validatePipe(t, e, class, c.pipeline)
			if got := pipeOutcome(err); got != c.want {
				t.Fatalf("%s\n got %s (%v)\nwant %s", c.pipeline, got, err, c.want)
			}
		})
	}
}

func TestValidatePipelineAttacks(t *testing.T) {
	long := strings.Repeat("é", 257) // characters, as in where
	deep := `{"$match":` + strings.Repeat(`{"$and":[`, 10) + `{"title":"x"}` + strings.Repeat(`]}`, 10) + `}`
	var many []string
	for range 21 {
		many = append(many, `{"$match":{"genre":"rock"}}`)
	}
	manyStages := "[" + strings.Join(many, ",") + "]"
	cases := []pipeCase{
		// Blocked stages and operators, at any depth.
		{"$out", "", `[{"$match":{}},{"$out":"stolen"}]`, "violation"},
		{"$merge", "", `[{"$merge":{"into":"x"}}]`, "violation"},
		{"$where in $match", "", `[{"$match":{"$where":"sleep(1000)"}}]`, "violation"},
		{"$function in $addFields", "", `[{"$addFields":{"x":{"$function":{"body":"function(){}","args":[],"lang":"js"}}}}]`, "violation"},
		{"$accumulator in $group", "", `[{"$group":{"_id":null,"x":{"$accumulator":{"init":"function(){}"}}}}]`, "violation"},
		{"$out inside $facet", "", `[{"$facet":{"a":[{"$match":{}}],"b":[{"$out":"x"}]}}]`, "violation"},
		{"$merge inside $lookup.pipeline", "", `[{"$lookup":{"from":"Artist","pipeline":[{"$merge":{"into":"x"}}],"as":"a"}}]`, "violation"},
		{"$function inside $unionWith.pipeline", "", `[{"$unionWith":{"coll":"Artist","pipeline":[{"$set":{"x":{"$function":{}}}}]}}]`, "violation"},
		{"$out deep in $facet/$lookup", "", `[{"$facet":{"a":[{"$lookup":{"from":"Artist","pipeline":[{"$facet":{"z":[{"$out":"x"}]}}],"as":"q"}}]}}]`, "violation"},
		{"$function in $match $expr", "", `[{"$match":{"$expr":{"$function":{"body":"x","args":[],"lang":"js"}}}}]`, "violation"},
		{"$collMod", "", `[{"$collMod":{}}]`, "violation"},
		{"$createIndex", "", `[{"$createIndex":{}}]`, "violation"},
		{"$dropIndex", "", `[{"$dropIndex":{}}]`, "violation"},
		{"$planCacheSetFilter", "", `[{"$planCacheSetFilter":{}}]`, "violation"},
		{"$planCacheClear", "", `[{"$planCacheClear":{}}]`, "violation"},
		{"$search (Atlas)", "", `[{"$search":{"text":{"query":"x","path":"title"}}}]`, "violation"},
		{"$searchMeta (Atlas)", "", `[{"$searchMeta":{}}]`, "violation"},
		{"$vectorSearch (Atlas)", "", `[{"$vectorSearch":{}}]`, "violation"},

		// Size and shape.
		{"empty pipeline", "", `[]`, "invalid_query"},
		{"21 stages", "", manyStages, "invalid_query"},
		{"21 stages in a $facet branch", "", `[{"$facet":{"a":` + manyStages + `}}]`, "invalid_query"},
		{"nesting > 20", "", `[` + deep + `]`, "violation"},
		{"unknown stage", "", `[{"$foo":{}}]`, "invalid_query"},
		{"$currentOp", "", `[{"$currentOp":{}}]`, "invalid_query"},
		{"$collStats", "", `[{"$collStats":{}}]`, "invalid_query"},
		{"$documents in $lookup", "", `[{"$lookup":{"from":"Artist","pipeline":[{"$documents":[{"a":1}]}],"as":"x"}}]`, "invalid_query"},
		{"$geoNear", "", `[{"$geoNear":{}}]`, "invalid_query"},
		{"two operators in a stage", "", `[{"$match":{},"$limit":1}]`, "invalid_query"},
		{"stage not an object", "", `["$match"]`, "invalid_query"},

		// Internal-field floor: keys, references, outputs.
		{"$match on _hashed_password", "_User", `[{"$match":{"_hashed_password":{"$exists":true}}}]`, "violation"},
		{"$match on _rperm in $or", "", `[{"$match":{"$or":[{"_rperm":"*"},{"genre":"x"}]}}]`, "violation"},
		{"$match on authData path", "_User", `[{"$match":{"authData.github.id":"1"}}]`, "violation"},
		{"$match on _auth_data_github", "_User", `[{"$match":{"_auth_data_github.id":"1"}}]`, "violation"},
		{"$match on sessionToken", "_Session", `[{"$match":{"sessionToken":"r:x"}}]`, "violation"},
		{"$project ref $_hashed_password", "_User", `[{"$project":{"pw":"$_hashed_password"}}]`, "violation"},
		{"$project ref $_auth_data_github", "_User", `[{"$project":{"x":"$_auth_data_github"}}]`, "violation"},
		{"$project ref $sessionToken", "_Session", `[{"$project":{"t":"$sessionToken"}}]`, "violation"},
		{"$project ref $$ROOT._hashed_password", "_User", `[{"$project":{"x":"$$ROOT._hashed_password"}}]`, "violation"},
		{"$group _id $_hashed_password", "_User", `[{"$group":{"_id":"$_hashed_password"}}]`, "violation"},
		{"$group $push $_session_token", "_Session", `[{"$group":{"_id":null,"t":{"$push":"$_session_token"}}}]`, "violation"},
		{"$addFields $concat $_hashed_password", "_User", `[{"$addFields":{"a":{"$concat":["$_hashed_password",""]}}}]`, "violation"},
		{"$replaceRoot object with $_hashed_password", "_User", `[{"$replaceRoot":{"newRoot":{"p":"$_hashed_password"}}}]`, "violation"},
		{"$replaceRoot $_auth_data_github", "_User", `[{"$replaceRoot":{"newRoot":"$_auth_data_github"}}]`, "violation"},
		{"$replaceWith $authData", "_User", `[{"$replaceWith":"$authData"}]`, "violation"},
		{"$sort on _hashed_password", "_User", `[{"$sort":{"_hashed_password":1}}]`, "violation"},
		{"$unwind $_password_history", "_User", `[{"$unwind":"$_password_history"}]`, "violation"},
		{"$lookup foreignField _hashed_password (oracle)", "", `[{"$lookup":{"from":"_User","localField":"title","foreignField":"_hashed_password","as":"u"}}]`, "violation"},
		{"$graphLookup connectToField _session_token", "", `[{"$graphLookup":{"from":"_User","startWith":"$title","connectFromField":"username","connectToField":"_session_token","as":"u"}}]`, "violation"},
		{"$lookup sub-pipeline ref", "", `[{"$lookup":{"from":"_User","pipeline":[{"$project":{"h":"$_hashed_password"}}],"as":"u"}}]`, "violation"},
		{"$lookup let ref", "", `[{"$lookup":{"from":"_User","let":{"h":"$$ROOT._rperm"},"pipeline":[{"$match":{}}],"as":"u"}}]`, "violation"},
		{"literal string ref in $match value", "", `[{"$match":{"title":"$_rperm"}}]`, "violation"},
		{"$literal of a floor ref", "", `[{"$project":{"x":{"$literal":"$_hashed_password"}}}]`, "violation"},
		{"output named _rperm ($addFields)", "", `[{"$addFields":{"_rperm":["*"]}}]`, "violation"},
		{"output named _hashed_password ($group)", "", `[{"$group":{"_id":null,"_hashed_password":{"$sum":1}}}]`, "violation"},
		{"output named _acl ($project)", "", `[{"$project":{"_acl":"$title"}}]`, "violation"},
		{"$project exclusion of _rperm", "", `[{"$project":{"_rperm":0}}]`, "violation"},
		{"$count named _wperm", "", `[{"$count":"_wperm"}]`, "violation"},
		{"$lookup as _hashed_password", "", `[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"_hashed_password"}}]`, "violation"},
		{"$unwind includeArrayIndex _tombstone", "", `[{"$unwind":{"path":"$tags","includeArrayIndex":"_tombstone"}}]`, "violation"},
		{"$getField _hashed_password", "_User", `[{"$project":{"x":{"$getField":"_hashed_password"}}}]`, "violation"},
		{"$getField computed name", "_User", `[{"$project":{"x":{"$getField":{"field":{"$concat":["_hashed","_password"]},"input":"$$ROOT"}}}}]`, "violation"},
		{"$getField literal floor name", "_User", `[{"$project":{"x":{"$getField":{"field":{"$literal":"_rperm"},"input":"$$CURRENT"}}}}]`, "violation"},
		{"$setField floor name", "_User", `[{"$replaceWith":{"$setField":{"field":"_rperm","input":"$$ROOT","value":["*"]}}}]`, "violation"},

		{"$jsonSchema patternProperties", "_User", `[{"$match":{"$jsonSchema":{"patternProperties":{"^_hash":{"pattern":"^x"}}}}}]`, "violation"},
		{"$jsonSchema required", "_User", `[{"$match":{"$jsonSchema":{"required":["_auth_data_github"]}}}]`, "violation"},
		{"$expr in restrictSearchWithMatch", "", `[{"$graphLookup":{"from":"_User","startWith":"$title","connectFromField":"username","connectToField":"username","as":"u","restrictSearchWithMatch":{"$expr":{"$gt":[{"$size":{"$objectToArray":"$$ROOT"}},3]}}}}]`, "invalid_query"},

		// Regex.
		{"$regex > 256 characters", "", `[{"$match":{"title":{"$regex":"` + long + `"}}}]`, "violation"},
		{"$regexMatch > 256 characters", "", `[{"$match":{"$expr":{"$regexMatch":{"input":"$title","regex":"` + long + `"}}}}]`, "violation"},

		// Joins.
		{"$lookup into hidden class", "", `[{"$lookup":{"from":"VaultSecret","localField":"title","foreignField":"apiKey","as":"s"}}]`, "invalid_argument"},
		{"$graphLookup into hidden class", "", `[{"$graphLookup":{"from":"VaultSecret","startWith":"$title","connectFromField":"apiKey","connectToField":"apiKey","as":"s"}}]`, "invalid_argument"},
		{"$unionWith hidden class (string)", "", `[{"$unionWith":"VaultSecret"}]`, "invalid_argument"},
		{"$unionWith hidden class ({coll})", "", `[{"$unionWith":{"coll":"VaultSecret","pipeline":[]}}]`, "invalid_argument"},
		{"hidden class inside $facet", "", `[{"$facet":{"a":[{"$lookup":{"from":"VaultSecret","pipeline":[],"as":"s"}}]}}]`, "invalid_argument"},
		{"hidden class inside $lookup.pipeline", "", `[{"$lookup":{"from":"Artist","pipeline":[{"$lookup":{"from":"VaultSecret","pipeline":[],"as":"s"}}],"as":"a"}}]`, "invalid_argument"},
		{"hidden class inside $unionWith.pipeline", "", `[{"$unionWith":{"coll":"Artist","pipeline":[{"$unionWith":"VaultSecret"}]}}]`, "invalid_argument"},
		{"$lookup into _SCHEMA", "", `[{"$lookup":{"from":"_SCHEMA","pipeline":[],"as":"s"}}]`, "violation"},
		{"$lookup into _Hooks", "", `[{"$lookup":{"from":"_Hooks","pipeline":[],"as":"s"}}]`, "violation"},
		{"$lookup into _Join:users:_Role", "", `[{"$lookup":{"from":"_Join:users:_Role","pipeline":[],"as":"s"}}]`, "violation"},
		{"$unionWith _GlobalConfig", "", `[{"$unionWith":"_GlobalConfig"}]`, "violation"},
		{"$graphLookup into _Idempotency", "", `[{"$graphLookup":{"from":"_Idempotency","startWith":"$title","connectFromField":"a","connectToField":"b","as":"s"}}]`, "violation"},
		{"$lookup into _Product", "", `[{"$lookup":{"from":"_Product","pipeline":[],"as":"s"}}]`, "violation"},
		{"$lookup into unknown _ class", "", `[{"$lookup":{"from":"_Custom","pipeline":[],"as":"s"}}]`, "violation"},
		{"$lookup from a collection path", "", `[{"$lookup":{"from":"a.b","pipeline":[],"as":"s"}}]`, "violation"},
		{"$lookup from non-string", "", `[{"$lookup":{"from":{"db":"admin","coll":"system.users"},"pipeline":[],"as":"s"}}]`, "invalid_query"},
		{"$lookup from unknown class", "", `[{"$lookup":{"from":"Artsit","pipeline":[],"as":"s"}}]`, "invalid_argument"},

		// agent_fields allowlist (Patient: name, age, doctor).
		{"allowlisted class $project ssn", "Patient", `[{"$project":{"ssn":1}}]`, "access_denied:field_not_allowed"},
		{"allowlisted class $match ssn", "Patient", `[{"$match":{"ssn":"123"}}]`, "access_denied:field_not_allowed"},
		{"allowlisted class $group on ssn", "Patient", `[{"$group":{"_id":"$ssn","n":{"$sum":1}}}]`, "access_denied:field_not_allowed"},
		{"allowlisted class $sort on ssn", "Patient", `[{"$sort":{"ssn":1}}]`, "access_denied:field_not_allowed"},
		{"allowlisted class $expr on ssn", "Patient", `[{"$match":{"$expr":{"$eq":["$ssn","1"]}}}]`, "access_denied:field_not_allowed"},
		{"allowlisted class $$ROOT.ssn", "Patient", `[{"$project":{"x":"$$ROOT.ssn"}}]`, "access_denied:field_not_allowed"},
		{"allowlisted class $getField ssn", "Patient", `[{"$project":{"x":{"$getField":"ssn"}}}]`, "access_denied:field_not_allowed"},
		{"joined allowlisted class: sub-pipeline", "", `[{"$lookup":{"from":"Patient","pipeline":[{"$match":{"ssn":"1"}}],"as":"p"}}]`, "access_denied:field_not_allowed"},
		{"joined allowlisted class: foreignField", "", `[{"$lookup":{"from":"Patient","localField":"title","foreignField":"ssn","as":"p"}}]`, "access_denied:field_not_allowed"},
		{"forward pass: source field after $project", "Patient", `[{"$project":{"name":1}},{"$match":{"age":{"$gt":3}}}]`, "access_denied:field_not_allowed"},
		{"forward pass: source field after $group", "Patient", `[{"$group":{"_id":"$doctor","n":{"$sum":1}}},{"$sort":{"age":1}}]`, "access_denied:field_not_allowed"},
		{"forward pass: facet branch from parent", "Patient", `[{"$group":{"_id":"$name","c":{"$sum":1}}},{"$facet":{"a":[{"$match":{"age":1}}]}}]`, "access_denied:field_not_allowed"},
		{"forward pass: facet branch ssn", "Patient", `[{"$facet":{"a":[{"$match":{"age":1}}],"b":[{"$group":{"_id":"$ssn"}}]}}]`, "access_denied:field_not_allowed"},
		{"forward pass: after $count", "Patient", `[{"$count":"n"},{"$project":{"name":1}}]`, "access_denied:field_not_allowed"},

		// Storage-form names.
		{"$group on $_p_artist", "", `[{"$group":{"_id":"$_p_artist","n":{"$sum":1}}}]`, "access_denied:storage_form_field_ref"},
		{"$match on _p_artist", "", `[{"$match":{"_p_artist":"Artist$a1"}}]`, "access_denied:storage_form_field_ref"},
		{"$sort on _created_at", "", `[{"$sort":{"_created_at":-1}}]`, "access_denied:storage_form_field_ref"},
		{"other _ storage column", "_User", `[{"$project":{"x":"$_password_changed_at"}}]`, "access_denied:field_not_allowed"},

		// Parse-only operators in $match.
		{"$inQuery in $match", "", `[{"$match":{"artist":{"$inQuery":{"className":"Artist","where":{}}}}}]`, "invalid_query"},
		{"$relatedTo in $match", "", `[{"$match":{"$relatedTo":{"object":{},"key":"x"}}}]`, "invalid_query"},

		// Pointers and relations.
		{"dotted path into a pointer", "", `[{"$group":{"_id":"$artist.name"}}]`, "invalid_query"},
		{"relation field", "", `[{"$project":{"n":{"$size":"$likes"}}}]`, "invalid_query"},

		// Shape errors.
		{"$group without _id", "", `[{"$group":{"n":{"$sum":1}}}]`, "invalid_query"},
		{"$limit not a number", "", `[{"$limit":"10"}]`, "invalid_query"},
		{"$lookup without as", "", `[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId"}}]`, "invalid_query"},
	}
	runPipeCases(t, pipeEngine(t, nil), cases)
}

func TestValidatePipelineAccepts(t *testing.T) {
	regex256 := strings.Repeat("é", 256) // 512 bytes, 256 characters: the where cap
	cases := []pipeCase{
		{"match group sort limit", "", `[{"$match":{"genre":"rock","plays":{"$gt":10}}},{"$group":{"_id":"$artist","n":{"$sum":1},"p":{"$avg":"$plays"}}},{"$sort":{"n":-1}},{"$limit":10}]`, "ok"},
		{"objectId createdAt", "", `[{"$match":{"objectId":{"$in":["a","b"]},"createdAt":{"$gte":{"__type":"Date","iso":"2020-01-01T00:00:00Z"}}}},{"$sort":{"createdAt":-1}}]`, "ok"},
		{"_id is fine", "", `[{"$match":{"_id":"a"}},{"$group":{"_id":"$_id"}}]`, "ok"},
		{"$unset of an internal field is harmless", "_User", `[{"$unset":["_rperm","_hashed_password"]}]`, "ok"},
		{"$project exclusion", "", `[{"$project":{"meta":0,"tags":0}}]`, "ok"},
		{"$lookup pointer to objectId", "", `[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},{"$unwind":"$a"},{"$project":{"title":1,"a.name":1}}]`, "ok"},
		{"$lookup into _User", "", `[{"$lookup":{"from":"_User","pipeline":[{"$project":{"username":1}}],"as":"u"}}]`, "ok"},
		{"$lookup into _Role and _Installation", "", `[{"$lookup":{"from":"_Role","pipeline":[],"as":"r"}},{"$unionWith":"_Installation"}]`, "ok"},
		{"$lookup into _Session (master posture)", "", `[{"$lookup":{"from":"_Session","pipeline":[],"as":"s"}}]`, "ok"},
		{"$graphLookup", "", `[{"$graphLookup":{"from":"Artist","startWith":"$artist","connectFromField":"parent","connectToField":"objectId","as":"tree","maxDepth":3,"depthField":"d","restrictSearchWithMatch":{"country":"FR"}}}]`, "ok"},
		{"$facet $bucket $sortByCount", "", `[{"$facet":{"g":[{"$sortByCount":"$genre"}],"b":[{"$bucket":{"groupBy":"$plays","boundaries":[0,100,1000],"default":"other","output":{"n":{"$sum":1}}}}],"a":[{"$bucketAuto":{"groupBy":"$plays","buckets":4}}]}}]`, "ok"},
		{"$replaceRoot then refs", "", `[{"$replaceRoot":{"newRoot":"$meta"}},{"$match":{"source":"x"}}]`, "ok"},
		{"$count", "", `[{"$match":{"genre":"rock"}},{"$count":"n"}]`, "ok"},
		{"$sample $skip $redact", "", `[{"$sample":{"size":5}},{"$skip":1},{"$redact":"$$KEEP"}]`, "ok"},
		{"$$ROOT and $getField", "", `[{"$project":{"doc":"$$ROOT","t":{"$getField":"title"}}}]`, "ok"},
		{"$map with variables", "", `[{"$project":{"t":{"$map":{"input":{"$split":["$title"," "]},"as":"x","in":{"$toUpper":"$$x"}}}}}]`, "ok"},
		{"regex of 256 characters", "", `[{"$match":{"title":{"$regex":"` + regex256 + `"}}}]`, "ok"},
		{"$set then ref", "", `[{"$set":{"_tmp":"$plays"}},{"$match":{"_tmp":{"$gt":1}}}]`, "ok"},
		{"allowlisted: $group output usable downstream", "Patient", `[{"$group":{"_id":"$doctor","n":{"$sum":1},"avgAge":{"$avg":"$age"}}},{"$match":{"n":{"$gt":1}}},{"$sort":{"avgAge":-1}}]`, "ok"},
		{"allowlisted: $addFields output", "Patient", `[{"$addFields":{"x":"$age"}},{"$project":{"x":1,"name":1}},{"$match":{"x":2}}]`, "ok"},
		{"allowlisted: facet from parent", "Patient", `[{"$group":{"_id":"$name","c":{"$sum":1}}},{"$facet":{"a":[{"$match":{"c":1}}],"b":[{"$count":"n"}]}}]`, "ok"},
		{"allowlisted: $lookup as usable", "Patient", `[{"$lookup":{"from":"_User","localField":"doctor","foreignField":"objectId","as":"doc"}},{"$unwind":"$doc"},{"$project":{"doc.username":1,"name":1}}]`, "ok"},
		{"allowlisted: objectId/createdAt", "Patient", `[{"$sort":{"createdAt":-1}},{"$project":{"objectId":1,"createdAt":1,"age":1}}]`, "ok"},
	}
	runPipeCases(t, pipeEngine(t, nil), cases)
}

func TestValidatePipelineSessionPosture(t *testing.T) {
	scoped := pipeEngine(t, func(c *config.Config) { c.ACLRole = "Admin" })
	_, err := validatePipe(t, scoped, "Song", `[{"$lookup":{"from":"_Session","pipeline":[],"as":"s"}}]`)
	if got := pipeOutcome(err); got != "invalid_argument" {
		t.Fatalf("_Session join for a scoped identity: %s (%v)", got, err)
	}
}

func TestValidatePipelineTenantJoin(t *testing.T) {
	e := pipeEngine(t, func(c *config.Config) { c.TenantID = "org_north" })
	for _, p := range []string{
		`[{"$lookup":{"from":"Artist","pipeline":[],"as":"a"}}]`,
		`[{"$unionWith":"Artist"}]`,
		`[{"$graphLookup":{"from":"Artist","startWith":"$name","connectFromField":"name","connectToField":"name","as":"a"}}]`,
		`[{"$facet":{"x":[{"$lookup":{"from":"Artist","pipeline":[],"as":"a"}}]}}]`,
	} {
		_, err := validatePipe(t, e, "Scoped", p)
		if got := pipeOutcome(err); got != "access_denied:tenant_join_denied" {
			t.Errorf("%s: %s (%v)", p, got, err)
		}
	}
	// Into a tenant-scoped class from an unscoped one.
	_, err := validatePipe(t, e, "Song", `[{"$lookup":{"from":"Scoped","pipeline":[],"as":"s"}}]`)
	if got := pipeOutcome(err); got != "access_denied:tenant_join_denied" {
		t.Errorf("join into tenant-scoped class: %s (%v)", got, err)
	}
}

func TestValidatePipelineDetails(t *testing.T) {
	e := pipeEngine(t, nil)
	_, err := validatePipe(t, e, "Song", `[{"$group":{"_id":"$_p_artist"}}]`)
	te, _ := toolerror.As(err)
	if te == nil || te.Details.SuggestedRewrite != "$artist" || te.Details.DeniedField != "_p_artist" {
		t.Fatalf("storage form details: %+v", te)
	}
	_, err = validatePipe(t, e, "Song", `[{"$match":{"_p_album":"Album$x"}}]`)
	if te, _ = toolerror.As(err); te == nil || te.Details.SuggestedRewrite != "album" {
		t.Fatalf("storage form key details: %+v", te)
	}
	_, err = validatePipe(t, e, "Patient", `[{"$project":{"ssn":1}}]`)
	te, _ = toolerror.As(err)
	if te == nil || te.Details.DeniedField != "ssn" || strings.Join(te.Details.AllowedFields, ",") != "name,age,doctor" {
		t.Fatalf("field_not_allowed details: %+v", te)
	}
	_, err = validatePipe(t, e, "Patient", `[{"$group":{"_id":"$doctor","n":{"$sum":1}}},{"$match":{"ssn":1}}]`)
	te, _ = toolerror.As(err)
	if te == nil || strings.Join(te.Details.AllowedFields, ",") != "_id,n" {
		t.Fatalf("allowed_fields after $group: %+v", te)
	}
	// Violations never carry the forbidden name to the client.
	_, err = validatePipe(t, e, "_User", `[{"$project":{"pw":"$_hashed_password"}}]`)
	if v, ok := toolerror.AsViolation(err); !ok || v == nil {
		t.Fatalf("want a violation, got %v", err)
	}
}

func TestValidatePipelineJoins(t *testing.T) {
	vp, err := validatePipe(t, pipeEngine(t, nil), "Song", `[
		{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},
		{"$facet":{"x":[{"$unionWith":{"coll":"Album","pipeline":[{"$lookup":{"from":"Artist","pipeline":[],"as":"b"}}]}}]}},
		{"$graphLookup":{"from":"_User","startWith":"$title","connectFromField":"username","connectToField":"username","as":"u"}}]`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range vp.Joins {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "Artist,Album,_User" {
		t.Fatalf("joins = %s", got)
	}
}

func TestValidatePipelineOrderedInput(t *testing.T) {
	// Stages decoded with their key order (bson.D), as the tools do.
	p := []any{
		bson.D{{Key: "$match", Value: bson.D{{Key: "genre", Value: "rock"}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "plays", Value: json.Number("-1")}, {Key: "title", Value: json.Number("1")}}}},
		bson.D{{Key: "$limit", Value: json.Number("5")}},
	}
	s := pipeSchema()
	if _, err := pipeEngine(t, nil).ValidatePipeline(context.Background(), s, s.Class("Song"), p); err != nil {
		t.Fatal(err)
	}
	p = append(p, bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: "$_rperm"}}}})
	if _, err := pipeEngine(t, nil).ValidatePipeline(context.Background(), s, s.Class("Song"), p); pipeOutcome(err) != "violation" {
		t.Fatalf("ordered input: %v", err)
	}
}
