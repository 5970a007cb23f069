// Package prompts serves parse-mcp's MCP prompts: the eight built-ins of
// docs/resources.md "Prompts and resources" and the prompts the operator declares in the policy file.
// Every argument is validated before a prompt is rendered (class names must
// name a class this server may see, ids and field names are checked
// syntactically, dates must be ISO 8601); a bad argument is answered with
// JSON-RPC -32602 and a message saying what to fix.
package prompts

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/resources"
	"github.com/parse-mcp/parse-mcp/server"
	"github.com/parse-mcp/parse-mcp/tools"
)

// ArgType says how a prompt argument is validated and completed.
type ArgType string

const (
	ArgString    ArgType = "string"
	ArgClass     ArgType = "class_name" // a class this server may see
	ArgClassList ArgType = "class_list" // comma-separated class names
	ArgObjectID  ArgType = "object_id"
	ArgDate      ArgType = "date"  // ISO 8601 date or date-time
	ArgField     ArgType = "field" // a field name (dotted paths allowed)
	ArgInteger   ArgType = "integer"
)

var argTypes = map[ArgType]bool{ArgString: true, ArgClass: true, ArgClassList: true, ArgObjectID: true, ArgDate: true, ArgField: true, ArgInteger: true}

// Arg is one prompt argument.
type Arg struct {
	Name        string
	Description string
	Type        ArgType
	Required    bool
	Default     string
}

// Values are a prompt's validated arguments. Class names are canonical,
// dates normalised to RFC 3339 UTC.
type Values struct {
	raw     map[string]string
	classes map[string]*parsedb.Class
	schema  *parsedb.Schema
}

// Get returns an argument's value ("" when absent and without default).
func (v *Values) Get(name string) string { return v.raw[name] }

// Class returns the resolved class of a class_name argument.
func (v *Values) Class(name string) *parsedb.Class { return v.classes[name] }

// Prompt is one prompt: its definition and how it renders.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Args        []Arg
	// Render builds the prompt's text from validated values; it may fail
	// with a toolerror.InvalidParams error for cross-argument checks.
	Render func(ctx context.Context, p *Provider, v *Values) (string, error)
	// Tools are the tools the prompt's steps direct the model to: it is
	// offered only to a caller that may call every one of them (Permitted).
	Tools []string
}

// Permitted reports whether the caller in ctx may use pr: every tool its
// steps name passes the policy's tool gates for that caller (tool filter,
// tier, env gates) — per request with PARSE_MCP_HTTP_AUTH.
func (p *Provider) Permitted(ctx context.Context, pr *Prompt) bool {
	if len(pr.Tools) == 0 || p.d == nil || p.d.Policy == nil {
		return true
	}
	e := p.d.Policy.For(ctx)
	for _, name := range pr.Tools {
		t := server.FindTool(p.d, name)
		if t == nil || e.Permit(t.ToolInfo) != nil {
			return false
		}
	}
	return true
}

// filter is prompts/list for the caller in ctx: the prompts it may use.
func (p *Provider) filter(ctx context.Context, list []mcp.Prompt) []mcp.Prompt {
	out := list[:0:0]
	for _, m := range list {
		if pr := p.byName[m.Name]; pr == nil || p.Permitted(ctx, pr) {
			out = append(out, m)
		}
	}
	return out
}

// Provider holds the prompts and what they need to validate arguments.
type Provider struct {
	d       *tools.Deps
	prompts []*Prompt
	byName  map[string]*Prompt
	res     *resources.Provider
}

// New builds the built-in prompts plus the configured ones. A configured
// prompt that is malformed fails start-up with an error naming it.
func New(d *tools.Deps, res *resources.Provider, configured []policy.PromptSpec) (*Provider, error) {
	p := &Provider{d: d, res: res, byName: map[string]*Prompt{}}
	for _, b := range builtins() {
		p.add(b)
	}
	if d != nil && d.Policy != nil && d.Policy.SearchEnabled() {
		p.add(searchPrompt())
	}
	for i, spec := range configured {
		cp, err := fromSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("prompts[%d] (%s): %w", i, spec.Name, err)
		}
		if _, dup := p.byName[cp.Name]; dup {
			return nil, fmt.Errorf("prompts[%d]: a prompt named %q already exists", i, cp.Name)
		}
		p.add(cp)
	}
	return p, nil
}

func (p *Provider) add(pr *Prompt) {
	p.prompts = append(p.prompts, pr)
	p.byName[pr.Name] = pr
}

// Prompts lists the prompts by name.
func (p *Provider) Prompts() []*Prompt {
	out := append([]*Prompt(nil), p.prompts...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ServerOptions are the mcp-go options the prompts need: the prompt
// capability (listChanged false: the set is fixed at start-up) and
// completion of prompt arguments.
func (p *Provider) ServerOptions() []mcpserver.ServerOption {
	return []mcpserver.ServerOption{
		mcpserver.WithPromptCapabilities(false),
		mcpserver.WithPromptFilter(p.filter),
		mcpserver.WithCompletions(),
		mcpserver.WithPromptCompletionProvider(p),
	}
}

// Register adds every prompt to the server.
func (p *Provider) Register(s *mcpserver.MCPServer) {
	for _, pr := range p.prompts {
		opts := []mcp.PromptOption{mcp.WithPromptDescription(pr.Description)}
		if pr.Title != "" {
			opts = append(opts, mcp.WithPromptTitle(pr.Title))
		}
		for _, a := range pr.Args {
			aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
			if a.Required {
				aopts = append(aopts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.Name, aopts...))
		}
		s.AddPrompt(mcp.NewPrompt(pr.Name, opts...), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return p.Get(ctx, pr.Name, req.Params.Arguments)
		})
	}
}

// Get validates the arguments and renders a prompt.
func (p *Provider) Get(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	pr := p.byName[name]
	if pr == nil || !p.Permitted(ctx, pr) {
		// A prompt the caller may not use answers as one that does not
		// exist, as prompts/list leaves it out.
		return nil, toolerror.InvalidParams("Unknown prompt %q", name)
	}
	v, err := p.validate(ctx, pr, args)
	if err != nil {
		return nil, err
	}
	text, err := pr.Render(ctx, p, v)
	if err != nil {
		return nil, err
	}
	return mcp.NewGetPromptResult(pr.Description, []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
	}), nil
}

