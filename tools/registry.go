// Package tools holds parse-mcp's MCP tools, one file per tool family; each
// tool's definition sits next to its handler. Handlers run behind the policy
// middleware and never re-implement a policy check: they ask the policy
// engine (Deps.Policy) for classes, filters and redaction.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/callinfo"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/embed"
	"github.com/parse-mcp/parse-mcp/internal/jsonenc"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// Tool is one MCP tool, and its definition is the single source of truth
// about it: the policy (tier, gates, CLP operation, untrusted output), the
// MCP definition (description, schemas, annotations), list_tools, describe
// and would-permit all read it. Adding a tool means adding one literal to its
// family's constructor (query.go, aggregate.go…), with its typed handler
// (Typed, contract.go) next to it, and regenerating its schema snapshot
// (see ARCHITECTURE.md, "Adding a tool").
type Tool struct {
	policy.ToolInfo
	Description string
	// Example is the arguments of a call that succeeds on the demo app
	// (--demo), "$objectId" standing for an objectId of
	// its class_name; e2e/schema_test.go runs every tool's example and
	// validates the result against OutputSchema. Empty for the writes and
	// call_action, whose calls need their own fixtures (TestWriteToolSchemas).
	Example string
	// OutputSchema is the JSON Schema of structuredContent (the input
	// schema is generated from the handler's In, see Typed).
	OutputSchema string
	// Annotations (MCP tool hints, see annotations): no tool reaches
	// outside the Parse database (openWorldHint false).
	ReadOnly    bool
	Destructive bool
	// Handler is the tool's typed handler, Typed(fn): it decodes and
	// validates the arguments into fn's In before fn runs.
	Handler Handler
}

// Deps are what handlers need.
type Deps struct {
	Store  *parsedb.Store
	Policy *policy.Engine
	Config *config.Config
	Log    zerolog.Logger
	// Catalog is every registered tool (list_tools filters it per session).
	Catalog []*Tool
	// Bridge is the Parse Server client when PARSE_MCP_SERVER_URL is set
	// (writes and Cloud functions then go through Parse Server), else nil.
	Bridge *parseserver.Client
	// LiveQuery, with PARSE_MCP_LIVEQUERY_URL, drives resource subscriptions
	// through Parse LiveQuery (Parse checks ACL/CLP per event), else nil.
	LiveQuery *parseserver.LiveQuery
	// Writes performs writes (nil: the direct MongoDB writer).
	Writes WriteBackend
	// CloudFunctions runs declared Cloud Code function actions (nil: none;
	// the Parse Server bridge installs it).
	CloudFunctions CloudFunctionCaller
	// Confirmations signs 2026-07-28 confirmation tokens and records their
	// single use (nil: this process's own ledger, right for stdio; over HTTP
	// the database's, shared by every process behind a load balancer).
	Confirmations ConfirmationLedger
	// Embedder turns text into vectors for the search tools (nil: none
	// configured; semantic_search refuses and says how to configure one).
	Embedder embed.Embedder
}

// For is d as the request in ctx sees it: the policy engine's view
// for the request's own identity (policy.Engine.For; d itself when the
// request acts as the environment identity).
func (d *Deps) For(ctx context.Context) *Deps {
	p := d.Policy.For(ctx)
	if p == d.Policy {
		return d
	}
	v := *d
	v.Policy = p
	return &v
}

// NewDeps builds the handlers' dependencies around the whole Catalog and
// registers every catalog tool with the policy engine. This is the one
// place tools are registered: the server, list_tools and the resources read
// Deps.Catalog. Call it before engine.Setup, which validates agent.tools
// against the registered names.
func NewDeps(store *parsedb.Store, engine *policy.Engine, cfg *config.Config, log zerolog.Logger) *Deps {
	d := &Deps{Store: store, Policy: engine, Config: cfg, Log: log, Catalog: Catalog()}
	for _, t := range d.Catalog {
		engine.Register(t.ToolInfo)
	}
	return d
}

// PolicySchema is the schema source of the policy middleware: the cached
// schema, or one read now when the middleware asks (fresh).
func (d *Deps) PolicySchema(ctx context.Context, fresh bool) (*parsedb.Schema, error) {
	if fresh {
		return d.Store.Schema.Refresh(ctx, 0)
	}
	return d.Store.Schema.Get(ctx)
}

// heartbeatInterval is how often a long call reports elapsed time
// (PARSE_MCP_PROGRESS_INTERVAL, default DefaultHeartbeatInterval).
func (d *Deps) heartbeatInterval() time.Duration {
	if d.Config != nil && d.Config.ProgressInterval > 0 {
		return d.Config.ProgressInterval
	}
	return DefaultHeartbeatInterval
}

// DescriptionFor is the tool's description as this configuration serves it
// (tools/list and list_tools): a write tool's note on Cloud Code triggers
// says what the configured write path does. d may be nil (the direct
// writer, as the schema snapshots show it).
func (t *Tool) DescriptionFor(d *Deps) string {
	if d.writesRunTriggers() {
		if base, ok := strings.CutSuffix(t.Description, noTriggers); ok {
			return base + viaParseServer
		}
	}
	return t.Description
}

