package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// The comparison suite: one database written by a real Parse Server 9.10
// (so the storage format is Parse's own), read by Parse Server's REST API
// and by parse-mcp with the same identity — master key vs master posture,
// each user's session token vs PARSE_MCP_SESSION_TOKEN — and the answers
// compared: rows (objectIds and every field), where shapes, keys + include,
// CLP (find vs get), protectedFields (the default {_User: {"*": ["email"]}},
// a class CLP, a user's own row), Parse's master-only _Installation,
// distinct, and errors (refused by both, or answered by both). The
// deliberate differences (SECURITY.md "Deliberate differences, by case",
// read by deliberateDifferences) are asserted as differences, so a change
// on either side shows up.

type parityWorld struct {
	ps     *parsetest.Server
	users  map[string]string // username → objectId
	tokens map[string]string // username → session token
	items  map[string]string // title → Item objectId
	inst   []string
	getID  string // a GetOnly objectId
}

func ptr(class, id string) map[string]any {
	return map[string]any{"__type": "Pointer", "className": class, "objectId": id}
}

func publicCLP(extra map[string]any) map[string]any {
	clp := map[string]any{"find": map[string]any{"*": true}, "count": map[string]any{"*": true}, "get": map[string]any{"*": true},
		"create": map[string]any{"*": true}, "update": map[string]any{"*": true}, "delete": map[string]any{"*": true},
		"addField": map[string]any{}, "protectedFields": map[string]any{"*": []any{}}}
	maps.Copy(clp, extra)
	return clp
}