// MaxStringArg caps a free-text argument.
const MaxStringArg = 500

// MaxClassList caps the classes of a class_list argument.
const MaxClassList = 20

func (p *Provider) validate(ctx context.Context, pr *Prompt, args map[string]string) (*Values, error) {
	v := &Values{raw: map[string]string{}, classes: map[string]*parsedb.Class{}}
	for _, a := range pr.Args {
		val, ok := args[a.Name]
		val = strings.TrimSpace(val)
		if !ok || val == "" {
			if a.Required {
				return nil, toolerror.InvalidParams("Argument %s is required", a.Name)
			}
			if a.Default == "" {
				continue
			}
			val = a.Default
		}
		norm, err := p.check(ctx, v, a, val)
		if err != nil {
			return nil, err
		}
		v.raw[a.Name] = norm
	}
	return v, nil
}

func (p *Provider) schema(ctx context.Context, v *Values) (*parsedb.Schema, error) {
	if v.schema == nil {
		s, err := p.d.Store.Schema.Get(ctx)
		if err != nil {
			return nil, err
		}
		v.schema = s
	}
	return v.schema, nil
}

// resolveClass is the class gate of the tools: hidden, internal and unknown
// classes are refused alike, suggestions come from visible classes only.
func (p *Provider) resolveClass(ctx context.Context, v *Values, arg, name string) (*parsedb.Class, error) {
	if !parsedb.ClassNameRe.MatchString(name) {
		return nil, toolerror.InvalidParams("Argument %s: %q is not a valid Parse class name (letters, digits and _, starting with a letter or _)", arg, clip(name))
	}
	s, err := p.schema(ctx, v)
	if err != nil {
		return nil, err
	}
	cls, err := p.d.Policy.For(ctx).ResolveClass(ctx, s, name)
	if err != nil {
		if te, ok := toolerror.As(err); ok {
			return nil, toolerror.InvalidParams("Argument %s: %s", arg, te.Message)
		}
		return nil, err
	}
	return cls, nil
}

func (p *Provider) check(ctx context.Context, v *Values, a Arg, val string) (string, error) {
	switch a.Type {
	case ArgClass:
		cls, err := p.resolveClass(ctx, v, a.Name, val)
		if err != nil {
			return "", err
		}
		v.classes[a.Name] = cls
		return cls.Name, nil
	case ArgClassList:
		var names []string
		for part := range strings.SplitSeq(val, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			cls, err := p.resolveClass(ctx, v, a.Name, part)
			if err != nil {
				return "", err
			}
			names = append(names, cls.Name)
		}
		if len(names) > MaxClassList {
			return "", toolerror.InvalidParams("Argument %s: at most %d classes", a.Name, MaxClassList)
		}
		return strings.Join(names, ","), nil
	case ArgObjectID:
		if !parsedb.ObjectIDRe.MatchString(val) {
			return "", toolerror.InvalidParams("Argument %s: %q is not a valid objectId (1-32 of A-Z a-z 0-9 _ -)", a.Name, clip(val))
		}
		return val, nil
	case ArgDate:
		t, ok := ParseISODate(val)
		if !ok {
			return "", toolerror.InvalidParams("Argument %s: %q is not an ISO 8601 date (e.g. 2024-03-01 or 2024-03-01T12:00:00Z)", a.Name, clip(val))
		}
		return t.UTC().Format(time.RFC3339Nano), nil
	case ArgField:
		if !parsedb.FieldPathRe.MatchString(val) || parsedb.IsInternalPath(val) {
			return "", toolerror.InvalidParams("Argument %s: %q is not a valid field name (letters, digits and _, starting with a letter; dotted sub-fields allowed)", a.Name, clip(val))
		}
		return val, nil
	case ArgInteger:
		n, err := strconv.Atoi(val)
		if err != nil {
			return "", toolerror.InvalidParams("Argument %s: %q is not a whole number", a.Name, clip(val))
		}
		return strconv.Itoa(n), nil
	default:
		if len(val) > MaxStringArg {
			return "", toolerror.InvalidParams("Argument %s is longer than %d characters", a.Name, MaxStringArg)
		}
		for _, r := range val {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				return "", toolerror.InvalidParams("Argument %s contains control characters", a.Name)
			}
		}
		return val, nil
	}
}

// ParseISODate accepts the ISO 8601 forms people and models write: a date
// (2024-03-01), a date-time with zone (RFC 3339, fractional seconds
// allowed), or a date-time without zone (taken as UTC).
func ParseISODate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// visibleFields are a class's fields this server may show, by name.
func (p *Provider) visibleFields(ctx context.Context, cls *parsedb.Class) map[string]*parsedb.Field {
	out := map[string]*parsedb.Field{}
	for _, f := range p.d.Policy.For(ctx).VisibleFields(cls) {
		out[f.Name] = f
	}
	return out
}
