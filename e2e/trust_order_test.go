package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// TestTrustOrderOnObjectValues (hidden references, order): a whole Object
// value sorts member by member and a path inside one can be an embedded
// pointer, so a sorted read would order rows by the ids below — of hidden
// classes too. Ordering by a whole Object field is refused (query_class
// and export_data alike); ordering by an Array field or a path inside an
// Object field leaves out the rows whose key holds an embedded object
// (demo: Song.meta.credential is a Pointer object, into VaultSecret on one
// row and absent elsewhere).
func TestTrustOrderOnObjectValues(t *testing.T) {
	c := demoClient(t)
	for _, tool := range []string{"query_class", "export_data"} {
		for _, o := range []string{"meta", "-meta", "title,meta"} {
			msg := callErr(t, c, tool, map[string]any{"class_name": "Song", "order": o, "limit": 5}, "invalid_query")
			if !strings.Contains(msg, "meta is an Object field") {
				t.Errorf("%s order %s: %s", tool, o, msg)
			}
		}
	}
	for _, o := range []string{"meta.credential", "-meta.credential", "meta.credential.objectId"} {
		out := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "order": o, "keys": []any{"meta"}, "limit": 1000, "apply_canonical_filter": false})
		for _, r := range rowObjects(out, "results") {
			if cred, ok := obj(obj(r)["meta"])["credential"]; ok {
				t.Errorf("order %s: a row whose sort key is an embedded object was sorted: %v", o, cred)
			}
		}
	}
	// Sub-paths holding scalars and Arrays of scalars still sort.
	out := callOK(t, c, "query_class", map[string]any{"class_name": "Song", "order": "-tags", "keys": []any{"tags"}, "limit": 3})
	if len(rowObjects(out, "results")) != 3 {
		t.Errorf("order -tags: %v", out)
	}
	out = callOK(t, c, "query_class", map[string]any{"class_name": "Song", "order": "meta.bpm", "keys": []any{"meta"}, "limit": 3})
	if len(rowObjects(out, "results")) != 3 {
		t.Errorf("order meta.bpm: %v", out)
	}
}

// TestTrustPipelineWritesBelowOpaque: on the
// demo row whose meta.credential is a Pointer into the hidden VaultSecret,
// removing or overwriting the pointer's className (or __type) below the
// Object field used to make the row encoder show the bare hidden id. Every
// such stage is refused; the id never appears.
func TestTrustPipelineWritesBelowOpaque(t *testing.T) {
	c := demoClient(t)
	for _, stage := range []string{
		`{"$unset":"meta.credential.className"}`,
		`{"$unset":["meta.credential.__type","meta.credential.className"]}`,
		`{"$project":{"meta.credential.className":0}}`,
		`{"$project":{"meta":{"credential":{"className":0}}}}`,
		`{"$addFields":{"meta.credential.className":"Song"}}`,
		`{"$set":{"meta":{"credential":{"className":"Song"}}}}`,
	} {
		var st any
		_ = json.Unmarshal([]byte(stage), &st)
		res := call(t, c, "aggregate", map[string]any{"class_name": "Song", "apply_canonical_filter": false,
			"pipeline": []any{map[string]any{"$match": map[string]any{"objectId": "ShgB9wlNeQ"}}, st}})
		if got := text(res); !res.IsError || strings.Contains(got, "MT1TFYLBtk") || !strings.Contains(got, "which may hold an Object or Array value") {
			t.Errorf("%s: %s", stage, got)
		}
	}
	// The whole field still passes through, redacted below.
	out := callOK(t, c, "aggregate", map[string]any{"class_name": "Song", "apply_canonical_filter": false,
		"pipeline": []any{map[string]any{"$match": map[string]any{"objectId": "ShgB9wlNeQ"}}, map[string]any{"$project": map[string]any{"meta": 1}}}})
	if b, _ := json.Marshal(out); strings.Contains(string(b), "MT1TFYLBtk") {
		t.Errorf("whole meta: %s", b)
	}
}

// TestTrustPipelineLiteralOracle: a
// pipeline literal "Class$id" used to come back redacted for a hidden class
// and as written for a missing one, so one aggregate call enumerated hidden
// class names; both are refused alike, for master and scoped identities.
func TestTrustPipelineLiteralOracle(t *testing.T) {
	for _, env := range [][]string{nil, {"PARSE_MCP_ACL_USER=" + demo.UserCarolID}} {
		c := demoClient(t, env...)
		var answers []string
		for _, cls := range []string{"VaultSecret", "NoSuchClass"} {
			res := call(t, c, "aggregate", map[string]any{"class_name": "Song", "pipeline": []any{
				map[string]any{"$limit": 1}, map[string]any{"$addFields": map[string]any{"x": cls + "$abcdefghij"}}, map[string]any{"$project": map[string]any{"x": 1}}}})
			answers = append(answers, strings.ReplaceAll(text(res), cls, "<C>"))
			if !res.IsError {
				t.Errorf("%v %s: accepted: %s", env, cls, text(res))
			}
		}
		if answers[0] != answers[1] {
			t.Errorf("%v: hidden %s, missing %s", env, answers[0], answers[1])
		}
	}
}
