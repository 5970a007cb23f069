package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The over-budget input: branchy is one over the cyclomatic budget, long
// one line over the length budget; branchyWithin and longWithin are at the
// limits; longException is over and marked as an exception.
const overBudget = "internal/lintbudget/testdata/overbudget"

func TestLongFuncs(t *testing.T) {
	got, err := longFuncs(filepath.Join("testdata", "overbudget"), maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join("testdata", "overbudget", "over.go") + ":163: long is 101 lines (budget 100)"}
	if !slices.Equal(got, want) {
		t.Errorf("longFuncs = %q, want %q", got, want)
	}
}

// TestMakeLintFailsOverBudget runs `make lint`'s budget recipe, as the
// Makefile has it, on the over-budget input: it must fail and name both
// functions, and neither of those at the limits.
func TestMakeLintFailsOverBudget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", "-s", "-C", filepath.Join("..", ".."), "lint-budget", "BUDGET_DIR="+overBudget)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make lint-budget passed an over-budget function:\n%s", out)
	}
	for _, want := range []string{"26 overbudget branchy " + overBudget + "/over.go", overBudget + "/over.go:163: long is 101 lines"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not report %q:\n%s", want, out)
		}
	}
	for _, within := range []string{"branchyWithin", "longWithin", "longException"} {
		if strings.Contains(string(out), within) {
			t.Errorf("output reports %s, which is within the budget or an exception:\n%s", within, out)
		}
	}
}

// TestExceptionsNamedInArchitecture: every function carrying an exception
// directive is listed in ARCHITECTURE.md "Complexity budget", and every
// listed one carries one.
func TestExceptionsNamedInArchitecture(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Complexity budget\n")
	if !ok {
		t.Fatal(`ARCHITECTURE.md has no "## Complexity budget" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^- `([^`]+)` `([^`]+)`").FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1]+" "+m[2])
	}
	var marked []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && (hasDirective(fn, ignoreDirective) || hasDirective(fn, cycloIgnoreDirective)) {
				marked = append(marked, filepath.ToSlash(rel)+" "+funcName(fn))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(marked)
	if !slices.Equal(listed, marked) {
		t.Errorf("ARCHITECTURE.md lists the exceptions\n%s\nbut these functions carry an exception directive:\n%s", strings.Join(listed, "\n"), strings.Join(marked, "\n"))
	}
}
