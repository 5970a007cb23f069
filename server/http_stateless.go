package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// Protocol 2026-07-28 over streamable HTTP has no sessions: every POST
// carries its protocol version (Mcp-Protocol-Version header and _meta, which
// must agree), client capabilities and log level, and mirrors its method and
// name in Mcp-Method / Mcp-Name. The server keeps nothing between requests,
// so any instance behind a load balancer can answer any request (see the
// docs/transports.md). Requests of the session revisions on the same
// endpoint are unaffected: the era is decided per request.

// requestEra says which protocol era a POST belongs to.
type requestEra struct {
	modern        bool
	metaVersion   string
	headerVersion string
	// metaCaps: _meta carries client capabilities that decode as such
	// (required on every 2026-07-28 request; {} declares none).
	metaCaps bool
}

// detectEra reads the version from the body's _meta and from the
// Mcp-Protocol-Version header; naming 2026-07-28 (or later) in either makes
// the request stateless-era (a disagreement is refused by postStateless).
func detectEra(header http.Header, params json.RawMessage) requestEra {
	era := requestEra{headerVersion: header.Get(mcp.HeaderProtocolVersion)}
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) == nil {
		era.metaVersion = p.Meta.ProtocolVersion()
		era.metaCaps = p.Meta.ClientCapabilities() != nil
	}
	era.modern = mcp.IsModernProtocol(era.metaVersion) || mcp.IsModernProtocol(era.headerVersion)
	return era
}

// postStateless serves one 2026-07-28 POST with a session that lives only as
// long as the request.
func (h *HTTPHandler) postStateless(w http.ResponseWriter, r *http.Request, body []byte, env envelope, era requestEra) {
	id := env.ID
	isRequest := env.Method != "" && len(id) > 0 && string(id) != "null"
	if !isRequest {
		// Notifications (notifications/cancelled included) have no session to
		// act on: a stateless client cancels by closing the request's
		// connection, which cancels the call here.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch {
	case r.Header.Get("Last-Event-ID") != "":
		writeJSON(w, http.StatusBadRequest, ErrorResponse(id, mcp.HEADER_MISMATCH,
			"Last-Event-ID is not supported in protocol "+mcp.ProtocolVersion20260728+": streams are not resumable"))
		return
	case era.headerVersion == "":
		writeJSON(w, http.StatusBadRequest, ErrorResponse(id, mcp.HEADER_MISMATCH,
			mcp.HeaderProtocolVersion+" header is required with "+mcp.MetaKeyProtocolVersion))
		return
	case era.metaVersion == "":
		writeJSON(w, http.StatusBadRequest, ErrorResponse(id, codeInvalidParams,
			"missing or invalid _meta field "+mcp.MetaKeyProtocolVersion))
		return
	case !era.metaCaps:
		// Refused here, not by mcp-go's -32602 answer (which would go out
		// with HTTP 200): a malformed request is a 400 in this revision.
		writeJSON(w, http.StatusBadRequest, ErrorResponse(id, codeInvalidParams,
			"missing or invalid _meta field "+mcp.MetaKeyClientCapabilities))
		return
	case era.headerVersion != era.metaVersion:
		writeJSON(w, http.StatusBadRequest, ErrorResponse(id, mcp.HEADER_MISMATCH,
			mcp.HeaderProtocolVersion+" header does not match _meta "+mcp.MetaKeyProtocolVersion))
		return
	}
	if err := mcp.ValidateStandardHeaders(r.Header.Get, era.metaVersion, mcp.MCPMethod(env.Method), env.Params); err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorResponse(id, mcp.HEADER_MISMATCH, err.Error()))
		return
	}

	var b [12]byte
	_, _ = rand.Read(b[:])
	sess := NewSession("stateless-" + hex.EncodeToString(b[:]))
	sess.client, sess.oneRequest = h.clientOf(r), true
	sess.credential = credentialOf(r)
	ctx := r.Context()
	var extra func(context.Context, func([]byte))
	if env.Method == string(mcp.MethodSubscriptionsListen) {
		// A newer stream past the caps ends this one (its client can listen
		// again); nothing is refused.
		var end context.CancelFunc
		ctx, end = context.WithCancel(ctx)
		defer end()
		defer h.admitListen(sess.client, end)()
		h.recheckCredential(ctx, r, end, nil)
		// A listen stream is the one stateless request that receives
		// notifications belonging to no request (resource updates): its
		// session is registered while the stream is open, and those
		// notifications go out on the stream tagged with the listen id.
		if err := h.d.mcp.RegisterSession(ctx, sess); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, ErrorResponse(id, codeInternalError, "Internal error"))
			return
		}
		defer h.d.mcp.UnregisterSession(context.Background(), sess.SessionID())
		sess.setListenID(id)
		extra = func(ctx context.Context, emit func([]byte)) {
			for {
				select {
				case n := <-sess.Unsolicited():
					if b, err := EncodeNotification(sess.tagListen(n)); err == nil {
						emit(b)
					}
				case <-ctx.Done():
					return
				}
			}
		}
	}
	h.serveRequest(ctx, w, r, sess, body, extra)
}

// responseStatus is the HTTP status of a plain-JSON answer: 200, except that
// a 2026-07-28 request's protocol-level errors carry the status that revision
// prescribes (404 unknown method, 400 malformed request or params).
func responseStatus(r *http.Request, resp []byte) int {
	if !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || !bytes.Contains(resp, []byte(`"error"`)) {
		return http.StatusOK
	}
	var e struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(resp, &e) != nil || e.Error == nil {
		return http.StatusOK
	}
	switch e.Error.Code {
	case codeMethodNotFound:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		codeInvalidRequest, codeParseError:
		return http.StatusBadRequest
	}
	// -32602 stays 200: a refused tool call (security violation) is an
	// answer to a well-formed request.
	return http.StatusOK
}
