// Command lintbudget is the function-length half of `make lint`'s
// complexity budget (ARCHITECTURE.md "Complexity budget"; the pinned
// gocyclo is the other half): it lists every function or method longer
// than the budget in the non-test Go files under the given directories,
// and exits 1 when there is one. A function whose doc comment carries
// //lintbudget:ignore is an exception; every exception (this directive or
// gocyclo's //gocyclo:ignore) is named in ARCHITECTURE.md, which a test
// checks.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxFuncLines is the longest a function may be, from its func line to its
// closing brace.
const maxFuncLines = 100

func main() {
	dirs := os.Args[1:]
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var over []string
	for _, dir := range dirs {
		found, err := longFuncs(dir, maxFuncLines)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lintbudget:", err)
			os.Exit(2)
		}
		over = append(over, found...)
	}
	for _, f := range over {
		fmt.Fprintln(os.Stderr, f)
	}
	if len(over) > 0 {
		fmt.Fprintf(os.Stderr, "lintbudget: %d functions over %d lines: split them (ARCHITECTURE.md \"Complexity budget\")\n", len(over), maxFuncLines)
		os.Exit(1)
	}
}

// longFuncs walks root and reports "file:line: name is N lines" for each
// function longer than limit. Test files are out, and so are the
// directories the go tool ignores (testdata, hidden, _-prefixed) below
// root: root itself is walked whatever its name, so a test can point the
// check at a testdata directory.
func longFuncs(root string, limit int) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || hasDirective(fn, ignoreDirective) {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > limit {
				out = append(out, fmt.Sprintf("%s:%d: %s is %d lines (budget %d)", path, start.Line, funcName(fn), n, limit))
			}
		}
		return nil
	})
	return out, err
}

// The directives that make a function an exception to the budget: this
// program's, and gocyclo's own.
const (
	ignoreDirective      = "//lintbudget:ignore"
	cycloIgnoreDirective = "//gocyclo:ignore"
)

func hasDirective(fn *ast.FuncDecl, directive string) bool {
	if fn.Doc == nil {
		return false
	}
	for _, c := range fn.Doc.List {
		if strings.TrimSpace(c.Text) == directive {
			return true
		}
	}
	return false
}

// funcName is fn's name as gocyclo prints it: (*T).M for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if g, ok := t.(*ast.IndexListExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}
