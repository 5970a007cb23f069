package e2e

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestIdentityParityAllModes: one HTTP process with every per-request
// identity mode at once (PARSE_MCP_HTTP_AUTH=keys,parse-session,jwt,oauth;
// docs/team.md "Serve a team") over the bridge to a real Parse Server. alice,
// bob (role Staff) and carol each come in by all three person modes —
// their Parse session token, a JWT from an identity provider on loopback
// naming them by objectId, and an OAuth access token from the
// authorization-code flow with PKCE — and master by an operator's named
// key. For every identity and mode, finds and counts on five classes
// answer what Parse REST answers that user's session token (the read
// suite's deliberate differences excepted, which must still agree across
// modes), a hidden class answers exactly as a missing one, and one
// person's HTTP session id is an unknown session (404) to another
// person's credential of any mode.
func TestIdentityParityAllModes(t *testing.T) {
	w := setupParity(t)
	idp := newTestIdP(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	public := "http://" + addr
	const opsKey = "identity-parity-ops-key-0123456789"
	// Each person makes ~150 calls in a few seconds: above the default
	// rate window, which is not under test here.
	h := startHTTP(t, bridgeEnv(w.ps, policyEnv(t, "settings: {rate_limit: {requests: 100000, window: 60s}}\n"), "PARSE_MCP_HTTP_ADDR="+addr, "PARSE_MCP_HTTP_AUTH=keys,parse-session,jwt,oauth",
		"PARSE_MCP_MASTER_KEY="+w.ps.MasterKey, "PARSE_MCP_API_KEYS=ops@master:"+opsKey, "PARSE_MCP_PUBLIC_URL="+public,
		"PARSE_MCP_JWT_JWKS_URL="+idp.url, "PARSE_MCP_JWT_ISSUER="+jwtIssuer, "PARSE_MCP_JWT_AUDIENCE="+jwtAudience)...)

	fiveClasses := []string{"Item", "_User", "GetOnly", "Memo", "_Installation"}
	var queries []parityQuery
	for _, q := range parityQueries(w) {
		if slices.Contains(fiveClasses, q.class) {
			queries = append(queries, q)
		}
	}
	countQueries := append(slices.Clone(counts), parityQuery{name: "memos", class: "Memo"})
	deliberate := deliberateDifferences(t, "read")

	type mode struct {
		name string
		cred map[string]string
	}
	type identity struct {
		name   string
		caller parsetest.Caller
		modes  []mode
	}
	people := []identity{{name: "master", caller: parsetest.AsMaster, modes: []mode{{"keys", map[string]string{"X-MCP-API-Key": opsKey}}}}}
	for _, u := range []string{"alice", "bob", "carol"} {
		people = append(people, identity{name: u, caller: parsetest.AsSession(w.tokens[u]), modes: []mode{
			{"parse-session", bearerHeader(w.tokens[u])},
			{"jwt", bearerHeader(idp.mint(t, w.users[u], nil))},
			{"oauth", bearerHeader(oauthToken(t, public, u, u+"-pw"))},
		}})
	}

	const unknownSession = "no-such-session-0123456789abcdef"
	sessions := map[string]*mcpSession{} // "person/mode" → its HTTP session
	checks := 0
	seen := map[string]string{} // a person's answers → who, so the fixture tells them apart
	for _, p := range people {
		// Parse's answers are the same for every mode of one person.
		parseFinds := map[string]parseAnswer{}
		for _, q := range queries {
			parseFinds[q.name] = w.parseFind(t, q, p.caller)
		}
		parseCounts := map[string]parseAnswer{}
		for _, q := range countQueries {
			parseCounts[q.name] = w.parseCount(t, q, p.caller)
		}
		first := map[string]string{} // case → the first mode's answer
		for _, m := range p.modes {
			key := p.name + "/" + m.name
			s := h.session(m.cred)
			sessions[key] = s
			answers := ""
			compare := func(name string, want, have parseAnswer, allowDiff bool) {
				t.Helper()
				checks++
				answers += name + "=" + canonical(rowsAny(have.rows)) + fmt.Sprint(have.refused) + ";"
				if d := want.diff(have); d != "" && !allowDiff {
					t.Errorf("%s/%s: %s", key, name, d)
				}
				got := fmt.Sprint(have.refused, canonical(rowsAny(have.rows)))
				if prev, ok := first[name]; !ok {
					first[name] = got
				} else if prev != got {
					t.Errorf("%s/%s: answers differently from %s's %s: %s, then %s", key, name, p.name, p.modes[0].name, prev, got)
				}
			}
			for _, q := range queries {
				_, allowed := deliberate[q.name]
				compare(q.name, parseFinds[q.name], mcpFind(t, s, q), allowed)
			}
			for _, q := range countQueries {
				compare("count-"+q.name, parseCounts[q.name], mcpCount(t, s, q), false)
			}
			if m.name == p.modes[0].name {
				if other, dup := seen[answers]; dup {
					t.Errorf("%s and %s get the same answers: the fixture does not tell them apart", p.name, other)
				}
				seen[answers] = p.name
			}
			if p.caller.Master {
				continue
			}
			// Hidden ≡ missing: _Session (master-only) answers byte for
			// byte as a class that does not exist, to every tool asked.
			for _, tool := range []string{"count_objects", "query_class", "get_schema"} {
				checks++
				call := func(class string) string {
					_, b := h.request("POST", "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"class_name":%q}}}`, tool, class), s.headers)
					return string(b)
				}
				hb, mb := call("_Session"), call("NoSuchClass")
				if !strings.Contains(hb, `"isError":true`) || strings.ReplaceAll(hb, "_Session", "NoSuchClass") != mb {
					t.Errorf("%s: %s on _Session answered %s, on a missing class %s", key, tool, hb, mb)
				}
			}
		}
	}

	// A session belongs to its identity, not to the credential that opened
	// it: the same person by another mode reaches it, and any other
	// person's credential, of any mode, presenting it is answered as for
	// an unknown session.
	list := `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`
	for _, owner := range people {
		for _, thief := range people {
			for _, om := range owner.modes {
				for _, tm := range thief.modes {
					checks++
					stolen := map[string]string{"Mcp-Session-Id": sessions[owner.name+"/"+om.name].id}
					unknown := map[string]string{"Mcp-Session-Id": unknownSession}
					for k, v := range tm.cred {
						stolen[k], unknown[k] = v, v
					}
					resp, b := h.request("POST", "/mcp", list, stolen)
					if owner.name == thief.name {
						if resp.StatusCode != http.StatusOK {
							t.Errorf("%s (%s) with their own %s session id: %d %s", thief.name, tm.name, om.name, resp.StatusCode, b)
						}
						continue
					}
					uresp, ub := h.request("POST", "/mcp", list, unknown)
					if resp.StatusCode != http.StatusNotFound || uresp.StatusCode != http.StatusNotFound || string(b) != string(ub) {
						t.Errorf("%s (%s) with %s's %s session id: %d %s; an unknown session: %d %s", thief.name, tm.name, owner.name, om.name, resp.StatusCode, b, uresp.StatusCode, ub)
					}
				}
			}
		}
	}
	// The owner's own session still works after every attempt.
	for key, s := range sessions {
		if resp := s.rpc(key, "tools/list", `{}`); obj(resp["result"]) == nil {
			t.Errorf("%s: its own session no longer answers: %v", key, resp)
		}
	}
	t.Logf("%d checks over %d HTTP sessions in one process", checks, len(sessions))
}
