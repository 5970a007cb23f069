// Package policy is parse-mcp's security boundary: which tools a session may
// call, which classes and fields it may see, and which filters every read
// carries. It is enforced in one middleware in front of every tool and knows
// nothing about transports.
//
// Tools never re-implement a policy check; they ask the engine:
//
//	ResolveClass    the class gate (hidden, agent.classes, CLP, tenant binding)
//	ComposeWhere    caller where → canonical → agent filters → default → tenant
//	StorageScope    the identity's _rperm constraint and CLP pointer permissions
//	PipelineScope   the same as separate $match stages for aggregate pipelines
//	CheckReadField  internal floor, storage-form names, agent_fields, protectedFields
//	CheckInclude    include paths walked through pointer targets
//	RowEncoder      the codec configured with redaction and field dropping
//	CheckCollscan   refuse_collscan
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

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Gate variable names.
const (
	GateWriteTools = "PARSE_AGENT_ALLOW_WRITE_TOOLS"
	GateRawCRUD    = "PARSE_AGENT_ALLOW_RAW_CRUD"
	GateSchemaOps  = "PARSE_AGENT_ALLOW_SCHEMA_OPS"
	GateRawSchema  = "PARSE_AGENT_ALLOW_RAW_SCHEMA"
)

// CLP operations.
const (
	OpFind   = "find"
	OpCount  = "count"
	OpGet    = "get"
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"
)

// Engine evaluates the policy. For copies it into a request's view, so its
// mutable shared state (limiters, store) lives behind pointers: a field
// holding a lock or a counter by value would be copied per request.
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

	classOnly, classExcept map[string]bool // agent.classes (nil = no restriction)
	toolOnly, toolExcept   map[string]bool // agent.tools

	identity *parsedb.Identity
	// master, tier and tenant are the posture, permission tier and bound
	// tenant reads run under: the environment's (New), or one request's
	// (For, request.go).
	master bool
	tier   string
	tenant string
	// request is the request scope this engine is the view of (nil: the
	// shared engine, the environment identity).
	request *RequestScope
	store   *parsedb.Store
	// rateLimit calls per rateWindow (0: no limit) per session over HTTP,
	// per process over stdio; over HTTP a client gets ×
	// PARSE_MCP_HTTP_CLIENT_RATE_FACTOR, the process (or, with a shared
	// store, the process group) × PARSE_MCP_HTTP_PROCESS_RATE_FACTOR
	// (ratelimit.go).
	rateLimit  int
	rateWindow time.Duration
	// localRates are this process's rate windows; rates, when set, the
	// shared store HTTP calls count in instead.
	localRates *limits.Memory
	rates      limits.Store
	now        func() time.Time
	// refsCache is shared by the request views of one engine (For).
	refsCache *hiddenRefsCache
}

// DefaultHiddenClasses are hidden whatever the policy file says (internal
// collections are hidden too, see parsedb.IsInternalCollection). _Session
// is visible in master posture only (see Hidden).
var DefaultHiddenClasses = []string{"_Product", "_JobStatus", "_JobSchedule", "_PushStatus", "_Audience", "_Idempotency", "_GlobalConfig", "_GraphQLConfig", "_Hooks", "_SCHEMA"}

// New builds an engine from the configuration and the (structurally
// validated) policy file; file may be nil.
func New(cfg *config.Config, file *File, log zerolog.Logger) *Engine {
	e := &Engine{cfg: cfg, file: file, log: log, tools: map[string]ToolInfo{}, hidden: map[string]bool{},
		exceptMaster: map[string]bool{"_Session": true}, now: time.Now, refsCache: &hiddenRefsCache{},
		master: cfg.Identity() == parsedb.IdentityMaster, tier: cfg.Permissions, tenant: cfg.TenantID}
	for _, c := range DefaultHiddenClasses {
		e.hidden[c] = true
	}
	limit, window := DefaultRateLimitRequests, DefaultRateLimitWindow
	if file != nil {
		for name, cp := range file.Classes {
			switch {
			case cp.IsHidden():
				e.hidden[name] = true
			case cp.IsHiddenExceptMaster():
				e.exceptMaster[name] = true
			}
		}
		e.classOnly = set(file.Agent.Classes.Only)
		e.classExcept = set(file.Agent.Classes.Except)
		e.toolOnly = set(file.Agent.Tools.Only)
		e.toolExcept = set(file.Agent.Tools.Except)
		if rl := file.Settings.RateLimit; rl != nil {
			limit = rl.Requests
			if d, err := time.ParseDuration(rl.Window); err == nil && d > 0 {
				window = d
			}
		}
	}
	e.rateLimit, e.rateWindow, e.localRates = limit, window, limits.NewMemory()
	return e
}

