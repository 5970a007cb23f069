// Package policy is parse-mcp's security boundary: which tools a session may
// call, which classes and fields it may see, and which filters every read
// carries. It is enforced in one middleware in front of every tool and knows
// nothing about transports.
package policy

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/config"
	"github.com/parse-mcp/parse-mcp/parsedb"
	"github.com/parse-mcp/parse-mcp/toolerror"
)

// ToolInfo is what the policy needs to know about a tool.
type ToolInfo struct {
	Name     string
	Category string
	Tier     string        // config.TierReadonly | TierWrite | TierAdmin
	Gates    []string      // env kill switches that must all be on
	Timeout  time.Duration // per-call timeout
}

// Gate variable names.
const (
	GateWriteTools = "PARSE_AGENT_ALLOW_WRITE_TOOLS"
	GateRawCRUD    = "PARSE_AGENT_ALLOW_RAW_CRUD"
	GateSchemaOps  = "PARSE_AGENT_ALLOW_SCHEMA_OPS"
	GateRawSchema  = "PARSE_AGENT_ALLOW_RAW_SCHEMA"
)

// Engine evaluates the policy.
type Engine struct {
	cfg   *config.Config
	log   zerolog.Logger
	tools map[string]ToolInfo
	// hidden are classes no tool may see, ever.
	hidden map[string]bool
	// exceptMaster are hidden unless the server runs in master posture.
	exceptMaster map[string]bool
	// file is the loaded policy file (nil = built-in safe defaults).
	file *File
}

// DefaultHiddenClasses are hidden unless the policy says otherwise. _Session
// is visible in master posture only (see Hidden).
var DefaultHiddenClasses = []string{"_Product", "_JobStatus", "_JobSchedule", "_PushStatus", "_Audience", "_Idempotency", "_GlobalConfig", "_GraphQLConfig", "_Hooks", "_SCHEMA"}

// New builds an engine from the configuration and the (already validated)
// policy file; file may be nil.
func New(cfg *config.Config, file *File, log zerolog.Logger) *Engine {
	e := &Engine{cfg: cfg, file: file, log: log, tools: map[string]ToolInfo{}, hidden: map[string]bool{}, exceptMaster: map[string]bool{"_Session": true}}
	for _, c := range DefaultHiddenClasses {
		e.hidden[c] = true
	}
	if file != nil {
		for name, cp := range file.Classes {
			switch h := cp.Hidden.(type) {
			case bool:
				if h {
					e.hidden[name] = true
				}
			case string:
				if h == "except_master" {
					e.exceptMaster[name] = true
				}
			}
		}
	}
	return e
}

// Register tells the engine about the tools it guards.
func (e *Engine) Register(infos ...ToolInfo) {
	for _, t := range infos {
		e.tools[t.Name] = t
	}
}

// MasterPosture reports whether no identity scope is configured.
func (e *Engine) MasterPosture() bool { return e.cfg.Identity() == "master" }

// Hidden reports whether a class is hidden from every surface.
func (e *Engine) Hidden(class string) bool {
	if parsedb.IsInternalCollection(class) || e.hidden[class] {
		return true
	}
	if e.exceptMaster[class] && !e.MasterPosture() {
		return true
	}
	return false
}

var tierRank = map[string]int{config.TierReadonly: 0, config.TierWrite: 1, config.TierAdmin: 2}

// Permit reports whether the session may call a tool at all (tool filter,
// tier, env gates), in dispatch order. A nil error means permitted.
func (e *Engine) Permit(t ToolInfo) *toolerror.Error {
	if tierRank[t.Tier] > tierRank[e.cfg.Permissions] {
		return toolerror.New(toolerror.PermissionDenied, "%s needs the %s tier; this server runs with PARSE_MCP_PERMISSIONS=%s", t.Name, t.Tier, e.cfg.Permissions)
	}
	var missing []string
	for _, g := range t.Gates {
		if !e.gateOn(g) {
			missing = append(missing, g)
		}
	}
	if len(missing) > 0 {
		err := toolerror.Denied("env_gate", "%s is disabled by the operator: it needs %s set to true", t.Name, strings.Join(missing, " and "))
		return err
	}
	return nil
}

func (e *Engine) gateOn(name string) bool {
	g := e.cfg.Gates
	switch name {
	case GateWriteTools:
		return g.WriteTools
	case GateRawCRUD:
		return g.RawCRUD
	case GateSchemaOps:
		return g.SchemaOps
	case GateRawSchema:
		return g.RawSchema
	}
	return false
}

// ToolFilter removes the tools this session may not call from tools/list;
// mcp-go applies the same filter to tools/call.
func (e *Engine) ToolFilter(_ context.Context, tools []mcp.Tool) []mcp.Tool {
	out := tools[:0:0]
	for _, t := range tools {
		info, ok := e.tools[t.Name]
		if ok && e.Permit(info) == nil {
			out = append(out, t)
		}
	}
	return out
}

// ResolveClass is the class gate: it checks that name is a class the session
// may use and returns it. Unknown names get "did you mean" suggestions drawn
// from visible classes only.
func (e *Engine) ResolveClass(ctx context.Context, schema *parsedb.Schema, name string) (*parsedb.Class, error) {
	if e.Hidden(name) {
		// Hidden and internal classes are indistinguishable from missing ones
		// to the model, but the details tell the operator log why.
		err := e.unknownClass(schema, name)
		err.Details = &toolerror.Details{Kind: "hidden_class"}
		err.Code = toolerror.AccessDenied
		return nil, err
	}
	cls := schema.Class(name)
	if cls == nil {
		return nil, e.unknownClass(schema, name)
	}
	return cls, nil
}

