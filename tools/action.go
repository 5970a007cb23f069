package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// CloudFunctionCaller runs a Parse Cloud Code function (the Parse Server
// bridge implements it).
type CloudFunctionCaller interface {
	CallFunction(ctx context.Context, name string, params map[string]any) (any, error)
}

// ActionTools is call_action.
func ActionTools() []*Tool {
	return []*Tool{{
		ToolInfo: policy.ToolInfo{Name: "call_action", Category: policy.CategoryMutation, Tier: config.TierWrite, Operation: policy.OpUpdate,
			Timeout: 60 * time.Second, UntrustedOutput: true, RunsActions: true},
		Description:  "Run an action the operator declared (list_tools shows them with their params)." + noTriggers,
		OutputSchema: actionOutSchema,
		Handler:      Typed(callAction),
	}}
}

// call_action's arguments. Whether object_id is wanted depends on the
// action (update actions need it, create actions refuse it): its syntax is
// checked here, its presence by the handler.
type callActionIn struct {
	Action    string         `json:"action" arg:"required"`
	ObjectID  string         `json:"object_id" arg:"objectid" jsonschema:"for update actions"`
	Arguments map[string]any `json:"arguments"`
	DryRun    bool           `json:"dry_run"`
}

// actionOutSchema: a class action answers like create_object or
// update_object; a Cloud Code function action with its result (untrusted
// data) or run:false when not confirmed. The result is Dynamic.
const actionOutSchema = `{"type":"object","properties":{` + osWrite + osObjectID + `,"action":{"type":"string"},"created":{"type":"boolean"},"updated":{"type":"boolean"}` + osObject + osSchemaReload +
	`,"cloud_function":{"type":"string"},"run":{"type":"boolean"},"result":{}},"required":["action"]}`

// actionSummary is an action as list_tools shows it.
type actionSummary struct {
	Name          string         `json:"name"`
	Description   string         `json:"description,omitempty"`
	Class         string         `json:"class,omitempty"`
	CloudFunction string         `json:"cloud_function,omitempty"`
	Operation     string         `json:"operation,omitempty"`
	NeedsObjectID bool           `json:"needs_object_id,omitempty"`
	Params        map[string]any `json:"params"`
	DryRun        bool           `json:"dry_run"`
}

// permittedActions are the declared actions this session may call.
func (d *Deps) permittedActions() []actionSummary {
	var out []actionSummary
	for _, a := range d.Policy.Actions() {
		if d.Policy.PermitAction(a) != nil {
			continue
		}
		s := actionSummary{Name: a.Name, Description: a.Description, Class: a.Class, CloudFunction: a.CloudFunction, Params: a.Params, DryRun: a.SupportsDryRun}
		if a.Class != "" {
			s.Operation = a.Operation
			s.NeedsObjectID = a.Operation == policy.OpUpdate
		}
		out = append(out, s)
	}
	return out
}

func actionNames(d *Deps) string {
	var names []string
	for _, a := range d.permittedActions() {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none is declared for this session"
	}
	return strings.Join(names, ", ")
}

