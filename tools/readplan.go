package tools

// The read plan: the resolved class, filter, projection, sort and redaction
// of one read, shared by query_class, get_object(s), get_sample_objects and
// export_data, and the row loop that streams the cursor through the codec.

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// readTarget is a resolved class plus the filter a read sends to MongoDB.
type readTarget struct {
	Class *parsedb.Class
	// Shown is the REST-level where actually applied (caller where AND every
	// policy filter), as reported back to the model.
	Shown  map[string]any
	Filter bson.D
}

// resolveRead resolves the class and builds the full filter for a read.
func resolveRead(ctx context.Context, d *Deps, name string, where map[string]any, applyCanonical bool) (*readTarget, error) {
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := checkWhereFields(d, cls, where); err != nil {
		return nil, err
	}
	return buildFilter(ctx, d, schema, cls, where, applyCanonical)
}

func buildFilter(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, where map[string]any, applyCanonical bool) (*readTarget, error) {
	shown, err := d.Policy.ComposeWhere(ctx, cls, where, applyCanonical)
	if err != nil {
		return nil, err
	}
	// The caller's where and the policy's filters are translated apart:
	// only the caller's constraints get the "not a hidden reference"
	// conjuncts (the policy's are written by the operator), and the
	// MongoDB filter keeps the composed shape {$and:[caller, policy…]}.
	opt := parsedb.WhereOptions{Schema: schema, Sub: &subQueries{d: d, schema: schema}}
	policyWhere, err := d.Policy.ComposeWhere(ctx, cls, nil, applyCanonical)
	if err != nil {
		return nil, err
	}
	filter, err := parsedb.WhereToFilter(ctx, cls, policyWhere, opt)
	if err != nil {
		return nil, err
	}
	if len(where) > 0 {
		opt.Hidden = d.Policy.HiddenRefs(schema)
		caller, err := parsedb.WhereToFilter(ctx, cls, where, opt)
		if err != nil {
			return nil, err
		}
		filter = andFlat(caller, filter)
		text, err := textGuard(ctx, d, schema, cls, where)
		if err != nil {
			return nil, err
		}
		filter = andFilters(filter, text)
	}
	scope, err := d.Policy.StorageScope(ctx, cls)
	if err != nil {
		return nil, err
	}
	return &readTarget{Class: cls, Shown: shown, Filter: andFilters(filter, scope)}, nil
}

// andFlat is andFilters with a policy filter that is itself an $and of
// parts spliced in: {$and:[caller, part1, part2…]}.
func andFlat(caller, policy bson.D) bson.D {
	if len(caller) == 0 || len(policy) != 1 || policy[0].Key != "$and" {
		return andFilters(caller, policy)
	}
	parts, ok := policy[0].Value.(bson.A)
	if !ok {
		return andFilters(caller, policy)
	}
	return bson.D{{Key: "$and", Value: append(bson.A{caller}, parts...)}}
}

// andFilters combines two filters without nesting when one is empty.
func andFilters(a, b bson.D) bson.D {
	switch {
	case len(a) == 0 && len(b) == 0:
		return bson.D{}
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	}
	return bson.D{{Key: "$and", Value: bson.A{a, b}}}
}

// whereFieldNames collects the field names a where constrains (through
// $and/$or/$nor), not the fields of sub-queries on other classes.
func whereFieldNames(where map[string]any, out map[string]bool) {
	for k, v := range where {
		switch k {
		case "$and", "$or", "$nor":
			if list, ok := v.([]any); ok {
				for _, e := range list {
					if m, ok := e.(map[string]any); ok {
						whereFieldNames(m, out)
					}
				}
			}
		default:
			if !strings.HasPrefix(k, "$") {
				out[k] = true
			}
		}
	}
}

