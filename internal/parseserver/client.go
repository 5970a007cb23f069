// Package parseserver is parse-mcp's client for a Parse Server's REST API:
// the bridge that sends writes and Cloud Code function calls through the
// app's own Parse Server, so its triggers, validation, ACL/CLP checks,
// LiveQuery events and schema cache behave as for any Parse client (see the
// docs/bridge.md's "Parse Server bridge" section).
//
// The master key is a secret: it is held in a value that never prints,
// sent only in requests to the configured server URL (redirects are never
// followed), and masked in every request preview (dry_run).
package parseserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// MaxResponseBytes bounds a REST response body read into memory.
const MaxResponseBytes = 16 << 20

// Identity is who a request is sent as: the master key (master posture) or a
// user's session token (Parse then enforces that user's ACL and CLP).
type Identity struct {
	Master       bool
	SessionToken config.Secret
}

// Config is the bridge configuration.
type Config struct {
	URL           string // REST root, e.g. http://127.0.0.1:1337/parse
	ApplicationID string
	MasterKey     config.Secret
	// Timeout bounds one request; 0 means 60 s.
	Timeout time.Duration
	// Identity is who the server's tool calls act as. Nil means the
	// configured identity has no REST equivalent (acl_user / acl_role):
	// NoIdentity explains why, and calls needing an identity are refused.
	Identity   *Identity
	NoIdentity string
}

// Client talks to one Parse Server.
type Client struct {
	base       *url.URL
	appID      string
	master     config.Secret
	http       *http.Client
	identity   *Identity
	noIdentity string
}

// Identity is who tool calls act as, or a permission_denied error saying why
// the configured identity cannot act through Parse Server.
func (c *Client) Identity() (Identity, error) {
	if c.identity == nil {
		return Identity{}, &toolerror.Error{Code: toolerror.PermissionDenied, Message: c.noIdentity}
	}
	return *c.identity, nil
}

// Posture names the identity for logs and describe: "master", "session_token"
// or "none".
func (c *Client) Posture() string {
	switch {
	case c.identity == nil:
		return "none"
	case c.identity.Master:
		return "master"
	}
	return "session_token"
}

// New validates the configuration and returns a client.
func New(cfg Config) (*Client, error) {
	u, err := config.ParseServerURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.ApplicationID == "" {
		return nil, errors.New("no application id")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	return &Client{
		base:       u,
		appID:      cfg.ApplicationID,
		master:     cfg.MasterKey,
		identity:   cfg.Identity,
		noIdentity: cfg.NoIdentity,
		http: &http.Client{
			Timeout:   timeout,
			Transport: telemetry.Transport("parse_server", nil),
			// Never follow a redirect: the master key or session token would
			// go to wherever the redirect points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// URL is the configured REST root.
func (c *Client) URL() string { return c.base.String() }

// HasMasterKey reports whether a master key is configured.
func (c *Client) HasMasterKey() bool { return c.master.IsSet() }

// Request is one REST call. Path is relative to the REST root and already
// escaped ("/classes/Note/abc").
type Request struct {
	Method string
	Path   string
	Body   map[string]any
}

// Preview is the request as dry_run shows it: full URL, headers with every
// secret masked, and the JSON body.
func (c *Client) Preview(r Request, id Identity) map[string]any {
	headers := map[string]string{
		"X-Parse-Application-Id": c.appID,
		"Content-Type":           "application/json",
	}
	if id.Master {
		headers["X-Parse-Master-Key"] = config.Masked
	} else if id.SessionToken.IsSet() {
		headers["X-Parse-Session-Token"] = config.Masked
	}
	out := map[string]any{"method": r.Method, "url": c.base.String() + r.Path, "headers": headers}
	if r.Body != nil {
		out["body"] = r.Body
	}
	return out
}

// Do sends r as id and decodes the JSON answer. A Parse error answer is an
// *Error; a transport failure is returned wrapped, without any header.
func (c *Client) Do(ctx context.Context, r Request, id Identity) (map[string]any, error) {
	var body io.Reader
	if r.Body != nil {
		b, err := json.Marshal(r.Body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, c.base.String()+r.Path, body)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	c.authorize(req, id)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &TransportError{Op: r.Method + " " + r.Path, Err: scrubURLError(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, &TransportError{Op: r.Method + " " + r.Path, Err: err}
	}
	if len(raw) > MaxResponseBytes {
		return nil, fmt.Errorf("%s %s: response larger than %d bytes", r.Method, r.Path, MaxResponseBytes)
	}
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			if resp.StatusCode/100 != 2 {
				return nil, &Error{Status: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
			}
			return nil, fmt.Errorf("%s %s: the answer is not a JSON object", r.Method, r.Path)
		}
	}
	if resp.StatusCode/100 != 2 {
		// Parse Server 9.10 drops the keep-alive connection after some
		// refusals (a 403 for a master-key-only route, seen as EOF on the
		// next request): never reuse a connection that carried an error.
		c.http.CloseIdleConnections()
		e := &Error{Status: resp.StatusCode}
		if code, ok := out["code"].(float64); ok {
			e.Code = int(code)
		}
		e.Message, _ = out["error"].(string)
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
		return nil, e
	}
	return out, nil
}

func (c *Client) authorize(req *http.Request, id Identity) {
	req.Header.Set("X-Parse-Application-Id", c.appID)
	req.Header.Set("Content-Type", "application/json")
	if id.Master && c.master.IsSet() {
		req.Header.Set("X-Parse-Master-Key", c.master.Reveal())
	} else if id.SessionToken.IsSet() {
		req.Header.Set("X-Parse-Session-Token", id.SessionToken.Reveal())
	}
}

// scrubURLError keeps the operation and cause of a *url.Error but not the
// URL (which is the configured one anyway, and never carries a secret).
func scrubURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// TransportError is a failure to reach the server or read its answer.
type TransportError struct {
	Op  string
	Err error
}

func (e *TransportError) Error() string { return "Parse Server " + e.Op + ": " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// Error is Parse Server's error answer: HTTP status, Parse error code
// (0 when the body had none) and Parse's message.
type Error struct {
	Status  int
	Code    int
	Message string
}

func (e *Error) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("Parse Server error %d: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("Parse Server HTTP %d: %s", e.Status, e.Message)
}

// Parse error codes the bridge maps (Parse.Error in the JS SDK).
const (
	CodeOtherCause          = -1
	CodeInternalServerError = 1
	CodeConnectionFailed    = 100
	CodeObjectNotFound      = 101
	CodeInvalidQuery        = 102
	CodeInvalidClassName    = 103
	CodeMissingObjectID     = 104
	CodeInvalidKeyName      = 105
	CodeInvalidPointer      = 106
	CodeInvalidJSON         = 107
	CodeIncorrectType       = 111
	CodeOperationForbidden  = 119
	CodeTimeout             = 124
	CodeScriptFailed        = 141
	CodeValidationError     = 142
	CodeInvalidACL          = 123
	CodeDuplicateValue      = 137
	CodeRequestLimit        = 155
	CodeInvalidSessionToken = 209
	CodeClassNotEmpty       = 255
)
