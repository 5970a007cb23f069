package main

import (
	"github.com/parse-mcp/parse-mcp/internal/version"
	"regexp"
	"testing"
)

// TestVersionLine: --version names the version, the commit (stamped by
// `make release`, else Go's build info, else "unknown") and the platform.
func TestVersionLine(t *testing.T) {
	re := regexp.MustCompile(`^parse-mcp ` + regexp.QuoteMeta(version.Version) + ` \(commit \S+, go\S+ \w+/\w+\)$`)
	if got := versionLine(); !re.MatchString(got) {
		t.Errorf("versionLine() = %q", got)
	}
	defer func(c string) { commit = c }(commit)
	commit = "0123abc"
	if got := versionLine(); !regexp.MustCompile(`\(commit 0123abc, `).MatchString(got) {
		t.Errorf("stamped commit not shown: %q", got)
	}
}