// checkWhereFields runs the field policy over the caller's where keys.
func checkWhereFields(d *Deps, cls *parsedb.Class, where map[string]any) error {
	if len(where) == 0 {
		return nil
	}
	names := map[string]bool{}
	whereFieldNames(where, names)
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if err := d.Policy.CheckReadField(cls, n); err != nil {
			return err
		}
	}
	return nil
}

// planInput is what a read tool asks for.
type planInput struct {
	where          map[string]any
	applyCanonical bool
	keys           []string
	include        []string
	order          []parsedb.OrderKey
	noSort         bool     // lookups by id need no order
	dropLarge      bool     // leave the class's large_fields out (samples)
	compact        bool     // compact values (docs/reading.md "Row shapes")
	shape          rowShape // the layout asked for
}

// orderArg is a read's order: "-plays,title" or a list of such entries.
type orderArg []parsedb.OrderKey

func (o *orderArg) decodeArg(_ context.Context, args Args, name string, _ *argField) error {
	list, err := args.StringList(name)
	if err != nil {
		return err
	}
	keys, err := parsedb.ParseOrder(list)
	*o = keys
	return err
}

func (*orderArg) schema() string { return `"type":"string"` }

// readPlan is a policy-checked read of one class: filter, projection,
// sort, includes and the encoders that turn stored rows into REST JSON.
type readPlan struct {
	d        *Deps
	schema   *parsedb.Schema
	target   *readTarget
	userKeys []string // keys as the caller gave them
	keys     []string // keys of the queried class (include sub-keys routed away)
	includes []*parsedb.IncludeNode
	// truncatedIncludes: include path → join_fields it was projected to.
	truncatedIncludes map[string][]string
	projection        bson.D
	sort              bson.D
	enc               parsedb.RowEncoder
	incEnc            map[*parsedb.IncludeNode]*parsedb.RowEncoder
	// compact rows, with the legend of what the encoders wrote (the main
	// class's and one per include node).
	compact bool
	legend  *parsedb.Legend
	shape   rowShape

	// ranked and redactedTail split a sorted read whose sort keys may be
	// redacted: the rows ranked by sort, then the others by objectId
	// (nil: no split).
	ranked, redactedTail bson.D
}

// resetLegend forgets what the encoders recorded (before a second read of
// the same page).
func (p *readPlan) resetLegend() {
	if !p.compact {
		return
	}
	*p.legend = parsedb.Legend{}
	for _, enc := range p.incEnc {
		enc.Legend = &parsedb.Legend{}
	}
}

// rowLegend is the legend of every row encoded so far, included objects'
// entries under their include paths; nil for REST rows.
func (p *readPlan) rowLegend() *parsedb.Legend {
	if !p.compact {
		return nil
	}
	out := &parsedb.Legend{}
	out.Merge("", p.legend)
	parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
		out.Merge(n.Path, p.incEnc[n].Legend)
	})
	return out
}

func newReadPlan(ctx context.Context, d *Deps, name string, in planInput) (*readPlan, error) {
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	return planFor(ctx, d, schema, name, in)
}

