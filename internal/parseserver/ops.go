package parseserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// CreateObject is POST /classes/:class.
func CreateObject(class string, fields map[string]any) Request {
	return Request{Method: http.MethodPost, Path: "/classes/" + url.PathEscape(class), Body: fields}
}

// UpdateObject is PUT /classes/:class/:id (fields may hold __op operations).
func UpdateObject(class, id string, fields map[string]any) Request {
	return Request{Method: http.MethodPut, Path: "/classes/" + url.PathEscape(class) + "/" + url.PathEscape(id), Body: fields}
}

// DeleteObject is DELETE /classes/:class/:id.
func DeleteObject(class, id string) Request {
	return Request{Method: http.MethodDelete, Path: "/classes/" + url.PathEscape(class) + "/" + url.PathEscape(id)}
}

// CreateClass is POST /schemas/:class with Parse's field definitions
// ({"name": {"type": "String"}, "owner": {"type": "Pointer", "targetClass": "_User"}}).
func CreateClass(class string, fields map[string]any, clp map[string]any) Request {
	body := map[string]any{"className": class}
	if fields != nil {
		body["fields"] = fields
	}
	if clp != nil {
		body["classLevelPermissions"] = clp
	}
	return Request{Method: http.MethodPost, Path: "/schemas/" + url.PathEscape(class), Body: body}
}

// DeleteClass is DELETE /schemas/:class (Parse refuses a non-empty class, code 255).
func DeleteClass(class string) Request {
	return Request{Method: http.MethodDelete, Path: "/schemas/" + url.PathEscape(class)}
}

// CallFunction is POST /functions/:name with params as the body.
func CallFunction(name string, params map[string]any) Request {
	if params == nil {
		params = map[string]any{}
	}
	return Request{Method: http.MethodPost, Path: "/functions/" + url.PathEscape(name), Body: params}
}

// CheckError is a failed start-up check. Misconfigured distinguishes a
// wrong setting (exit 2) from an unreachable server (exit 1); Variable names
// the setting to fix.
type CheckError struct {
	Misconfigured bool
	Variable      string
	Problem       string
}

func (e *CheckError) Error() string { return e.Variable + ": " + e.Problem }

// Check verifies at start-up that the server answers /health and knows the
// application id, and that the credential of id is accepted: the master key
// through /serverInfo, a session token through /users/me.
func (c *Client) Check(ctx context.Context, id Identity) error {
	where := c.base.String()
	h, err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/health"}, Identity{})
	if err != nil {
		if te, ok := errors.AsType[*TransportError](err); ok {
			return &CheckError{Variable: "PARSE_MCP_SERVER_URL", Problem: fmt.Sprintf("Parse Server at %s is unreachable (%v)", where, te.Err)}
		}
		var pe *Error
		if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
			return &CheckError{Misconfigured: true, Variable: "PARSE_MCP_SERVER_URL", Problem: fmt.Sprintf("%s/health is not found: is this the Parse mount path (e.g. http://host:1337/parse)?", where)}
		}
		return &CheckError{Variable: "PARSE_MCP_SERVER_URL", Problem: fmt.Sprintf("Parse Server at %s is not healthy (%v)", where, err)}
	}
	if s, _ := h["status"].(string); s != "ok" {
		return &CheckError{Variable: "PARSE_MCP_SERVER_URL", Problem: fmt.Sprintf("Parse Server at %s is not ready (health status %q)", where, s)}
	}

	// The application id alone: GET /config answers any client of the app;
	// an unknown id is refused with a bare {"error":"unauthorized"}.
	if _, err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/config"}, Identity{}); err != nil {
		var pe *Error
		if errors.As(err, &pe) && pe.Status == http.StatusForbidden {
			return &CheckError{Misconfigured: true, Variable: "PARSE_MCP_APPLICATION_ID", Problem: "Parse Server at " + where + " does not accept this application id"}
		}
		return &CheckError{Variable: "PARSE_MCP_SERVER_URL", Problem: fmt.Sprintf("Parse Server at %s: %v", where, err)}
	}

	var probe Request
	switch {
	case id.Master:
		probe = Request{Method: http.MethodGet, Path: "/serverInfo"}
	case id.SessionToken.IsSet():
		probe = Request{Method: http.MethodGet, Path: "/users/me"}
	default:
		return nil
	}
	_, err = c.Do(ctx, probe, id)
	if err == nil {
		return nil
	}
	var pe *Error
	if !errors.As(err, &pe) {
		return &CheckError{Variable: "PARSE_MCP_SERVER_URL", Problem: fmt.Sprintf("Parse Server at %s: %v", where, err)}
	}
	switch {
	case id.Master:
		return &CheckError{Misconfigured: true, Variable: "PARSE_MCP_MASTER_KEY", Problem: "Parse Server at " + where + " does not accept this master key"}
	case id.SessionToken.IsSet():
		if pe.Code == CodeInvalidSessionToken {
			return &CheckError{Misconfigured: true, Variable: "PARSE_MCP_SESSION_TOKEN", Problem: "Parse Server at " + where + " does not accept this session token (expired or revoked?)"}
		}
		return &CheckError{Variable: "PARSE_MCP_SESSION_TOKEN", Problem: fmt.Sprintf("checking the session at %s: %v", where, pe)}
	}
	return nil
}

