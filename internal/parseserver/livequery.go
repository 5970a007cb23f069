package parseserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
)

// LiveQuery subscribes to Parse LiveQuery (Parse's WebSocket protocol) with
// the server's identity. Parse checks each event against that identity's
// ACL and CLP before sending it, so an event about an object the identity
// cannot read never arrives.
type LiveQuery struct {
	url      string
	appID    string
	master   config.Secret
	identity *Identity
	log      zerolog.Logger

	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts (doubling from min to max).
	MinBackoff, MaxBackoff time.Duration
}

// ErrLiveQueryNoIdentity: the configured identity (acl_user, acl_role) has
// no LiveQuery equivalent; subscriptions fall back to the database.
var ErrLiveQueryNoIdentity = errors.New("the configured identity cannot subscribe through Parse LiveQuery (it needs a session token or the master key)")

// NewLiveQuery returns a LiveQuery client for the ws:// or wss:// URL,
// acting as the client's identity.
func (c *Client) NewLiveQuery(rawURL string, log zerolog.Logger) (*LiveQuery, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("%q is not a ws:// or wss:// URL", rawURL)
	}
	return &LiveQuery{url: u.String(), appID: c.appID, master: c.master, identity: c.identity, log: log,
		MinBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second}, nil
}

// Event is one LiveQuery event: create, update, delete, enter or leave, or
// "reconnected" after the connection was restored (events may have been
// missed meanwhile: the consumer should look again).
type Event struct {
	Op        string
	ClassName string
	ObjectID  string
}

// lqMessage is every message of the LiveQuery protocol (both directions).
type lqMessage struct {
	Op            string          `json:"op"`
	ApplicationID string          `json:"applicationId,omitempty"`
	MasterKey     string          `json:"masterKey,omitempty"`
	SessionToken  string          `json:"sessionToken,omitempty"`
	RequestID     int             `json:"requestId,omitempty"`
	Query         *lqQuery        `json:"query,omitempty"`
	Object        json.RawMessage `json:"object,omitempty"`
	Code          int             `json:"code,omitempty"`
	Error         string          `json:"error,omitempty"`
	Reconnect     bool            `json:"reconnect,omitempty"`
}

type lqQuery struct {
	ClassName string         `json:"className"`
	Where     map[string]any `json:"where"`
}

// Subscribe opens a subscription to every object of class that the identity
// can read. The first connection is made before it returns (an error means
// LiveQuery is unusable now and the caller should fall back); afterwards
// the subscription reconnects with backoff until ctx ends, when the channel
// is closed.
func (l *LiveQuery) Subscribe(ctx context.Context, class string) (<-chan Event, error) {
	if l.identity == nil {
		return nil, ErrLiveQueryNoIdentity
	}
	conn, err := l.open(ctx, class)
	if err != nil {
		return nil, err
	}
	ch := make(chan Event, 16)
	go l.run(ctx, class, conn, ch)
	return ch, nil
}

func (l *LiveQuery) run(ctx context.Context, class string, conn *websocket.Conn, ch chan<- Event) {
	defer close(ch)
	backoff := l.MinBackoff
	for {
		err := l.read(ctx, conn, class, ch)
		conn.Close(websocket.StatusNormalClosure, "")
		if ctx.Err() != nil {
			return
		}
		l.log.Warn().Str("class", class).Str("error", err.Error()).Msg("LiveQuery subscription lost; reconnecting")
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, l.MaxBackoff)
			conn, err = l.open(ctx, class)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			l.log.Debug().Str("class", class).Str("error", err.Error()).Dur("next_attempt", backoff).Msg("LiveQuery reconnect failed")
		}
		backoff = l.MinBackoff
		l.log.Info().Str("class", class).Msg("LiveQuery subscription restored")
		send(ctx, ch, Event{Op: "reconnected", ClassName: class})
	}
}

// read forwards events until the connection fails or ctx ends.
func (l *LiveQuery) read(ctx context.Context, conn *websocket.Conn, class string, ch chan<- Event) error {
	for {
		var m lqMessage
		if err := readJSON(ctx, conn, &m); err != nil {
			return err
		}
		switch m.Op {
		case "create", "update", "delete", "enter", "leave":
			var obj struct {
				ObjectID string `json:"objectId"`
			}
			_ = json.Unmarshal(m.Object, &obj)
			send(ctx, ch, Event{Op: m.Op, ClassName: class, ObjectID: obj.ObjectID})
		case "error":
			return fmt.Errorf("LiveQuery error %d: %s", m.Code, m.Error)
		}
	}
}

func send(ctx context.Context, ch chan<- Event, e Event) {
	select {
	case ch <- e:
	case <-ctx.Done():
	}
}

// open connects, authenticates and subscribes to class.
// Its client span names the peer only (docs/observability.md "Traces"):
// the URL, the class and the credentials stay out.
func (l *LiveQuery) open(ctx context.Context, class string) (conn *websocket.Conn, err error) {
	ctx, span := telemetry.StartClient(ctx, "livequery connect", attribute.String("parse_mcp.peer", "livequery"))
	defer func() {
		errType := ""
		if err != nil {
			errType = "livequery_error"
		}
		span.End(errType)
	}()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The master key or session token is sent after the handshake: a
	// redirected handshake would hand it to another server, so none is
	// followed.
	conn, _, err = websocket.Dial(dctx, l.url, &websocket.DialOptions{HTTPClient: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}})
	if err != nil {
		return nil, fmt.Errorf("connecting to LiveQuery: %w", scrubURLError(err))
	}
	conn.SetReadLimit(MaxResponseBytes)
	hello := lqMessage{Op: "connect", ApplicationID: l.appID}
	sub := lqMessage{Op: "subscribe", RequestID: 1, Query: &lqQuery{ClassName: class, Where: map[string]any{}}}
	if l.identity.Master {
		hello.MasterKey = l.master.Reveal()
	} else {
		hello.SessionToken = l.identity.SessionToken.Reveal()
		sub.SessionToken = hello.SessionToken
	}
	fail := func(err error) (*websocket.Conn, error) {
		conn.Close(websocket.StatusNormalClosure, "")
		return nil, err
	}
	for _, step := range []struct {
		msg  lqMessage
		want string
	}{{hello, "connected"}, {sub, "subscribed"}} {
		if err := writeJSON(dctx, conn, step.msg); err != nil {
			return fail(fmt.Errorf("LiveQuery %s: %w", step.msg.Op, err))
		}
		var m lqMessage
		if err := readJSON(dctx, conn, &m); err != nil {
			return fail(fmt.Errorf("LiveQuery %s: %w", step.msg.Op, err))
		}
		if m.Op == "error" {
			return fail(fmt.Errorf("LiveQuery %s refused: %s (code %d)", step.msg.Op, m.Error, m.Code))
		}
		if m.Op != step.want {
			return fail(fmt.Errorf("LiveQuery %s: unexpected answer %q", step.msg.Op, m.Op))
		}
	}
	return conn, nil
}

func writeJSON(ctx context.Context, conn *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, b)
}

func readJSON(ctx context.Context, conn *websocket.Conn, v any) error {
	_, b, err := conn.Read(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
