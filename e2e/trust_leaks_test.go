package e2e

// Leak classes 1, 2, 3 and 6 of the trust work (SECURITY.md, "Hidden
// references" and "Metadata"), walked through the built binary on the demo
// fixtures: Song.leak holds "VaultSecret$<id>" strings, Song.meta.credential
// an embedded pointer into VaultSecret, AuditLog.secret pointers into it,
// and VaultSecret is hidden by the demo policy.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// rpc sends any JSON-RPC request and returns its response.
func rpc(r *rawServer, id, method, params string) map[string]any {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, params))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := r.next(); m["id"] == id {
			return m
		}
	}
	r.t.Fatalf("%s: no response", id)
	return nil
}

// answer is what a client can observe of a response: the JSON-RPC error or
// the whole result (isError, _meta, every content text), as one string.
func answer(resp map[string]any) string {
	v := map[string]any{"error": resp["error"], "result": resp["result"]}
	if res := obj(resp["result"]); res != nil {
		var texts []string
		for _, c := range list(res["content"]) {
			if s, ok := obj(c)["text"].(string); ok {
				texts = append(texts, s)
			}
		}
		v["result"] = map[string]any{"isError": res["isError"], "_meta": res["_meta"], "texts": texts, "contents": res["contents"], "messages": res["messages"], "completion": res["completion"]}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// secretStrings are strings no answer may contain: every id of the hidden
// class and the stored reference prefix.
func secretStrings() []string {
	out := []string{"VaultSecret$"}
	out = append(out, demo.VaultSecretIDs...)
	return out
}

func assertNoSecret(t *testing.T, what, ans string) {
	t.Helper()
	for _, s := range secretStrings() {
		if strings.Contains(ans, s) {
			t.Errorf("%s leaks %q: %s", what, s, cut(ans, 600))
			return
		}
	}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestTrustHiddenReferencePaths (class 1): every tool argument that takes a
// path, with every path shape into a hidden reference (a "Hidden$id"
// string, an embedded pointer, a pointer column), never shows a hidden id;
// the answer is the redaction marker or a refusal.
func TestTrustHiddenReferencePaths(t *testing.T) {
	r := startRaw(t, policyFile(t, "trust_suites"))
	r.initialize()
	songIDs := append(append([]string{}, demo.SongLeakIDs...), demo.SongEmbeddedSecretID)
	ids, _ := json.Marshal(songIDs)
	inIDs := fmt.Sprintf(`{"objectId":{"$in":%s}}`, ids)
	paths := []string{"leak", "leak.objectId", "leak.className", "meta", "meta.credential", "meta.credential.objectId",
		"meta.credential.className", "meta.credential.__type", "meta.credential.objectId.x"}
	type call struct{ tool, args string }
	var calls []call
	for _, p := range paths {
		calls = append(calls,
			call{"query_class", fmt.Sprintf(`{"class_name":"Song","where":%s,"keys":[%q]}`, inIDs, p)},
			call{"query_class", fmt.Sprintf(`{"class_name":"Song","where":%s,"keys":[%q,"title"],"order":%q}`, inIDs, p, p)},
			call{"get_object", fmt.Sprintf(`{"class_name":"Song","object_id":%q,"keys":[%q]}`, demo.SongEmbeddedSecretID, p)},
			call{"get_object", fmt.Sprintf(`{"class_name":"Song","object_id":%q,"keys":[%q]}`, demo.SongLeakIDs[0], p)},
			call{"get_objects", fmt.Sprintf(`{"class_name":"Song","ids":%s,"keys":[%q]}`, ids, p)},
			call{"export_data", fmt.Sprintf(`{"class_name":"Song","where":%s,"columns":%q,"format":"csv"}`, inIDs, p)},
			call{"export_data", fmt.Sprintf(`{"class_name":"Song","where":%s,"keys":[%q],"format":"markdown"}`, inIDs, p)},
			call{"group_by", fmt.Sprintf(`{"class_name":"Song","field":%q}`, p)},
			call{"distinct", fmt.Sprintf(`{"class_name":"Song","field":%q}`, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$match":%s},{"$project":{"x":"$%s"}}]}`, inIDs, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$project":{%q:1}},{"$match":{%q:{"$exists":true}}}]}`, p, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$group":{"_id":"$%s","n":{"$sum":1}}}]}`, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$addFields":{"x":"$%s"}},{"$match":{"x":{"$ne":null}}},{"$project":{"x":1}}]}`, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$sort":{%q:1}},{"$limit":3},{"$project":{%q:1}}]}`, p, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$match":{%q:{"$exists":true}}},{"$replaceRoot":{"newRoot":{"v":"$%s"}}}]}`, p, p)},
		)
	}
	for _, p := range []string{"secret", "secret.objectId", "secret.className"} {
		calls = append(calls,
			call{"query_class", fmt.Sprintf(`{"class_name":"AuditLog","keys":[%q],"limit":5}`, p)},
			call{"query_class", fmt.Sprintf(`{"class_name":"AuditLog","include":[%q],"limit":5}`, p)},
			call{"group_by", fmt.Sprintf(`{"class_name":"AuditLog","field":%q}`, p)},
			call{"distinct", fmt.Sprintf(`{"class_name":"AuditLog","field":%q}`, p)},
			call{"export_data", fmt.Sprintf(`{"class_name":"AuditLog","columns":%q,"format":"csv","row_cap":20}`, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"AuditLog","pipeline":[{"$project":{"x":"$%s"}}]}`, p)},
			call{"aggregate", fmt.Sprintf(`{"class_name":"AuditLog","pipeline":[{"$group":{"_id":"$%s"}}]}`, p)},
		)
	}
	for i, c := range calls {
		ans := answer(aggRPC(r, fmt.Sprintf("p%d", i), c.tool, c.args))
		assertNoSecret(t, c.tool+" "+c.args, ans)
	}
	// The marker is what a path into the embedded pointer yields.
	ans := answer(aggRPC(r, "marker", "get_object", fmt.Sprintf(`{"class_name":"Song","object_id":%q,"keys":["meta.credential.objectId"]}`, demo.SongEmbeddedSecretID)))
	if !strings.Contains(ans, `__redacted`) {
		t.Errorf("no redaction marker: %s", ans)
	}
}

// TestTrustHiddenReferenceOperators (class 2): no operator in any position
// can test a hidden reference. Each probe is sent twice, with the hidden
// object's real id and with a wrong guess of the same shape: the answers
// must be identical once the guess itself is masked, so neither bisection
// nor membership reveals anything.
func TestTrustHiddenReferenceOperators(t *testing.T) {
	r := startRaw(t, policyFile(t, "trust_suites"))
	r.initialize()
	wrong := func(id string) string {
		w := strings.Repeat("Qx7", len(id))[:len(id)]
		if w == id {
			w = strings.Repeat("Wy8", len(id))[:len(id)]
		}
		return w
	}
	type probe struct {
		name  string
		truth string
		tmpl  func(g string) (tool, args string)
	}
	leakID, embID, auditID := demo.SongLeakSecretIDs[0], demo.SongEmbeddedSecretTarget, demo.VaultSecretIDs[0]
	esc := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	count := func(class, where string) (string, string) {
		return "count_objects", fmt.Sprintf(`{"class_name":%q,"where":%s}`, class, where)
	}
	var probes []probe
	// Where operators on the "Hidden$id" string column and the embedded pointer.
	for _, spec := range []struct {
		path, truth, prefix string
	}{
		{"leak", leakID, "VaultSecret$"},
		{"meta.credential.objectId", embID, ""},
		{"meta.credential", embID, ""},
	} {
		ops := map[string]func(v string) string{
			"eq":   func(v string) string { return esc(v) },
			"$eq":  func(v string) string { return `{"$eq":` + esc(v) + `}` },
			"$in":  func(v string) string { return `{"$in":[` + esc(v) + `]}` },
			"$nin": func(v string) string { return `{"$nin":[` + esc(v) + `]}` },
			"$ne":  func(v string) string { return `{"$ne":` + esc(v) + `}` },
			"$gte": func(v string) string { return `{"$gte":` + esc(v) + `}` },
			"$lt":  func(v string) string { return `{"$lt":` + esc(v) + `}` },
			"$regex": func(v string) string {
				return `{"$regex":` + esc("^"+strings.ReplaceAll(v, "$", `\$`)[:len(v)-2]) + `}`
			},
			"$all":    func(v string) string { return `{"$all":[` + esc(v) + `]}` },
			"$exists": func(v string) string { return `{"$exists":` + fmt.Sprint(len(v)%2 == 0) + `}` },
		}
		for name, op := range ops {
			wrap := []func(c string) string{
				func(c string) string { return fmt.Sprintf(`{%q:%s}`, spec.path, c) },
				func(c string) string { return fmt.Sprintf(`{"$or":[{%q:%s},{"title":"no such title"}]}`, spec.path, c) },
				func(c string) string { return fmt.Sprintf(`{"$nor":[{%q:%s}]}`, spec.path, c) },
			}
			for wi, w := range wrap {
				value := func(g string) string { return spec.prefix + g }
				probes = append(probes,
					probe{fmt.Sprintf("count %s %s w%d", spec.path, name, wi), spec.truth, func(g string) (string, string) { return count("Song", w(op(value(g)))) }},
					probe{fmt.Sprintf("query %s %s w%d", spec.path, name, wi), spec.truth, func(g string) (string, string) {
						return "query_class", fmt.Sprintf(`{"class_name":"Song","where":%s,"keys":["title"],"limit":1000}`, w(op(value(g))))
					}},
					probe{fmt.Sprintf("group %s %s w%d", spec.path, name, wi), spec.truth, func(g string) (string, string) {
						return "group_by", fmt.Sprintf(`{"class_name":"Song","field":"genre","where":%s}`, w(op(value(g))))
					}},
					probe{fmt.Sprintf("aggregate $match %s %s w%d", spec.path, name, wi), spec.truth, func(g string) (string, string) {
						return "aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$match":%s},{"$count":"n"}]}`, w(op(value(g))))
					}},
				)
			}
		}
	}
	// Pointer into the hidden class: refused alike whatever the guess.
	for _, c := range []string{`%q`, `{"$in":[%q]}`, `{"$gt":%q}`, `{"$regex":%q}`} {
		probes = append(probes, probe{"AuditLog.secret " + c, auditID, func(g string) (string, string) {
			return count("AuditLog", fmt.Sprintf(`{"secret":`+c+`}`, g))
		}})
	}
	// Pipeline expressions that take a value apart.
	for _, e := range []string{
		`{"$eq":["$leak",%s]}`, `{"$gt":["$leak",%s]}`, `{"$indexOfCP":["$leak",%s]}`,
		`{"$eq":[{"$substrCP":["$leak",12,10]},%s]}`, `{"$regexMatch":{"input":"$leak","regex":%s}}`,
		`{"$eq":["$meta.credential.objectId",%s]}`, `{"$in":[%s,{"$split":["$leak","$"]}]}`,
	} {
		probes = append(probes, probe{"expr " + e, leakID, func(g string) (string, string) {
			return "aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$match":{"$expr":`+e+`}},{"$count":"n"}]}`, esc(g))
		}})
		probes = append(probes, probe{"project " + e, leakID, func(g string) (string, string) {
			return "aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$project":{"hit":`+e+`}},{"$match":{"hit":true}},{"$count":"n"}]}`, esc(g))
		}})
	}
	// $select of the hidden reference column.
	probes = append(probes, probe{"$select leak", leakID, func(g string) (string, string) {
		return count("Song", fmt.Sprintf(`{"$and":[{"leak":{"$select":{"query":{"className":"Song","where":{"leak":{"$regex":%s}}},"key":"leak"}}}]}`, esc("^VaultSecret\\$"+g[:7])))
	}})
	for i, p := range probes {
		var answers [2]string
		for j, g := range []string{p.truth, wrong(p.truth)} {
			tool, args := p.tmpl(g)
			ans := answer(aggRPC(r, fmt.Sprintf("o%d-%d", i, j), tool, args))
			masked := strings.ReplaceAll(ans, g, "GUESS")
			for _, id := range demo.VaultSecretIDs {
				if strings.Contains(masked, id) {
					t.Errorf("%s leaks the id %s: %s", p.name, id, cut(masked, 400))
				}
			}
			answers[j] = strings.ReplaceAll(ans, strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(jsonEsc(g)), `"`), `"`), "GUESS")
			answers[j] = maskGuessParts(answers[j], g)
		}
		if answers[0] != answers[1] {
			i := 0
			for i < len(answers[0]) && i < len(answers[1]) && answers[0][i] == answers[1][i] {
				i++
			}
			from := max(0, i-200)
			t.Errorf("%s: the answer depends on the hidden id:\n true  …%s\n wrong …%s", p.name, cut(answers[0][from:], 400), cut(answers[1][from:], 400))
		}
	}
}

