package tools

// Index metadata as this session may see it (SECURITY.md, "Metadata"): an
// index is shown (get_schema, explain_query) only when every field it keys
// is readable by the session, and $text is allowed only when every field of
// the class's text index is; the text index's fields also get the "not a
// hidden reference" conjunct, so $text cannot test the id of a hidden
// reference stored in them.

import (
	"context"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// indexInfo is one index: its name, the REST fields it keys (a text index's
// weighted fields included) and whether it is a text index.
type indexInfo struct {
	name   string
	fields []string
	text   bool
}

// keyFields adds the REST names of an index key document's fields.
func keyFields(info *indexInfo, keys any) {
	var entries []parsedb.Entry
	switch k := keys.(type) {
	case bson.D, bson.M, map[string]any:
		entries, _ = parsedb.Entries(k)
	case bson.Raw:
		var d bson.D
		if bson.Unmarshal(k, &d) == nil {
			entries, _ = parsedb.Entries(d)
		}
	}
	for _, e := range entries {
		switch e.Key {
		case "_fts", "_ftsx":
			info.text = true
			continue
		}
		if s, ok := e.Value.(string); ok && s == "text" {
			info.text = true
		}
		info.fields = append(info.fields, restFieldName(e.Key))
	}
}

// classIndexes reads the collection's real indexes (listIndexes), falling
// back to _SCHEMA's when the server cannot list them.
func classIndexes(ctx context.Context, d *Deps, cls *parsedb.Class) []indexInfo {
	var out []indexInfo
	if d.Store.DB == nil {
		return schemaIndexes(cls)
	}
	cur, err := d.Store.Collection(cls.Name).Indexes().List(ctx)
	if err == nil {
		defer cur.Close(context.WithoutCancel(ctx))
		for cur.Next(ctx) {
			var spec struct {
				Name    string   `bson:"name"`
				Key     bson.Raw `bson:"key"`
				Weights bson.Raw `bson:"weights"`
			}
			if bson.Unmarshal(cur.Current, &spec) != nil {
				continue
			}
			info := indexInfo{name: spec.Name}
			keyFields(&info, spec.Key)
			if len(spec.Weights) > 0 {
				keyFields(&info, spec.Weights)
				info.text = true
			}
			out = append(out, info)
		}
		if cur.Err() == nil {
			sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
			return out
		}
	}
	return schemaIndexes(cls)
}

// schemaIndexes are the indexes _SCHEMA declares for the class.
func schemaIndexes(cls *parsedb.Class) []indexInfo {
	var out []indexInfo
	names := make([]string, 0, len(cls.Indexes))
	for n := range cls.Indexes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		info := indexInfo{name: n}
		keyFields(&info, cls.Indexes[n])
		out = append(out, info)
	}
	return out
}

// indexVisible reports whether every field an index keys is readable by
// this session (the internal floor, agent_fields, protectedFields), and
// neither its name nor a key holds a reference's shape: names an app chose
// are data (SECURITY.md "Names as data").
func indexVisible(d *Deps, cls *parsedb.Class, info indexInfo) bool {
	if parsedb.NameHoldsReference(info.name) {
		return false
	}
	for _, f := range info.fields {
		if parsedb.NameHoldsReference(f) {
			return false
		}
		if f == "objectId" {
			continue
		}
		if strings.HasPrefix(f, "_") && f != "_id" || d.Policy.CheckReadField(cls, f) != nil {
			return false
		}
	}
	return true
}

// visibleIndexNames are the names of the indexes this session may see.
func visibleIndexNames(ctx context.Context, d *Deps, cls *parsedb.Class) map[string]bool {
	out := map[string]bool{}
	for _, ix := range classIndexes(ctx, d, cls) {
		if indexVisible(d, cls, ix) {
			out[ix.name] = true
		}
	}
	return out
}

// whereHasText reports a $text anywhere in a where (top level, $and/$or/
// $nor branches, or a field's operator object).
func whereHasText(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			if k == "$text" || whereHasText(sub) {
				return true
			}
		}
	case []any:
		if slices.ContainsFunc(x, whereHasText) {
			return true
		}
	}
	return false
}

// textGuard checks a caller's where that uses $text: every field of the
// class's text index must be readable by this session, and it returns the
// conjunct keeping rows whose text-indexed fields hold a reference to a
// hidden class out (nil when nothing is needed).
func textGuard(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, where map[string]any) (bson.D, error) {
	if !whereHasText(where) {
		return nil, nil
	}
	var fields []string
	for _, ix := range classIndexes(ctx, d, cls) {
		if !ix.text {
			continue
		}
		if !indexVisible(d, cls, ix) {
			return nil, toolerror.Denied("text_index_not_readable", "$text is not available on %s for this agent: its text index covers fields this agent cannot read", cls.Name)
		}
		fields = append(fields, ix.fields...)
	}
	return d.Policy.HiddenRefs(schema).NotHiddenRefFilter(cls, fields), nil
}
