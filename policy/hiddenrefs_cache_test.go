package policy

import (
	"io"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// TestHiddenRefsCachedPerSchemaAndPosture: the hidden-reference description
// is built once per schema and posture; a reloaded schema (a new *Schema)
// gets a new one that sees its classes, and the master posture's (where
// _Session is visible) never serves a scoped session.
func TestHiddenRefsCachedPerSchemaAndPosture(t *testing.T) {
	e := New(&config.Config{Permissions: "readonly", ACLUser: "u1"}, nil, zerolog.New(io.Discard))
	s1 := &parsedb.Schema{Classes: map[string]*parsedb.Class{"Song": {Name: "Song"}}}
	a := e.HiddenRefs(s1)
	if b := e.HiddenRefs(s1); b != a {
		t.Fatal("the same schema built the hidden references again")
	}
	if !slices.Contains(a.Names, "_Session") || slices.Contains(a.Known, "Vault") {
		t.Fatalf("scoped posture: names %v, known %v", a.Names, a.Known)
	}
	s2 := &parsedb.Schema{Classes: map[string]*parsedb.Class{"Song": {Name: "Song"}, "Vault": {Name: "Vault"}}}
	if c := e.HiddenRefs(s2); c == a || !slices.Contains(c.Known, "Vault") {
		t.Fatalf("a reloaded schema kept the old description: known %v", c.Known)
	}
	m := New(&config.Config{Permissions: "readonly"}, nil, zerolog.New(io.Discard))
	m.refsCache = e.refsCache // one cache, two postures
	if r := m.HiddenRefs(s2); slices.Contains(r.Names, "_Session") {
		t.Fatalf("master posture hides _Session: %v", r.Names)
	}
	if r := e.HiddenRefs(s2); !slices.Contains(r.Names, "_Session") {
		t.Fatalf("the scoped posture got the master posture's description: %v", r.Names)
	}
}
