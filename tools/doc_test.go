package tools

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/policy"
)

var updateDoc = flag.Bool("update", false, "rewrite docs/tools.md from the catalog")

const toolsDoc = "../docs/tools.md"

// TestToolsDocIsCurrent keeps docs/tools.md equal to what the catalog
// declares (go generate ./tools rewrites it): the table of every tool and,
// per tool, its description, arguments with every limit the decoder
// enforces, and its example.
func TestToolsDocIsCurrent(t *testing.T) {
	want := toolsReference()
	got, err := os.ReadFile(toolsDoc)
	if err == nil && string(got) == want {
		return
	}
	if *updateDoc {
		if err := os.WriteFile(toolsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale (%v): run go generate ./tools", toolsDoc, err)
}

// toolsReference renders docs/tools.md from Catalog().
func toolsReference() string {
	var b strings.Builder
	b.WriteString("# Tools\n\n<!-- Generated from the tool catalog (tools/) by `go generate ./tools`; do not edit. -->\n\n")
	b.WriteString("Every tool parse-mcp serves. `tools/list` shows a session only the tools its permission tier\n" +
		"(`PARSE_MCP_PERMISSIONS`), the environment gates and the policy file allow ([policy.md](policy.md));\n" +
		"the search family is listed only when the policy makes a class searchable ([search.md](search.md)),\n" +
		"and the writes are off by default ([writes.md](writes.md)). What results look like: [reading.md](reading.md).\n\n")
	b.WriteString("| tool | family | tier | gates | what it does |\n|---|---|---|---|---|\n")
	for _, tool := range Catalog() {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s |\n", tool.Name, tool.Name, tool.Category, tool.Tier,
			orDash(strings.Join(policy.Gates(tool.ToolInfo), ", ")), firstSentence(tool.Description))
	}
	for _, tool := range Catalog() {
		fmt.Fprintf(&b, "\n## %s\n\n%s — %s. Tier `%s`", tool.Name, tool.Category, policy.Categories[tool.Category], tool.Tier)
		if gates := policy.Gates(tool.ToolInfo); gates != nil {
			fmt.Fprintf(&b, ", gated by `%s`", strings.Join(gates, "`, `"))
		}
		b.WriteString(".\n\n" + tool.Description + "\n\n")
		in, _ := tool.Handler.Contract()
		b.WriteString(argumentsTable(in))
		if tool.Example != "" {
			fmt.Fprintf(&b, "\nExample (on the demo app): `%s`\n", tool.Example)
		}
	}
	return b.String()
}

// argumentsTable lists an In struct's arguments with what the decoder
// enforces, the bounds the input schema leaves out included.
func argumentsTable(in reflect.Type) string {
	var rows []string
	for _, f := range mustArgFields(in) {
		if f.kind == kindArgs || f.unlisted {
			continue
		}
		var notes []string
		if f.required {
			notes = append(notes, "required")
		}
		if f.enum != nil {
			notes = append(notes, "one of `"+strings.Join(f.enum, "`, `")+"`")
		}
		if f.hasDef && f.def != "" {
			notes = append(notes, "default `"+f.def+"`")
		}
		switch {
		case f.hasMin && f.hasMax:
			notes = append(notes, fmt.Sprintf("%d to %d", f.min, f.max))
		case f.hasMax:
			notes = append(notes, fmt.Sprintf("at most %d", f.max))
		}
		if f.description != "" {
			notes = append(notes, f.description)
		}
		schema := f.schema(in.Field(f.index).Type)
		typ, _, _ := strings.Cut(strings.TrimPrefix(schema, `"type":"`), `"`)
		if _, items, ok := strings.Cut(schema, `"items":{"type":"`); ok {
			item, _, _ := strings.Cut(items, `"`)
			typ += " of " + item + "s"
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", f.name, typ, strings.ReplaceAll(strings.Join(notes, "; "), "|", `\|`)))
	}
	if rows == nil {
		return "No arguments.\n"
	}
	return "| argument | type | |\n|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
}

// firstSentence is s up to the first ". " that ends a sentence (not e.g.).
func firstSentence(s string) string {
	for i := strings.Index(s, ". "); i >= 0; {
		if !strings.HasSuffix(s[:i], "e.g") && !strings.HasSuffix(s[:i], "i.e") {
			s = s[:i+1]
			break
		}
		j := strings.Index(s[i+2:], ". ")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