func setupParity(t *testing.T) *parityWorld {
	t.Helper()
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	w := &parityWorld{ps: ps, users: map[string]string{}, tokens: map[string]string{}, items: map[string]string{}}
	for _, u := range []string{"alice", "bob", "carol"} {
		out := ps.MustDo(t, "POST", "/users", map[string]any{"username": u, "password": u + "-pw", "email": u + "@parity.example"}, parsetest.AsAnonymous)
		w.users[u], _ = out["objectId"].(string)
		w.tokens[u], _ = out["sessionToken"].(string)
	}
	ps.MustDo(t, "POST", "/roles", map[string]any{"name": "Staff", "ACL": map[string]any{"*": map[string]any{"read": true}},
		"users": map[string]any{"__op": "AddRelation", "objects": []any{ptr("_User", w.users["bob"])}}}, parsetest.AsMaster)

	ps.CreateClass(t, "Item", map[string]string{"title": "String", "n": "Number", "tags": "Array", "owner": "Pointer:_User",
		"owners": "Array", "meta": "Object", "secret": "String", "note": "String"},
		publicCLP(map[string]any{"protectedFields": map[string]any{"*": []any{"secret"}, "role:Staff": []any{}}}))
	ps.CreateClass(t, "GetOnly", map[string]string{"name": "String"},
		publicCLP(map[string]any{"find": map[string]any{}, "count": map[string]any{}}))
	ps.CreateClass(t, "Device", map[string]string{"name": "String", "installation": "Pointer:_Installation"}, publicCLP(nil))
	// protectedFields with a userField: audience: the user a row's owner
	// points to sees the row's secret.
	ps.CreateClass(t, "Memo", map[string]string{"title": "String", "owner": "Pointer:_User", "secret": "String"},
		publicCLP(map[string]any{"protectedFields": map[string]any{"*": []any{"secret"}, "userField:owner": []any{}}}))

	// A two-level pointer chain for keys inside nested includes.
	ps.CreateClass(t, "Artist", map[string]string{"name": "String", "country": "String"}, publicCLP(nil))
	ps.CreateClass(t, "Album", map[string]string{"title": "String", "year": "Number", "artist": "Pointer:Artist"}, publicCLP(nil))
	ps.CreateClass(t, "Track", map[string]string{"name": "String", "album": "Pointer:Album"}, publicCLP(nil))
	artist := ps.MustDo(t, "POST", "/classes/Artist", map[string]any{"name": "Nina", "country": "US"}, parsetest.AsMaster)
	album := ps.MustDo(t, "POST", "/classes/Album", map[string]any{"title": "Pastel Blues", "year": 1965, "artist": ptr("Artist", artist["objectId"].(string))}, parsetest.AsMaster)
	ps.MustDo(t, "POST", "/classes/Track", map[string]any{"name": "Sinnerman", "album": ptr("Album", album["objectId"].(string))}, parsetest.AsMaster)

	alice, bob, carol := w.users["alice"], w.users["bob"], w.users["carol"]
	pub := map[string]any{"*": map[string]any{"read": true}}
	items := []map[string]any{
		{"title": "a", "n": 1, "tags": []any{"x", "y"}, "owner": ptr("_User", alice), "owners": []any{ptr("_User", alice), ptr("_User", bob)},
			"meta": map[string]any{"k": 1, "s": "v"}, "secret": "s1", "note": "first", "ACL": pub},
		{"title": "b", "n": 2, "tags": []any{"y"}, "owner": ptr("_User", bob), "owners": []any{ptr("_User", bob)},
			"meta": map[string]any{"k": 2}, "secret": "s2", "ACL": map[string]any{alice: map[string]any{"read": true}}},
		{"title": "c", "n": 3, "tags": []any{}, "owner": ptr("_User", carol), "owners": []any{},
			"secret": "s3", "note": "third", "ACL": map[string]any{"role:Staff": map[string]any{"read": true}}},
		{"title": "d", "owner": ptr("_User", alice), "tags": []any{"z"}, "note": "first", "ACL": pub},
		{"title": "e", "n": 5, "ACL": map[string]any{}},
	}
	for _, it := range items {
		out := ps.MustDo(t, "POST", "/classes/Item", it, parsetest.AsMaster)
		w.items[it["title"].(string)], _ = out["objectId"].(string)
	}
	for _, u := range []string{"alice", "bob"} {
		ps.MustDo(t, "POST", "/classes/Memo", map[string]any{"title": u + "'s memo", "owner": ptr("_User", w.users[u]), "secret": u + "-secret"}, parsetest.AsMaster)
	}
	out := ps.MustDo(t, "POST", "/classes/GetOnly", map[string]any{"name": "only by id"}, parsetest.AsMaster)
	w.getID, _ = out["objectId"].(string)
	for i := range 2 {
		out := ps.MustDo(t, "POST", "/installations", map[string]any{"deviceType": "ios", "installationId": fmt.Sprintf("0000000%d-0000-4000-8000-000000000000", i),
			"deviceToken": fmt.Sprintf("token%d", i)}, parsetest.AsMaster)
		id, _ := out["objectId"].(string)
		w.inst = append(w.inst, id)
		ps.MustDo(t, "POST", "/classes/Device", map[string]any{"name": fmt.Sprintf("device%d", i), "installation": ptr("_Installation", id)}, parsetest.AsMaster)
	}
	return w
}

// parityQuery is one find, expressed once for both sides.
type parityQuery struct {
	name    string
	class   string
	where   map[string]any
	keys    []string
	include []string
	order   string
}

// parseAnswer is a normalised answer: refused, or the rows.
type parseAnswer struct {
	refused bool
	detail  string
	rows    []map[string]any
}

func (w *parityWorld) parseFind(t *testing.T, q parityQuery, as parsetest.Caller) parseAnswer {
	t.Helper()
	v := url.Values{}
	v.Set("limit", "1000")
	if q.where != nil {
		b, _ := json.Marshal(q.where)
		v.Set("where", string(b))
	}
	if len(q.keys) > 0 {
		v.Set("keys", strings.Join(q.keys, ","))
	}
	if len(q.include) > 0 {
		v.Set("include", strings.Join(q.include, ","))
	}
	order := "objectId"
	if q.order != "" {
		order = q.order + ",objectId"
	}
	v.Set("order", order)
	status, body, err := w.ps.Do("GET", "/classes/"+q.class+"?"+v.Encode(), nil, as)
	if err != nil {
		t.Fatalf("%s: Parse: %v", q.name, err)
	}
	if status/100 != 2 {
		return parseAnswer{refused: true, detail: fmt.Sprintf("HTTP %d %v", status, body)}
	}
	var rows []map[string]any
	for _, r := range rowObjects(body, "results") {
		rows = append(rows, obj(r))
	}
	return parseAnswer{rows: rows}
}