// planFor builds the plan against a given schema snapshot.
func planFor(ctx context.Context, d *Deps, schema *parsedb.Schema, name string, in planInput) (*readPlan, error) {
	cls, err := d.Policy.ResolveClass(ctx, schema, name)
	if err != nil {
		return nil, err
	}
	if err := checkWhereFields(d, cls, in.where); err != nil {
		return nil, err
	}
	for _, k := range in.keys {
		if err := d.Policy.CheckReadField(cls, k); err != nil {
			return nil, err
		}
	}
	for _, o := range in.order {
		if err := d.Policy.CheckReadField(cls, o.Field); err != nil {
			return nil, err
		}
		if err := checkOrderTarget(ctx, d, schema, cls, o.Field); err != nil {
			return nil, err
		}
	}
	p := &readPlan{d: d, schema: schema, userKeys: in.keys, shape: in.shape, incEnc: map[*parsedb.IncludeNode]*parsedb.RowEncoder{}}
	p.includes, err = parsedb.BuildIncludeTree(cls, in.include, func(from *parsedb.Class, f *parsedb.Field, path string) (*parsedb.Class, error) {
		return d.Policy.CheckInclude(ctx, schema, from, f.Name)
	})
	if err != nil {
		return nil, err
	}
	if p.keys, err = p.routeKeys(in.keys); err != nil {
		return nil, err
	}
	if p.target, err = buildFilter(ctx, d, schema, cls, in.where, in.applyCanonical); err != nil {
		return nil, err
	}
	p.projection = parsedb.Projection(cls, p.keys)
	if !in.noSort {
		p.sort = parsedb.SortDoc(cls, in.order)
		var paths []string
		for _, o := range in.order {
			paths = append(paths, o.Field)
		}
		// Rows whose sort key is redacted are not ranked by what is stored
		// there (it would bisect the hidden id): they follow every ranked
		// row, in objectId order (SECURITY.md "Hidden references"). Other
		// rows whose sort key inside an Object/Array field holds an
		// embedded object are left out: it would sort by its members, a
		// nested pointer's id among them.
		no := notObjectSortKeys(cls, paths)
		if nh := d.Policy.HiddenRefs(schema).NotHiddenRefFilterAnyType(cls, paths); nh != nil {
			redacted := bson.D{{Key: "$nor", Value: bson.A{nh}}}
			p.ranked = andFilters(andFilters(p.target.Filter, nh), no)
			p.redactedTail = andFilters(p.target.Filter, redacted)
			if no != nil {
				no = bson.D{{Key: "$or", Value: bson.A{no, redacted}}}
			}
		}
		p.target.Filter = andFilters(p.target.Filter, no)
	}
	p.enc = *d.Policy.RowEncoder(schema, cls, p.keys)
	if in.compact {
		p.compact, p.legend = true, &parsedb.Legend{}
		p.enc.Compact, p.enc.Legend = true, p.legend
	}
	if in.dropLarge && len(p.keys) == 0 {
		if large := d.Policy.LargeFields(cls.Name); len(large) > 0 {
			p.projection = parsedb.ExclusionProjection(cls, large)
			p.enc.Drop = dropAlso(p.enc.Drop, large...)
		}
	}
	parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
		enc := d.Policy.RowEncoder(schema, n.Target, n.Keys)
		if in.compact {
			enc.Compact, enc.Legend = true, &parsedb.Legend{}
		}
		p.incEnc[n] = enc
	})
	return p, nil
}

// checkOrderTarget refuses an order key on a Pointer (or Relation) field
// whose target is hidden or missing, as where refuses it: MongoDB would sort
// by the stored "Hidden$id" strings, so the rows' order would rank the
// hidden ids. The not-a-hidden-reference filter does not cover it, since a
// Pointer field is typed (SECURITY.md "Hidden references").
func checkOrderTarget(ctx context.Context, d *Deps, schema *parsedb.Schema, cls *parsedb.Class, path string) error {
	root, _, dotted := strings.Cut(path, ".")
	f := cls.Field(root)
	if f != nil && !dotted && f.Type == parsedb.TypeObject {
		// A whole Object value sorts member by member: an embedded
		// pointer's id below it would be ordered, and so bisected, against
		// the other rows' (SECURITY.md "Hidden references").
		return toolerror.New(toolerror.InvalidQuery, "order: %s is an Object field and cannot be sorted as a whole; order by a path inside it (e.g. %s.<key>) or by another field", root, root)
	}
	if f == nil || (f.Type != parsedb.TypePointer && f.Type != parsedb.TypeRelation) {
		return nil
	}
	if d.Policy.TargetInvisible(schema, f.TargetClass) {
		return d.Policy.TargetUnavailable(ctx, "order: %s", root)
	}
	return nil
}

