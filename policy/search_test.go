package policy

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

// TestSearchPolicyParse: the search: section is decoded strictly, every
// problem with its exact path.
func TestSearchPolicyParse(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"classes: {Song: {search: {text_feilds: [title]}}}", "classes.Song.search.text_feilds: unknown key (did you mean text_fields?)"},
		{"classes: {Song: {search: {text_fields: []}}}", "classes.Song.search.text_fields: must not be empty"},
		{"classes: {Song: {search: {text_fields: title}}}", "classes.Song.search.text_fields: must be a list of field names"},
		{"classes: {Song: {search: {embed_from: [title]}}}", "classes.Song.search.embed_from: needs vector_field"},
		{"classes: {Song: {search: {atlas_index: 'a b'}}}", "classes.Song.search.atlas_index: \"a b\" is not a valid index name"},
		{"classes: {Song: {search: {}}}", "classes.Song.search: names nothing to search"},
		{"classes: {Song: {search: {vector_field: 'x y'}}}", "classes.Song.search.vector_field: \"x y\" is not a valid field name"},
		{"search: {fallback_max_rows: 0}", "search.fallback_max_rows: must be between 1 and 10000000"},
		{"search: {max_rows: 5}", "search.max_rows: unknown key"},
	} {
		_, err := Parse([]byte(c.doc), false)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s\n got: %v\nwant: %s", c.doc, err, c.want)
		}
	}
	f, err := Parse([]byte("classes: {Song: {search: {text_fields: [title, lyrics], autocomplete_fields: [title], facet_fields: [genre, plays, releasedAt, archived], vector_field: meta, embed_from: [title], atlas_index: songs_v1}}}\nsearch: {fallback_max_rows: 1000}"), false)
	if err != nil {
		t.Fatal(err)
	}
	sp := f.Classes["Song"].Search
	if sp == nil || sp.AtlasIndex != "songs_v1" || len(sp.FacetFields) != 4 || f.Search.FallbackMaxRows != 1000 {
		t.Fatalf("decoded %+v, %+v", sp, f.Search)
	}
}

// TestSearchPolicyValidate: the fields of search: are checked against
// _SCHEMA at start-up: existence, type, the internal floor, agent_fields.
func TestSearchPolicyValidate(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"classes: {Song: {search: {text_fields: [titel]}}}", "classes.Song.search.text_fields[0]: no field titel in Song's _SCHEMA (did you mean title?)"},
		{"classes: {Song: {search: {text_fields: [plays]}}}", "classes.Song.search.text_fields[0]: plays is a Number field"},
		{"classes: {Song: {search: {text_fields: [ACL]}}}", "classes.Song.search.text_fields[0]: ACL is an internal field"},
		{"classes: {Song: {search: {facet_fields: [artist]}}}", "classes.Song.search.facet_fields[0]: artist is a Pointer field"},
		{"classes: {Song: {search: {vector_field: title}}}", "classes.Song.search.vector_field[0]: title is a String field"},
		{"classes: {Patient: {agent_fields: [name], search: {text_fields: [ssn]}}}", "classes.Patient.search.text_fields[0]: ssn is not in agent_fields"},
		{"classes: {_User: {search: {autocomplete_fields: [authData]}}}", "classes._User.search.autocomplete_fields[0]: authData is an internal field"},
	} {
		f, err := Parse([]byte(c.doc), false)
		if err != nil {
			t.Errorf("%s: parse: %v", c.doc, err)
			continue
		}
		e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
		problems := e.Validate(context.Background(), secSchema())
		if len(problems) == 0 || !strings.HasPrefix(problems[0].Error(), c.want) {
			t.Errorf("%s\n got: %v\nwant: %s", c.doc, problems, c.want)
		}
	}
}

// TestSearchToolsetListedOnlyWhenOptedIn: the search tools are permitted
// (and so listed) only when some visible class has a search: section.
func TestSearchToolsetListedOnlyWhenOptedIn(t *testing.T) {
	tool := ToolInfo{Name: "atlas_text_search", Category: CategorySearch, Tier: config.TierReadonly}
	for _, c := range []struct {
		doc  string
		want bool
	}{
		{"", false},
		{"classes: {Song: {description: x}}", false},
		{"classes: {VaultSecret: {hidden: true}}", false},
		{"classes: {Song: {search: {text_fields: [title]}}}", true},
	} {
		f, err := Parse([]byte(c.doc), false)
		if err != nil {
			t.Fatal(err)
		}
		e := New(&config.Config{Permissions: "readonly"}, f, zerolog.New(io.Discard))
		if got := e.Permit(tool) == nil; got != c.want {
			t.Errorf("%q: permitted %v, want %v", c.doc, got, c.want)
		}
	}
}
