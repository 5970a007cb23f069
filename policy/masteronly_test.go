package policy

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// trustSchema is secSchema plus Parse's _Installation and a class pointing
// to it, for the master-only and protectedFields suites.
func trustSchema() *parsedb.Schema {
	s := secSchema()
	for _, d := range []bson.M{
		{"_id": "_Installation", "deviceToken": "string", "user": "*_User"},
		{"_id": "Device", "name": "string", "installation": "*_Installation"},
		{"_id": "GetOnly", "name": "string", "_metadata": bson.M{"class_permissions": bson.M{"get": bson.M{"*": true}, "find": bson.M{}, "count": bson.M{}}}},
	} {
		c := parsedb.ClassFromSchemaDoc(d)
		s.Classes[c.Name] = c
	}
	return s
}

// TestMasterOnlyClasses walks every read tool and every sub-read position
// (include, $inQuery/$select sub-query, pipeline join) over Parse's
// master-only classes, for every identity: _Installation find/count (and
// every sub-read, which Parse runs as a find) are master-only, get by id is
// not; the volatile system classes are refused to everyone but the master
// posture (and, being hidden by default, look missing even there).
func TestMasterOnlyClasses(t *testing.T) {
	schema := trustSchema()
	identities := map[string][]secOpt{
		"master":  nil,
		"user":    {withACLUser(secUserID)},
		"role":    {withACLRole("Moderator")},
		"session": {withSessionToken("r:tok")},
	}
	type tc struct {
		tool, class string
		scoped      string // outcome for a scoped identity
		master      string
	}
	var cases []tc
	for _, tool := range []string{"query_class", "count_objects", "aggregate", "group_by", "group_by_date", "distinct", "export_data", "get_sample_objects", "explain_query"} {
		cases = append(cases, tc{tool, "_Installation", "access_denied/master_only", "ok"})
	}
	for _, tool := range []string{"get_object", "get_objects"} {
		cases = append(cases, tc{tool, "_Installation", "ok", "ok"})
	}
	cases = append(cases, tc{"get_schema", "_Installation", "ok", "ok"})
	for _, c := range []string{"_PushStatus", "_JobStatus", "_JobSchedule", "_Hooks", "_GlobalConfig", "_GraphQLConfig", "_Idempotency", "_Audience"} {
		for _, tool := range []string{"query_class", "count_objects", "get_object"} {
			cases = append(cases, tc{tool, c, "invalid_argument", "invalid_argument"})
		}
	}
	for name, opts := range identities {
		e := secEngine(t, "", opts...)
		for _, c := range cases {
			_, err := e.ResolveClass(callCtx(e, c.tool, c.class), schema, c.class)
			want := c.scoped
			if name == "master" {
				want = c.master
			}
			if got := outcome(err); got != want {
				t.Errorf("%s %s %s: got %s (%v), want %s", name, c.tool, c.class, got, err, want)
			}
		}
		// Sub-reads from another class run as finds: include, $inQuery,
		// $select, $lookup/$unionWith into _Installation.
		wantSub := "access_denied/master_only"
		if name == "master" {
			wantSub = "ok"
		}
		for _, tool := range []string{"query_class", "get_object", "count_objects", "aggregate"} {
			ctx := callCtx(e, tool, "Device")
			if _, err := e.CheckInclude(ctx, schema, schema.Class("Device"), "installation"); outcome(err) != wantSub {
				t.Errorf("%s %s include installation: %s (%v), want %s", name, tool, outcome(err), err, wantSub)
			}
			if _, err := e.ResolveClass(ctx, schema, "_Installation"); outcome(err) != wantSub {
				t.Errorf("%s %s sub-query on _Installation: %s (%v), want %s", name, tool, outcome(err), err, wantSub)
			}
		}
		ctx := callCtx(e, "aggregate", "Device")
		for _, stage := range []map[string]any{
			{"$lookup": map[string]any{"from": "_Installation", "localField": "installation", "foreignField": "objectId", "as": "i"}},
			{"$unionWith": map[string]any{"coll": "_Installation"}},
			{"$unionWith": "_Installation"},
		} {
			_, err := e.ValidatePipeline(ctx, schema, schema.Class("Device"), []any{stage})
			if got := outcome(err); got != wantSub {
				t.Errorf("%s pipeline %v: %s (%v), want %s", name, stage, got, err, wantSub)
			}
		}
	}
	// Parse's wording, a count named as the find it is.
	e := secEngine(t, "", withACLUser(secUserID))
	_, err := e.ResolveClass(callCtx(e, "count_objects", "_Installation"), schema, "_Installation")
	if err == nil || err.Error() != "Clients aren't allowed to perform the find operation on the installation collection." {
		t.Fatalf("message: %v", err)
	}
	// Writes: delete is master-only too.
	if err := e.checkMasterOnly("_Installation", OpDelete); outcome(err) != "access_denied/master_only" {
		t.Fatalf("delete _Installation: %v", err)
	}
	if err := e.checkMasterOnly("_Installation", OpGet); err != nil {
		t.Fatalf("get _Installation: %v", err)
	}
}
