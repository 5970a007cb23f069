package views

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestBundleMatchesSources: the committed bundle records the hash of the
// sources it was built from (build.mjs); a change to src/, the build script
// or the lockfile without a rebuild fails here.
func TestBundleMatchesSources(t *testing.T) {
	files := []string{"build.mjs", "package.json", "package-lock.json"}
	src, err := os.ReadDir("src")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range src {
		names = append(names, "src/"+e.Name())
	}
	sort.Strings(names)
	h := sha256.New()
	for _, f := range append(files, names...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	want := "/* parse-mcp views; sources sha256 " + hex.EncodeToString(h.Sum(nil)) + " */\n"
	if !strings.HasPrefix(bundle, want) {
		first, _, _ := strings.Cut(bundle, "\n")
		t.Fatalf("dist/app.js was built from other sources:\n got %s\nwant %s\nrebuild it: cd views && npm ci && node build.mjs", first, strings.TrimSpace(want))
	}
}

// TestBundleRebuildsIdentically rebuilds the bundle where node and the
// pinned packages are installed (npm ci in views/) and compares the bytes.
func TestBundleRebuildsIdentically(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the rebuild is not checked (TestBundleMatchesSources still is)")
	}
	if _, err := os.Stat("node_modules/esbuild"); err != nil {
		t.Skip("views/node_modules is missing (run npm ci in views/): the rebuild is not checked")
	}
	out := filepath.Join(t.TempDir(), "app.js")
	if b, err := exec.Command(node, "build.mjs", out).CombinedOutput(); err != nil {
		t.Fatalf("node build.mjs: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(bundle)) {
		t.Fatalf("rebuilding gives another bundle (%d bytes, committed %d): run node build.mjs in views/ and commit dist/app.js", len(got), len(bundle))
	}
}

func TestDeclares(t *testing.T) {
	for _, c := range []struct {
		name string
		ext  map[string]any
		want bool
	}{
		{"none", nil, false},
		{"other extension", map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}, false},
		{"html profile", map[string]any{Extension: map[string]any{"mimeTypes": []any{MIMEType}}}, true},
		{"no mimeTypes", map[string]any{Extension: map[string]any{}}, true},
		{"other types only", map[string]any{Extension: map[string]any{"mimeTypes": []any{"text/html"}}}, false},
		{"not an object", map[string]any{Extension: true}, false},
	} {
		if got := declares(mcp.ClientCapabilities{Extensions: c.ext}); got != c.want {
			t.Errorf("%s: declares = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPageIsSelfContained: the page loads nothing from anywhere (no src or
// href to an origin, a CSP allowing no origin) and names its view.
func TestPageIsSelfContained(t *testing.T) {
	for _, name := range Names {
		html := HTML(name)
		if !strings.Contains(html, `<meta name="parse-mcp-view" content="`+name+`">`) {
			t.Errorf("%s: the page does not name its view", name)
		}
		if !strings.Contains(html, "default-src 'none'") || !strings.Contains(html, "connect-src 'none'") || !strings.Contains(html, "script-src 'sha256-") || strings.Contains(html, "script-src 'unsafe-inline'") {
			t.Errorf("%s: no restrictive Content-Security-Policy", name)
		}
		for _, bad := range []string{"<script src", "<link ", "http-equiv=\"refresh\""} {
			if strings.Contains(html, bad) {
				t.Errorf("%s: the page contains %q", name, bad)
			}
		}
		if strings.Count(html, "</script>") != 1 {
			t.Errorf("%s: the bundle closes the script element early", name)
		}
	}
}
