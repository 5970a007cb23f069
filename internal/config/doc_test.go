package config

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's generated table")

const (
	configDoc      = "../../docs/configuration.md"
	generatedBegin = "<!-- Generated from internal/config/config.go by `go generate ./internal/config`; do not edit. -->"
	generatedEnd   = "<!-- End of the generated table. -->"
)

// TestConfigurationDocIsCurrent keeps docs/configuration.md's variable table
// equal to what config.go declares: every variable of Config and Gates, with
// the comment at the end of its line as its meaning. A variable without that
// comment fails, and so does a stale table (go generate ./internal/config
// rewrites it).
func TestConfigurationDocIsCurrent(t *testing.T) {
	table, problems := variablesTable(t)
	for _, p := range problems {
		t.Error(p)
	}
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, generatedBegin), strings.Index(doc, generatedEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated table's markers %q … %q", configDoc, generatedBegin, generatedEnd)
	}
	want := doc[:i] + generatedBegin + "\n" + table + generatedEnd + doc[j+len(generatedEnd):]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(configDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: run go generate ./internal/config", configDoc)
}

// variablesTable renders the markdown table of Config's and Gates' variables
// from config.go's syntax tree (the line comments are not in reflection).
func variablesTable(t *testing.T) (string, []string) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var rows, problems []string
	for _, typeName := range []string{"Config", "Gates"} {
		st := structType(f, typeName)
		if st == nil {
			t.Fatalf("config.go declares no struct %s", typeName)
		}
		for _, field := range st.Fields.List {
			if field.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(field.Tag.Value)
			st := reflect.StructTag(tag)
			name := cmpOr(st.Get("envconfig"), st.Get("env"))
			if name == "" {
				continue
			}
			text := ""
			if field.Comment != nil {
				text = strings.TrimSpace(field.Comment.Text())
			}
			if text == "" {
				problems = append(problems, name+" is undocumented: end its line in internal/config/config.go with a // comment saying what it does (markdown; \". Default: X.\" when the default is not the tag's)")
				continue
			}
			meaning, dflt, found := cutLast(text, ". Default: ")
			switch {
			case found:
				dflt = strings.TrimSuffix(dflt, ".")
			case st.Get("default") != "":
				dflt = "`" + st.Get("default") + "`"
			default:
				dflt = "none"
			}
			rows = append(rows, "| `"+name+"` | "+meaning+" | "+dflt+" |")
		}
	}
	return "| variable | meaning | default |\n|---|---|---|\n" + strings.Join(rows, "\n") + "\n", problems
}

func structType(f *ast.File, name string) *ast.StructType {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == name {
				st, _ := ts.Type.(*ast.StructType)
				return st
			}
		}
	}
	return nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestEveryVariableIsDocumented finds the environment variables the code
// reads by name anywhere in the module (outside tests and the test
// harnesses' own PARSE_MCP_TEST_* and PARSE_MCP_BENCH* knobs) and requires
// each in docs/configuration.md, so a variable read outside Config (chat's
// LLM_*, a telemetry setting) cannot go undocumented either.
func TestEveryVariableIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`"((?:PARSE_MCP|PARSE_AGENT|LLM|OTEL)_[A-Z0-9_]*[A-Z0-9])"`)
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			v := m[1]
			if seen[v] || strings.HasPrefix(v, "PARSE_MCP_TEST_") || strings.HasPrefix(v, "PARSE_MCP_BENCH") {
				continue
			}
			seen[v] = true
			if !strings.Contains(string(doc), "`"+v+"`") {
				t.Errorf("%s reads %s, which docs/configuration.md does not document", path, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