// notObjectSortKeys is the conjunct that keeps rows whose sort key — an
// Array field, or a path below an Object, Array or unknown field — is (or,
// for an array, holds) an embedded object out of a sorted read; nil when no
// key needs it. An array of scalars still sorts (by its least or greatest
// element, as MongoDB does).
func notObjectSortKeys(cls *parsedb.Class, paths []string) bson.D {
	var and bson.A
	for _, p := range paths {
		root, _, dotted := strings.Cut(p, ".")
		if !parsedb.MayHoldObject(cls, root) {
			continue
		}
		if f := cls.Field(root); !dotted && f != nil && f.Type == parsedb.TypeObject {
			continue // refused by checkOrderTarget
		}
		and = append(and, bson.D{{Key: parsedb.StorageFieldName(cls, p), Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$type", Value: "object"}}}}}})
	}
	if len(and) == 0 {
		return nil
	}
	return bson.D{{Key: "$and", Value: and}}
}

// dropAlso extends an encoder's Drop with more field names.
func dropAlso(prev func(string) bool, fields ...string) func(string) bool {
	set := map[string]bool{}
	for _, f := range fields {
		set[f] = true
	}
	return func(f string) bool { return set[f] || prev != nil && prev(f) }
}

// routeKeys sends keys that reach into included objects ("artist.name" with
// include artist) to their include node, applies join_fields when a bare
// included pointer is named in keys, and returns the keys of the queried
// class itself (every top-level included pointer among them).
func (p *readPlan) routeKeys(keys []string) ([]string, error) {
	var main []string
	seen := map[string]bool{}
	addMain := func(k string) {
		if !seen[k] {
			seen[k] = true
			main = append(main, k)
		}
	}
	bare := map[*parsedb.IncludeNode]bool{}
	// named: include nodes a key reaches (bare or into them).
	named := map[*parsedb.IncludeNode]bool{}
	for _, k := range keys {
		var best *parsedb.IncludeNode
		parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
			if (k == n.Path || strings.HasPrefix(k, n.Path+".")) && (best == nil || len(n.Path) > len(best.Path)) {
				best = n
			}
		})
		if best == nil {
			addMain(k)
			continue
		}
		root, _, _ := strings.Cut(k, ".")
		addMain(root)
		named[best] = true
		// Parse applies keys at every level of an include path: keys
		// album.artist.name with include album.artist limits album to
		// artist, as it limits the queried class to album.
		parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
			if rest, ok := strings.CutPrefix(best.Path, n.Path+"."); ok {
				next, _, _ := strings.Cut(rest, ".")
				if !slicesContains(n.Keys, next) {
					n.Keys = append(n.Keys, next)
				}
			}
		})
		if k == best.Path {
			bare[best] = true
			continue
		}
		sub := k[len(best.Path)+1:]
		if err := p.d.Policy.CheckReadField(best.Target, sub); err != nil {
			return nil, err
		}
		best.Keys = append(best.Keys, sub)
	}
	parsedb.WalkIncludes(p.includes, func(n *parsedb.IncludeNode) {
		if len(n.Keys) == 0 && bare[n] {
			if jf := p.d.Policy.JoinFields(n.Target.Name); len(jf) > 0 {
				n.Keys = append([]string(nil), jf...)
				if p.truncatedIncludes == nil {
					p.truncatedIncludes = map[string][]string{}
				}
				p.truncatedIncludes[n.Path] = jf
			}
		}
		if len(n.Keys) > 0 {
			// Parse applies keys inside an included object too: a nested
			// include outside them is not followed (keys album.title with
			// include album.artist shows album's title only).
			kept := n.Children[:0]
			for _, c := range n.Children {
				if slicesContains(n.Keys, c.Field) {
					kept = append(kept, c)
				} else if reached(c, named) {
					// keys album.artist.name select album's artist.
					n.Keys = append(n.Keys, c.Field)
					kept = append(kept, c)
				}
			}
			n.Children = kept
		}
	})
	if len(main) > 0 {
		// An include applies only within keys, as in Parse: include owner
		// with keys [title] shows no owner.
		kept := p.includes[:0]
		for _, n := range p.includes {
			if seen[n.Field] {
				kept = append(kept, n)
			}
		}
		p.includes = kept
	}
	return main, nil
}

