// Package resources serves parse-mcp's MCP resources: for every class the
// session may see, parse://{className}/schema, /count and /samples, their
// three RFC 6570 templates, completion of {className}, and the subscription
// source (fingerprints and change streams) behind resources/subscribe.
//
// A resource is the result of the tool that computes it (get_schema,
// count_objects, get_sample_objects), run through the same policy
// middleware as tools/call, so hidden classes, filters, tenant and ACL scope
// apply identically.
package resources

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/server"
	"github.com/parse-mcp/parse-mcp/tools"
)

// Scheme is the URI scheme of every resource.
const Scheme = "parse://"

// Kind is one of the three resources of a class.
type Kind struct {
	Name        string // path segment: schema, count, samples
	Tool        string // the tool whose result the resource is
	Args        map[string]any
	Title       string
	Description string
	// Subscribable kinds can be watched with resources/subscribe.
	Subscribable bool
}

// Kinds are the resources of every visible class, in listing order.
var Kinds = []Kind{
	{Name: "schema", Tool: "get_schema", Title: "schema",
		Description: "Fields (type, pointer target, description, allowed values), indexes and permissions of %s, as get_schema returns them."},
	{Name: "count", Tool: "count_objects", Title: "object count", Subscribable: true,
		Description: "Number of %s objects this server may read (default filters applied), as count_objects returns it. Subscribable."},
	{Name: "samples", Tool: "get_sample_objects", Args: map[string]any{"limit": float64(SampleLimit)}, Title: "recent samples", Subscribable: true,
		Description: "The most recently created %s objects (up to 5), as get_sample_objects returns them. Subscribable."},
}

// SampleLimit is how many objects parse://C/samples shows.
const SampleLimit = 5

// MIMEType of every resource.
const MIMEType = "application/json"

// parseURI splits parse://{className}/{kind} (^parse://([A-Za-z_][A-Za-z0-9_]{0,127})/([a-z]+)$)
// into the class name and the kind.
func parseURI(uri string) (class, kind string, ok bool) {
	rest, ok := strings.CutPrefix(uri, Scheme)
	if !ok {
		return "", "", false
	}
	class, kind, ok = strings.Cut(rest, "/")
	if !ok || !parsedb.ClassNameRe.MatchString(class) || !uriKind.MatchString(kind) {
		return "", "", false
	}
	return class, kind, true
}

var uriKind = parsedb.NewNamePattern("", "a-z", "a-z", 0)

// Provider implements the resources surface over the tools' dependencies.
type Provider struct {
	d   *tools.Deps
	log zerolog.Logger

	engineOnce sync.Once
	ferretdb1  bool // the database is FerretDB 1.x (watch.go)
}

// New builds the provider.
func New(d *tools.Deps, log zerolog.Logger) *Provider {
	return &Provider{d: d, log: log}
}

// ServerOptions are the mcp-go options the resources need (templates
// completion).
func (p *Provider) ServerOptions() []mcpserver.ServerOption {
	return []mcpserver.ServerOption{
		mcpserver.WithCompletions(),
		mcpserver.WithResourceCompletionProvider(p),
	}
}

// Register adds the templates and the per-session resource list.
func (p *Provider) Register(s *mcpserver.MCPServer) {
	for _, k := range Kinds {
		tmpl := mcp.NewResourceTemplate(Scheme+"{className}/"+k.Name, "class "+k.Title,
			mcp.WithTemplateTitle("Parse class "+k.Title),
			mcp.WithTemplateDescription(strings.ReplaceAll(k.Description, "%s", "{className}")),
			mcp.WithTemplateMIMEType(MIMEType))
		s.AddResourceTemplate(tmpl, p.read)
	}
	// resources/list depends on the live schema and the policy, so the list
	// is built per request: mcp-go lists its static resources (none) and
	// this hook fills the result in.
	if hooks := s.GetHooks(); hooks != nil {
		hooks.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, result *mcp.ListResourcesResult) {
			if result == nil {
				return
			}
			list, err := p.List(ctx)
			if err != nil {
				p.log.Error().Err(err).Msg("resources/list: cannot load the schema")
				return
			}
			result.Resources = list
			result.NextCursor = ""
		})
	}
}

// kindsAvailable are the kinds whose tool exists and this server permits.
func (p *Provider) kindsAvailable(ctx context.Context) []Kind {
	var out []Kind
	for _, k := range Kinds {
		t := server.FindTool(p.d, k.Tool)
		if t == nil || p.d.Policy.For(ctx).Permit(t.ToolInfo) != nil {
			continue
		}
		out = append(out, k)
	}
	return out
}