func callAction(ctx context.Context, d *Deps, in callActionIn) (Dynamic, error) {
	name := in.Action
	a := d.Policy.Action(name)
	if a == nil || d.Policy.PermitAction(a) != nil && !isTierRefusal(d, a) {
		return nil, toolerror.New(toolerror.InvalidArgument, "unknown action %q; available: %s", truncate(name, 64), actionNames(d))
	}
	if err := d.Policy.PermitAction(a); err != nil {
		return nil, err
	}
	arguments, dryRun := in.Arguments, in.DryRun
	if arguments == nil {
		arguments = map[string]any{}
	}
	if dryRun && !a.SupportsDryRun {
		return nil, toolerror.New(toolerror.InvalidArgument, "action %s does not support dry_run", a.Name)
	}
	if err := a.Validate(arguments); err != nil {
		return nil, err
	}
	if a.CloudFunction != "" {
		return d.callCloudFunction(ctx, a, arguments, dryRun)
	}
	op := parsedb.WriteUpdateObject
	id := in.ObjectID
	if a.Operation == policy.OpCreate {
		op = parsedb.WriteCreateObject
		if id != "" {
			return nil, invalid("action %s creates an object: it takes no object_id", a.Name)
		}
	} else if id == "" {
		return nil, invalid("object_id is required")
	}
	fields := map[string]any{}
	writable := make([]string, 0, len(a.Keys)+len(a.Fixed))
	for _, k := range a.Keys {
		writable = append(writable, k)
		if v, ok := arguments[k]; ok {
			fields[k] = v
		}
	}
	for k, v := range a.Fixed {
		writable = append(writable, k)
		fields[k] = v
	}
	policy.SetCallOperation(ctx, a.Operation)
	req, err := d.objectRequest(ctx, op, a.Class, id, policy.ObjectWrite{Op: a.Operation, Fields: fields, Writable: writable})
	if err != nil {
		return nil, err
	}
	return d.runWrite(ctx, &writeCall{tool: "call_action", dryRun: dryRun, req: req, action: a.Name, confirm: a.Confirm})
}

// isTierRefusal tells a tier refusal (shown as such) from a class the
// session may not see (answered as an unknown action).
func isTierRefusal(d *Deps, a *policy.ActionSpec) bool {
	err := d.Policy.PermitAction(a)
	return err != nil && err.Code == toolerror.PermissionDenied
}

// callCloudFunction runs a declared Cloud Code function through the Parse
// Server bridge. dry_run (allowed only for a function declared with
// supports_dry_run) calls it with dryRun: true added to its params: the
// declaration promises that the function then changes nothing and reports
// what it would do. A function declared confirm: true, or every function
// under confirm_writes: always, asks the person first.
func (d *Deps) callCloudFunction(ctx context.Context, a *policy.ActionSpec, arguments map[string]any, dryRun bool) (Dynamic, error) {
	if d.CloudFunctions == nil {
		return nil, toolerror.New(toolerror.InvalidArgument, "action %s runs the Cloud Code function %s, which needs the Parse Server bridge (PARSE_MCP_SERVER_URL); it is not configured", a.Name, a.CloudFunction)
	}
	params := make(map[string]any, len(arguments)+1)
	maps.Copy(params, arguments)
	if dryRun {
		params["dryRun"] = true
	}
	audit := policy.WriteAudit{Action: a.Name, Fields: slices.Sorted(maps.Keys(arguments)), Backend: "parse_server", DryRun: dryRun}
	policy.NoteWrite(ctx, audit)
	if !dryRun && d.Policy.ConfirmWrites() != policy.ConfirmNever && (a.Confirm || d.Policy.ConfirmWrites() == policy.ConfirmAlways) {
		shown, _ := json.MarshalIndent(params, "", "  ")
		answer, err := Confirm(ctx, d, fmt.Sprintf("The assistant asks to run the action %s: the Cloud Code function %s on Parse Server, with these params:\n%s\nRun it?", a.Name, a.CloudFunction, truncate(string(shown), 6000)))
		if err != nil {
			return nil, err
		}
		switch answer {
		case ConfirmAccepted:
			audit.Confirmed = true
			policy.NoteWrite(ctx, audit)
		case ConfirmUnsupported:
			return nil, toolerror.Denied("confirmation_unavailable", "action %s needs the person's confirmation, but this client cannot ask (it declared no elicitation support); nothing was run", a.Name)
		default:
			return map[string]any{"action": a.Name, "cloud_function": a.CloudFunction, "run": false, "confirmation": answer.String(),
				"note": "the person did not confirm (" + answer.String() + "); the function was not run"}, nil
		}
	}
	out, err := d.CloudFunctions.CallFunction(ctx, a.CloudFunction, params)
	if err != nil {
		return nil, err
	}
	res := map[string]any{"action": a.Name, "cloud_function": a.CloudFunction, "result": out}
	if dryRun {
		res["dry_run"] = true
		res["note"] = "dry run: the function was called with dryRun: true; it is declared to change nothing then"
	}
	return res, nil
}