func mcpFind(t *testing.T, r toolCaller, q parityQuery) parseAnswer {
	t.Helper()
	// Parse's REST row shape, not the compact default.
	args := map[string]any{"class_name": q.class, "limit": 1000, "shape": "rest"}
	if q.where != nil {
		args["where"] = q.where
	}
	if len(q.keys) > 0 {
		args["keys"] = q.keys
	}
	if len(q.include) > 0 {
		args["include"] = q.include
	}
	order := "objectId"
	if q.order != "" {
		order = q.order + ",objectId"
	}
	args["order"] = order
	b, _ := json.Marshal(args)
	resp := r.callTool(q.name, "query_class", string(b))
	res := obj(resp["result"])
	if resp["error"] != nil || res == nil || res["isError"] == true {
		return parseAnswer{refused: true, detail: fmt.Sprint(resp["error"], res)}
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(obj(list(res["content"])[0])["text"].(string)), &out); err != nil {
		t.Fatalf("%s: %v", q.name, err)
	}
	var rows []map[string]any
	for _, r := range rowObjects(out, "results") {
		rows = append(rows, obj(r))
	}
	return parseAnswer{rows: rows}
}

// normalizeRow drops what parse-mcp never shows by design (ACL, the
// session token of a user's own row) at any depth, so the rest compares
// field by field.
func normalizeRow(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if k == "ACL" || k == "sessionToken" {
				continue
			}
			out[k] = normalizeRow(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalizeRow(x)
		}
		return out
	}
	return v
}

func canonical(v any) string {
	b, _ := json.Marshal(normalizeRow(v))
	return string(b)
}

// diff describes how two answers differ ("" when they agree).
func (a parseAnswer) diff(b parseAnswer) string {
	if a.refused != b.refused {
		return fmt.Sprintf("Parse refused=%v (%s), parse-mcp refused=%v (%s)", a.refused, a.detail, b.refused, b.detail)
	}
	if a.refused {
		return ""
	}
	if len(a.rows) != len(b.rows) {
		return fmt.Sprintf("Parse %d rows %s, parse-mcp %d rows %s", len(a.rows), canonical(rowsAny(a.rows)), len(b.rows), canonical(rowsAny(b.rows)))
	}
	for i := range a.rows {
		if ca, cb := canonical(a.rows[i]), canonical(b.rows[i]); ca != cb {
			return fmt.Sprintf("row %d: Parse %s, parse-mcp %s", i, ca, cb)
		}
	}
	return ""
}

func rowsAny(rows []map[string]any) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}

// deliberateDifferences reads the machine-readable list of deliberate
// differences from Parse Server (SECURITY.md "Deliberate differences, by
// case"): suite → case name → why. The suites require a listed case to
// still differ and every other case to agree.
func deliberateDifferences(t testing.TB, suite string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "<!-- parity-differences -->")
	end := strings.Index(text, "<!-- /parity-differences -->")
	if start < 0 || end < start {
		t.Fatal("SECURITY.md has no parity-differences table")
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(text[start:end], "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 3 {
			continue
		}
		s, c, why := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		if s == "suite" || strings.HasPrefix(s, "-") {
			continue
		}
		if s != "read" && s != "write" {
			t.Fatalf("SECURITY.md parity-differences: unknown suite %q", s)
		}
		if s == suite {
			out[c] = why
		}
	}
	return out
}

