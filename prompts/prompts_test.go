package prompts

import (
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/policy"
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
