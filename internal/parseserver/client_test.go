package parseserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

func TestSecretNeverPrints(t *testing.T) {
	s := config.NewSecret("super-secret-master-key")
	cfg := parseserver.Config{URL: "http://x/parse", ApplicationID: "app", MasterKey: s}
	id := parseserver.Identity{SessionToken: config.NewSecret("r:token-value")}
	b, _ := json.Marshal(map[string]any{"cfg": cfg, "id": id})
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, s), string(b), fmt.Sprintf("%+v", id)} {
		if strings.Contains(out, "super-secret") || strings.Contains(out, "token-value") {
			t.Errorf("secret printed: %s", out)
		}
	}
	if s.Reveal() != "super-secret-master-key" {
		t.Error("Reveal lost the value")
	}
}

// TestNoRedirectCarriesTheKey: a server that redirects elsewhere must not
// get the master key forwarded to the redirect target.
func TestNoRedirectCarriesTheKey(t *testing.T) {
	var leaked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Parse-Master-Key") != "" || r.Header.Get("X-Parse-Session-Token") != "" {
			leaked.Store(true)
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	c, err := parseserver.New(parseserver.Config{URL: redirector.URL + "/parse", ApplicationID: "app", MasterKey: config.NewSecret("k3y")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(context.Background(), parseserver.CreateObject("Note", map[string]any{"a": 1}), parseserver.Identity{Master: true})
	if err == nil {
		t.Fatal("a redirect was treated as success")
	}
	if leaked.Load() {
		t.Fatal("the master key was sent to the redirect target")
	}
	if strings.Contains(err.Error(), "k3y") {
		t.Fatalf("error shows the key: %v", err)
	}
}

func TestPreviewMasksSecrets(t *testing.T) {
	c, _ := parseserver.New(parseserver.Config{URL: "http://127.0.0.1:1/parse", ApplicationID: "app", MasterKey: config.NewSecret("k3y-value")})
	for _, id := range []parseserver.Identity{{Master: true}, {SessionToken: config.NewSecret("r:tok-value")}} {
		p := c.Preview(parseserver.UpdateObject("Note", "abc", map[string]any{"n": map[string]any{"__op": "Increment", "amount": 1}}), id)
		b, _ := json.Marshal(p)
		if strings.Contains(string(b), "k3y-value") || strings.Contains(string(b), "tok-value") || !strings.Contains(string(b), config.Masked) {
			t.Errorf("preview %s", b)
		}
		if p["url"] != "http://127.0.0.1:1/parse/classes/Note/abc" || p["method"] != "PUT" {
			t.Errorf("preview %v", p)
		}
	}
}

func TestCheck(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: parsetest.MongoURI(t)})
	_, token := ps.SignUp(t, "alice", "pw")
	ctx := context.Background()
	check := func(url, app, key string, id parseserver.Identity) error {
		c, err := parseserver.New(parseserver.Config{URL: url, ApplicationID: app, MasterKey: config.NewSecret(key), Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return c.Check(ctx, id)
	}
	master := parseserver.Identity{Master: true}
	if err := check(ps.URL, ps.AppID, ps.MasterKey, master); err != nil {
		t.Errorf("good master config: %v", err)
	}
	if err := check(ps.URL, ps.AppID, "", parseserver.Identity{SessionToken: config.NewSecret(token)}); err != nil {
		t.Errorf("good session config: %v", err)
	}
	cases := []struct {
		name, url, app, key string
		id                  parseserver.Identity
		variable            string
		misconfigured       bool
	}{
		{"wrong app id", ps.URL, "nope", ps.MasterKey, master, "PARSE_MCP_APPLICATION_ID", true},
		{"wrong master key", ps.URL, ps.AppID, "wrong-key", master, "PARSE_MCP_MASTER_KEY", true},
		{"bad session", ps.URL, ps.AppID, "", parseserver.Identity{SessionToken: config.NewSecret("r:bogus")}, "PARSE_MCP_SESSION_TOKEN", true},
		{"wrong mount path", strings.TrimSuffix(ps.URL, "/parse") + "/api", ps.AppID, ps.MasterKey, master, "PARSE_MCP_SERVER_URL", true},
		{"unreachable", "http://127.0.0.1:1/parse", ps.AppID, ps.MasterKey, master, "PARSE_MCP_SERVER_URL", false},
	}
	for _, tc := range cases {
		err := check(tc.url, tc.app, tc.key, tc.id)
		var ce *parseserver.CheckError
		if !errors.As(err, &ce) || ce.Variable != tc.variable || ce.Misconfigured != tc.misconfigured {
			t.Errorf("%s: got %#v, want %s misconfigured=%v", tc.name, err, tc.variable, tc.misconfigured)
			continue
		}
		if strings.Contains(err.Error(), ps.MasterKey) || (tc.key != "" && strings.Contains(err.Error(), tc.key)) {
			t.Errorf("%s: error shows the key: %v", tc.name, err)
		}
	}
}

// TestWritesThroughParse: create/update/delete objects and classes through
// the real Parse Server, with triggers, validation, ACL and error mapping.
func TestWritesThroughParse(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: parsetest.MongoURI(t)})
	c, err := parseserver.New(parseserver.Config{URL: ps.URL, ApplicationID: ps.AppID, MasterKey: config.NewSecret(ps.MasterKey)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	master := parseserver.Identity{Master: true}
	if _, err := c.Do(ctx, parseserver.CreateClass("Note", map[string]any{"title": map[string]any{"type": "String"}, "priority": map[string]any{"type": "Number"}}, nil), master); err != nil {
		t.Fatal(err)
	}
	aliceID, alice := ps.SignUp(t, "alice", "pw")
	_, bob := ps.SignUp(t, "bob", "pw")
	asAlice := parseserver.Identity{SessionToken: config.NewSecret(alice)}
	asBob := parseserver.Identity{SessionToken: config.NewSecret(bob)}

	out, err := c.Do(ctx, parseserver.CreateObject("Note", map[string]any{"title": " hi ", "ACL": map[string]any{"*": map[string]any{"read": true}, aliceID: map[string]any{"read": true, "write": true}}}), asAlice)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := out["objectId"].(string)
	got := ps.MustDo(t, "GET", "/classes/Note/"+id, nil, parsetest.AsMaster)
	if got["title"] != "hi" || got["checkedBy"] != "beforeSave" {
		t.Errorf("beforeSave did not run: %v", got)
	}

	// Validation error: a clear invalid_argument with Parse's message.
	_, err = c.Do(ctx, parseserver.CreateObject("Note", map[string]any{"title": "x", "priority": 9}), asAlice)
	te, ok := toolerror.As(parseserver.ToolError("create_object", err))
	if !ok || te.Code != toolerror.ParseError || !strings.Contains(te.Message, "priority must be a number from 1 to 5") || !strings.Contains(te.Message, "142") {
		t.Errorf("validation error mapped to %#v (%v)", te, err)
	}

	// Bob cannot update alice's public-read note: Parse says 101.
	_, err = c.Do(ctx, parseserver.UpdateObject("Note", id, map[string]any{"title": "hijack"}), asBob)
	te, ok = toolerror.As(parseserver.ToolError("update_object", err))
	if !ok || te.Code != toolerror.ParseError || !strings.Contains(te.Message, "not writable") {
		t.Errorf("ACL refusal mapped to %#v (%v)", te, err)
	}
	// Schema operations need the master key.
	_, err = c.Do(ctx, parseserver.CreateClass("Other", nil, nil), asBob)
	te, ok = toolerror.As(parseserver.ToolError("create_class", err))
	if !ok || te.Code != toolerror.PermissionDenied {
		t.Errorf("schema op as a user mapped to %#v (%v)", te, err)
	}
	if _, err := c.Do(ctx, parseserver.UpdateObject("Note", id, map[string]any{"priority": map[string]any{"__op": "Increment", "amount": 2}}), asAlice); err != nil {
		t.Fatal(err)
	}
	// A non-empty class cannot be deleted (Parse 255).
	_, err = c.Do(ctx, parseserver.DeleteClass("Note"), master)
	if te, ok := toolerror.As(parseserver.ToolError("delete_class", err)); !ok || te.Code != toolerror.ParseError || !strings.Contains(te.Message, "255") {
		t.Errorf("deleting a non-empty class mapped to %#v (%v)", te, err)
	}
	if _, err := c.Do(ctx, parseserver.DeleteObject("Note", id), asAlice); err != nil {
		t.Fatal(err)
	}
	fn, err := c.Do(ctx, parseserver.CallFunction("greet", map[string]any{"name": "Ada"}), asBob)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := fn["result"].(map[string]any); res["user"] != "bob" {
		t.Errorf("greet = %v", fn)
	}
}
