package e2e

import (
	"os"
	"strings"
	"testing"
)

// TestBuildTagsAsMakefile: the binary the e2e tests and benchmarks drive is
// built with the Makefile's BUILD_TAGS, so the figures are those of the
// binary `make build` produces.
func TestBuildTagsAsMakefile(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(mk), "\n") {
		if tags, ok := strings.CutPrefix(line, "BUILD_TAGS = "); ok {
			if strings.TrimSpace(tags) != buildTags {
				t.Errorf("Makefile BUILD_TAGS = %q, the e2e harness builds with %q", tags, buildTags)
			}
			return
		}
	}
	t.Error("the Makefile sets no BUILD_TAGS")
}
