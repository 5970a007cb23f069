package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// oauthToken runs the oauth flow by hand, as a scripted client and person
// would: dynamic registration, the login page with the Parse password,
// consent, the code exchange with the PKCE verifier. It returns the access
// token.
func oauthToken(t *testing.T, base, username, password string) string {
	t.Helper()
	const redirect = "http://127.0.0.1:9/cb"
	reg, _ := json.Marshal(map[string]any{"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none", "client_name": "e2e " + username})
	resp, err := http.Post(base+"/register", "application/json", strings.NewReader(string(reg)))
	if err != nil {
		t.Fatal(err)
	}
	var client map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&client)
	resp.Body.Close()
	clientID, _ := client["client_id"].(string)
	if clientID == "" {
		t.Fatalf("registration: %d %v", resp.StatusCode, client)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier := base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	hidden := regexp.MustCompile(`name="(request|csrf)" value="([^"]*)"`)
	page := func(resp *http.Response, err error) (*http.Response, url.Values) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		form := url.Values{}
		for _, m := range hidden.FindAllStringSubmatch(string(body), -1) {
			form.Set(m[1], m[2])
		}
		return resp, form
	}
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {base + "/mcp"}}
	_, form := page(browser.Get(base + "/authorize?" + q.Encode()))
	form.Set("step", "login")
	form.Set("username", username)
	form.Set("password", password)
	_, form = page(browser.PostForm(base+"/authorize", form))
	form.Set("step", "consent")
	form.Set("decision", "approve")
	resp, _ = page(browser.PostForm(base+"/authorize", form))
	back, _ := url.Parse(resp.Header.Get("Location"))
	code := back.Query().Get("code")
	if resp.StatusCode != http.StatusSeeOther || code == "" {
		t.Fatalf("%s: the authorization did not return a code (%d)", username, resp.StatusCode)
	}
	resp, err = http.PostForm(base+"/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	access, _ := tok["access_token"].(string)
	if access == "" {
		t.Fatalf("%s: token: %d %v", username, resp.StatusCode, tok["error"])
	}
	return access
}

// oauthParityFixture gives the Parse app five classes whose rows and
// permissions tell alice, bob (role Editors) and carol apart: per-user
// ACLs, a role ACL, a role-only CLP, an authenticated-only CLP, and a
// mixed class.
func oauthParityFixture(t *testing.T, ps *parsetest.Server, users map[string][2]string) []string {
	t.Helper()
	ps.MustDo(t, "POST", "/roles", map[string]any{"name": "Editors", "ACL": map[string]any{"*": map[string]any{"read": true}},
		"users": map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "_User", "objectId": users["bob"][0]}}}}, parsetest.AsMaster)
	closed := map[string]any{"create": map[string]any{}, "update": map[string]any{}, "delete": map[string]any{}, "addField": map[string]any{}}
	with := func(extra map[string]any) map[string]any {
		out := maps.Clone(closed)
		maps.Copy(out, extra)
		return out
	}
	editors := map[string]any{"role:Editors": true}
	authed := map[string]any{"requiresAuthentication": true}
	ps.CreateClass(t, "Doc", map[string]string{"title": "String"}, nil)
	ps.CreateClass(t, "Locked", map[string]string{"title": "String"}, with(map[string]any{"find": editors, "get": editors, "count": editors}))
	ps.CreateClass(t, "Memo", map[string]string{"title": "String"}, with(map[string]any{"find": authed, "get": authed, "count": authed}))
	ps.CreateClass(t, "Task", map[string]string{"title": "String"}, nil)
	acl := func(who ...string) map[string]any {
		out := map[string]any{}
		for _, w := range who {
			out[w] = map[string]any{"read": true}
		}
		return out
	}
	rows := map[string][]map[string]any{
		"Doc":    {acl("role:Editors"), acl("role:Editors"), acl("*"), acl(users["alice"][0])},
		"Locked": {acl("*"), acl("*")},
		"Memo":   {acl("*"), acl("*"), acl(users["carol"][0])},
		"Task":   {acl(users["alice"][0], users["bob"][0]), acl(users["carol"][0]), acl("role:Editors", users["carol"][0]), acl()},
	}
	for cls, list := range rows {
		for i, a := range list {
			ps.MustDo(t, "POST", "/classes/"+cls, map[string]any{"title": fmt.Sprint(cls, i), "ACL": a}, parsetest.AsMaster)
		}
	}
	return []string{"Note", "Doc", "Locked", "Memo", "Task"}
}

// parseCountAnswer is what Parse REST answers a session for a count: the count,
// or "refused".
func parseCountAnswer(t *testing.T, ps *parsetest.Server, cls, session string) string {
	t.Helper()
	status, out, err := ps.Do("GET", "/classes/"+cls+"?count=1&limit=0", nil, parsetest.AsSession(session))
	if err != nil {
		t.Fatal(err)
	}
	if status != 200 {
		return "refused"
	}
	return fmt.Sprint(out["count"])
}

// mcpCountAnswer is the same for parse-mcp's count_objects with a bearer token.
func mcpCountAnswer(t *testing.T, h *httpServer, id, cls, token string) string {
	t.Helper()
	status, txt, isErr := h.statelessTool(id, "count_objects", map[string]any{"class_name": cls}, map[string]string{"Authorization": "Bearer " + token})
	if status != 200 {
		t.Fatalf("count %s: HTTP %d %s", cls, status, txt)
	}
	if isErr {
		return "refused"
	}
	return fmt.Sprint(countOf(t, txt))
}
