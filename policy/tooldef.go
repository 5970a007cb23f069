package policy

import (
	"slices"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

// Category groups tools in list_tools and tools/list (the non-standard
// "category" filter). The set is closed: every category is a constant below
// with its one-line description in Categories.
type Category string

// The tool categories.
const (
	CategoryDiscovery Category = "discovery"
	CategorySchema    Category = "schema"
	CategoryQuery     Category = "query"
	CategoryAggregate Category = "aggregate"
	CategoryExport    Category = "export"
	CategoryMutation  Category = "mutation"
	CategorySearch    Category = "search"
)

// Categories describe each tool category in one line (list_tools).
var Categories = map[Category]string{
	CategoryDiscovery: "what this server offers",
	CategorySchema:    "classes and fields of the Parse app",
	CategoryQuery:     "read objects: find, count, fetch by id",
	CategoryAggregate: "grouping, distinct values and pipelines",
	CategoryExport:    "CSV / markdown / table exports",
	CategoryMutation:  "writes (off unless the operator enables them)",
	CategorySearch:    "text, autocomplete, facet and vector search (classes the policy opts in)",
}

// ToolInfo is what the policy knows about a tool: the part of its definition
// (tools.Tool embeds it) that the tool gates, the class gate, the result
// envelope, describe and would-permit read. Nothing in the policy looks a
// tool up by name to learn these facts; a new tool declares them here.
type ToolInfo struct {
	Name     string
	Category Category
	Tier     string // config.TierReadonly | TierWrite | TierAdmin
	// Gates are the env kill switches that must all be on. Empty means the
	// default: none for a readonly tool, GateWriteTools above readonly.
	Gates   []string
	Timeout time.Duration // per-call timeout
	// Operation is the class-level permission the tool exercises on its
	// class_name (OpFind, OpCount, OpGet, OpCreate, OpUpdate, OpDelete, or
	// OpNone for tools that read no objects). Empty means the category's
	// default (see Operation): fail closed, a class-reading category
	// checks find.
	Operation string
	// UntrustedOutput marks results that carry database values: the result
	// envelope adds UntrustedNote to them.
	UntrustedOutput bool
	// CreatesClass marks a tool whose class_name names a class to create:
	// the middleware's class gate does not apply (the tool runs
	// CheckClassWrite instead).
	CreatesClass bool
	// RunsActions marks the tool that runs the policy's declared actions
	// (call_action): list_tools lists the actions this session may call
	// beside it, and describe checks each action against it.
	RunsActions bool
}

// OpNone is the Operation of a tool that exercises no class-level
// permission (metadata: list_tools, schemas, class creation).
const OpNone = "-"

// actionRunner is the registered tool that runs declared actions
// (call_action).
func (e *Engine) actionRunner() (ToolInfo, bool) {
	for _, t := range e.tools {
		if t.RunsActions {
			return t, true
		}
	}
	return ToolInfo{}, false
}

// Gates are the env kill switches a tool needs: the ones it declares, or
// GateWriteTools for any tool above readonly that declares none (object CRUD
// declares WRITE_TOOLS and RAW_CRUD, class create/delete SCHEMA_OPS and
// RAW_SCHEMA).
func Gates(t ToolInfo) []string {
	if len(t.Gates) > 0 {
		return slices.Clone(t.Gates)
	}
	if t.Tier != config.TierReadonly {
		return []string{GateWriteTools}
	}
	return nil
}

// Operation is the CLP operation a tool exercises on its class ("" for
// none).
func Operation(t ToolInfo) string {
	switch t.Operation {
	case OpNone:
		return ""
	case "":
		if t.Category == CategoryDiscovery || t.Category == CategorySchema {
			return ""
		}
		return OpFind
	}
	return t.Operation
}

// MarksUntrusted reports whether a tool's results get UntrustedNote.
func MarksUntrusted(t ToolInfo) bool { return t.UntrustedOutput }
