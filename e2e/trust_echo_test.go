package e2e

import (
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/policy"
)

// TestTrustEchoesNameNoHiddenClass: no client-visible echo of what a call
// would run — dry_run pipelines (aggregate, group_by, group_by_date,
// distinct), the constraints of count_objects and explain_query, the
// explain plan — names a hidden class. The policy's not-a-hidden-reference
// conjunct lists every hidden class; dry runs show it with the names
// replaced (SECURITY.md "Hidden references"). Every hidden name is checked,
// Parse's default-hidden system classes included, in master posture and
// for a scoped identity (where _Session is hidden too).
func TestTrustEchoesNameNoHiddenClass(t *testing.T) {
	calls := []struct{ tool, args string }{
		{"aggregate", `{"class_name":"Song","dry_run":true,"pipeline":[{"$match":{"meta.x":1}},{"$count":"n"}]}`},
		{"aggregate", `{"class_name":"Song","dry_run":true,"apply_canonical_filter":false,"pipeline":[{"$match":{"leak":"x","tags":"y"}},{"$sort":{"title":1}},{"$limit":3}]}`},
		{"aggregate", `{"class_name":"Song","dry_run":true,"pipeline":[{"$limit":1},{"$lookup":{"from":"Song","pipeline":[{"$match":{"leak":"x"}}],"as":"g"}}]}`},
		{"aggregate", `{"class_name":"Song","dry_run":true,"pipeline":[{"$match":{"genre":"rock"}},{"$group":{"_id":"$meta.source","n":{"$sum":1}}}]}`},
		{"distinct", `{"class_name":"Song","field":"meta.source","dry_run":true}`},
		{"distinct", `{"class_name":"Song","field":"genre","where":{"leak":"x"},"dry_run":true}`},
		{"group_by", `{"class_name":"Song","field":"meta.source","where":{"tags":"x"},"dry_run":true}`},
		{"group_by", `{"class_name":"Song","field":"genre","operation":"sum","value_field":"plays","where":{"title":{"$regex":"^a"}},"dry_run":true}`},
		{"group_by_date", `{"class_name":"Song","field":"createdAt","interval":"year","where":{"leak":"x"},"dry_run":true}`},
		{"count_objects", `{"class_name":"Song","where":{"leak":"x","meta.source":"y"}}`},
		{"explain_query", `{"class_name":"Song","where":{"leak":"x","meta.source":{"$exists":true}}}`},
	}
	for _, posture := range []struct {
		name   string
		env    []string
		hidden []string
	}{
		{"master", nil, append([]string{"VaultSecret"}, policy.DefaultHiddenClasses...)},
		{"scoped", []string{"PARSE_MCP_ACL_USER=" + demo.UserCarolID}, append([]string{"VaultSecret", "_Session"}, policy.DefaultHiddenClasses...)},
	} {
		t.Run(posture.name, func(t *testing.T) {
			r := startRaw(t, append([]string{policyFile(t, "trust_suites")}, posture.env...)...)
			r.initialize()
			for i, c := range calls {
				resp := aggRPC(r, posture.name+c.tool+string(rune('a'+i)), c.tool, c.args)
				if res := obj(resp["result"]); res == nil || res["isError"] == true {
					t.Errorf("%s %s: %v", c.tool, c.args, resp)
					continue
				}
				ans := answer(resp)
				for _, h := range posture.hidden {
					if strings.Contains(ans, h) {
						t.Errorf("%s %s names the hidden class %s: %s", c.tool, c.args, h, ans)
					}
				}
				if strings.Contains(c.args, `"dry_run":true`) && strings.Contains(c.args, "leak") && !strings.Contains(ans, "hidden classes\\u003e") {
					t.Errorf("%s %s: the policy conjunct is not shown as a placeholder: %s", c.tool, c.args, ans)
				}
			}
		})
	}
}
