package main

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/version"
)

// A release made by `make release` (.ci/run does, before `make test`) is
// checked as built when PARSE_MCP_TEST_RELEASE_DIR names its directory; with
// PARSE_MCP_TEST_REQUIRE_RELEASE=1 its absence is a failure. Without one,
// the bundle test builds the host platform's binary and bundle itself.
const (
	releaseDirEnv     = "PARSE_MCP_TEST_RELEASE_DIR"
	requireReleaseEnv = "PARSE_MCP_TEST_REQUIRE_RELEASE"
	buildTags         = "ferretdb_no_postgresql" // the Makefile's BUILD_TAGS
)

// releaseDir is the release under test, or "" (skipping the test when the
// release is not required).
func releaseDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(releaseDirEnv)
	if dir == "" {
		if config.Truthy(os.Getenv(requireReleaseEnv)) {
			t.Fatalf("%s is set but %s is not: run `make release` and point it at dist", requireReleaseEnv, releaseDirEnv)
		}
		return ""
	}
	if !filepath.IsAbs(dir) {
		// Relative to the repository root, where `make release` writes.
		dir = filepath.Join("..", "..", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "SHA256SUMS")); err != nil {
		t.Fatalf("%s=%s: no release there: %v", releaseDirEnv, dir, err)
	}
	return dir
}

func TestIconIsDrawIcon(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(iconPNG))
	if err != nil {
		t.Fatalf("icon.png: %v", err)
	}
	if img.Bounds() != image.Rect(0, 0, IconSize, IconSize) {
		t.Fatalf("icon.png is %v, want %d×%d", img.Bounds(), IconSize, IconSize)
	}
	want := DrawIcon()
	for y := range IconSize {
		for x := range IconSize {
			r1, g1, b1, a1 := img.At(x, y).RGBA()
			r2, g2, b2, a2 := want.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				t.Fatalf("icon.png differs from DrawIcon at (%d,%d): run `go run ./internal/release -write-icon internal/release/icon.png`", x, y)
			}
		}
	}
}

// TestSettingsAreConfigVariables: every form field lands on a variable the
// binary reads, and docs/configuration.md documents it.
func TestSettingsAreConfigVariables(t *testing.T) {
	known := map[string]bool{}
	ct := reflect.TypeFor[config.Config]()
	for f := range ct.Fields() {
		if tag := f.Tag.Get("envconfig"); tag != "" {
			known[tag] = true
		}
	}
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		if !known[s.Variable] {
			t.Errorf("form field %s maps to %s, which internal/config does not read", s.Key, s.Variable)
		}
		if !bytes.Contains(doc, []byte("`"+s.Variable+"`")) {
			t.Errorf("docs/configuration.md does not document %s", s.Variable)
		}
		if s.Option.Default == nil {
			t.Errorf("form field %s has no default: an unfilled field would leave its placeholder in the environment", s.Key)
		}
	}
	for _, secret := range []string{"mongodb_uri", "session_token"} {
		if i := slices.IndexFunc(Settings, func(s Setting) bool { return s.Key == secret }); i < 0 || !Settings[i].Option.Sensitive {
			t.Errorf("%s is not a sensitive field", secret)
		}
	}
}

// TestUniversalBinary joins two thin Mach-O files and reads the result back
// with debug/macho, as macOS's loader picks a slice.
func TestUniversalBinary(t *testing.T) {
	dir := t.TempDir()
	thin := func(name string, cpu macho.Cpu, size int) string {
		b := make([]byte, size)
		binary.LittleEndian.PutUint32(b[0:], macho.Magic64)
		binary.LittleEndian.PutUint32(b[4:], uint32(cpu))
		binary.LittleEndian.PutUint32(b[12:], uint32(macho.TypeExec))
		for i := 32; i < size; i++ {
			b[i] = byte(i)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	arm := thin("arm64", macho.CpuArm64, 40000)
	amd := thin("amd64", macho.CpuAmd64, 5000)
	out := filepath.Join(dir, "universal")
	if err := WriteUniversal(out, arm, amd); err != nil {
		t.Fatal(err)
	}
	checkUniversal(t, out, map[macho.Cpu]string{macho.CpuArm64: arm, macho.CpuAmd64: amd})
}

// checkUniversal: the file is a fat Mach-O whose slices are the thin files,
// byte for byte, page-aligned.
func checkUniversal(t *testing.T, path string, slices map[macho.Cpu]string) {
	t.Helper()
	ff, err := macho.OpenFat(path)
	if err != nil {
		t.Fatalf("%s is not a universal binary: %v", path, err)
	}
	defer ff.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ff.Arches) != len(slices) {
		t.Fatalf("%d slices, want %d", len(ff.Arches), len(slices))
	}
	for _, a := range ff.Arches {
		want, ok := slices[a.Cpu]
		if !ok {
			t.Fatalf("unexpected slice for %v", a.Cpu)
		}
		if a.Offset%(1<<sliceAlign) != 0 || a.Align != sliceAlign {
			t.Errorf("%v slice at %d, align %d: not page-aligned", a.Cpu, a.Offset, a.Align)
		}
		if want == "" {
			continue
		}
		wb, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw[a.Offset:a.Offset+a.Size], wb) {
			t.Errorf("%v slice differs from %s", a.Cpu, want)
		}
	}
}

