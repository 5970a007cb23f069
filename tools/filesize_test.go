package tools

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines bounds each source file of the package (ARCHITECTURE.md
// "Complexity budget"): a family that outgrows it is split by what it
// does, as the search engines are.
const maxFileLines = 1000

func TestSourceFilesUnderLineBudget(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines; the budget is %d: split it", f, n, maxFileLines)
		}
	}
}
