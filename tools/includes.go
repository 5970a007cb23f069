package tools

// Includes: pointer targets of a batch of rows fetched with one query per
// include path and target class, and spliced into the encoded rows.

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// includeSet holds the included objects of one chunk of rows.
type includeSet struct {
	p     *readPlan
	docs  map[*parsedb.IncludeNode]map[string]bson.Raw
	cache map[*parsedb.IncludeNode]map[string][]byte
}

type includeFetch struct {
	cls   *parsedb.Class
	ids   []any
	seen  map[string]bool
	nodes []*parsedb.IncludeNode
	full  bool
	keys  []string
}

// load fetches the pointed-to objects level by level: one query per target
// class per level, each through the target class's filters and ACL scope
// (the canonical filter is skipped, as for lookups by id).
func (s *includeSet) load(ctx context.Context, mains []bson.Raw) error {
	parents := map[*parsedb.IncludeNode][]bson.Raw{}
	for _, n := range s.p.includes {
		parents[n] = mains
	}
	level := s.p.includes
	budget, used := s.p.d.Policy.MaxResponseBytes(), 0
	for len(level) > 0 {
		byClass := map[string]*includeFetch{}
		var order []string
		for _, n := range level {
			f := byClass[n.Target.Name]
			if f == nil {
				f = &includeFetch{cls: n.Target, seen: map[string]bool{}}
				byClass[n.Target.Name] = f
				order = append(order, n.Target.Name)
			}
			f.nodes = append(f.nodes, n)
			if len(n.Keys) == 0 {
				f.full = true
			} else {
				f.keys = append(f.keys, n.Keys...)
			}
			for _, doc := range parents[n] {
				if c, id, ok := parsedb.PointerRef(doc, n.Field); ok && c == n.Target.Name && !f.seen[id] {
					f.seen[id] = true
					f.ids = append(f.ids, id)
				}
			}
		}
		for _, name := range order {
			f := byClass[name]
			got := map[string]bson.Raw{}
			if len(f.ids) > 0 {
				t, err := buildFilter(ctx, s.p.d, s.p.schema, f.cls, map[string]any{"objectId": map[string]any{"$in": f.ids}}, false)
				if err != nil {
					return err
				}
				var proj bson.D
				if !f.full {
					proj = parsedb.Projection(f.cls, f.keys)
				}
				cur, err := s.p.d.Store.Find(ctx, name, parsedb.FindSpec{Filter: t.Filter, Projection: proj, Limit: int64(len(f.ids)), BatchSize: int32(len(f.ids))})
				if err != nil {
					return err
				}
				for cur.Next(ctx) {
					doc := append(bson.Raw(nil), cur.Current...)
					if used += len(doc); used > budget {
						_ = cur.Close(context.WithoutCancel(ctx))
						return toolerror.New(toolerror.InvalidArgument, "the included %s objects exceed the %d-byte response cap; name the fields you need with keys (e.g. \"%s.<field>\") or lower the limit", name, budget, f.nodes[0].Path)
					}
					got[parsedb.DocID(doc)] = doc
				}
				err = cur.Err()
				_ = cur.Close(context.WithoutCancel(ctx))
				if err != nil {
					return err
				}
			}
			for _, n := range f.nodes {
				s.docs[n] = got
			}
		}
		var next []*parsedb.IncludeNode
		for _, n := range level {
			if len(n.Children) == 0 {
				continue
			}
			docs := make([]bson.Raw, 0, len(s.docs[n]))
			for _, doc := range s.docs[n] {
				docs = append(docs, doc)
			}
			for _, c := range n.Children {
				parents[c] = docs
				next = append(next, c)
			}
		}
		level = next
	}
	return nil
}

// splice appends row with the pointers of nodes replaced by their objects.
// A pointer whose object was not found or was filtered out (ACL, CLP, agent
// filters) is left out of the row, as Parse Server's include leaves it out.
func (s *includeSet) splice(dst []byte, doc bson.Raw, row []byte, nodes []*parsedb.IncludeNode) []byte {
	var repl map[string][]byte
	for _, n := range nodes {
		c, id, ok := parsedb.PointerRef(doc, n.Field)
		if !ok || c != n.Target.Name {
			continue
		}
		if repl == nil {
			repl = map[string][]byte{}
		}
		repl[n.Field] = s.encode(n, id) // nil: not readable, left out
	}
	return parsedb.SpliceRow(dst, row, repl)
}

func (s *includeSet) encode(n *parsedb.IncludeNode, id string) []byte {
	if v, ok := s.cache[n][id]; ok {
		return v
	}
	if s.cache[n] == nil {
		s.cache[n] = map[string][]byte{}
	}
	doc := s.docs[n][id]
	if doc == nil {
		s.cache[n][id] = nil
		return nil
	}
	row, err := s.p.incEnc[n].AppendRow(nil, doc)
	if err != nil {
		s.cache[n][id] = nil
		return nil
	}
	if len(n.Children) > 0 {
		row = s.splice(nil, doc, row, n.Children)
	}
	if s.p.compact {
		// Compact: the object as is; pointer_classes names its class.
		s.cache[n][id] = row
		return row
	}
	out := parsedb.ObjectPrefix(nil, n.Target.Name, row)
	s.cache[n][id] = out
	return out
}
