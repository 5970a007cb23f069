package e2e

import (
	"os"
	"strings"
	"testing"
)

// TestBuildTagsAsMakefile: the binary the e2e tests and benchmarks drive is
// built with the Makefile's BUILD_TAGS and BUILD_ENV, so the figures are
// those of the binary `make build` produces.
func TestBuildTagsAsMakefile(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"BUILD_TAGS": buildTags, "BUILD_ENV": buildEnv} {
		found := false
		for line := range strings.SplitSeq(string(mk), "\n") {
			if got, ok := strings.CutPrefix(line, name+" = "); ok {
				found = true
				if strings.TrimSpace(got) != want {
					t.Errorf("Makefile %s = %q, the e2e harness builds with %q", name, got, want)
				}
			}
		}
		if !found {
			t.Errorf("the Makefile sets no %s", name)
		}
	}
}