func set(list []string) map[string]bool {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

// Register tells the engine about the tools it guards.
func (e *Engine) Register(infos ...ToolInfo) {
	for _, t := range infos {
		e.tools[t.Name] = t
	}
}

// SetIdentity installs the resolved identity scope (nil or master kind =
// master posture). It must be called before serving when the configuration
// names an identity: until then every read fails closed.
func (e *Engine) SetIdentity(id *parsedb.Identity) { e.identity = id }

// Identity returns the resolved identity (nil in master posture).
func (e *Engine) Identity() *parsedb.Identity {
	if e.identity.Master() {
		return nil
	}
	return e.identity
}

// SetStore gives the engine the database for the checks that need one
// (COLLSCAN explain, the cross-tenant get check).
func (e *Engine) SetStore(s *parsedb.Store) { e.store = s }

// SetClock replaces the clock (tests).
func (e *Engine) SetClock(now func() time.Time) { e.now = now }

// MasterPosture reports whether reads run without an identity scope: no
// identity configured, or a request acting as master (only an operator's
// named key can, docs/team.md "Serve a team").
func (e *Engine) MasterPosture() bool { return e.master }

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

// ClassFiltered reports whether agent.classes excludes a class.
func (e *Engine) ClassFiltered(class string) bool {
	if e.classOnly != nil && !e.classOnly[class] {
		return true
	}
	return e.classExcept[class]
}

// Visible reports whether the session may see a class at all (neither hidden
// nor filtered by agent.classes).
func (e *Engine) Visible(class string) bool { return !e.Hidden(class) && !e.ClassFiltered(class) }

var tierRank = map[string]int{config.TierReadonly: 0, config.TierWrite: 1, config.TierAdmin: 2}

// Permit reports whether the session may call a tool at all, in dispatch
// order: tool filter (agent.tools) → permission tier → env gates. A nil
// error means permitted.
func (e *Engine) Permit(t ToolInfo) *toolerror.Error {
	err, _ := e.permit(t)
	return err
}

// The tool gates, as would-permit names the one that refused.
const (
	gateToolFilter     = "tool_filter"
	gatePermissionTier = "permission_tier"
	gateEnv            = "env_gate"
)

// permit is Permit, also naming the gate that refused.
func (e *Engine) permit(t ToolInfo) (err *toolerror.Error, gate string) {
	if (e.toolOnly != nil && !e.toolOnly[t.Name]) || e.toolExcept[t.Name] {
		return toolerror.New(toolerror.ToolFiltered, "tool %s is not available in this deployment (agent.tools)", t.Name), gateToolFilter
	}
	if err := e.searchDenial(t); err != nil {
		return err, gateToolFilter
	}
	rank, ok := tierRank[t.Tier]
	if !ok {
		rank = len(tierRank) // an unknown tier is never permitted
	}
	if rank > tierRank[e.tier] {
		return toolerror.New(toolerror.PermissionDenied, "%s needs the %s tier; %s", t.Name, t.Tier, e.tierSource()), gatePermissionTier
	}
	var missing []string
	for _, g := range Gates(t) {
		if !e.gateOn(g) {
			missing = append(missing, g)
		}
	}
	if len(missing) > 0 {
		return toolerror.Denied(gateEnv, "%s is disabled by the operator: it needs %s set to true", t.Name, strings.Join(missing, " and ")), gateEnv
	}
	return nil, ""
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

// ToolFilter removes the tools this session may not call from tools/list
// (the same decision list_tools and the middleware make). A tools/call
// (callinfo's Method) passes through unfiltered to the middleware, which
// refuses a tool the session may not call with its precise code
// (tool_filtered, permission_denied, access_denied) instead of mcp-go's
// generic "tool not found".
func (e *Engine) ToolFilter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if callinfo.From(ctx).Method == string(mcp.MethodToolsCall) {
		return tools
	}
	e = e.For(ctx)
	out := tools[:0:0]
	for _, t := range tools {
		info, ok := e.tools[t.Name]
		if ok && e.Permit(info) == nil {
			out = append(out, t)
		}
	}
	return out
}

// callStateKey carries the policy's own record of the current tool call.
type callStateKey struct{}

// callState is what the policy learns while a tool call runs: what the class
// gate decided (the CLP operation, the class, a get-shaped find) and what
// the audit event reports (the write, a hidden class refused). It is the
// policy's working state, created by the middleware for each call (and
// derived by AsGet), written by the gates and read by the audit; nothing
// outside the policy reads it. Who sends the request is not here but in
// the request's callinfo.Info, which the transport and dispatcher set.
type callState struct {
	tool ToolInfo
	op   string
	// class is the call's class_name once the class gate passed.
	class string
	// getShaped: a find whose where is exactly {objectId: "X"}, which Parse
	// checks against the get CLP (getShapedWhere).
	getShaped bool
	// write is what a write tool noted for the audit event.
	write *WriteAudit
	// hiddenRefused: the call was refused because it named a hidden
	// class. The client's answer is the missing-class answer; only the
	// audit event says why (denial_kind hidden_class).
	hiddenRefused bool
}

// AsToolCall is ctx for running tool's handler on class outside a tools/call
// (a subscription's fingerprint, the class check of resources/subscribe):
// the class gate and the read scope then check the tool's own CLP operation
// (count for count_objects), as the middleware would, where a context
// without a call checks find. Nothing recorded on it reaches an audit event.
// An unknown tool leaves ctx unchanged.
func (e *Engine) AsToolCall(ctx context.Context, tool, class string) context.Context {
	info, ok := e.tools[tool]
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, callStateKey{}, &callState{tool: info, op: Operation(info), class: class})
}

