package tools

import "testing"

func TestDistinctPipelineGolden(t *testing.T) {
	d := aggDeps(t, nil)
	cases := []struct{ args, want string }{
		{`{"field":"genre"}`, `[` + matchAnd(archivedFilter, notHiddenRef("genre")) + `,{"$group":{"_id":"$genre"}},{"$sort":{"_id":1}},{"$limit":1001}]`},
		{`{"field":"tags","sort":"desc","limit":10}`, `[` + matchAnd(archivedFilter, notHiddenRef("tags+")) + `,{"$unwind":"$tags"},{"$group":{"_id":"$tags"}},{"$sort":{"_id":-1}},{"$limit":11}]`},
		{`{"field":"artist","sort":"none","where":{"genre":"rock"}}`, `[` + matchAnd(`{"$and":[{"genre":"rock","$and":[{"genre":`+groupHiddenRe+`}]},{"archived":{"$ne":true}}]}`, notHiddenRef("_p_artist")) + `,{"$group":{"_id":"$_p_artist"}},{"$limit":1001}]`},
	}
	for _, c := range cases {
		args := `{"class_name":"Song","dry_run":true,` + c.args[1:]
		if got := dryPipeline(t, d, handlerOf("distinct"), args); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.args, got, c.want)
		}
	}
}

func TestDistinctDryRunParameters(t *testing.T) {
	d := aggDeps(t, nil)
	m, err := aggCall(t, d, handlerOf("distinct"), `{"class_name":"Song","field":"tags","dry_run":true}`)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := m["parameters"].(map[string]any)
	if m["dry_run"] != true || params["field"] != "tags" || params["sort"] != "asc" || params["limit"] != float64(1000) {
		t.Fatalf("dry run: %v", m)
	}
}
