package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/tools"
	"github.com/parse-mcp/parse-mcp/views"
)

// MCP Apps views (docs/views.md) through the binary: only a client that
// declares the extension sees them, in both protocol eras; everyone else
// gets the same bytes as before the views existed.

// appsCaps declares the extension with its HTML profile.
const appsCaps = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`

// rawAnswer reads stdout until the response with id and returns its line as
// sent.
func (r *rawServer) rawAnswer(id string) string {
	r.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("server closed stdout")
			}
			if fmt.Sprint(decodeLine(r.t, line)["id"]) == id {
				return line
			}
		case <-deadline:
			r.t.Fatalf("no answer to %s", id)
		}
	}
}

// viewMetaRe matches what the extension adds to a tool's _meta.
var viewMetaRe = regexp.MustCompile(`,"ui":\{"resourceUri":"ui://parse-mcp/[a-z]+"\}`)

// TestViewsOnlyForDeclaredClients: the session era (initialize) and
// 2026-07-28 (per-request capabilities).
func TestViewsOnlyForDeclaredClients(t *testing.T) {
	type era struct {
		lines         map[string]string // method → answer line
		extensionSeen bool
	}
	// A destructive write's dry run (settings.confirm_writes defaults to
	// destructive): only an Apps client's carries the confirm view's token.
	songs := rowObjects(callOK(t, stdioClient(t), "query_class", map[string]any{"class_name": "Song", "limit": 1}), "results")
	if len(songs) != 1 {
		t.Fatalf("a Song: %v", songs)
	}
	dryDelete := fmt.Sprintf(`{"class_name":"Song","object_id":%q,"dry_run":true}`, obj(songs[0])["objectId"])
	// With the write tools listed, so the confirm view is in the snapshot.
	legacy := func(caps string) era {
		r := startRaw(t, writeEnv...)
		r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
		init := r.rawAnswer("init")
		r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		out := era{lines: map[string]string{}, extensionSeen: strings.Contains(init, views.Extension)}
		for _, m := range []string{"tools/list", "resources/list"} {
			r.send(`{"jsonrpc":"2.0","id":"` + m + `","method":"` + m + `","params":{}}`)
			out.lines[m] = r.rawAnswer(m)
		}
		r.send(`{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"group_by","arguments":{"class_name":"Song","field":"genre"}}}`)
		out.lines["tools/call"] = r.rawAnswer("call")
		r.send(`{"jsonrpc":"2.0","id":"dry","method":"tools/call","params":{"name":"delete_object","arguments":` + dryDelete + `}}`)
		out.lines["dry run"] = r.rawAnswer("dry")
		return out
	}
	modern := func(caps string) era {
		r := startRaw(t, writeEnv...)
		body := func(id, method, params string) string {
			b := statelessBody(id, method, params, "")
			return strings.Replace(b, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":`+caps, 1)
		}
		r.send(body("d", "server/discover", ""))
		out := era{lines: map[string]string{}, extensionSeen: strings.Contains(r.rawAnswer("d"), views.Extension)}
		for _, m := range []string{"tools/list", "resources/list"} {
			r.send(body(m, m, ""))
			out.lines[m] = r.rawAnswer(m)
		}
		r.send(body("call", "tools/call", `{"name":"group_by","arguments":{"class_name":"Song","field":"genre"}}`))
		out.lines["tools/call"] = r.rawAnswer("call")
		r.send(body("dry", "tools/call", `{"name":"delete_object","arguments":`+dryDelete+`}`))
		out.lines["dry run"] = r.rawAnswer("dry")
		return out
	}
	for name, run := range map[string]func(string) era{"2025-11-25": legacy, "2026-07-28": modern} {
		t.Run(name, func(t *testing.T) {
			plain, apps := run(`{}`), run(appsCaps)
			if plain.extensionSeen || !apps.extensionSeen {
				t.Errorf("the server declares the extension: to a plain client %v, to an Apps client %v", plain.extensionSeen, apps.extensionSeen)
			}
			if strings.Contains(plain.lines["tools/list"], "ui://") || strings.Contains(plain.lines["resources/list"], "ui://") {
				t.Errorf("a client without the extension sees views:\n%s\n%s", plain.lines["tools/list"], plain.lines["resources/list"])
			}
			// The Apps client's list is the plain one plus each tool's view,
			// byte for byte.
			if got := viewMetaRe.ReplaceAllString(apps.lines["tools/list"], ""); got != plain.lines["tools/list"] {
				t.Errorf("tools/list differs beyond the views:\n apps %s\nplain %s", got, plain.lines["tools/list"])
			}
			want := 0
			for tool := range views.ToolViews {
				if strings.Contains(plain.lines["tools/list"], `"name":"`+tool+`"`) {
					want++
				}
			}
			if n := len(viewMetaRe.FindAllString(apps.lines["tools/list"], -1)); n != want || want == 0 {
				t.Errorf("%d tools name a view, want %d", n, want)
			}
			// A read's result is the same for both.
			if apps.lines["tools/call"] != plain.lines["tools/call"] {
				t.Errorf("a read's result depends on the extension:\n apps %s\nplain %s", apps.lines["tools/call"], plain.lines["tools/call"])
			}
			token := regexp.MustCompile(`"` + tools.ViewConfirmationKey + `":"parse-mcp\.confirm\.v2\.[A-Za-z0-9_-]+"`)
			if token.MatchString(plain.lines["dry run"]) || !token.MatchString(apps.lines["dry run"]) {
				t.Errorf("the confirm view's token: plain client %v, Apps client %v", token.MatchString(plain.lines["dry run"]), token.MatchString(apps.lines["dry run"]))
			}
			var dp, da struct {
				Result struct{ StructuredContent map[string]any }
			}
			_ = json.Unmarshal([]byte(plain.lines["dry run"]), &dp)
			_ = json.Unmarshal([]byte(apps.lines["dry run"]), &da)
			if fmt.Sprint(dp.Result.StructuredContent) != fmt.Sprint(da.Result.StructuredContent) || dp.Result.StructuredContent["dry_run"] != true {
				t.Errorf("the dry run's content depends on the extension:\n%v\n%v", dp.Result.StructuredContent, da.Result.StructuredContent)
			}
			if strings.Contains(apps.lines["dry run"][:strings.Index(apps.lines["dry run"], `"_meta"`)+1], "parse-mcp.confirm") {
				t.Errorf("the token is outside the result's _meta")
			}
			for _, v := range views.Names {
				if !strings.Contains(apps.lines["resources/list"], `"uri":"`+views.URI(v)+`"`) {
					t.Errorf("resources/list lacks %s", views.URI(v))
				}
			}
			checkViewSnapshot(t, apps.lines["tools/list"])
			// What the views cost an Apps client's tools/list (a client
			// without them pays nothing: its bytes are unchanged).
			extra := strings.Join(viewMetaRe.FindAllString(apps.lines["tools/list"], -1), "")
			t.Logf("tools/list: %d tokens; an Apps client's _meta.ui adds %d tokens", countTokens(t, plain.lines["tools/list"]), countTokens(t, extra))
		})
	}
}

