package tools

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
)

// SchemaTools are get_all_schemas and get_schema.
func SchemaTools() []*Tool {
	return []*Tool{
		{
			ToolInfo:     policy.ToolInfo{Name: "get_all_schemas", Category: policy.CategorySchema, Tier: config.TierReadonly, Operation: policy.OpNone, Timeout: 15 * time.Second},
			Description:  "List the app's classes with their fields and types.",
			InputSchema:  `{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"},"description":"exact class names"},"prefix":{"type":"string","description":"case-sensitive class name prefix"}}}`,
			ReadOnly:     true,
			OutputSchema: allSchemasOut,
			Handler:      getAllSchemas,
		},
		{
			ToolInfo:     policy.ToolInfo{Name: "get_schema", Category: policy.CategorySchema, Tier: config.TierReadonly, Operation: policy.OpNone, Timeout: 10 * time.Second},
			Description:  "One class in detail: fields (type, pointer target, description, allowed values), indexes, permissions.",
			InputSchema:  `{"type":"object","properties":{"class_name":{"type":"string"}},"required":["class_name"]}`,
			ReadOnly:     true,
			OutputSchema: schemaOut,
			Handler:      getSchema,
		},
	}
}

type schemaSummary struct {
	Name   string            `json:"name"`
	Fields map[string]string `json:"fields"`
	Desc   string            `json:"desc,omitempty"`
}

func getAllSchemas(ctx context.Context, d *Deps, args Args) (any, error) {
	names, err := args.StringList("names")
	if err != nil {
		return nil, err
	}
	prefix, err := args.String("prefix", false)
	if err != nil {
		return nil, err
	}
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	// Hidden and filtered classes are removed before names/prefix apply, so
	// asking for a hidden class by name is the same as asking for nothing.
	builtIn := []schemaSummary{}
	custom := []schemaSummary{}
	for _, name := range d.Policy.VisibleClassNames(schema) {
		if len(want) > 0 && !want[name] {
			continue
		}
		if prefix != "" && !strings.HasPrefix(name, prefix) {
			continue
		}
		cls := schema.Class(name)
		sum := schemaSummary{Name: name, Fields: map[string]string{}}
		for _, f := range d.Policy.VisibleFields(cls) {
			sum.Fields[f.Name] = d.Policy.DisplayType(schema, f)
		}
		if cp := d.Policy.Class(name); cp != nil {
			sum.Desc = policy.CleanText(cp.Description)
		}
		if cls.IsBuiltIn() {
			builtIn = append(builtIn, sum)
		} else {
			custom = append(custom, sum)
		}
	}
	return map[string]any{
		"total":    len(builtIn) + len(custom),
		"note":     "Field types are Parse types; Pointer<X> fields hold a pointer to class X. Use get_schema for details.",
		"built_in": builtIn,
		"custom":   custom,
	}, nil
}

type fieldDetail struct {
	Name          string            `json:"name"`
	Type          string            `json:"type"`
	Required      bool              `json:"required"`
	Description   string            `json:"description,omitempty"`
	AllowedValues map[string]string `json:"allowed_values,omitempty"`
	LargeField    bool              `json:"large_field,omitempty"`
	TargetClass   string            `json:"target_class,omitempty"`
	QueryHint     string            `json:"query_hint,omitempty"`
	Default       any               `json:"default,omitempty"`
}

