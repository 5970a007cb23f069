package parseserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestLiveQueryACL: a session identity's LiveQuery subscription receives the
// public note's event and never the private note's.
func TestLiveQueryACL(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI(t), LiveQueryClasses: []string{"Note"}})
	ps.CreateClass(t, "Note", map[string]string{"title": "String"}, nil)
	aliceID, alice := ps.SignUp(t, "alice", "pw")
	_, bob := ps.SignUp(t, "bob", "pw")

	subscribe := func(id parseserver.Identity) <-chan parseserver.Event {
		c, err := parseserver.New(parseserver.Config{URL: ps.URL, ApplicationID: ps.AppID, MasterKey: parseserver.NewSecret(ps.MasterKey), Identity: &id})
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
	bobEvents := subscribe(parseserver.Identity{SessionToken: parseserver.NewSecret(bob)})
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
