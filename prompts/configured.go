package prompts

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
)

var (
	promptNameRe  = parsedb.NewNamePattern("", "A-Za-z", "A-Za-z0-9_-", 64)
	argNameRe     = parsedb.NewNamePattern("", "A-Za-z", "A-Za-z0-9_", 64)
	placeholderRe = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)
)

// MaxTemplate caps a configured prompt's template.
const MaxTemplate = 16 << 10

// fromSpec turns a policy-file prompt into a Prompt, checking it completely:
// a name, a template, known argument types, and placeholders that all name
// declared arguments.
func fromSpec(spec policy.PromptSpec) (*Prompt, error) {
	if !promptNameRe.MatchString(spec.Name) {
		return nil, fmt.Errorf("name %q must be 1-64 letters, digits, _ or -, starting with a letter", spec.Name)
	}
	if strings.TrimSpace(spec.Template) == "" {
		return nil, fmt.Errorf("template is required")
	}
	if len(spec.Template) > MaxTemplate {
		return nil, fmt.Errorf("template is longer than %d bytes", MaxTemplate)
	}
	pr := &Prompt{Name: spec.Name, Title: spec.Title, Description: spec.Description}
	declared := map[string]bool{}
	for i, a := range spec.Arguments {
		if !argNameRe.MatchString(a.Name) {
			return nil, fmt.Errorf("arguments[%d]: name %q must be letters, digits and _, starting with a letter", i, a.Name)
		}
		if declared[a.Name] {
			return nil, fmt.Errorf("arguments[%d]: %s is declared twice", i, a.Name)
		}
		declared[a.Name] = true
		t := ArgType(a.Type)
		if t == "" {
			t = ArgString
		}
		if !argTypes[t] {
			return nil, fmt.Errorf("arguments[%d] (%s): unknown type %q (use class_name, class_list, object_id, date, field, integer or string)", i, a.Name, a.Type)
		}
		if a.Required && a.Default != "" {
			return nil, fmt.Errorf("arguments[%d] (%s): a required argument cannot have a default", i, a.Name)
		}
		pr.Args = append(pr.Args, Arg{Name: a.Name, Description: a.Description, Type: t, Required: a.Required, Default: a.Default})
	}
	for _, m := range placeholderRe.FindAllStringSubmatch(spec.Template, -1) {
		if !declared[m[1]] {
			return nil, fmt.Errorf("template: placeholder {{%s}} is not a declared argument", m[1])
		}
	}
	tmpl := spec.Template
	pr.Render = func(_ context.Context, _ *Provider, v *Values) (string, error) {
		return placeholderRe.ReplaceAllStringFunc(tmpl, func(ph string) string {
			name := placeholderRe.FindStringSubmatch(ph)[1]
			return v.Get(name)
		}), nil
	}
	// Defaults are validated like values, when the prompt is rendered; a
	// syntactically impossible default is caught here already.
	for _, a := range pr.Args {
		if a.Default == "" {
			continue
		}
		if err := checkDefault(a); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

func checkDefault(a Arg) error {
	bad := false
	switch a.Type {
	case ArgClass:
		bad = !parsedb.ClassNameRe.MatchString(a.Default)
	case ArgObjectID:
		bad = !parsedb.ObjectIDRe.MatchString(a.Default)
	case ArgField:
		bad = !parsedb.FieldPathRe.MatchString(a.Default)
	case ArgDate:
		_, ok := ParseISODate(a.Default)
		bad = !ok
	case ArgInteger:
		_, err := strconv.Atoi(a.Default)
		bad = err != nil
	}
	if bad {
		return fmt.Errorf("argument %s: default %q is not a valid %s", a.Name, a.Default, a.Type)
	}
	return nil
}
