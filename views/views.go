// Package views holds the MCP Apps views (extension io.modelcontextprotocol/ui):
// self-contained HTML pages a host renders next to a tool's result, fed with
// that result (docs/views.md). The page is one bundle (dist/app.js, built from
// src/ by build.mjs with the official @modelcontextprotocol/ext-apps App SDK);
// each view is that bundle under its own ui:// URI, told which view it is by a
// meta tag. The pages hold no data: everything they show comes from a tool
// result the host hands them, or a tool call they ask the host to make.
package views

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Extension is the MCP Apps extension identifier; MIMEType the type of its
// HTML resources.
const (
	Extension = "io.modelcontextprotocol/ui"
	MIMEType  = "text/html;profile=mcp-app"
)

// The views, by name.
const (
	Rows    = "rows"
	Chart   = "chart"
	Confirm = "confirm"
)

// URI is the ui:// resource of a view.
func URI(view string) string { return "ui://parse-mcp/" + view }

// Names lists the views.
var Names = []string{Rows, Chart, Confirm}

// ToolViews names the view of each tool that has one. Tools not listed have
// no view.
var ToolViews = map[string]string{
	"query_class": Rows, "get_objects": Rows, "get_sample_objects": Rows, "export_data": Rows,
	"atlas_text_search": Rows, "semantic_search": Rows, "find_similar": Rows,
	"group_by": Chart, "group_by_date": Chart, "aggregate": Chart,
	"create_object": Confirm, "update_object": Confirm, "delete_object": Confirm,
}

//go:embed dist/app.js
var bundle string

// page is the HTML shell around the bundle. The Content-Security-Policy
// repeats in the document what the resource's _meta declares — no origin at
// all: the script and styles are inline, images only data: URIs — so a view
// cannot load or send anything even where a host applies no CSP of its own.
// Only the bundle itself may run (its hash): markup that a bug let into the
// page could not run a script or an event handler.
const page = `<!doctype html><html><head><meta charset="utf-8">` +
	`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src '%HASH%'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; frame-src 'none'; form-action 'none'; base-uri 'none'">` +
	`<meta name="viewport" content="width=device-width,initial-scale=1">` +
	`<meta name="parse-mcp-view" content="%VIEW%"><title>parse-mcp %VIEW%</title></head>` +
	`<body><div id="app"></div><script>%BUNDLE%</script></body></html>`

// script is the bundle as the page's script element holds it, and
// scriptHash its CSP source.
var script = strings.ReplaceAll(bundle, "</script", `<\/script`)

var scriptHash = sync.OnceValue(func() string {
	h := sha256.Sum256([]byte(script))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
})

// HTML is the page of a view.
func HTML(view string) string {
	// The bundle is inlined last, so a %VIEW% inside it stays as it is.
	html := strings.NewReplacer("%VIEW%", view, "%HASH%", scriptHash()).Replace(page)
	return strings.Replace(html, "%BUNDLE%", script, 1)
}

// resourceMeta is the resource's _meta.ui: an empty CSP allowlist (no
// network, no outside resources, no frames) and a border.
func resourceMeta() map[string]any {
	return map[string]any{"ui": map[string]any{
		"csp":           map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}, "frameDomains": []string{}, "baseUriDomains": []string{}},
		"prefersBorder": true,
	}}
}

// Declared reports whether the client of the request declared the extension
// with its HTML type: at initialize (the session's capabilities) or, in
// 2026-07-28, on the request itself.
func Declared(ctx context.Context) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && declares(*info.ClientCapabilities)
	}
	if s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		return declares(s.GetClientCapabilities())
	}
	return false
}

// declares reads the extension's settings: a client that names the
// extension but lists MIME types without the HTML profile cannot render the
// views. A settings object without mimeTypes is taken as the HTML profile,
// the extension's only one.
func declares(c mcp.ClientCapabilities) bool {
	settings, ok := c.Extensions[Extension].(map[string]any)
	if !ok {
		return false
	}
	types, listed := settings["mimeTypes"].([]any)
	if !listed {
		return settings["mimeTypes"] == nil
	}
	return slices.ContainsFunc(types, func(t any) bool { return t == MIMEType })
}

// Install registers the views' resources and the hooks that show them only
// to clients that declared the extension: the extension in the server's
// capabilities (initialize, server/discover), the view of each tool in its
// _meta (tools/list) and the ui:// resources in resources/list. A client
// that did not declare it gets what it got before the views existed, byte
// for byte.
func Install(s *mcpserver.MCPServer, hooks *mcpserver.Hooks) {
	var listed []mcp.Resource
	for _, name := range Names {
		res := mcp.NewResource(URI(name), "parse-mcp "+name+" view", mcp.WithMIMEType(MIMEType))
		listed = append(listed, res)
		s.AddResource(res, func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			// Built per read: the page is the size of the bundle, and an
			// idle server should not hold three copies of it.
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: URI(name), MIMEType: MIMEType, Text: HTML(name), Meta: resourceMeta()}}, nil
		})
	}
	hooks.AddAfterInitialize(func(_ context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
		if req != nil && res != nil && declares(req.Params.Capabilities) {
			res.Capabilities.Extensions = withExtension(res.Capabilities.Extensions)
		}
	})
	hooks.AddAfterDiscover(func(ctx context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		if res != nil && Declared(ctx) {
			res.Capabilities.Extensions = withExtension(res.Capabilities.Extensions)
		}
	})
	hooks.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if res == nil || !Declared(ctx) {
			return
		}
		// The listed tools may share their backing array with the
		// server's own list: change a copy.
		res.Tools = slices.Clone(res.Tools)
		for i, t := range res.Tools {
			if view, ok := ToolViews[t.Name]; ok {
				res.Tools[i].Meta = withView(t.Meta, view)
			}
		}
	})
	hooks.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		if res == nil {
			return
		}
		// The resources package builds the list per request (it runs
		// first); the views are added to it for an Apps client only.
		res.Resources = slices.DeleteFunc(res.Resources, func(r mcp.Resource) bool { return strings.HasPrefix(r.URI, "ui://") })
		if Declared(ctx) {
			res.Resources = append(res.Resources, listed...)
		}
	})
}

// withExtension is a copy of a capabilities' extensions with this one added
// (the server's own map is shared by every session).
func withExtension(ext map[string]any) map[string]any {
	out := maps.Clone(ext)
	if out == nil {
		out = map[string]any{}
	}
	out[Extension] = map[string]any{}
	return out
}

// withView is a copy of a tool's _meta naming its view (the listed tool's
// Meta is shared by every session's list).
func withView(m *mcp.Meta, view string) *mcp.Meta {
	out := &mcp.Meta{AdditionalFields: map[string]any{}}
	if m != nil {
		out.ProgressToken = m.ProgressToken
		maps.Copy(out.AdditionalFields, m.AdditionalFields)
	}
	out.AdditionalFields["ui"] = map[string]any{"resourceUri": URI(view)}
	return out
}
