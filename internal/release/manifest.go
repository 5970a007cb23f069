package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The project's public addresses, as the manifest and server.json name them.
const (
	repositoryURL = "https://github.com/parse-mcp/parse-mcp"
	registryName  = "io.github.parse-mcp/parse-mcp"
)

// Lists are the tools and prompts a default installation offers, as the
// binary itself reports them over MCP.
type Lists struct {
	Tools   []mcp.Tool
	Prompts []mcp.Prompt
}

// Describe starts the binary on its demo database with the settings a fresh
// bundle installation has (read-only, no policy file, no write gates), and
// asks it for tools/list and prompts/list. The manifest's lists are thus the
// binary's own: they cannot drift from the code.
func Describe(binary string) (*Lists, error) {
	dir, err := os.MkdirTemp("", "parse-mcp-describe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := append(CleanEnv(), "PARSE_MCP_DEMO=true", "PARSE_MCP_DEMO_DIR="+dir, "PARSE_MCP_LOG_LEVEL=error")
	c, err := client.NewStdioMCPClient(binary, env)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: "2025-06-18",
		ClientInfo:      mcp.Implementation{Name: "parse-mcp-release", Version: "1"},
	}}); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		return nil, fmt.Errorf("prompts/list: %w", err)
	}
	return &Lists{Tools: tools.Tools, Prompts: prompts.Prompts}, nil
}

// CleanEnv is the environment without any PARSE_MCP_* or PARSE_AGENT_*
// setting, so a spawned server sees only what it is given.
func CleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PARSE_MCP_") || strings.HasPrefix(kv, "PARSE_AGENT_")
	})
}

// Manifest is an MCPB manifest (manifest_version 0.3: the current version
// of the spec and the one `mcpb validate` checks by default).
type Manifest struct {
	ManifestVersion  string                `json:"manifest_version"`
	Name             string                `json:"name"`
	DisplayName      string                `json:"display_name"`
	Version          string                `json:"version"`
	Description      string                `json:"description"`
	LongDescription  string                `json:"long_description"`
	Author           Author                `json:"author"`
	Repository       Repository            `json:"repository"`
	Homepage         string                `json:"homepage"`
	Documentation    string                `json:"documentation"`
	Support          string                `json:"support"`
	Icon             string                `json:"icon"`
	Server           ServerSpec            `json:"server"`
	Tools            []ManifestTool        `json:"tools"`
	ToolsGenerated   bool                  `json:"tools_generated"`
	Prompts          []ManifestPrompt      `json:"prompts"`
	PromptsGenerated bool                  `json:"prompts_generated"`
	Keywords         []string              `json:"keywords"`
	Compatibility    Compatibility         `json:"compatibility"`
	UserConfig       map[string]UserOption `json:"user_config"`
}

type Author struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

type Repository struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type ServerSpec struct {
	Type       string    `json:"type"`
	EntryPoint string    `json:"entry_point"`
	MCPConfig  MCPConfig `json:"mcp_config"`
}

type MCPConfig struct {
	Command           string               `json:"command"`
	Args              []string             `json:"args,omitempty"`
	Env               map[string]string    `json:"env,omitempty"`
	PlatformOverrides map[string]MCPConfig `json:"platform_overrides,omitempty"`
}

type ManifestTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type ManifestPrompt struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Arguments   []string `json:"arguments,omitempty"`
	Text        string   `json:"text"`
}

type Compatibility struct {
	Platforms []string `json:"platforms"`
}