// parityQueries are the finds every identity runs on both sides.
func parityQueries(w *parityWorld) []parityQuery {
	alice, bob := w.users["alice"], w.users["bob"]
	return []parityQuery{
		{name: "all", class: "Item"},
		{name: "range", class: "Item", where: map[string]any{"n": map[string]any{"$gt": 1}}},
		{name: "array-contains", class: "Item", where: map[string]any{"tags": "y"}},
		{name: "array-in", class: "Item", where: map[string]any{"tags": map[string]any{"$in": []any{"x", "z"}}}},
		{name: "array-all", class: "Item", where: map[string]any{"tags": map[string]any{"$all": []any{"x", "y"}}}},
		{name: "pointer-eq", class: "Item", where: map[string]any{"owner": ptr("_User", alice)}},
		{name: "pointer-in-array", class: "Item", where: map[string]any{"owners": ptr("_User", bob)}},
		{name: "object-eq", class: "Item", where: map[string]any{"meta": map[string]any{"k": 1, "s": "v"}}},
		{name: "object-subkey", class: "Item", where: map[string]any{"meta.k": 2}},
		{name: "exists", class: "Item", where: map[string]any{"n": map[string]any{"$exists": false}}},
		{name: "regex", class: "Item", where: map[string]any{"note": map[string]any{"$regex": "^fir"}}},
		{name: "or", class: "Item", where: map[string]any{"$or": []any{map[string]any{"title": "a"}, map[string]any{"n": 3}}}},
		{name: "order-desc", class: "Item", order: "-n"},
		{name: "keys", class: "Item", keys: []string{"title", "n"}},
		{name: "keys-object-subkey", class: "Item", keys: []string{"meta.k"}},
		{name: "keys-pointer", class: "Item", keys: []string{"owner"}},
		{name: "include-no-keys-nested", class: "Item", include: []string{"owner"}, keys: []string{"owner.username", "title"}},
		{name: "protected-where", class: "Item", where: map[string]any{"secret": "s1"}},
		{name: "include", class: "Item", include: []string{"owner"}},
		{name: "keys-include-inside", class: "Item", keys: []string{"title", "owner"}, include: []string{"owner"}},
		{name: "keys-include-subkey", class: "Item", keys: []string{"owner.username"}, include: []string{"owner"}},
		{name: "inQuery", class: "Item", where: map[string]any{"owner": map[string]any{"$inQuery": map[string]any{"className": "_User", "where": map[string]any{"username": "bob"}}}}},
		{name: "select", class: "Item", where: map[string]any{"title": map[string]any{"$select": map[string]any{"query": map[string]any{"className": "Item", "where": map[string]any{"n": 1}}, "key": "title"}}}},
		{name: "inQuery-no-where", class: "Item", where: map[string]any{"owner": map[string]any{"$inQuery": map[string]any{"className": "_User"}}}},
		{name: "users", class: "_User"},
		{name: "users-email-where", class: "_User", where: map[string]any{"email": "bob@parity.example"}},
		{name: "users-by-name", class: "_User", where: map[string]any{"username": "alice"}},
		{name: "getonly-find", class: "GetOnly"},
		{name: "getonly-by-id", class: "GetOnly", where: map[string]any{"objectId": w.getID}},
		{name: "installation-find", class: "_Installation"},
		{name: "installation-by-id-where", class: "_Installation", where: map[string]any{"objectId": w.inst[0]}},
		{name: "device-include-installation", class: "Device", include: []string{"installation"}},
		{name: "include-outside-keys", class: "Item", keys: []string{"title"}, include: []string{"owner"}},
		{name: "array-empty-eq", class: "Item", where: map[string]any{"tags": []any{}}},
		{name: "array-empty-eq-op", class: "Item", where: map[string]any{"tags": map[string]any{"$eq": []any{}}}},
		{name: "keys-include-two-level", class: "Track", keys: []string{"album.artist.name"}, include: []string{"album.artist"}},
		{name: "keys-include-two-level-mixed", class: "Track", keys: []string{"name", "album.title", "album.artist.name"}, include: []string{"album.artist"}},
		{name: "keys-include-two-level-bare", class: "Track", keys: []string{"album", "album.artist"}, include: []string{"album.artist"}},
		{name: "protected-userfield", class: "Memo"},
	}
}