func getSchema(ctx context.Context, d *Deps, args Args) (any, error) {
	name, err := args.ClassName()
	if err != nil {
		return nil, err
	}
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil {
		return nil, err
	}
	cp := d.Policy.Class(name)
	defaults, err := shownDefaults(d, schema, cls)
	if err != nil {
		return nil, err
	}
	fields := []fieldDetail{}
	var relations []map[string]string
	for _, f := range d.Policy.VisibleFields(cls) {
		fd := fieldDetail{Name: f.Name, Type: f.Type, Required: f.Required}
		if v, ok := defaults[f.Name]; ok {
			fd.Default = v
		}
		if f.Type == parsedb.TypePointer || f.Type == parsedb.TypeRelation {
			// Hidden and missing targets look alike (SECURITY.md).
			fd.TargetClass = d.Policy.TargetLabel(schema, f.TargetClass)
		}
		switch {
		case f.Type == parsedb.TypePointer && fd.TargetClass == parsedb.InvisibleTargetLabel:
			fd.QueryHint = "points to a class that does not exist or is not accessible: it cannot be used in a where"
		case f.Type == parsedb.TypePointer:
			fd.QueryHint = `where: {"` + f.Name + `": "<objectId>"} or {"__type":"Pointer","className":"` + fd.TargetClass + `","objectId":"<id>"}; $in/$nin take lists of either`
		case f.Type == parsedb.TypeRelation:
			if fd.TargetClass != parsedb.InvisibleTargetLabel {
				relations = append(relations, map[string]string{"field": f.Name, "target_class": f.TargetClass})
			}
			fd.QueryHint = `query the target class with where: {"$relatedTo":{"object":{"__type":"Pointer","className":"` + cls.Name + `","objectId":"<id>"},"key":"` + f.Name + `"}}`
		case f.Type == parsedb.TypeDate:
			fd.QueryHint = `ISO-8601 string or {"__type":"Date","iso":"…"}`
		}
		if cp != nil {
			if fp := cp.Fields[f.Name]; fp != nil {
				fd.Description = policy.CleanText(fp.Description)
				if len(fp.Enum) > 0 {
					fd.AllowedValues = map[string]string{}
					for k, v := range fp.Enum {
						fd.AllowedValues[k] = policy.CleanText(v)
					}
				}
			}
			for _, lf := range cp.LargeFields {
				if lf == f.Name {
					fd.LargeField = true
				}
			}
		}
		fields = append(fields, fd)
	}
	sort.Slice(fields, func(i, j int) bool {
		return fieldOrder(fields[i].Name) < fieldOrder(fields[j].Name) || fieldOrder(fields[i].Name) == fieldOrder(fields[j].Name) && fields[i].Name < fields[j].Name
	})
	out := map[string]any{
		"class_name": cls.Name,
		"type":       classType(cls),
		"fields":     fields,
		"indexes":    indexNames(d, cls),
	}
	if perms := d.Policy.DisplayPermissions(cls); perms != nil {
		out["permissions"] = perms
	}
	if cp != nil {
		if cp.Description != "" {
			out["description"] = policy.CleanText(cp.Description)
		}
		if len(cp.CanonicalFilter) > 0 {
			out["canonical_filter"] = cp.CanonicalFilter
		}
		if len(cp.AgentFields) > 0 {
			out["agent_fields"] = cp.AgentFields
		}
		if len(cp.JoinFields) > 0 {
			out["agent_join_fields"] = cp.JoinFields
		}
		if s := searchableFor(d, cls); s != nil {
			out["search"] = s
		}
	}
	if len(relations) > 0 {
		out["relations"] = relations
	}
	return out, nil
}

// shownDefaults are the class's defaultValues as the session's row encoder
// shows them: a default is data (an app sets it through Parse's schema
// API), so it is encoded from the document create_object would store and
// redacted like a row value — a reference to a hidden or missing class is
// the marker, a protected or non-allowlisted field shows none
// (SECURITY.md "Outputs").
func shownDefaults(d *Deps, schema *parsedb.Schema, cls *parsedb.Class) (map[string]json.RawMessage, error) {
	doc, err := parsedb.DefaultsDocument(cls)
	if err != nil {
		return nil, err
	}
	row, err := d.Policy.RowEncoder(schema, cls, nil).AppendRow(nil, doc)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	if err := json.Unmarshal(row, &out); err != nil {
		return nil, err
	}
	delete(out, "objectId")
	return out, nil
}

// fieldOrder puts objectId/createdAt/updatedAt first, like Parse's dashboard.
func fieldOrder(name string) int {
	switch name {
	case "objectId":
		return 0
	case "createdAt":
		return 1
	case "updatedAt":
		return 2
	}
	return 3
}

func classType(cls *parsedb.Class) string {
	if cls.IsBuiltIn() {
		return "built_in"
	}
	return "custom"
}

// indexNames are the class's _SCHEMA indexes whose keys are all readable by
// this session (an index on a protected or non-allowlisted field would name
// it).
func indexNames(d *Deps, cls *parsedb.Class) map[string]any {
	out := map[string]any{}
	for k, v := range cls.Indexes {
		info := indexInfo{name: k}
		keyFields(&info, v)
		if indexVisible(d, cls, info) {
			out[k] = v
		}
	}
	return out
}
