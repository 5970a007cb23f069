package policy

// The search opt-in (docs/search.md "Search and retrieval"): a class takes part in
// the search tools only when its policy entry has a search: section; the
// search toolset is listed only when at least one class has one.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// SearchPolicy is a class's search: section.
type SearchPolicy struct {
	// TextFields are searched by atlas_text_search and chunked by
	// semantic_search.
	TextFields         []string `json:"text_fields,omitempty" yaml:"text_fields,omitempty"`
	AutocompleteFields []string `json:"autocomplete_fields,omitempty" yaml:"autocomplete_fields,omitempty"`
	FacetFields        []string `json:"facet_fields,omitempty" yaml:"facet_fields,omitempty"`
	// VectorField is an Array field holding each row's embedding.
	VectorField string `json:"vector_field,omitempty" yaml:"vector_field,omitempty"`
	// EmbedFrom are the fields whose text is embedded into VectorField.
	EmbedFrom []string `json:"embed_from,omitempty" yaml:"embed_from,omitempty"`
	// AtlasIndex is the Atlas Search / mongot index name (default "default").
	AtlasIndex string `json:"atlas_index,omitempty" yaml:"atlas_index,omitempty"`
}

// SearchSettings is the top-level search: section.
type SearchSettings struct {
	// FallbackMaxRows bounds the rows the in-process engine scans.
	FallbackMaxRows int `json:"fallback_max_rows,omitempty" yaml:"fallback_max_rows,omitempty"`
}

// DefaultFallbackMaxRows is search.fallback_max_rows when unset.
const DefaultFallbackMaxRows = 50_000

var (
	searchKeys         = []string{"text_fields", "autocomplete_fields", "facet_fields", "vector_field", "embed_from", "atlas_index"}
	searchSettingsKeys = []string{"fallback_max_rows"}
	atlasIndexRe       = parsedb.NewNamePattern("", "A-Za-z0-9", "A-Za-z0-9_.-", 64)
)

func decodeSearch(path string, v any) (*SearchPolicy, error) {
	m, err := object(path, v, searchKeys)
	if err != nil {
		return nil, err
	}
	sp := &SearchPolicy{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p, val := join(path, k), m[k]
		switch k {
		case "text_fields", "autocomplete_fields", "facet_fields", "embed_from":
			list, err := nameList(p, val, parsedb.FieldNameRe, "field")
			if err != nil {
				return nil, err
			}
			if len(list) == 0 {
				return nil, perr(p, "must not be empty (omit it instead)")
			}
			switch k {
			case "text_fields":
				sp.TextFields = list
			case "autocomplete_fields":
				sp.AutocompleteFields = list
			case "facet_fields":
				sp.FacetFields = list
			case "embed_from":
				sp.EmbedFrom = list
			}
		case "vector_field":
			s, err := str(p, val)
			if err != nil {
				return nil, err
			}
			if !parsedb.FieldNameRe.MatchString(s) {
				return nil, perr(p, "%q is not a valid field name", truncateText(s, 60))
			}
			sp.VectorField = s
		case "atlas_index":
			s, err := str(p, val)
			if err != nil {
				return nil, err
			}
			if !atlasIndexRe.MatchString(s) {
				return nil, perr(p, "%q is not a valid index name", truncateText(s, 60))
			}
			sp.AtlasIndex = s
		}
	}
	if len(sp.EmbedFrom) > 0 && sp.VectorField == "" {
		return nil, perr(join(path, "embed_from"), "needs vector_field: the Array field the embedding is stored in")
	}
	if len(sp.TextFields) == 0 && len(sp.AutocompleteFields) == 0 && len(sp.FacetFields) == 0 && sp.VectorField == "" {
		return nil, perr(path, "names nothing to search: give text_fields, autocomplete_fields, facet_fields or vector_field")
	}
	return sp, nil
}

func decodeSearchSettings(v any, s *SearchSettings) error {
	m, err := object("search", v, searchSettingsKeys)
	if err != nil {
		return err
	}
	if val, ok := m["fallback_max_rows"]; ok {
		if s.FallbackMaxRows, err = integer("search.fallback_max_rows", val, 1, 10_000_000); err != nil {
			return err
		}
	}
	return nil
}

// validateSearch checks a class's search: section against its _SCHEMA
// fields: every field exists with a searchable type, is readable by some
// identity (in agent_fields when the class has an allowlist), and the
// vector field is an Array.
func validateSearch(p string, cls *parsedb.Class, cp *ClassPolicy, fieldOK func(path, f string) bool, add func(path, format string, args ...any)) {
	sp := cp.Search
	if sp == nil {
		return
	}
	p += ".search"
	check := func(key string, list []string, types ...string) {
		for i, f := range list {
			fp := fmt.Sprintf("%s.%s[%d]", p, key, i)
			if !fieldOK(fp, f) {
				continue
			}
			if len(cp.AgentFields) > 0 && !slices.Contains(cp.AgentFields, f) {
				add(fp, "%s is not in agent_fields: no identity could search it", f)
				continue
			}
			if fd := cls.Field(f); fd != nil && !slices.Contains(types, fd.Type) {
				add(fp, "%s is a %s field; %s takes %v fields", f, fd.Type, key, types)
			}
		}
	}
	check("text_fields", sp.TextFields, parsedb.TypeString)
	check("autocomplete_fields", sp.AutocompleteFields, parsedb.TypeString)
	check("facet_fields", sp.FacetFields, parsedb.TypeString, parsedb.TypeNumber, parsedb.TypeDate, parsedb.TypeBoolean)
	check("embed_from", sp.EmbedFrom, parsedb.TypeString)
	if sp.VectorField != "" {
		check("vector_field", []string{sp.VectorField}, parsedb.TypeArray)
	}
}

// Search is a class's search: section (nil: the class is not searchable).
func (e *Engine) Search(class string) *SearchPolicy {
	if cp := e.Class(class); cp != nil {
		return cp.Search
	}
	return nil
}

// SearchEnabled reports whether any class is searchable: the search
// toolset is listed only then.
func (e *Engine) SearchEnabled() bool {
	if e.file == nil {
		return false
	}
	for _, cp := range e.file.Classes {
		if cp.Search != nil && !cp.IsHidden() {
			return true
		}
	}
	return false
}

// SearchClasses are the searchable classes, sorted (hidden ones included:
// callers pass each through ResolveClass).
func (e *Engine) SearchClasses() []string {
	if e.file == nil {
		return nil
	}
	var out []string
	for n, cp := range e.file.Classes {
		if cp.Search != nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// FallbackMaxRows is search.fallback_max_rows.
func (e *Engine) FallbackMaxRows() int {
	if e.file != nil && e.file.Search.FallbackMaxRows > 0 {
		return e.file.Search.FallbackMaxRows
	}
	return DefaultFallbackMaxRows
}

// searchDenial refuses a search tool when no class is searchable (gate
// tool_filter).
func (e *Engine) searchDenial(t ToolInfo) *toolerror.Error {
	if t.Category != CategorySearch || e.SearchEnabled() {
		return nil
	}
	return toolerror.New(toolerror.ToolFiltered, "tool %s is not available: no class is searchable (add a search: section to a class in the policy file)", t.Name)
}

// searchOf is the search policy of cls (nil for a nil class).
func (e *Engine) searchOf(cls *parsedb.Class) *SearchPolicy {
	if cls == nil {
		return nil
	}
	return e.Search(cls.Name)
}
