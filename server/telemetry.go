package server

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/policy"
)

// observedMethods are the methods whose name is recorded as sent; any
// other is "other", so a client cannot make up label values.
var observedMethods = []mcp.MCPMethod{
	mcp.MethodInitialize, mcp.MethodPing, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList,
	mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe,
	mcp.MethodPromptsList, mcp.MethodPromptsGet, mcp.MethodToolsList, mcp.MethodToolsCall,
	mcp.MethodSetLogLevel, mcp.MethodCompletionComplete, mcp.MethodServerDiscover, mcp.MethodSubscriptionsListen,
}

// observed runs a request under its telemetry (ARCHITECTURE.md
// "Telemetry"): a server span continuing the client's params._meta
// traceparent, the operation duration with the answer's error type. Off,
// it is the request alone.
func (d *Dispatcher) observed(ctx context.Context, sess *Session, env envelope, raw []byte, emit func([]byte)) []byte {
	if !telemetry.Enabled() {
		return d.request(ctx, sess, env, raw, emit)
	}
	var p struct {
		Name            string `json:"name"`
		ProtocolVersion string `json:"protocolVersion"`
		Meta            struct {
			TraceParent string `json:"traceparent"`
			TraceState  string `json:"tracestate"`
			Protocol    string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(env.Params, &p)
	ri := telemetry.RequestInfo{Method: "other", Protocol: sess.protocolVersion(), Transport: "tcp",
		TraceParent: p.Meta.TraceParent, TraceState: p.Meta.TraceState}
	if m := mcp.MCPMethod(env.Method); slices.Contains(observedMethods, m) {
		ri.Method = env.Method
	}
	if env.Method == string(mcp.MethodToolsCall) && FindToolName(d.mcp, p.Name) {
		ri.Tool = p.Name
	}
	if slices.Contains(mcp.ValidProtocolVersions, p.Meta.Protocol) {
		ri.Protocol = p.Meta.Protocol
	}
	if sess.SessionID() == StdioSessionID {
		ri.Transport = "pipe"
	} else if !sess.oneRequest {
		ri.SessionHash = policy.Fingerprint(sess.SessionID())
	}
	ctx, obs := telemetry.StartRequest(ctx, ri)
	resp := d.request(ctx, sess, env, raw, emit)
	obs.End(errorCode(resp, env.ID))
	if env.Method == string(mcp.MethodInitialize) {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(resp, &r) == nil && slices.Contains(mcp.ValidProtocolVersions, r.Result.ProtocolVersion) {
			v := r.Result.ProtocolVersion
			sess.protocol.Store(&v)
		}
	}
	return resp
}

// errorCode is the JSON-RPC error code of an encoded answer, 0 for a
// result. Both encoders of an error (ErrorResponse, mcp.JSONRPCError) put
// "error" right after the id, so only the head is looked at: a large
// result is not decoded again.
func errorCode(resp, id json.RawMessage) int {
	head := resp[:min(len(resp), len(id)+64)]
	_, rest, ok := bytes.Cut(head, []byte(`"error":{"code":`))
	if !ok {
		return 0
	}
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return 0
	}
	code, _ := strconv.Atoi(string(rest[:end]))
	return code
}

// protocolVersion is the version the session's initialize agreed on ("":
// none yet, or a 2026-07-28 client, whose requests carry it).
func (s *Session) protocolVersion() string {
	if v := s.protocol.Load(); v != nil {
		return *v
	}
	return ""
}