// registrySchema compiles the MCP Registry's published server.json schema.
// The registry's own Go module carries the published copies (synced from
// static.modelcontextprotocol.io); the test takes it from the module cache
// through the Go module proxy instead of vendoring it.
func registrySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	const module = "github.com/modelcontextprotocol/registry@v1.8.9"
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", module, err)
	}
	var dl struct{ Dir string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.Dir == "" {
		t.Fatalf("go mod download %s: %s", module, out)
	}
	version := regexp.MustCompile(`/schemas/([^/]+)/server\.schema\.json$`).FindStringSubmatch(RegistrySchema)[1]
	f, err := os.Open(filepath.Join(dl.Dir, "internal", "validators", "schemas", version+".json"))
	if err != nil {
		t.Fatalf("the registry module has no schema %s: %v", version, err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(RegistrySchema, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(RegistrySchema)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkRegistryEntry validates a server.json against the registry's schema
// and the registry's publishing rules for mcpb packages (GitHub release
// asset URLs containing "mcp", a SHA-256 per file).
func checkRegistryEntry(t *testing.T, schema *jsonschema.Schema, b []byte, files map[string]string) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("server.json does not match the registry schema: %v\n%s", err, b)
	}
	var entry struct {
		Schema   string `json:"$schema"`
		Name     string
		Version  string
		Packages []struct {
			RegistryType, Identifier, Version, FileSHA256 string
		}
	}
	if err := json.Unmarshal(b, &entry); err != nil {
		t.Fatal(err)
	}
	if entry.Schema != RegistrySchema || !strings.HasPrefix(entry.Name, "io.github.parse-mcp/") {
		t.Errorf("$schema %q, name %q", entry.Schema, entry.Name)
	}
	release := regexp.MustCompile(`^https://github\.com/[^/]+/[^/]+/releases/download/v` + regexp.QuoteMeta(entry.Version) + `/([^/]+\.mcpb)$`)
	if len(entry.Packages) != len(files) {
		t.Fatalf("%d packages for %d bundles", len(entry.Packages), len(files))
	}
	for _, p := range entry.Packages {
		m := release.FindStringSubmatch(p.Identifier)
		if p.RegistryType != "mcpb" || m == nil || !strings.Contains(p.Identifier, "mcp") || p.Version != entry.Version {
			t.Errorf("package %+v is not a GitHub release asset of v%s", p, entry.Version)
			continue
		}
		if sum, ok := files[m[1]]; !ok || sum != p.FileSHA256 {
			t.Errorf("%s: fileSha256 %s, the file's is %s", m[1], p.FileSHA256, sum)
		}
	}
}

func TestRegistryEntryMatchesTheSchema(t *testing.T) {
	schema := registrySchema(t)
	dir := t.TempDir()
	files := map[string]string{}
	var bundles []string
	for _, name := range []string{"parse-mcp-0.1.0-darwin-universal.mcpb", "parse-mcp-0.1.0-linux-arm64.mcpb"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		sum, _ := fileSHA256(p)
		files[name] = sum
		bundles = append(bundles, p)
	}
	b, err := RegistryEntry("0.1.0", bundles)
	if err != nil {
		t.Fatal(err)
	}
	checkRegistryEntry(t, schema, b, files)

	// The schema is really applied: a description over 100 characters fails.
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	v["description"] = strings.Repeat("x", 101)
	bad, _ := json.Marshal(v)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if schema.Validate(inst) == nil {
		t.Fatal("a 101-character description passed the registry schema")
	}
}

// TestReleaseArtifacts checks a `make release` output: every platform's
// binary for its OS and CPU, static, stamped; the bundles; SHA256SUMS;
// server.json.
func TestReleaseArtifacts(t *testing.T) {
	dir := releaseDir(t)
	if dir == "" {
		t.Skipf("no release to check (set %s after `make release`)", releaseDirEnv)
	}
	version := version.Version
	sums := map[string]string{}
	raw, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		sum, name, ok := strings.Cut(strings.TrimSpace(line), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil || got != sum {
			t.Errorf("SHA256SUMS: %s is %s, listed %s (%v)", name, got, sum, err)
		}
		sums[name] = sum
	}
	for _, tg := range Targets {
		name := tg.BinaryName(version)
		if _, ok := sums[name]; !ok {
			t.Errorf("%s is not in the release", name)
			continue
		}
		checkExecutable(t, filepath.Join(dir, name), tg)
		checkBuildInfo(t, filepath.Join(dir, name), tg)
	}
	bundles := map[string]string{}
	for name, sum := range sums {
		if strings.HasSuffix(name, ".mcpb") {
			bundles[name] = sum
		}
	}
	for _, p := range []string{"darwin-universal", "windows-amd64", "linux-amd64", "linux-arm64"} {
		name := "parse-mcp-" + version + "-" + p + ".mcpb"
		if _, ok := bundles[name]; !ok {
			t.Errorf("bundle %s is missing", name)
			continue
		}
		fi, _ := os.Stat(filepath.Join(dir, name))
		t.Logf("%s: %.1f MB", name, float64(fi.Size())/1e6)
	}
	// The demo database runs in the Linux builds: natively on the host, the
	// other architecture under qemu user-mode emulation (.ci/run installs
	// it). macOS and Windows builds cannot be run here; their build info
	// shows the same pure-Go database inside.
	for _, tg := range Targets {
		if tg.GOOS == "linux" {
			checkDemoRuns(t, filepath.Join(dir, tg.BinaryName(version)), tg)
		}
	}
	// The macOS bundle's binary is both macOS builds joined.
	unpacked := unzip(t, filepath.Join(dir, "parse-mcp-"+version+"-darwin-universal.mcpb"))
	checkUniversal(t, filepath.Join(unpacked, "server", "parse-mcp"), map[macho.Cpu]string{
		macho.CpuArm64: filepath.Join(dir, Target{"darwin", "arm64"}.BinaryName(version)),
		macho.CpuAmd64: filepath.Join(dir, Target{"darwin", "amd64"}.BinaryName(version)),
	})
	sj, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkRegistryEntry(t, registrySchema(t), sj, bundles)

	// The host binary says which version and commit it is.
	host := filepath.Join(dir, Target{runtime.GOOS, runtime.GOARCH}.BinaryName(version))
	out, err := exec.Command(host, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^parse-mcp ` + regexp.QuoteMeta(version) + ` \(commit [0-9a-f]{40}(-dirty)?, go`).Match(out) {
		t.Errorf("--version printed %q: no stamped version and commit", out)
	}
}

// checkBuildInfo: the binary was built as `make release` builds — no cgo,
// trimmed paths, the Makefile's tags, for the target — and carries the
// embedded database on the pure-Go SQLite, so --demo works on it.
func checkBuildInfo(t *testing.T, path string, tg Target) {
	t.Helper()
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "-tags": buildTags, "GOOS": tg.GOOS, "GOARCH": tg.GOARCH} {
		if settings[k] != want {
			t.Errorf("%s: built with %s=%q, want %q", path, k, settings[k], want)
		}
	}
	deps := map[string]bool{}
	for _, d := range info.Deps {
		deps[d.Path] = true
	}
	for _, want := range []string{"github.com/FerretDB/FerretDB", "modernc.org/sqlite"} {
		if !deps[want] {
			t.Errorf("%s does not contain %s: the demo database would be missing", path, want)
		}
	}
}

// lcCodeSignature is Mach-O's LC_CODE_SIGNATURE load command.
const lcCodeSignature = 0x1d

// checkDemoRuns starts a Linux build on its demo database and counts the
// demo's songs through it.
func checkDemoRuns(t *testing.T, path string, tg Target) {
	t.Helper()
	var cmd *exec.Cmd
	args := []string{"call", "count_objects", `{"class_name":"Song","apply_canonical_filter":false}`}
	switch {
	case tg == Target{runtime.GOOS, runtime.GOARCH}:
		cmd = exec.Command(path, args...)
	default:
		qemu := "qemu-" + map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[tg.GOARCH]
		if _, err := exec.LookPath(qemu); err != nil || runtime.GOOS != "linux" {
			if config.Truthy(os.Getenv(requireReleaseEnv)) {
				t.Errorf("%s: %s is missing (apt-get install qemu-user), so the %s build's demo cannot be run", path, qemu, tg)
			} else {
				t.Logf("%s not run: no %s", path, qemu)
			}
			return
		}
		cmd = exec.Command(qemu, append([]string{path}, args...)...)
	}
	cmd.Env = append(CleanEnv(), "PARSE_MCP_DEMO=true", "PARSE_MCP_DEMO_DIR="+t.TempDir(), "PARSE_MCP_LOG_LEVEL=error")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	out, err := cmd.Output()
	var res struct{ Count int }
	if err != nil || json.Unmarshal(out, &res) != nil || res.Count != 600 {
		t.Errorf("%s --demo: count %d (%v)\n%s%s", path, res.Count, err, out, stderr.String())
		return
	}
	t.Logf("%s: the demo database answered (%v, seed included)", filepath.Base(path), time.Since(began).Round(time.Millisecond))
}

// checkExecutable: the file is an executable for the target's OS and CPU,
// and on Linux static (no interpreter, no shared libraries).
func checkExecutable(t *testing.T, path string, tg Target) {
	t.Helper()
	switch tg.GOOS {
	case "linux":
		f, err := elf.Open(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		defer f.Close()
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[tg.GOARCH]
		if f.Machine != want {
			t.Errorf("%s: machine %v, want %v", path, f.Machine, want)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s is dynamically linked", path)
			}
		}
	case "darwin":
		f, err := macho.Open(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		defer f.Close()
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[tg.GOARCH]
		if f.Cpu != want {
			t.Errorf("%s: cpu %v, want %v", path, f.Cpu, want)
		}
		// Apple silicon runs no unsigned code: the Go linker signs ad hoc.
		signed := false
		for _, l := range f.Loads {
			if raw := l.Raw(); len(raw) >= 4 && f.ByteOrder.Uint32(raw) == lcCodeSignature {
				signed = true
			}
		}
		if tg.GOARCH == "arm64" && !signed {
			t.Errorf("%s has no code signature", path)
		}
		// Without cgo Go calls macOS through libSystem and the system
		// frameworks (Security for certificates): all part of every macOS,
		// nothing from /usr/local, /opt or a bundle.
		libs, _ := f.ImportedLibraries()
		for _, l := range libs {
			if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/Frameworks/") {
				t.Errorf("%s links %s, which is not part of macOS", path, l)
			}
		}
	case "windows":
		f, err := pe.Open(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		defer f.Close()
		if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
			t.Errorf("%s: machine %#x, want amd64", path, f.Machine)
		}
	}
}

// unzip extracts a bundle the way a host installs it, keeping the file
// modes the packer recorded.
func unzip(t *testing.T, file string) string {
	t.Helper()
	zr, err := zip.OpenReader(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	defer zr.Close()
	dir := t.TempDir()
	for _, f := range zr.File {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q escapes the directory", file, f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		mode := f.Mode().Perm()
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(path, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// zipDir packs a staged bundle directory as `mcpb pack` does (deflate, Unix
// modes in the external attributes), for runs without a release.
func zipDir(dir, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		h.Name, h.Method = filepath.ToSlash(rel), zip.Deflate
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// hostBundle is the host platform's .mcpb: from the release under test, or
// built once per test run (the host binary with the release flags, staged
// and zipped).
func hostBundle(t *testing.T) string {
	t.Helper()
	host := Target{runtime.GOOS, runtime.GOARCH}
	if dir := releaseDir(t); dir != "" {
		for _, p := range BundlePlatforms(map[Target]string{{"darwin", "arm64"}: "", {"darwin", "amd64"}: "", host: ""}) {
			if p.GOOS == host.GOOS && (p.GOOS == "darwin" || p.Targets[0] == host) {
				return filepath.Join(dir, p.FileName(version.Version))
			}
		}
	}
	if testing.Short() {
		t.Skip("builds the release binary (minutes on a cold cache); runs without -short")
	}
	if !slices.Contains(Targets, host) {
		t.Skipf("%s is not a release platform", host)
	}
	builtBundle.once.Do(func() { builtBundle.file, builtBundle.err = buildHostBundle(host) })
	if builtBundle.err != nil {
		t.Fatal(builtBundle.err)
	}
	return builtBundle.file
}

var builtBundle struct {
	once      sync.Once
	dir, file string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBundle.dir != "" {
		os.RemoveAll(builtBundle.dir)
	}
	os.Exit(code)
}

func buildHostBundle(host Target) (string, error) {
	tmp, err := os.MkdirTemp("", "parse-mcp-bundle-test-")
	if err != nil {
		return "", err
	}
	builtBundle.dir = tmp
	bin := filepath.Join(tmp, host.BinaryName(version.Version))
	if err := Build(host, buildTags, Stamp{Version: version.Version, Commit: "test"}, bin); err != nil {
		return "", err
	}
	lists, err := Describe(bin)
	if err != nil {
		return "", err
	}
	p := BundlePlatform{Name: host.GOOS + "-" + host.GOARCH, GOOS: host.GOOS, Targets: []Target{host}}
	stage := filepath.Join(tmp, "stage")
	if err := Stage(stage, p, map[Target]string{host: bin}, lists, version.Version); err != nil {
		return "", err
	}
	file := filepath.Join(tmp, p.FileName(version.Version))
	return file, zipDir(stage, file)
}

// launch is the command a host runs for a manifest and the user's settings,
// following the MCPB reference implementation (getMcpConfigForManifest):
// the platform override, then ${__dirname}, then each user_config value —
// the manifest's default first, the user's value over it, booleans as
// "true"/"false" — substituted; a variable with neither stays as written.
//
// Without defaults, it plays a host that substitutes only what the user
// filled in and leaves the other placeholders as written.
func launch(t *testing.T, dir string, userValues map[string]any, defaults bool) (string, []string, []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	cfg := m.Server.MCPConfig
	platform := map[string]string{"windows": "win32"}[runtime.GOOS]
	if platform == "" {
		platform = runtime.GOOS
	}
	if o, ok := cfg.PlatformOverrides[platform]; ok {
		cfg.Command = cmp.Or(o.Command, cfg.Command)
		if o.Args != nil {
			cfg.Args = o.Args
		}
		if o.Env != nil {
			cfg.Env = o.Env
		}
	}
	vars := map[string]string{"__dirname": dir, "/": string(filepath.Separator), "pathSeparator": string(filepath.Separator)}
	values := map[string]any{}
	for k, o := range m.UserConfig {
		if o.Default != nil && defaults {
			values[k] = o.Default
		}
	}
	maps.Copy(values, userValues)
	for k, v := range values {
		switch v := v.(type) {
		case bool:
			vars["user_config."+k] = map[bool]string{true: "true", false: "false"}[v]
		default:
			vars["user_config."+k] = fmt.Sprint(v)
		}
	}
	subst := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		return s
	}
	var args, env []string
	for _, a := range cfg.Args {
		args = append(args, subst(a))
	}
	for k, v := range cfg.Env {
		env = append(env, k+"="+subst(v))
	}
	return subst(cfg.Command), args, env
}

// syncBuffer collects a child's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The secrets a test's settings carry; neither may reach the server's logs.
const (
	secretPassword = "pw-7Hq2-never-logged"
	secretURI      = "mongodb://reader:" + secretPassword + "@127.0.0.1:1/parse"
)

// TestBundleRunsAsTheManifestSays unpacks the host platform's bundle,
// starts its binary exactly as the manifest tells a host to (the demo
// switch on, the other fields as a fresh form leaves them, plus a
// connection string that the demo must ignore), and speaks MCP to it:
// initialize, tools/list (the manifest's list), one tools/call.
func TestBundleRunsAsTheManifestSays(t *testing.T) {
	file := hostBundle(t)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := unzip(t, file)
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range m.Server.MCPConfig.Env {
		if !regexp.MustCompile(`^\$\{user_config\.[a-z_]+\}$`).MatchString(v) {
			t.Errorf("manifest env %s=%q: a literal value in the manifest, not a form field", k, v)
		}
	}
	bin := filepath.Join(dir, filepath.FromSlash(m.Server.EntryPoint))
	bi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && bi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s lost its executable bit in the bundle (mode %v)", m.Server.EntryPoint, bi.Mode())
	}
	t.Logf("bundle %s: %.1f MB packed, binary %.1f MB", filepath.Base(file), float64(fi.Size())/1e6, float64(bi.Size())/1e6)

	cache := t.TempDir() // the demo database's files, not the user's cache
	start := func(t *testing.T, values map[string]any, defaults bool) (*client.Client, *syncBuffer, time.Duration) {
		command, args, env := launch(t, dir, values, defaults)
		env = append(CleanEnv(), append(env, "XDG_CACHE_HOME="+cache, "HOME="+cache, "LocalAppData="+cache)...)
		stderr := &syncBuffer{}
		began := time.Now()
		c, err := client.NewStdioMCPClientWithOptions(command, env, args, transport.WithCommandStderrWriter(stderr))
		if err != nil {
			t.Fatalf("starting %s: %v", command, err)
		}
		t.Cleanup(func() { c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: "2025-06-18",
			ClientInfo:      mcp.Implementation{Name: "parse-mcp-bundle-test", Version: "1"},
		}}); err != nil {
			t.Fatalf("initialize: %v\nstderr:\n%s", err, stderr)
		}
		return c, stderr, time.Since(began)
	}
	// The demo switch on, a connection string the demo must ignore, the
	// tier field cleared (""), the rest as the form's defaults leave them.
	demo := map[string]any{"demo": true, "mongodb_uri": secretURI, "permissions": ""}

	c, stderr, first := start(t, demo, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var listed, declared []string
	for _, tl := range tools.Tools {
		listed = append(listed, tl.Name)
	}
	for _, tl := range m.Tools {
		declared = append(declared, tl.Name)
	}
	slices.Sort(listed)
	slices.Sort(declared)
	if !slices.Equal(listed, declared) {
		t.Errorf("tools/list %v, the manifest declares %v", listed, declared)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Song", "apply_canonical_filter": false}}})
	if err != nil {
		t.Fatal(err)
	}
	var count struct{ Count int }
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("count_objects failed: %+v", res)
	}
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &count); err != nil || count.Count != 600 {
		t.Fatalf("count_objects Song = %+v (%v), want the demo's 600 songs", res.Content, err)
	}
	c.Close()
	if strings.Contains(stderr.String(), secretPassword) {
		t.Errorf("the connection string's password is in the server's log:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "PARSE_MCP_MONGODB_URI and PARSE_MCP_DATABASE are ignored") {
		t.Errorf("no warning that the demo ignores the connection string:\n%s", stderr)
	}

	// A second start finds the demo data in place: the start-up a user
	// sees every time Claude Desktop launches the server. This host leaves
	// the unfilled fields' placeholders in the environment.
	c, stderr, again := start(t, map[string]any{"demo": true}, false)
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("with placeholders left in place: %v\n%s", err, stderr)
	}
	t.Logf("start-up to initialize answered: %v with a fresh demo database (seeded), %v with it in place", first.Round(time.Millisecond), again.Round(time.Millisecond))
}

// TestBundleSecretsStayOutOfTheLog: with the demo off, the connection
// string from the form is used; an unreachable database fails start-up with
// the host named and the password not.
func TestBundleSecretsStayOutOfTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the MongoDB driver's connect timeout")
	}
	file := hostBundle(t)
	dir := unzip(t, file)
	command, args, env := launch(t, dir, map[string]any{"mongodb_uri": secretURI, "session_token": "r:" + secretPassword}, true)
	cmd := exec.Command(command, args...)
	cmd.Env = append(CleanEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1 (database unreachable)\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "cannot connect to MongoDB at mongodb://reader@127.0.0.1:1/parse") {
		t.Errorf("stderr does not name the database: %s", stderr.String())
	}
	if strings.Contains(stderr.String(), secretPassword) || strings.Contains(stdout.String(), secretPassword) {
		t.Errorf("a secret from the form reached the output:\n%s%s", stdout.String(), stderr.String())
	}
}

func TestFirstSentence(t *testing.T) {
	for in, want := range map[string]string{
		"Count per value of a field, e.g. songs per genre.": "Count per value of a field, e.g. songs per genre.",
		"Find objects. Then more.":                          "Find objects.",
		"One line\nsecond line. More.":                      "One line",
		"Use i.e. this. Not that.":                          "Use i.e. this.",
		"No full stop":                                      "No full stop",
	} {
		if got := firstSentence(in); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", in, got, want)
		}
	}
}