// MCPTool builds the mcp-go definition of the tool for the configuration d
// (see DescriptionFor; d may be nil).
func (t *Tool) MCPTool(d *Deps) mcp.Tool {
	description := t.DescriptionFor(d)
	tool := mcp.NewToolWithRawSchema(t.Name, description, json.RawMessage(t.Handler.InputSchema()))
	if t.OutputSchema != "" {
		tool.RawOutputSchema = json.RawMessage(t.OutputSchema)
	}
	tool.Annotations = annotations(t.ReadOnly, t.Destructive)
	tool.Meta = &mcp.Meta{AdditionalFields: map[string]any{"category": string(t.Category)}}
	return tool
}

// annotations are the MCP hints, without the ones that say nothing: the
// spec gives destructiveHint and idempotentHint meaning only when
// readOnlyHint is false, and readOnlyHint false and idempotentHint false are
// the defaults. openWorldHint defaults to true, so false is always sent (no
// tool reaches outside the Parse database), and destructiveHint is sent for
// every write, true included (its default), so a client that ignores
// defaults still sees a delete as destructive.
func annotations(readOnly, destructive bool) mcp.ToolAnnotation {
	closed := false
	if readOnly {
		return mcp.ToolAnnotation{ReadOnlyHint: &readOnly, OpenWorldHint: &closed}
	}
	return mcp.ToolAnnotation{DestructiveHint: &destructive, OpenWorldHint: &closed}
}

// Handle adapts the tool to mcp-go: it applies the per-tool timeout, runs the
// handler (which decodes and validates the arguments into its In first, see
// Typed) and turns its outcome into the result envelope. The policy
// middleware wraps what Handle returns, so its checks and audit come first.
func (t *Tool) Handle(d *Deps) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, _ := req.Params.Arguments.(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		if t.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, t.Timeout)
			defer cancel()
		}
		ctx = withToolCall(ctx, req)
		ctx, meta := withResultMeta(ctx)
		d := d.For(ctx)
		ctx, progress := startProgress(ctx, t.Name, req, d.heartbeatInterval())
		out, err := t.Handler.Call(ctx, d, Args(args))
		if err != nil && t.ReadOnly && parsedb.IsConnectionFailure(err) && ctx.Err() == nil {
			// A read is idempotent: after a connection failed (typically a
			// pooled connection gone stale across a database restart) it
			// is tried once more, on a fresh connection.
			d.Log.Info().Str("tool", t.Name).Str("error", err.Error()).Msg("database connection failed; retrying the read once")
			out, err = t.Handler.Call(ctx, d, Args(args))
		}
		progress.finish()
		if ask, ok := errors.AsType[*InputRequired](err); ok {
			return ask.Result, nil
		}
		if err != nil {
			return nil, classify(ctx, t.Name, err)
		}
		res, err := Result(out)
		if err == nil && meta.fields != nil {
			res.Meta = &mcp.Meta{AdditionalFields: meta.fields}
		}
		return res, err
	}
}

// withToolCall records the call as the client sent it in the request's
// callinfo: its raw arguments (OrderedArgument) and what a confirmation is
// bound to (Confirm) come from there.
func withToolCall(ctx context.Context, req mcp.CallToolRequest) context.Context {
	info := callinfo.From(ctx)
	info.ToolCall = &req
	return callinfo.With(ctx, info)
}

// UnavailableRetryAfter is the parse.retry_after of an unavailable error.
const UnavailableRetryAfter = 5 * time.Second

// classify maps a handler's error onto the kinds of package toolerror:
// violations, refusals and model-fixable errors pass unchanged; context
// expiry and driver timeouts become timeout/cancelled and a server's "not
// supported" an invalid_query, each keeping the Go error as its cause for
// the log; everything else stays an infrastructure error.
func classify(ctx context.Context, tool string, err error) error {
	if toolerror.KindOf(err) != toolerror.Infrastructure {
		return err
	}
	// The call's own deadline comes first: when it passes mid-read the
	// driver closes the connection, a network error that says nothing
	// about the database (it answered, slowly). Only a server that could
	// not be selected at all is an outage then.
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !parsedb.IsServerSelectionFailure(err) {
		return timeoutError(tool, err)
	}
	if parsedb.IsUnavailable(err) {
		// Not the timeout advice: no filter or index helps during an outage.
		return &toolerror.Error{Code: toolerror.Unavailable, RetryAfter: UnavailableRetryAfter, Cause: err,
			Message: tool + " failed: the database is unreachable right now (parse-mcp keeps reconnecting); try again shortly. The request itself is fine: send it unchanged."}
	}
	if parsedb.IsTimeout(err) {
		return timeoutError(tool, err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return toolerror.New(toolerror.Cancelled, "%s was cancelled", tool).WithCause(err)
	}
	if e := parsedb.AsNotSupported(err); e != nil {
		return e.WithCause(err)
	}
	return err
}

// timeoutError is the answer to a call that ran out of time.
func timeoutError(tool string, err error) error {
	return toolerror.New(toolerror.Timeout, "%s timed out: narrow the filter (where), lower the limit, or ask the operator for an index on the filtered fields", tool).WithCause(err)
}

// Result encodes a structured result as compact JSON text plus
// structuredContent.
func Result(out any) (*mcp.CallToolResult, error) {
	b, err := jsonenc.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(b))},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// resolveClass is the class gate for a tool's class name: the current schema
// and the class, or the policy's refusal (hidden, filtered, unknown with
// suggestions, CLP).
func (d *Deps) resolveClass(ctx context.Context, name string) (*parsedb.Schema, *parsedb.Class, error) {
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, nil, err
	}
	cls, err := d.Policy.ResolveClass(ctx, schema, name)
	if err != nil {
		return nil, nil, err
	}
	return schema, cls, nil
}