func TestParityWithParseServer(t *testing.T) {
	w := setupParity(t)
	queries := parityQueries(w)
	identities := []struct {
		name   string
		caller parsetest.Caller
		env    []string
	}{
		{"master", parsetest.AsMaster, nil},
		{"alice", parsetest.AsSession(w.tokens["alice"]), []string{"PARSE_MCP_SESSION_TOKEN=" + w.tokens["alice"]}},
		{"bob", parsetest.AsSession(w.tokens["bob"]), []string{"PARSE_MCP_SESSION_TOKEN=" + w.tokens["bob"]}},
		{"carol", parsetest.AsSession(w.tokens["carol"]), []string{"PARSE_MCP_SESSION_TOKEN=" + w.tokens["carol"]}},
	}
	parityDifferences := deliberateDifferences(t, "read")
	known := map[string]bool{}
	for _, q := range queries {
		known[q.name] = true
	}
	for name := range parityDifferences {
		if !known[name] {
			t.Errorf("SECURITY.md lists read case %q, which the suite does not run", name)
		}
	}
	checks, diffs := 0, 0
	// differed: deliberate cases that differed for at least one identity
	// (a row only some identities see can make the others agree).
	differed := map[string]bool{}
	defer func() {
		for name, why := range parityDifferences {
			if !differed[name] {
				t.Errorf("%s: listed as a deliberate difference (%s) but the answers now agree for every identity", name, why)
			}
		}
	}()
	// Each identity twice: as the fixed identity of its own stdio process,
	// and by its own credential in one HTTP process serving them all
	// (PARSE_MCP_HTTP_AUTH; master through an operator's named key).
	const opsKey = "parity-ops-key-0123456789"
	h := startHTTP(t, "PARSE_MCP_MONGODB_URI="+w.ps.MongoURI, "PARSE_MCP_HTTP_AUTH=keys,parse-session", "PARSE_MCP_API_KEYS=ops@master:"+opsKey)
	type run struct {
		name   string
		caller parsetest.Caller
		srv    toolCaller
	}
	var runs []run
	for _, id := range identities {
		r := startRaw(t, append([]string{"PARSE_MCP_MONGODB_URI=" + w.ps.MongoURI}, id.env...)...)
		r.initialize()
		runs = append(runs, run{id.name, id.caller, r})
		cred := map[string]string{"X-MCP-API-Key": opsKey}
		if !id.caller.Master {
			cred = map[string]string{"Authorization": "Bearer " + id.caller.SessionToken}
		}
		runs = append(runs, run{id.name + " (HTTP, per request)", id.caller, h.session(cred)})
	}
	for _, id := range runs {
		r := id.srv
		for _, q := range queries {
			checks++
			key := id.name + "/" + q.name
			d := w.parseFind(t, q, id.caller).diff(mcpFind(t, r, q))
			_, deliberate := parityDifferences[q.name]
			switch {
			case d != "" && !deliberate:
				diffs++
				t.Errorf("%s: %s", key, d)
			case d != "":
				differed[q.name] = true
			}
		}
		for _, q := range counts {
			checks++
			key := id.name + "/count-" + q.name
			if d := w.parseCount(t, q, id.caller).diff(mcpCount(t, r, q)); d != "" {
				diffs++
				t.Errorf("%s: %s", key, d)
			}
		}
		if id.caller.Master {
			// distinct is master-only in Parse (its aggregate endpoint);
			// parse-mcp leaves null out as Parse does.
			for _, field := range []string{"note", "tags", "title", "n"} {
				checks++
				if d := w.parseDistinct(t, field).diff(mcpDistinct(t, r, field)); d != "" {
					diffs++
					t.Errorf("master/distinct-%s: %s", field, d)
				}
			}
		}
	}
	t.Logf("%d comparisons, %d unexpected differences", checks, diffs)
}

// counts are compared as count_objects vs GET ?count=1&limit=0.
var counts = []parityQuery{
	{name: "items", class: "Item"},
	{name: "items-range", class: "Item", where: map[string]any{"n": map[string]any{"$gte": 2}}},
	{name: "users", class: "_User"},
	{name: "users-email", class: "_User", where: map[string]any{"email": "alice@parity.example"}},
	{name: "installations", class: "_Installation"},
	{name: "getonly", class: "GetOnly"},
	{name: "item-secret", class: "Item", where: map[string]any{"secret": map[string]any{"$exists": true}}},
}

