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
			Example:      `{"prefix":"S"}`,
			ReadOnly:     true,
			OutputSchema: allSchemasOutSchema,
			Handler:      Typed(getAllSchemas),
		},
		{
			ToolInfo:     policy.ToolInfo{Name: "get_schema", Category: policy.CategorySchema, Tier: config.TierReadonly, Operation: policy.OpNone, Timeout: 10 * time.Second},
			Description:  "One class in detail: fields (type, pointer target, description, allowed values), indexes, permissions.",
			Example:      `{"class_name":"Song"}`,
			ReadOnly:     true,
			OutputSchema: schemaOutSchema,
			Handler:      Typed(getSchema),
		},
	}
}

// ---- get_all_schemas -------------------------------------------------------------

type allSchemasIn struct {
	Names  []string `json:"names" jsonschema:"exact class names"`
	Prefix string   `json:"prefix" jsonschema:"case-sensitive class name prefix"`
}

// allSchemasOut's members are in the order the result has always had.
type allSchemasOut struct {
	BuiltIn []schemaSummary `json:"built_in"`
	Custom  []schemaSummary `json:"custom"`
	Note    string          `json:"note"`
	Total   int             `json:"total"`
}

const allSchemasOutSchema = `{"type":"object","properties":{"total":{"type":"integer"},"note":{"type":"string"},"built_in":{"$ref":"#/$defs/c"},"custom":{"$ref":"#/$defs/c"}},"$defs":{"c":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"desc":{"type":"string"},"fields":{"type":"object","additionalProperties":{"type":"string"}}},"required":["name","fields"]}}}}`

type schemaSummary struct {
	Name   string            `json:"name"`
	Fields map[string]string `json:"fields"`
	Desc   string            `json:"desc,omitempty"`
}

func getAllSchemas(ctx context.Context, d *Deps, in allSchemasIn) (*allSchemasOut, error) {
	names, prefix := in.Names, in.Prefix
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
	return &allSchemasOut{
		Total:   len(builtIn) + len(custom),
		Note:    "Field types are Parse types; Pointer<X> fields hold a pointer to class X. Use get_schema for details.",
		BuiltIn: builtIn,
		Custom:  custom,
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

// ---- get_schema ----------------------------------------------------------------

type getSchemaIn struct {
	ClassName string `json:"class_name" arg:"class"`
}

// getSchemaOut's members are in the order the result has always had; the
// members typed any are set only when there is something to say (an empty
// permissions or search object is still sent).
type getSchemaOut struct {
	AgentFields     []string            `json:"agent_fields,omitempty"`
	AgentJoinFields []string            `json:"agent_join_fields,omitempty"`
	CanonicalFilter map[string]any      `json:"canonical_filter,omitempty"`
	ClassName       string              `json:"class_name"`
	Description     string              `json:"description,omitempty"`
	Fields          []fieldDetail       `json:"fields"`
	Indexes         map[string]any      `json:"indexes"`
	Permissions     any                 `json:"permissions,omitempty"`
	Relations       []map[string]string `json:"relations,omitempty"`
	Search          any                 `json:"search,omitempty"`
	Type            string              `json:"type"`
}

const schemaOutSchema = `{"type":"object","properties":{` + osClass + `,"type":{"type":"string"},"description":{"type":"string"},"fields":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"type":{"type":"string"},"required":{"type":"boolean"},"description":{"type":"string"},"allowed_values":{},"large_field":{"type":"boolean"},"target_class":{"type":"string"},"query_hint":{"type":"string"},"default":{}},"required":["name","type"]}},"indexes":{},"permissions":{},"canonical_filter":{"type":"object"},"agent_fields":{},"agent_join_fields":{},"relations":{},"search":{"type":"object"}},"required":["class_name","fields"]}`

func getSchema(ctx context.Context, d *Deps, in getSchemaIn) (*getSchemaOut, error) {
	name := in.ClassName
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
	out := &getSchemaOut{
		ClassName: cls.Name,
		Type:      classType(cls),
		Fields:    fields,
		Indexes:   indexNames(d, cls),
	}
	if perms := d.Policy.DisplayPermissions(cls); perms != nil {
		out.Permissions = perms
	}
	if cp != nil {
		if cp.Description != "" {
			out.Description = policy.CleanText(cp.Description)
		}
		out.CanonicalFilter = cp.CanonicalFilter
		out.AgentFields = cp.AgentFields
		out.AgentJoinFields = cp.JoinFields
		if s := searchableFor(d, cls); s != nil {
			out.Search = s
		}
	}
	out.Relations = relations
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