func callStateOf(ctx context.Context) *callState {
	ci, _ := ctx.Value(callStateKey{}).(*callState)
	return ci
}

// operationFor is the CLP operation a read of class performs in ctx: the
// tool's own operation on its class_name, find on any other class (sub-
// queries, includes, joins), find outside a tool call.
func operationFor(ctx context.Context, class string) string {
	ci := callStateOf(ctx)
	if ci == nil {
		return OpFind
	}
	if ci.op == "" || ci.class == "" || ci.class == class {
		return ci.op
	}
	return OpFind
}

// ResolveClass is the class gate: it checks that name is a class the session
// may use and returns it. Hidden classes get exactly the answer of a missing
// class (code, message, no details: hidden equals missing; only the audit
// event records denial_kind hidden_class); unknown names get
// "did you mean" suggestions drawn from visible classes only; agent.classes
// refuses with kind class_filter; for scoped identities the class-level
// permission of the call's operation is checked (clp_denied); a
// tenant-scoped class needs a bound tenant (tenant_required).
func (e *Engine) ResolveClass(ctx context.Context, schema *parsedb.Schema, name string) (*parsedb.Class, error) {
	e = e.For(ctx)
	if !parsedb.ClassNameRe.MatchString(name) {
		return nil, toolerror.New(toolerror.InvalidArgument, "class_name %q is not a valid Parse class name (letters, digits and _, starting with a letter or _, at most 128 characters)", truncateText(name, 40))
	}
	if e.Hidden(name) {
		return nil, e.hiddenClass(ctx, schema, name)
	}
	cls := schema.Class(name)
	if cls == nil {
		return nil, e.unknownClass(schema, name)
	}
	if e.ClassFiltered(name) {
		return nil, toolerror.Denied("class_filter", "class %s is not available to this agent (agent.classes)", name)
	}
	op := operationFor(ctx, name)
	if op == "" {
		return cls, nil
	}
	if err := e.checkMasterOnly(cls.Name, op); err != nil {
		return nil, err
	}
	if err := e.checkTenantBound(cls.Name); err != nil {
		return nil, err
	}
	if err := e.checkSession(); err != nil {
		return nil, err
	}
	if v := e.clp(cls, clpOperation(ctx, cls.Name, op)); !v.allowed {
		return nil, toolerror.Denied("clp_denied", "the class-level permissions of %s do not allow %s for this identity%s", cls.Name, op, v.why)
	}
	return cls, nil
}

// hiddenClass is the refusal of a hidden class: byte for byte the answer a
// missing class of that name gets. The audit event still records
// denial_kind hidden_class.
func (e *Engine) hiddenClass(ctx context.Context, schema *parsedb.Schema, name string) *toolerror.Error {
	if ci := callStateOf(ctx); ci != nil {
		ci.hiddenRefused = true
	}
	return e.unknownClass(schema, name)
}