// reached reports whether a key reaches n or an include below it.
func reached(n *parsedb.IncludeNode, named map[*parsedb.IncludeNode]bool) bool {
	if named[n] {
		return true
	}
	for _, c := range n.Children {
		if reached(c, named) {
			return true
		}
	}
	return false
}

func slicesContains(list []string, s string) bool {
	return slices.Contains(list, s)
}

// without is the plan with one more field left out (the size-cap fallback).
func (p *readPlan) without(field string) *readPlan {
	q := *p
	q.includes = nil
	for _, n := range p.includes {
		if n.Field != field {
			q.includes = append(q.includes, n)
		}
	}
	cls := p.target.Class
	if len(p.keys) > 0 {
		var keys []string
		for _, k := range p.keys {
			if root, _, _ := strings.Cut(k, "."); root != field {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			keys = []string{"objectId"}
		}
		q.keys = keys
		q.projection = parsedb.Projection(cls, keys)
		q.enc.SelectKeys(keys)
	} else {
		q.projection = append(append(bson.D(nil), p.projection...), parsedb.ExclusionProjection(cls, []string{field})...)
		q.enc.Drop = dropAlso(p.enc.Drop, field)
	}
	return &q
}

func (p *readPlan) findSpec(skip, limit int) parsedb.FindSpec {
	filter := p.target.Filter
	if p.ranked != nil {
		filter = p.ranked
	}
	return parsedb.FindSpec{Filter: filter, Projection: p.projection, Sort: p.sort, Skip: int64(skip), Limit: int64(limit), BatchSize: int32(limit)}
}

// closeCursor closes a read's cursor. A cursor the server still holds open
// (FerretDB and DocumentDB keep one open when the limit is reached in the
// first batch, where MongoDB closes it) is killed after the call, off its
// path: the killCursors round trip adds nothing the answer waits for
// (ARCHITECTURE.md "Round trips per tool").
func closeCursor(ctx context.Context, cur *mongo.Cursor) {
	closeCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	}
	if cur.ID() == 0 {
		cctx, cancel := closeCtx()
		defer cancel()
		_ = cur.Close(cctx)
		return
	}
	go func() {
		cctx, cancel := closeCtx()
		defer cancel()
		_ = cur.Close(cctx)
	}()
}

// rows runs the find and calls fn for every row in order; row is its REST
// JSON (includes spliced in) when encode(i) is true, else nil. row is only
// valid during the call. fn returns false to stop. A split sorted read
// continues with the rows whose sort key is redacted, the page's skip and
// limit running over both parts.
func (p *readPlan) rows(ctx context.Context, spec parsedb.FindSpec, encode func(i int) bool, fn func(i int, doc bson.Raw, row []byte) (bool, error)) error {
	n, stopped, err := p.rowsFrom(ctx, spec, 0, encode, fn)
	if err != nil || stopped || p.redactedTail == nil || spec.Limit > 0 && int64(n) >= spec.Limit {
		return err
	}
	tail := spec
	tail.Filter, tail.Sort, tail.Skip = p.redactedTail, bson.D{{Key: "_id", Value: int32(1)}}, 0
	if spec.Skip > 0 {
		ranked := spec.Skip + int64(n)
		if n == 0 {
			if ranked, err = p.d.Store.Count(ctx, p.target.Class.Name, spec.Filter); err != nil {
				return err
			}
		}
		tail.Skip = max(0, spec.Skip-ranked)
	}
	if spec.Limit > 0 {
		tail.Limit = spec.Limit - int64(n)
	}
	_, _, err = p.rowsFrom(ctx, tail, n, encode, fn)
	return err
}