func (p *Provider) kind(ctx context.Context, name string) (Kind, bool) {
	for _, k := range p.kindsAvailable(ctx) {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// visibleClasses are the classes this session may see, sorted.
func (p *Provider) visibleClasses(ctx context.Context) ([]string, error) {
	schema, err := p.d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	return p.d.Policy.For(ctx).VisibleClassNames(schema), nil
}

// List is resources/list: three resources per visible class.
func (p *Provider) List(ctx context.Context) ([]mcp.Resource, error) {
	classes, err := p.visibleClasses(ctx)
	if err != nil {
		return nil, err
	}
	kinds := p.kindsAvailable(ctx)
	out := make([]mcp.Resource, 0, len(classes)*len(kinds))
	for _, c := range classes {
		for _, k := range kinds {
			r := mcp.NewResource(URI(c, k.Name), c+" "+k.Name,
				mcp.WithResourceTitle(c+" "+k.Title),
				mcp.WithResourceDescription(strings.ReplaceAll(k.Description, "%s", c)),
				mcp.WithMIMEType(MIMEType))
			out = append(out, r)
		}
	}
	return out, nil
}

// URI is the resource URI of a class's kind.
func URI(class, kind string) string { return Scheme + class + "/" + kind }

// Parse validates a resource URI and returns its class and kind. The class
// must be one this session may see (hidden, internal and unknown classes are
// refused alike, with "did you mean" drawn from visible classes only).
func (p *Provider) Parse(ctx context.Context, uri string) (string, Kind, error) {
	return p.parse(ctx, uri, false)
}

// parse is Parse; asTool checks the class gate with the CLP operation of
// the kind's tool (count for /count) instead of find: resources/subscribe
// does, since no tools/call (and no middleware) follows it. A read leaves
// that check to the middleware around the tool, which audits it.
func (p *Provider) parse(ctx context.Context, uri string, asTool bool) (string, Kind, error) {
	className, kind, ok := parseURI(uri)
	if !ok {
		return "", Kind{}, toolerror.InvalidParams("Invalid resource URI: expected parse://{className}/schema, /count or /samples with a Parse class name")
	}
	k, ok := p.kind(ctx, kind)
	if !ok {
		return "", Kind{}, toolerror.InvalidParams("Unknown resource kind %q: expected schema, count or samples", kind)
	}
	schema, err := p.d.Store.Schema.Get(ctx)
	if err != nil {
		return "", Kind{}, err
	}
	if asTool {
		ctx = p.d.Policy.For(ctx).AsToolCall(ctx, k.Tool, className)
	}
	if _, err := p.d.Policy.For(ctx).ResolveClass(ctx, schema, className); err != nil {
		if te, ok := toolerror.As(err); ok {
			return "", Kind{}, toolerror.InvalidParams("%s", te.Message)
		}
		return "", Kind{}, err
	}
	return className, k, nil
}

// read is resources/read for every kind.
func (p *Provider) read(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	class, k, err := p.Parse(ctx, uri)
	if err != nil {
		return nil, err
	}
	args := map[string]any{"class_name": class}
	maps.Copy(args, k.Args)
	res, found, err := server.CallTool(ctx, p.d, k.Tool, args)
	switch {
	case err != nil:
		return nil, err // a security violation (already recorded) or internal
	case !found:
		return nil, toolerror.InvalidParams("%s is not available on this server", uri)
	case res.IsError:
		return nil, resultError(ctx, res)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text = tc.Text
			break
		}
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: MIMEType, Text: text}}, nil
}

// resultError maps a tool's error result to a resources/read error: the
// model-fixable and policy failures are -32602 with the tool's message,
// internal failures stay internal (-32603, message scrubbed), and a
// cancelled read gets no answer at all.
func resultError(ctx context.Context, res *mcp.CallToolResult) error {
	code := ""
	if res.Meta != nil {
		code, _ = res.Meta.AdditionalFields["parse.error_code"].(string)
	}
	msg := ""
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			msg = tc.Text
			break
		}
	}
	switch toolerror.Code(code) {
	case toolerror.Internal, "":
		return errors.New("resource read failed: " + msg)
	case toolerror.Cancelled:
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return toolerror.InvalidParams("%s", msg)
}
