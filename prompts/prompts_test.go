package prompts

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/tools"
)

func TestParseISODate(t *testing.T) {
	good := map[string]string{
		"2024-03-01":                "2024-03-01T00:00:00Z",
		"2024-03-01T12:30:00Z":      "2024-03-01T12:30:00Z",
		"2024-03-01T12:30:00.5Z":    "2024-03-01T12:30:00.5Z",
		"2024-03-01T12:30:00+02:00": "2024-03-01T10:30:00Z",
		"2024-03-01T12:30:00":       "2024-03-01T12:30:00Z",
		"2024-03-01T12:30":          "2024-03-01T12:30:00Z",
	}
	for in, want := range good {
		got, ok := ParseISODate(in)
		if !ok || got.UTC().Format("2006-01-02T15:04:05.999999999Z07:00") != want {
			t.Errorf("%s: %v %v, want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2024-13-01", "2024-02-30", "01/03/2024", "2024-03-01 12:00", "1709251200"} {
		if _, ok := ParseISODate(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFromSpec(t *testing.T) {
	ok := policy.PromptSpec{Name: "p", Template: "{{a}} and {{ b }}", Arguments: []policy.PromptArgSpec{
		{Name: "a", Type: "class_name", Required: true}, {Name: "b", Type: "integer", Default: "3"}}}
	if _, err := fromSpec(ok); err != nil {
		t.Fatal(err)
	}
	bad := map[string]policy.PromptSpec{
		"bad name":          {Name: "1p", Template: "x"},
		"no template":       {Name: "p"},
		"undeclared":        {Name: "p", Template: "{{x}}"},
		"unknown type":      {Name: "p", Template: "x", Arguments: []policy.PromptArgSpec{{Name: "a", Type: "colour"}}},
		"duplicate":         {Name: "p", Template: "x", Arguments: []policy.PromptArgSpec{{Name: "a"}, {Name: "a"}}},
		"required+default":  {Name: "p", Template: "x", Arguments: []policy.PromptArgSpec{{Name: "a", Required: true, Default: "x"}}},
		"bad default":       {Name: "p", Template: "x", Arguments: []policy.PromptArgSpec{{Name: "a", Type: "date", Default: "soon"}}},
		"bad integer":       {Name: "p", Template: "x", Arguments: []policy.PromptArgSpec{{Name: "a", Type: "integer", Default: "x"}}},
		"bad argument name": {Name: "p", Template: "x", Arguments: []policy.PromptArgSpec{{Name: "a-b"}}},
		"huge template":     {Name: "p", Template: strings.Repeat("x", MaxTemplate+1)},
	}
	for name, spec := range bad {
		if _, err := fromSpec(spec); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBuiltinsAreTheEightOfTheSpec(t *testing.T) {
	want := "parse_conventions parse_relations explore_database class_overview count_by recent_activity find_relationship created_in_range"
	var got []string
	for _, p := range builtins() {
		got = append(got, p.Name)
		if p.Description == "" || p.Render == nil {
			t.Errorf("%s is incomplete", p.Name)
		}
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("built-ins %v", got)
	}
}

// TestPromptsFollowTheCallersTools: a prompt whose steps name a tool the
// caller may not call is left out of prompts/list and answers prompts/get as
// an unknown prompt; the caller is the request's (policy.Engine.For).
func TestPromptsFollowTheCallersTools(t *testing.T) {
	f, err := policy.Parse([]byte("agent: {tools: {except: [query_class]}}"), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Permissions: config.TierReadonly}
	d := tools.NewDeps(nil, policy.New(cfg, f, zerolog.New(io.Discard)), cfg, zerolog.New(io.Discard))
	p, err := New(d, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var all []mcp.Prompt
	for _, pr := range p.Prompts() {
		all = append(all, mcp.Prompt{Name: pr.Name})
	}
	listed := map[string]bool{}
	for _, m := range p.filter(context.Background(), all) {
		listed[m.Name] = true
	}
	if listed["recent_activity"] || listed["created_in_range"] || !listed["count_by"] || !listed["parse_conventions"] {
		t.Fatalf("prompts/list without query_class: %v", listed)
	}
	if _, err := p.Get(context.Background(), "recent_activity", map[string]string{"class_name": "Song"}); err == nil || !strings.Contains(err.Error(), `Unknown prompt "recent_activity"`) {
		t.Fatalf("prompts/get of a prompt the caller may not use: %v", err)
	}
}