func jsonEsc(s string) string { b, _ := json.Marshal(s); return string(b) }

// maskGuessParts masks prefixes of the guess that probes put into regexes.
func maskGuessParts(s, g string) string {
	for n := len(g); n >= 6; n-- {
		s = strings.ReplaceAll(s, g[:n], "GUESS")
	}
	return s
}

// TestTrustHiddenEqualsMissing (class 3): a hidden class and a class that
// does not exist get byte-identical answers (once the name is masked) from
// every tool, prompt, resource and completion that takes a class name.
func TestTrustHiddenEqualsMissing(t *testing.T) {
	r := startRaw(t, policyFile(t, "trust_suites"))
	r.initialize()
	type req struct{ method, params string }
	reqs := func(n string) []req {
		q := func(tool, args string) req {
			return req{"tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)}
		}
		return []req{
			q("query_class", fmt.Sprintf(`{"class_name":%q}`, n)),
			q("query_class", fmt.Sprintf(`{"class_name":%q,"where":{"apiKey":"x"},"keys":["apiKey"],"order":"-service"}`, n)),
			q("count_objects", fmt.Sprintf(`{"class_name":%q}`, n)),
			q("get_object", fmt.Sprintf(`{"class_name":%q,"object_id":"abcdefghij"}`, n)),
			q("get_objects", fmt.Sprintf(`{"class_name":%q,"ids":["abcdefghij"]}`, n)),
			q("get_sample_objects", fmt.Sprintf(`{"class_name":%q}`, n)),
			q("get_schema", fmt.Sprintf(`{"class_name":%q}`, n)),
			q("explain_query", fmt.Sprintf(`{"class_name":%q,"where":{"service":"x"}}`, n)),
			q("export_data", fmt.Sprintf(`{"class_name":%q,"format":"csv"}`, n)),
			q("group_by", fmt.Sprintf(`{"class_name":%q,"field":"service"}`, n)),
			q("group_by_date", fmt.Sprintf(`{"class_name":%q,"field":"createdAt","interval":"month"}`, n)),
			q("distinct", fmt.Sprintf(`{"class_name":%q,"field":"service"}`, n)),
			q("aggregate", fmt.Sprintf(`{"class_name":%q,"pipeline":[{"$match":{}}]}`, n)),
			q("aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$lookup":{"from":%q,"localField":"title","foreignField":"service","as":"s"}}]}`, n)),
			q("aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$unionWith":%q}]}`, n)),
			q("aggregate", fmt.Sprintf(`{"class_name":"Song","pipeline":[{"$facet":{"a":[{"$lookup":{"from":%q,"pipeline":[],"as":"s"}}]}}]}`, n)),
			q("count_objects", fmt.Sprintf(`{"class_name":"Song","where":{"objectId":{"$inQuery":{"className":%q,"where":{}}}}}`, n)),
			q("count_objects", fmt.Sprintf(`{"class_name":"Song","where":{"title":{"$select":{"query":{"className":%q,"where":{}},"key":"service"}}}}`, n)),
			q("count_objects", fmt.Sprintf(`{"class_name":"Song","where":{"$relatedTo":{"object":{"__type":"Pointer","className":%q,"objectId":"abc"},"key":"x"}}}`, n)),
			q("update_object", fmt.Sprintf(`{"class_name":%q,"object_id":"abcdefghij","data":{"x":1}}`, n)),
			{"prompts/get", fmt.Sprintf(`{"name":"class_overview","arguments":{"class_name":%q}}`, n)},
			{"prompts/get", fmt.Sprintf(`{"name":"count_by","arguments":{"class_name":%q,"group_by":"service"}}`, n)},
			{"prompts/get", fmt.Sprintf(`{"name":"recent_activity","arguments":{"class_name":%q}}`, n)},
			{"prompts/get", fmt.Sprintf(`{"name":"created_in_range","arguments":{"class_name":%q,"since":"2024-01-01"}}`, n)},
			{"prompts/get", fmt.Sprintf(`{"name":"parse_relations","arguments":{"classes":%q}}`, n)},
			{"prompts/get", fmt.Sprintf(`{"name":"find_relationship","arguments":{"parent_class":%q,"parent_id":"abc","child_class":"Song","pointer_field":"artist"}}`, n)},
			{"prompts/get", fmt.Sprintf(`{"name":"find_relationship","arguments":{"parent_class":"Artist","parent_id":"abc","child_class":%q,"pointer_field":"artist"}}`, n)},
			{"resources/read", fmt.Sprintf(`{"uri":"parse://%s/schema"}`, n)},
			{"resources/read", fmt.Sprintf(`{"uri":"parse://%s/count"}`, n)},
			{"resources/read", fmt.Sprintf(`{"uri":"parse://%s/samples"}`, n)},
			{"resources/subscribe", fmt.Sprintf(`{"uri":"parse://%s/count"}`, n)},
			{"completion/complete", fmt.Sprintf(`{"ref":{"type":"ref/prompt","name":"count_by"},"argument":{"name":"group_by","value":""},"context":{"arguments":{"class_name":%q}}}`, n)},
			{"completion/complete", fmt.Sprintf(`{"ref":{"type":"ref/prompt","name":"find_relationship"},"argument":{"name":"pointer_field","value":""},"context":{"arguments":{"parent_class":%q,"child_class":"AuditLog"}}}`, n)},
			{"completion/complete", fmt.Sprintf(`{"ref":{"type":"ref/prompt","name":"class_overview"},"argument":{"name":"class_name","value":%q}}`, n[:8])},
			{"completion/complete", fmt.Sprintf(`{"ref":{"type":"ref/resource","uri":"parse://{className}/schema"},"argument":{"name":"className","value":%q}}`, n[:8])},
		}
	}
	hidden, missing := "VaultSecret", "VaultSecrez"
	hr, mr := reqs(hidden), reqs(missing)
	for i := range hr {
		a := answer(rpc(r, fmt.Sprintf("h%d", i), hr[i].method, hr[i].params))
		b := answer(rpc(r, fmt.Sprintf("m%d", i), mr[i].method, mr[i].params))
		a = strings.ReplaceAll(a, hidden, "NAME")
		b = strings.ReplaceAll(b, missing, "NAME")
		if a != b {
			t.Errorf("%s %s: hidden and missing differ:\n hidden  %s\n missing %s", hr[i].method, cut(hr[i].params, 160), cut(a, 500), cut(b, 500))
		}
	}
}

// TestTrustMetadata (class 6): a scoped identity, for which _User.email is
// protected, is not shown the email index by get_schema, and explain_query
// never names it.
func TestTrustMetadata(t *testing.T) {
	master := startRaw(t, policyFile(t, "trust_suites"))
	master.initialize()
	if ans := answer(aggRPC(master, "m", "get_schema", `{"class_name":"_User"}`)); !strings.Contains(ans, "email_1") {
		t.Fatalf("master posture should list the email index: %s", cut(ans, 400))
	}
	r := startRaw(t, policyFile(t, "trust_suites"), "PARSE_MCP_ACL_USER="+demo.UserCarolID)
	r.initialize()
	for i, c := range []struct{ tool, args string }{
		{"get_schema", `{"class_name":"_User"}`},
		{"explain_query", `{"class_name":"_User","where":{"username":"carol"}}`},
		{"get_all_schemas", `{}`},
	} {
		ans := answer(aggRPC(r, fmt.Sprintf("s%d", i), c.tool, c.args))
		if strings.Contains(ans, "email_1") {
			t.Errorf("%s names the index on the protected email field: %s", c.tool, cut(ans, 600))
		}
	}
}