// ToolError maps a bridge failure to what the model sees. Parse's refusals
// keep Parse's message (it is the app's own wording, e.g. a beforeSave's
// validation error); transport and server failures stay internal (logged,
// never shown).
func ToolError(what string, err error) error {
	var pe *Error
	if !errors.As(err, &pe) {
		return fmt.Errorf("%s through Parse Server: %w", what, err)
	}
	msg := pe.Message
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	msg = strings.TrimSpace(msg)
	text := fmt.Sprintf("Parse Server refused %s: %s (Parse error %d)", what, msg, pe.Code)
	switch pe.Code {
	case CodeObjectNotFound:
		// With a session token Parse answers 101 both for a missing object
		// and for one the user may not write: the message must not tell them
		// apart either.
		return &toolerror.Error{Code: toolerror.ParseError, Message: fmt.Sprintf("Parse Server refused %s: object not found, or not writable by this identity (Parse error 101)", what), ParseCode: pe.Code}
	case CodeOperationForbidden, CodeInvalidSessionToken:
		return &toolerror.Error{Code: toolerror.PermissionDenied, Message: text, ParseCode: pe.Code}
	case CodeTimeout:
		return &toolerror.Error{Code: toolerror.Timeout, Message: text, ParseCode: pe.Code}
	case CodeRequestLimit:
		return &toolerror.Error{Code: toolerror.RateLimited, Message: text, ParseCode: pe.Code}
	}
	if pe.Code == 0 && pe.Status == http.StatusForbidden {
		// Express-level refusal without a Parse code: "Permission denied"
		// for a master-key-only route (schemas) sent with a session token.
		return &toolerror.Error{Code: toolerror.PermissionDenied, Message: fmt.Sprintf("Parse Server refused %s: %s (this needs the master key; the configured identity is a user session)", what, msg), ParseCode: pe.Code}
	}
	if pe.Code > 0 && pe.Code != CodeInternalServerError && pe.Code != CodeConnectionFailed && pe.Status/100 == 4 {
		// Parse's refusals of this request (validation 142, a Cloud Code
		// error 141, type mismatch 111, duplicate 137, class not empty
		// 255 …): the same parse_error kind as the direct path's
		// Parse-worded errors, with Parse's own message.
		return &toolerror.Error{Code: toolerror.ParseError, Message: text, ParseCode: pe.Code}
	}
	return fmt.Errorf("%s through Parse Server: %w", what, err)
}