func (e *Engine) unknownClass(schema *parsedb.Schema, name string) *toolerror.Error {
	msg := fmt.Sprintf("Class %s does not exist or is not accessible.", name)
	if s := Suggest(name, e.VisibleClassNames(schema), 3); len(s) > 0 {
		msg += " Did you mean " + strings.Join(s, ", ") + "?"
	}
	return toolerror.New(toolerror.InvalidArgument, "%s", msg)
}

// VisibleClassNames lists the classes this session may see, sorted.
func (e *Engine) VisibleClassNames(schema *parsedb.Schema) []string {
	var out []string
	for _, n := range schema.Names() {
		if !e.Hidden(n) {
			out = append(out, n)
		}
	}
	return out
}

// Suggest returns up to n candidates closest to name by edit distance
// (case-insensitive), nearest first; candidates too far away are left out.
func Suggest(name string, candidates []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	lname := strings.ToLower(name)
	var list []scored
	for _, c := range candidates {
		d := levenshtein(lname, strings.ToLower(c))
		limit := max(2, len(name)/2)
		if d <= limit || strings.Contains(strings.ToLower(c), lname) && len(lname) >= 3 {
			list = append(list, scored{c, d})
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].d != list[j].d {
			return list[i].d < list[j].d
		}
		return list[i].name < list[j].name
	})
	var out []string
	for i := 0; i < len(list) && i < n; i++ {
		out = append(out, list[i].name)
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Middleware is the single policy checkpoint in front of every tool. It runs
// the dispatch order of §5.1 up to the class gate, then the tool, and emits
// one tool_call audit event per call.
func (e *Engine) Middleware(schema func(context.Context) (*parsedb.Schema, error)) mcpserver.ToolHandlerMiddleware {
	return func(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start := time.Now()
			name := req.Params.Name
			args, _ := req.Params.Arguments.(map[string]any)
			res, err := e.guard(ctx, req, args, schema, next)
			res, err = e.envelope(ctx, name, res, err)
			e.audit(name, args, res, err, time.Since(start))
			return res, err
		}
	}
}

func (e *Engine) guard(ctx context.Context, req mcp.CallToolRequest, args map[string]any, schema func(context.Context) (*parsedb.Schema, error), next mcpserver.ToolHandlerFunc) (*mcp.CallToolResult, error) {
	info, ok := e.tools[req.Params.Name]
	if !ok {
		return nil, toolerror.New(toolerror.ToolFiltered, "tool %s is not available", req.Params.Name)
	}
	if err := e.Permit(info); err != nil {
		return nil, err
	}
	if cn, ok := args["class_name"].(string); ok && cn != "" {
		s, err := schema(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := e.ResolveClass(ctx, s, cn); err != nil {
			return nil, err
		}
	}
	return next(ctx, req)
}

// envelope converts a failed call into the result the client sees.
func (e *Engine) envelope(ctx context.Context, tool string, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err == nil {
		return res, nil
	}
	if v, ok := toolerror.AsViolation(err); ok {
		toolerror.RecordViolation(ctx, v)
		return nil, v
	}
	te, ok := toolerror.As(err)
	if !ok {
		e.log.Error().Err(err).Str("tool", tool).Msg("tool failed")
		te = toolerror.New(toolerror.Internal, "%s failed: internal error", tool)
	}
	meta := map[string]any{"parse.error_code": string(te.Code)}
	if te.RetryAfter > 0 {
		meta["parse.retry_after"] = int(te.RetryAfter.Round(time.Second) / time.Second)
	}
	if te.Details != nil && te.Code == toolerror.AccessDenied {
		meta["parse.details"] = te.Details
	}
	r := mcp.NewToolResultError(te.Message)
	r.Meta = &mcp.Meta{AdditionalFields: meta}
	return r, nil
}

// audit emits the tool_call event (§9). It logs argument names only, never
// values of where/pipeline/tokens.
func (e *Engine) audit(tool string, args map[string]any, res *mcp.CallToolResult, err error, d time.Duration) {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ev := e.log.Info().Str("event", "tool_call").Str("tool", tool).Strs("args_keys", keys).
		Str("permissions", e.cfg.Permissions).Str("auth_type", e.cfg.Identity()).
		Int64("duration_ms", d.Milliseconds())
	success := err == nil && res != nil && !res.IsError
	ev = ev.Bool("success", success)
	if res != nil {
		n := 0
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				n += len(tc.Text)
			}
		}
		ev = ev.Int("result_bytes", n).Int("est_tokens", n/4)
		if res.IsError && res.Meta != nil {
			if code, ok := res.Meta.AdditionalFields["parse.error_code"].(string); ok {
				ev = ev.Str("error_code", code)
			}
			if det, ok := res.Meta.AdditionalFields["parse.details"].(*toolerror.Details); ok {
				ev = ev.Str("denial_kind", det.Kind)
			}
		}
	}
	if _, ok := toolerror.AsViolation(err); ok {
		ev = ev.Str("error_code", "security_violation")
	}
	ev.Msg("tool_call")
}
