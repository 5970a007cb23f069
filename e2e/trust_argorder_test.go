package e2e

import (
	"strings"
	"testing"
)

// TestAttackHiddenClassBeforeArguments: every tool's arguments are decoded
// into its typed In inside the tool (tools.Typed), behind the policy
// middleware's class gate. A hidden class with a malformed argument must
// therefore get exactly the answer a missing class gets — not the
// argument's error, which a missing class would never reach if the order
// were the other way round, and which would tell the model the class is
// there (SECURITY.md "Classes").
func TestAttackHiddenClassBeforeArguments(t *testing.T) {
	r := startRaw(t, policyFile(t, "demo"))
	r.initialize()
	const hidden, missing = "VaultSecret", "VaultSecrex"
	for _, tc := range []struct{ tool, args string }{
		{"count_objects", `"where":5`},
		{"count_objects", `"apply_canonical_filter":"no"`},
		{"query_class", `"limit":"x"`},
		{"query_class", `"keys":[1]`},
		{"query_class", `"shape":"raw"`},
		{"get_object", `"object_id":"bad id!"`},
		{"get_objects", `"ids":5`},
		{"get_sample_objects", `"limit":99999`},
		{"explain_query", `"apply_canonical_filter":"no"`},
		{"aggregate", `"pipeline":5`},
		{"group_by", `"field":"genre","operation":"median"`},
		{"group_by_date", `"field":"createdAt","interval":"decade"`},
		{"group_by_date", `"field":"createdAt","interval":"day","flatten_arrays":"yes"`},
		{"distinct", `"field":"genre","limit":0`},
		{"export_data", `"columns":5`},
		{"export_data", `"shape":"raw"`},
		{"export_data", `"pipeline":[],"limit":0`},
	} {
		answer := func(class string) (code, text string) {
			resp := aggRPC(r, tc.tool+class+tc.args, tc.tool, `{"class_name":"`+class+`",`+tc.args+`}`)
			res := obj(resp["result"])
			if res == nil || res["isError"] != true {
				t.Fatalf("%s %s on %s: want a tool error, got %v", tc.tool, tc.args, class, resp)
			}
			code, _ = obj(res["_meta"])["parse.error_code"].(string)
			text, _ = obj(list(res["content"])[0])["text"].(string)
			return code, strings.ReplaceAll(text, class, "C")
		}
		hc, ht := answer(hidden)
		mc, mt := answer(missing)
		if hc != mc || ht != mt {
			t.Errorf("%s %s: the hidden class answers %s %q, a missing one %s %q", tc.tool, tc.args, hc, ht, mc, mt)
		}
	}
}