// UserOption is one field of the settings form Claude Desktop shows at
// installation; values marked sensitive are kept in the OS keychain.
type UserOption struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
	Default     any    `json:"default,omitempty"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// Setting maps one form field onto the environment variable the binary reads
// (docs/configuration.md "Configuration for a real Parse app").
type Setting struct {
	Key      string // user_config key
	Variable string // PARSE_MCP_* variable
	Option   UserOption
}

// Settings are the bundle's form, in the order it is shown. Every optional
// field has a default ("" for text) so the host substitutes a value rather
// than leaving the ${user_config.…} placeholder in the environment; the
// binary treats "" and a leftover placeholder as unset either way. The
// write gates (PARSE_AGENT_ALLOW_*) are deliberately not in the form: they
// are the operator's kill switches, and a one-click installation stays
// read-only whatever tier is chosen (README "Install in Claude Desktop").
var Settings = []Setting{
	{"demo", "PARSE_MCP_DEMO", UserOption{
		Type: "boolean", Title: "Try the demo database",
		Description: "Serve Tunebase, a built-in sample Parse app, instead of your own database (no MongoDB needed). Turn it off to use the connection string below.",
		Default:     false,
	}},
	{"mongodb_uri", "PARSE_MCP_MONGODB_URI", UserOption{
		Type: "string", Title: "MongoDB connection string", Sensitive: true,
		Description: "Your Parse app's database, e.g. mongodb://reader:password@db.example.com:27017/parse (a MongoDB user with the read role is enough). Kept in your system keychain; never logged.",
		Default:     "",
	}},
	{"database", "PARSE_MCP_DATABASE", UserOption{
		Type: "string", Title: "Database name",
		Description: "Only needed when the connection string has no /database path.",
		Default:     "",
	}},
	{"policy_file", "PARSE_MCP_POLICY_FILE", UserOption{
		Type: "file", Title: "Policy file",
		Description: "A YAML or JSON policy: hidden classes, field allowlists, tenant scope, prompts. Empty: the built-in safe defaults.",
		Default:     "",
	}},
	{"permissions", "PARSE_MCP_PERMISSIONS", UserOption{
		Type: "string", Title: "Permission tier",
		Description: "readonly (default), write or admin. Writes also need operator switches this form does not set, so an installation from this bundle only reads.",
		Default:     "readonly",
	}},
	{"session_token", "PARSE_MCP_SESSION_TOKEN", UserOption{
		Type: "string", Title: "Act as a Parse user (session token)", Sensitive: true,
		Description: "A session token (r:…) of the user whose ACLs and class-level permissions should apply. Empty: master posture, ACLs do not restrict reads. Kept in your system keychain; never logged.",
		Default:     "",
	}},
}

// BuildManifest is the manifest of one platform's bundle.
func BuildManifest(version string, p BundlePlatform, l *Lists) Manifest {
	env := map[string]string{}
	form := map[string]UserOption{}
	for _, s := range Settings {
		env[s.Variable] = "${user_config." + s.Key + "}"
		form[s.Key] = s.Option
	}
	m := Manifest{
		ManifestVersion: "0.3",
		Name:            "parse-mcp",
		DisplayName:     "Parse MCP",
		Version:         version,
		Description:     "Query a Parse Server app's MongoDB database in Parse's own format, read-only and behind a policy layer.",
		LongDescription: "parse-mcp gives Claude direct, policy-governed access to a Parse Server app's MongoDB database: schemas, counts, queries in Parse's `where` language, group-by, aggregation and exports, with pointers, relations and ACLs understood. " +
			"Hidden classes, internal credential fields, field allowlists, tenant scope and the ACLs of the user you act as are enforced in front of every tool; it only reads. " +
			"Turn on *Try the demo database* to explore a built-in sample app without a database of your own.",
		Author:        Author{Name: "parse-mcp contributors", URL: repositoryURL},
		Repository:    Repository{Type: "git", URL: repositoryURL + ".git"},
		Homepage:      repositoryURL,
		Documentation: repositoryURL + "#readme",
		Support:       repositoryURL + "/issues",
		Icon:          "icon.png",
		Server: ServerSpec{
			Type:       "binary",
			EntryPoint: p.EntryPoint(),
			MCPConfig: MCPConfig{
				Command: "${__dirname}/server/parse-mcp",
				Env:     env,
				// One manifest shape on every platform; Windows runs the .exe
				// (the override replaces only the command).
				PlatformOverrides: map[string]MCPConfig{"win32": {Command: "${__dirname}/server/parse-mcp.exe"}},
			},
		},
		// The tier, the policy file and a Parse Server bridge change the
		// lists; what is declared is a default installation's.
		ToolsGenerated:   true,
		PromptsGenerated: true,
		Keywords:         []string{"parse", "parse-server", "mongodb", "database", "query", "read-only"},
		Compatibility:    Compatibility{Platforms: []string{p.NodePlatform()}},
		UserConfig:       form,
	}
	for _, t := range l.Tools {
		m.Tools = append(m.Tools, ManifestTool{Name: t.Name, Description: firstSentence(t.Description)})
	}
	for _, pr := range l.Prompts {
		mp := ManifestPrompt{Name: pr.Name, Description: pr.Description}
		var args []string
		for _, a := range pr.Arguments {
			mp.Arguments = append(mp.Arguments, a.Name)
			args = append(args, a.Name+": ${arguments."+a.Name+"}")
		}
		// The server writes each prompt from the live schema and policy at
		// prompts/get; the manifest's text says so and names the arguments.
		mp.Text = pr.Description + " (Written by the server from the live schema"
		if len(args) > 0 {
			mp.Text += "; " + strings.Join(args, ", ")
		}
		mp.Text += ".)"
		m.Prompts = append(m.Prompts, mp)
	}
	return m
}

// firstSentence keeps a tool description's first sentence: the install
// dialog lists the tools, the full text reaches the model via tools/list.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i > 0 {
		s = s[:i]
	}
	for i := 0; ; {
		j := strings.Index(s[i:], ". ")
		if j < 0 {
			return s
		}
		i += j
		if !strings.HasSuffix(s[:i], "e.g") && !strings.HasSuffix(s[:i], "i.e") {
			return s[:i+1]
		}
		i += 2
	}
}

// BundlePlatform is one bundle: an OS, the targets whose binaries serve it.
type BundlePlatform struct {
	Name    string // file name part: darwin-universal, windows-amd64, linux-arm64
	GOOS    string
	Targets []Target // more than one: joined into a universal binary
}

func (p BundlePlatform) exe() string {
	if p.GOOS == "windows" {
		return "parse-mcp.exe"
	}
	return "parse-mcp"
}

// EntryPoint is the binary's path inside the bundle.
func (p BundlePlatform) EntryPoint() string { return "server/" + p.exe() }

// NodePlatform is the OS as the manifest names it (Node's process.platform).
func (p BundlePlatform) NodePlatform() string {
	if p.GOOS == "windows" {
		return "win32"
	}
	return p.GOOS
}

// FileName is the bundle's file name in a release.
func (p BundlePlatform) FileName(version string) string {
	return fmt.Sprintf("parse-mcp-%s-%s.mcpb", version, p.Name)
}

// BundlePlatforms groups the built targets into bundles. The manifest picks
// a command per OS (platform_overrides) but not per CPU, so a bundle serves
// one OS: macOS gets one universal binary (Apple silicon and Intel in one
// file), the other systems one bundle per architecture.
func BundlePlatforms(built map[Target]string) []BundlePlatform {
	var out []BundlePlatform
	var mac []Target
	for _, t := range Targets {
		if _, ok := built[t]; !ok {
			continue
		}
		if t.GOOS == "darwin" {
			mac = append(mac, t)
			continue
		}
		out = append(out, BundlePlatform{Name: t.GOOS + "-" + t.GOARCH, GOOS: t.GOOS, Targets: []Target{t}})
	}
	switch len(mac) {
	case 0:
	case 1:
		out = append([]BundlePlatform{{Name: "darwin-" + mac[0].GOARCH, GOOS: "darwin", Targets: mac}}, out...)
	default:
		out = append([]BundlePlatform{{Name: "darwin-universal", GOOS: "darwin", Targets: mac}}, out...)
	}
	return out
}

// Stage lays out a bundle directory: manifest.json, icon.png and the binary
// under server/.
func Stage(dir string, p BundlePlatform, built map[Target]string, l *Lists, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "server"), 0o755); err != nil {
		return err
	}
	bin := filepath.Join(dir, p.EntryPoint())
	if len(p.Targets) == 1 {
		if err := copyFile(built[p.Targets[0]], bin, 0o755); err != nil {
			return err
		}
	} else {
		var thin []string
		for _, t := range p.Targets {
			thin = append(thin, built[t])
		}
		if err := WriteUniversal(bin, thin...); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "icon.png"), iconPNG, 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(BuildManifest(version, p, l), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644)
}

func copyFile(from, to string, mode os.FileMode) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, mode)
}
