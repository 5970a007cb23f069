package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// promMetrics are the metric names of a PromQL expression: what is left
// once strings, selectors, ranges and grouping clauses are cut out,
// less the functions (a name before "(").
func promMetrics(expr string) []string {
	for _, cut := range []string{`"[^"]*"`, `\{[^}]*\}`, `\[[^\]]*\]`, `\b(by|without|on|ignoring)\s*\([^)]*\)`} {
		expr = regexp.MustCompile(cut).ReplaceAllString(expr, " ")
	}
	var names []string
	for _, m := range regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\(?)`).FindAllStringSubmatch(expr, -1) {
		if m[2] == "" {
			names = append(names, m[1])
		}
	}
	return names
}

// TestDashboardQueriesExist: every PromQL expression of the Grafana
// dashboard (deploy/grafana/parse-mcp.json) names metrics the server
// really exports, read from a /metrics scrape of the binary over HTTP with
// the real Parse Server, after the calls that make each family appear (a
// tool call, a bridge write, a read returning a row, a rate-limit refusal,
// an ended session).
func TestDashboardQueriesExist(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "parse-mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}

	ps := startParse(t)
	addr := freeAddr(t)
	policy := strings.Replace(bridgePolicy, "settings: {confirm_writes: never}", "settings: {confirm_writes: never, rate_limit: {requests: 3, window: 1m}}", 1)
	h := startHTTP(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, policyEnv(t, policy), "PARSE_MCP_METRICS_ADDR="+addr), writeEnv...)...)
	s := h.session(nil)
	s.rpc("1", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Note"}}`)
	s.rpc("2", "tools/call", `{"name":"create_object","arguments":{"class_name":"Note","fields":{"title":"dashboard"}}}`)
	s.rpc("3", "tools/call", `{"name":"query_class","arguments":{"class_name":"Note","limit":1}}`)
	if r := s.rpc("4", "tools/call", `{"name":"count_objects","arguments":{"class_name":"Note"}}`); !strings.Contains(mustJSON(t, r), "rate_limited") {
		t.Fatalf("the fourth call is not rate limited: %v", r)
	}
	if resp, _ := h.request("DELETE", "/mcp", "", s.headers); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	_, families := scrape(t, addr)

	exported := func(name string) bool {
		if families[name] != nil {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && families[base] != nil && families[base].GetType() == dto.MetricType_HISTOGRAM {
				return true
			}
		}
		return false
	}
	exprs := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			exprs++
			names := promMetrics(target.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q: no metric in %s", p.Title, target.Expr)
			}
			for _, name := range names {
				if !exported(name) {
					t.Errorf("panel %q: %s is not exported by the server", p.Title, name)
				}
			}
		}
	}
	t.Logf("%d panels, %d queries checked against %d exported families", len(dash.Panels), exprs, len(families))
}
