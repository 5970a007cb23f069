package policy

import (
	"fmt"
	"strings"
	"testing"
)

// TestPipelineRegexAndSizeEverywhere (leak class 7): the where's regex rules
// and size limits hold in every pipeline position — $match at the top, in
// $facet branches, in $lookup and $unionWith sub-pipelines, and the regex
// operators of expressions — as security violations (regex) or
// invalid_query (size).
func TestPipelineRegexAndSizeEverywhere(t *testing.T) {
	schema := trustSchema()
	e := secEngine(t, "")
	ctx := callCtx(e, "aggregate", "Artist")
	positions := map[string]func(match string) string{
		"match": func(m string) string { return `[{"$match":` + m + `}]` },
		"facet": func(m string) string { return `[{"$facet":{"a":[{"$match":` + m + `}]}}]` },
		"lookup": func(m string) string {
			return `[{"$lookup":{"from":"Album","pipeline":[{"$match":` + m + `}],"as":"x"}}]`
		},
		"unionWith": func(m string) string { return `[{"$unionWith":{"coll":"Album","pipeline":[{"$match":` + m + `}]}}]` },
	}
	matches := []struct{ name, match, want string }{
		{"nested quantifier", `{"name":{"$regex":"^(a+)+$"}}`, "violation"},
		{"polynomial", `{"name":{"$regex":".*a.*b.*c"}}`, "violation"},
		{"too long", `{"name":{"$regex":"` + strings.Repeat("a", 257) + `"}}`, "violation"},
		{"bad options", `{"name":{"$regex":"a","$options":"s"}}`, "violation"},
		{"in $or", `{"$or":[{"name":"x"},{"name":{"$regex":"(x*)*"}}]}`, "violation"},
		{"regexMatch", `{"$expr":{"$regexMatch":{"input":"$name","regex":"(a|aa)+"}}}`, "violation"},
		{"regexFind", `{"$expr":{"$gt":[{"$size":{"$regexFindAll":{"input":"$name","regex":".+.+.+"}}},0]}}`, "violation"},
		{"regex from a field", `{"$expr":{"$regexMatch":{"input":"$name","regex":"$name"}}}`, "violation"},
		{"regex options", `{"$expr":{"$regexMatch":{"input":"$name","regex":"a","options":"s"}}}`, "violation"},
		{"$or branches", `{"$or":[` + strings.TrimSuffix(strings.Repeat(`{"name":"x"},`, 101), ",") + `]}`, "invalid_query"},
		{"$in values", `{"name":{"$in":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 1001), ",") + `]}}`, "invalid_query"},
		{"safe regex", `{"name":{"$regex":"^Abc","$options":"i"}}`, "ok"},
	}
	for pname, pos := range positions {
		for _, m := range matches {
			if strings.Contains(m.match, "$expr") && pname != "match" {
				continue // $expr is refused as such outside the top-level $match path checks
			}
			p := decodeJSON(t, pos(m.match)).([]any)
			_, err := e.ValidatePipeline(ctx, schema, schema.Class("Artist"), p)
			got := outcome(err)
			if m.want == "ok" && got != "ok" || m.want != "ok" && !strings.HasPrefix(got, m.want) {
				t.Errorf("%s/%s: %s (%v), want %s", pname, m.name, got, err, m.want)
			}
		}
	}
	// The regex operators in $addFields/$project expressions too.
	for _, op := range []string{"$regexMatch", "$regexFind", "$regexFindAll"} {
		p := decodeJSON(t, fmt.Sprintf(`[{"$addFields":{"m":{%q:{"input":"$name","regex":"(\\w+)*x"}}}}]`, op)).([]any)
		if _, err := e.ValidatePipeline(ctx, schema, schema.Class("Artist"), p); outcome(err) != "violation" {
			t.Errorf("%s in $addFields: %v", op, err)
		}
	}
}