// rowEncodeFunc says whether row i is encoded (else fn gets a nil row).
type rowEncodeFunc = func(i int) bool

// rowFunc gets each row; false stops the read.
type rowFunc = func(i int, doc bson.Raw, row []byte) (bool, error)

// rowsFrom is one find of rows, numbering them from start: n rows were
// passed to fn, stopped when fn returned false.
func (p *readPlan) rowsFrom(ctx context.Context, spec parsedb.FindSpec, start int, encode rowEncodeFunc, fn rowFunc) (n int, stopped bool, err error) {
	cur, err := p.d.Store.Find(ctx, p.target.Class.Name, spec)
	if err != nil {
		return 0, false, err
	}
	defer closeCursor(ctx, cur)
	if len(p.includes) == 0 {
		return p.plainRows(ctx, cur, spec.Limit, start, encode, fn)
	}
	return p.includedRows(ctx, cur, spec.Limit, start, encode, fn)
}

// plainRows is rowsFrom without includes.
func (p *readPlan) plainRows(ctx context.Context, cur *mongo.Cursor, limit int64, start int, encode rowEncodeFunc, fn rowFunc) (n int, stopped bool, err error) {
	i := start
	// full: every row the limit lets the server return has been read, so
	// the cursor holds nothing more: asking for the next row would cost a
	// getMore on engines that keep a cursor open at its limit.
	full := func() bool { return limit > 0 && int64(i-start) >= limit }
	var buf []byte
	for !full() && cur.Next(ctx) {
		var row []byte
		if encode(i) {
			if buf, err = p.enc.AppendRow(buf[:0], cur.Current); err != nil {
				return i - start, false, err
			}
			row = buf
		}
		cont, err := fn(i, cur.Current, row)
		if err != nil || !cont {
			return i - start, true, err
		}
		i++
	}
	return i - start, false, cur.Err()
}

// includedRows is rowsFrom with includes: rows are read in chunks so that
// each chunk's pointers are fetched with one $in query per target class
// and level.
func (p *readPlan) includedRows(ctx context.Context, cur *mongo.Cursor, limit int64, start int, encode rowEncodeFunc, fn rowFunc) (n int, stopped bool, err error) {
	i := start
	var chunk []bson.Raw
	size, maxBytes := 0, p.d.Policy.MaxResponseBytes()
	var buf, out []byte
	flush := func() (bool, error) {
		defer func() { chunk, size = chunk[:0], 0 }()
		var need []bson.Raw
		for j, doc := range chunk {
			if encode(i + j) {
				need = append(need, doc)
			}
		}
		inc := &includeSet{p: p, docs: map[*parsedb.IncludeNode]map[string]bson.Raw{}, cache: map[*parsedb.IncludeNode]map[string][]byte{}}
		if err := inc.load(ctx, need); err != nil {
			return false, err
		}
		for _, doc := range chunk {
			var row []byte
			if encode(i) {
				var err error
				if buf, err = p.enc.AppendRow(buf[:0], doc); err != nil {
					return false, err
				}
				out = inc.splice(out[:0], doc, buf, p.includes)
				row = out
			}
			cont, err := fn(i, doc, row)
			i++
			if err != nil || !cont {
				return false, err
			}
		}
		return true, nil
	}
	for read := int64(0); (limit <= 0 || read < limit) && cur.Next(ctx); read++ {
		doc := append(bson.Raw(nil), cur.Current...)
		chunk = append(chunk, doc)
		size += len(doc)
		if len(chunk) >= includeChunk || size >= maxBytes {
			if cont, err := flush(); err != nil || !cont {
				return i - start, true, err
			}
		}
	}
	if err := cur.Err(); err != nil {
		return i - start, false, err
	}
	if len(chunk) > 0 {
		cont, err := flush()
		return i - start, !cont, err
	}
	return i - start, false, nil
}