// checkViewSnapshot compares each tool's _meta in an Apps client's
// tools/list with testdata/views_tools_meta.json (UPDATE_VIEWSNAPS=1
// rewrites it).
func checkViewSnapshot(t *testing.T, line string) {
	t.Helper()
	var msg struct {
		Result struct {
			Tools []struct {
				Name string          `json:"name"`
				Meta json.RawMessage `json:"_meta"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &msg); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{\n")
	for i, tool := range msg.Result.Tools {
		sep := ","
		if i == len(msg.Result.Tools)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %q: %s%s\n", tool.Name, tool.Meta, sep)
	}
	b.WriteString("}\n")
	path := filepath.Join("testdata", "views_tools_meta.json")
	if os.Getenv("UPDATE_VIEWSNAPS") == "1" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_VIEWSNAPS=1 creates it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("the Apps client's tool _meta differs from %s:\n got %s\nwant %s", path, b.String(), want)
	}
}

// TestViewResources: each view is self-contained HTML with the extension's
// MIME type and an empty CSP allowlist, and holds no data.
func TestViewResources(t *testing.T) {
	r := startRaw(t)
	initializeWith(r, appsCaps)
	for _, v := range views.Names {
		res := result(t, r.rpc(v, "resources/read", `{"uri":"`+views.URI(v)+`"}`))
		c := obj(res["contents"].([]any)[0])
		html, _ := c["text"].(string)
		if c["mimeType"] != views.MIMEType || !strings.HasPrefix(html, "<!doctype html>") {
			t.Fatalf("%s: %v %.80s", v, c["mimeType"], html)
		}
		csp := obj(obj(obj(c["_meta"])["ui"])["csp"])
		for _, k := range []string{"connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"} {
			if l, ok := csp[k].([]any); !ok || len(l) != 0 {
				t.Errorf("%s: csp %s = %v, want []", v, k, csp[k])
			}
		}
		// No data in the page: no demo object id, no confirmation token.
		for _, bad := range []string{"parse-mcp.confirm", "org_north", "Lunar"} {
			if strings.Contains(html, bad) {
				t.Errorf("%s: the page contains %q", v, bad)
			}
		}
	}
}
