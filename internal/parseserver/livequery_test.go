package parseserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestLiveQueryACL: a session identity's LiveQuery subscription receives the
// public note's event and never the private note's.
func TestLiveQueryACL(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: parsetest.MongoURI(t), LiveQueryClasses: []string{"Note"}})
	ps.CreateClass(t, "Note", map[string]string{"title": "String"}, nil)
	aliceID, alice := ps.SignUp(t, "alice", "pw")
	_, bob := ps.SignUp(t, "bob", "pw")

	subscribe := func(id parseserver.Identity) <-chan parseserver.Event {
		c, err := parseserver.New(parseserver.Config{URL: ps.URL, ApplicationID: ps.AppID, MasterKey: config.NewSecret(ps.MasterKey), Identity: &id})
		if err != nil {
			t.Fatal(err)
		}
		lq, err := c.NewLiveQuery(ps.LiveQueryURL, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		ch, err := lq.Subscribe(ctx, "Note")
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	bobEvents := subscribe(parseserver.Identity{SessionToken: config.NewSecret(bob)})
	masterEvents := subscribe(parseserver.Identity{Master: true})

	private := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "alice only", "ACL": map[string]any{aliceID: map[string]any{"read": true, "write": true}}}, parsetest.AsSession(alice))
	public := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "everyone"}, parsetest.AsSession(alice))

	next := func(ch <-chan parseserver.Event) parseserver.Event {
		select {
		case e := <-ch:
			return e
		case <-time.After(60 * time.Second):
			t.Fatal("no LiveQuery event within 60 s")
		}
		return parseserver.Event{}
	}
	// Events arrive in write order: bob's first event is the public note.
	if e := next(bobEvents); e.Op != "create" || e.ObjectID != public["objectId"] {
		t.Fatalf("bob's first event %+v, want create of %v (private note %v must not be sent)", e, public["objectId"], private["objectId"])
	}
	// The master key bypasses ACLs in LiveQuery only when the LiveQuery
	// server lists it in keyPairs (the harness, like a default deployment,
	// does not): the master subscription hears the public note.
	if e := next(masterEvents); e.ObjectID != public["objectId"] {
		t.Fatalf("master's first event %+v, want the public note", e)
	}
	ps.MustDo(t, "PUT", "/classes/Note/"+public["objectId"].(string), map[string]any{"title": "changed"}, parsetest.AsMaster)
	if e := next(bobEvents); e.Op != "update" || e.ObjectID != public["objectId"] {
		t.Fatalf("bob's event %+v, want update of the public note", e)
	}
}

func TestLiveQueryNeedsAnIdentity(t *testing.T) {
	c, _ := parseserver.New(parseserver.Config{URL: "http://127.0.0.1:1/parse", ApplicationID: "app", NoIdentity: "acl_user"})
	lq, err := c.NewLiveQuery("ws://127.0.0.1:1/", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lq.Subscribe(context.Background(), "Note"); err != parseserver.ErrLiveQueryNoIdentity {
		t.Fatalf("got %v", err)
	}
}

// TestLiveQueryReconnects: when the LiveQuery connection drops, the
// subscription reconnects (with backoff), says so with a "reconnected"
// event, and forwards later events. The server here is a minimal speaker of
// the LiveQuery protocol that drops the first connection: a real Parse
// Server cannot be restarted on the same port mid-test.
func TestLiveQueryReconnects(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		n := conns.Add(1)
		for _, reply := range []string{`{"op":"connected","clientId":"c"}`, `{"op":"subscribed","clientId":"c","requestId":1}`} {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
			if err := c.Write(ctx, websocket.MessageText, []byte(reply)); err != nil {
				return
			}
		}
		if n == 1 {
			return // drop the first connection
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"op":"create","clientId":"c","requestId":1,"object":{"className":"Note","objectId":"after"}}`))
		_, _, _ = c.Read(ctx) // hold the connection until the client leaves
	}))
	defer srv.Close()

	cl, _ := parseserver.New(parseserver.Config{URL: srv.URL + "/parse", ApplicationID: "app", MasterKey: config.NewSecret("k"), Identity: &parseserver.Identity{Master: true}})
	lq, err := cl.NewLiveQuery(strings.Replace(srv.URL, "http://", "ws://", 1)+"/", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	lq.MinBackoff, lq.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := lq.Subscribe(ctx, "Note")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		select {
		case e := <-events:
			got = append(got, e.Op+":"+e.ObjectID)
		case <-time.After(60 * time.Second):
			t.Fatalf("events after a dropped connection: %v", got)
		}
	}
	if got[0] != "reconnected:" || got[1] != "create:after" {
		t.Fatalf("events %v, want reconnected then create:after", got)
	}
	cancel()
	for range events { // closed when the context ends
	}
}

// TestLiveQueryNoRedirect: a LiveQuery URL that redirects is not followed,
// so the credential sent after the handshake cannot reach another server.
func TestLiveQueryNoRedirect(t *testing.T) {
	var reached atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(true)
		c, err := websocket.Accept(w, r, nil)
		if err == nil {
			c.CloseNow()
		}
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	cl, _ := parseserver.New(parseserver.Config{URL: redirector.URL + "/parse", ApplicationID: "app", MasterKey: config.NewSecret("k"), Identity: &parseserver.Identity{Master: true}})
	lq, err := cl.NewLiveQuery(strings.Replace(redirector.URL, "http://", "ws://", 1)+"/", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lq.Subscribe(context.Background(), "Note"); err == nil {
		t.Fatal("a redirected LiveQuery handshake was accepted")
	}
	if reached.Load() {
		t.Fatal("the redirect was followed")
	}
}