// TargetUnavailable is the refusal of a path through a Pointer or Relation
// whose target class is hidden or missing: the same answer for both, which
// names neither the class nor the reason.
func (e *Engine) TargetUnavailable(ctx context.Context, format string, args ...any) *toolerror.Error {
	if ci := callStateOf(ctx); ci != nil {
		ci.hiddenRefused = true
	}
	return toolerror.New(toolerror.InvalidQuery, format+" points to a class that does not exist or is not accessible", args...)
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
		if e.Visible(n) {
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
	if len(name) > 256 {
		return nil // nothing is that long; do not spend time on it
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

// checkSession refuses every read once a session identity has expired
// while the server runs.
func (e *Engine) checkSession() *toolerror.Error {
	if e.MasterPosture() {
		return nil
	}
	if e.identity == nil {
		// The configuration names an identity that was never resolved:
		// fail closed.
		return toolerror.Denied("identity_unresolved", "the identity scope is not resolved; reads are refused")
	}
	if e.identity.Expired(e.now()) {
		if e.request != nil {
			return toolerror.Denied("session_expired", "the session this request presented has expired; log in again")
		}
		return toolerror.Denied("session_expired", "the session of PARSE_MCP_SESSION_TOKEN has expired; the operator must configure a fresh token")
	}
	return nil
}

// Middleware is the single policy checkpoint in front of every tool. It runs
// the dispatch order of SECURITY.md "Dispatch order" — rate limit → tool filter → tier → env gates →
// (argument syntax) → class gate — then the tool, turns failures into the
// result envelope of ARCHITECTURE.md "Errors", marks row-bearing results as untrusted data,
// enforces the response cap, and emits one tool_call audit event per call.
//
// schema is the schema source; fresh asks for a schema read now rather than
// the cached one (a write naming a class the cached schema lacks).
func (e *Engine) Middleware(schema func(ctx context.Context, fresh bool) (*parsedb.Schema, error)) mcpserver.ToolHandlerMiddleware {
	return func(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			e := e.For(ctx)
			start := time.Now()
			name := req.Params.Name
			args, _ := req.Params.Arguments.(map[string]any)
			info, known := e.tools[name]
			ci := &callState{tool: info, op: Operation(info)}
			ctx = context.WithValue(ctx, callStateKey{}, ci)
			var res *mcp.CallToolResult
			var err error
			if known {
				res, err = e.guard(ctx, ci, args, schema, req, next)
			} else {
				err = toolerror.New(toolerror.ToolFiltered, "tool %s is not available", truncateText(name, 64))
			}
			res, err = e.envelope(ctx, name, res, err)
			if err == nil && res != nil && !res.IsError {
				res = e.finish(name, info, res)
			}
			e.audit(ctx, name, args, res, err, time.Since(start))
			return res, err
		}
	}
}

func (e *Engine) guard(ctx context.Context, ci *callState, args map[string]any, schema func(context.Context, bool) (*parsedb.Schema, error), req mcp.CallToolRequest, next mcpserver.ToolHandlerFunc) (*mcp.CallToolResult, error) {
	if err := e.checkRate(ctx); err != nil {
		return nil, err
	}
	if err := e.Permit(ci.tool); err != nil {
		return nil, err
	}
	// Argument validation belongs to the tool; the class gate runs here as
	// well (as a backstop for any tool), but only on a well-formed
	// class_name so that a malformed one is the tool's invalid_argument.
	// create_class names a class that does not exist yet: its own gate
	// (CheckClassWrite) runs in the tool.
	if cn, ok := args["class_name"].(string); ok && parsedb.ClassNameRe.MatchString(cn) && !ci.tool.CreatesClass {
		ci.getShaped = ci.op == OpFind && getShapedWhere(args["where"])
		s, err := schema(ctx, false)
		if err != nil {
			return nil, err
		}
		if _, err := e.ResolveClass(ctx, s, cn); err != nil {
			if ci.tool.Category != CategoryMutation {
				return nil, err
			}
			// A write to a class Parse Server (or another writer) created
			// moments ago: read _SCHEMA again once before refusing.
			if s, err = schema(ctx, true); err != nil {
				return nil, err
			}
			if _, err := e.ResolveClass(ctx, s, cn); err != nil {
				return nil, err
			}
		}
		ci.class = cn
	}
	return next(ctx, req)
}