func (w *parityWorld) parseCount(t *testing.T, q parityQuery, as parsetest.Caller) parseAnswer {
	t.Helper()
	v := url.Values{"count": {"1"}, "limit": {"0"}}
	if q.where == nil && as.Master && !ferretDB1 && !realMongo {
		// With no constraint at all (master, no where) Parse counts with
		// estimatedDocumentCount, which FerretDB 2 on DocumentDB answers
		// from PostgreSQL's table statistics: an estimate (4 of 5 rows
		// seen). A where every row matches makes Parse count exactly.
		v.Set("where", `{"objectId":{"$exists":true}}`)
	}
	if q.where != nil {
		b, _ := json.Marshal(q.where)
		v.Set("where", string(b))
	}
	status, body, err := w.ps.Do("GET", "/classes/"+q.class+"?"+v.Encode(), nil, as)
	if err != nil {
		t.Fatalf("%s: Parse: %v", q.name, err)
	}
	if status/100 != 2 {
		return parseAnswer{refused: true, detail: fmt.Sprintf("HTTP %d %v", status, body)}
	}
	return parseAnswer{rows: []map[string]any{{"count": body["count"]}}}
}

func mcpCount(t *testing.T, r toolCaller, q parityQuery) parseAnswer {
	t.Helper()
	args := map[string]any{"class_name": q.class}
	if q.where != nil {
		args["where"] = q.where
	}
	out, refused := mcpCall(t, r, "count-"+q.name, "count_objects", args)
	if refused != "" {
		return parseAnswer{refused: true, detail: refused}
	}
	return parseAnswer{rows: []map[string]any{{"count": out["count"]}}}
}

func (w *parityWorld) parseDistinct(t *testing.T, field string) parseAnswer {
	t.Helper()
	status, body, err := w.ps.Do("GET", "/aggregate/Item?distinct="+field, nil, parsetest.AsMaster)
	if err != nil || status/100 != 2 {
		t.Fatalf("Parse distinct %s: HTTP %d %v %v", field, status, body, err)
	}
	return parseAnswer{rows: []map[string]any{{"values": sortedValues(rowObjects(body, "results"))}}}
}

func mcpDistinct(t *testing.T, r toolCaller, field string) parseAnswer {
	t.Helper()
	out, refused := mcpCall(t, r, "distinct-"+field, "distinct", map[string]any{"class_name": "Item", "field": field})
	if refused != "" {
		return parseAnswer{refused: true, detail: refused}
	}
	return parseAnswer{rows: []map[string]any{{"values": sortedValues(list(out["values"]))}}}
}

// sortedValues orders values by their JSON text (distinct order is not
// part of either answer).
func sortedValues(vals []any) []any {
	out := append([]any{}, vals...)
	sort.Slice(out, func(i, j int) bool { return canonical(out[i]) < canonical(out[j]) })
	return out
}

// toolCaller sends one tools/call (arguments as JSON) and returns the
// JSON-RPC response: a stdio process of a fixed identity, or one person's
// session of an HTTP process with PARSE_MCP_HTTP_AUTH.
type toolCaller interface {
	callTool(id, tool, args string) map[string]any
}

func (r *rawServer) callTool(id, tool, args string) map[string]any { return aggRPC(r, id, tool, args) }

func (s *mcpSession) callTool(id, tool, args string) map[string]any {
	return s.rpc(id, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
}

// mcpCall runs a tool on r: its decoded result, or why it was refused.
func mcpCall(t *testing.T, r toolCaller, id, tool string, args map[string]any) (map[string]any, string) {
	t.Helper()
	b, _ := json.Marshal(args)
	resp := r.callTool(id, tool, string(b))
	res := obj(resp["result"])
	if resp["error"] != nil || res == nil || res["isError"] == true {
		return nil, fmt.Sprint(resp["error"], res)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(obj(list(res["content"])[0])["text"].(string)), &out); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return out, ""
}
