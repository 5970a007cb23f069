package pipeline

import (
	"slices"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Joins: $lookup, $graphLookup and $unionWith, each through the class gate
// of its target (joinTarget); the rows of a $lookup or $unionWith come from
// one place (joinedRows).

// joinTarget is the class gate of a join target.
func (pv *validator) joinTarget(v any, where string) (*parsedb.Class, error) {
	name, ok := v.(string)
	if !ok || name == "" {
		return nil, invalidPipeline("%s needs a class name", where)
	}
	if !parsedb.ClassNameRe.MatchString(name) || parsedb.IsInternalCollection(name) {
		return nil, toolerror.Violationf("join into internal collection %q", truncateText(name, 60))
	}
	if pv.e.Hidden(name) {
		return nil, pv.e.HiddenClassRefusal(pv.ctx, pv.schema, name)
	}
	if strings.HasPrefix(name, "_") && !(slices.Contains(JoinableSystemClasses, name) || name == "_Session" && pv.e.MasterPosture()) {
		return nil, toolerror.Violationf("join into system class %s", name)
	}
	cls, err := pv.e.ResolveClass(pv.ctx, pv.schema, name)
	if err != nil {
		return nil, err
	}
	if err := pv.e.CheckJoin(pv.root.Name, name); err != nil {
		return nil, err
	}
	if !pv.seen[name] {
		pv.seen[name] = true
		pv.joins = append(pv.joins, cls)
	}
	return cls, nil
}

func (pv *validator) lookup(s *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok {
		return invalidPipeline("%s needs an object with from and as", where)
	}
	from, _ := parsedb.EntryValue(entries, "from")
	jc, err := pv.joinTarget(from, where+".from")
	if err != nil {
		return err
	}
	as, ok := parsedb.EntryValue(entries, "as")
	asName, isStr := as.(string)
	if !ok || !isStr {
		return invalidPipeline("%s needs as (the name of the output array field)", where)
	}
	if err := pv.checkOutputName(s, asName, where+".as"); err != nil {
		return err
	}
	lf, hasLF := parsedb.EntryValue(entries, "localField")
	ff, hasFF := parsedb.EntryValue(entries, "foreignField")
	if hasLF != hasFF {
		return invalidPipeline("%s needs both localField and foreignField, or neither", where)
	}
	if hasLF {
		l, ok1 := lf.(string)
		f, ok2 := ff.(string)
		if !ok1 || !ok2 {
			return invalidPipeline("%s: localField and foreignField must be field names", where)
		}
		// An equality join: both stored paths are read (and get the
		// conjunct), whole values included.
		if _, err := pv.ref(s, l, ""); err != nil {
			return err
		}
		js := pv.classState(jc, true)
		if _, err := pv.resolveChecked(js, f); err != nil {
			return err
		}
	}
	if let, ok := parsedb.EntryValue(entries, "let"); ok {
		le, ok := parsedb.Entries(let)
		if !ok {
			return invalidPipeline("%s: let must be an object of variables", where)
		}
		// Variables are not tracked: they take values that may be
		// computed on, so an opaque one is refused.
		for _, e := range le {
			if err := pv.operand(s, e.Value, "a $lookup let variable"); err != nil {
				return err
			}
		}
	}
	sub, hasPipeline := parsedb.EntryValue(entries, "pipeline")
	if !hasLF && !hasPipeline {
		return invalidPipeline("%s needs localField/foreignField or a pipeline", where)
	}
	joined, err := pv.joinedRows(jc, sub, hasPipeline, where)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.Key {
		case "from", "as", "localField", "foreignField", "let", "pipeline":
		default:
			return invalidPipeline("%s: unsupported option %s", where, truncateText(e.Key, 40))
		}
	}
	// as holds the joined documents: their fields are the joined class's.
	s.bind(pv.frozen(s), asName, exprVal{refs: []vref{joined}})
	return nil
}

func (pv *validator) graphLookup(s *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok {
		return invalidPipeline("%s needs an object", where)
	}
	from, _ := parsedb.EntryValue(entries, "from")
	jc, err := pv.joinTarget(from, where+".from")
	if err != nil {
		return err
	}
	js := pv.classState(jc, true)
	for _, k := range []string{"startWith", "connectFromField", "connectToField", "as"} {
		if _, ok := parsedb.EntryValue(entries, k); !ok {
			return invalidPipeline("%s needs %s", where, k)
		}
	}
	var asName, depthField string
	for _, e := range entries {
		switch e.Key {
		case "from", "maxDepth":
		case "startWith":
			// Compared for equality with connectToField, like a
			// localField: a whole value is fine.
			if _, err := pv.value(s, e.Value); err != nil {
				return err
			}
		case "connectFromField", "connectToField":
			f, ok := e.Value.(string)
			if !ok {
				return invalidPipeline("%s: %s must be a field name", where, e.Key)
			}
			if _, err := pv.resolveChecked(js, f); err != nil {
				return err
			}
		case "as", "depthField":
			n, ok := e.Value.(string)
			if !ok {
				return invalidPipeline("%s: %s must be a field name", where, e.Key)
			}
			if err := pv.checkOutputName(s, n, where+"."+e.Key); err != nil {
				return err
			}
			if e.Key == "as" {
				asName = n
			} else {
				depthField = n
			}
		case "restrictSearchWithMatch":
			// It filters the joined class's raw documents, before any
			// projection: field conditions only.
			if mentionsExpr(e.Value) {
				return invalidPipeline("%s: restrictSearchWithMatch takes field conditions only ($expr is not supported there)", where)
			}
			if err := pv.filter(js, e.Value, where+".restrictSearchWithMatch", true); err != nil {
				return err
			}
		default:
			return invalidPipeline("%s: unsupported option %s", where, truncateText(e.Key, 40))
		}
	}
	// as holds joined documents (with depthField, computed, in each).
	found := &fieldState{shapes: []vref{{cls: jc, join: true}}, alias: map[string][]vref{}, usable: map[string]bool{}, intro: map[string]bool{}}
	if depthField != "" {
		found.bind(nil, depthField, exprVal{})
	}
	found.frozen = true
	s.bind(pv.frozen(s), asName, exprVal{refs: []vref{{st: found}}})
	return nil
}

// mentionsString reports whether the string str appears as a value
// anywhere in v.
func mentionsString(v any, str string) bool {
	if s, ok := v.(string); ok {
		return s == str
	}
	if entries, ok := parsedb.Entries(v); ok {
		for _, e := range entries {
			if mentionsString(e.Value, str) {
				return true
			}
		}
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		return slices.ContainsFunc(arr, func(x any) bool { return mentionsString(x, str) })
	}
	return false
}

// mentionsExpr reports whether $expr appears anywhere in v.
func mentionsExpr(v any) bool {
	if entries, ok := parsedb.Entries(v); ok {
		for _, e := range entries {
			if e.Key == "$expr" || mentionsExpr(e.Value) {
				return true
			}
		}
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		if slices.ContainsFunc(arr, mentionsExpr) {
			return true
		}
	}
	return false
}

func (pv *validator) unionWith(s *fieldState, _ string, arg any, where string) error {
	coll := arg
	var sub any
	hasPipeline := false
	if entries, ok := parsedb.Entries(arg); ok {
		coll, _ = parsedb.EntryValue(entries, "coll")
		sub, hasPipeline = parsedb.EntryValue(entries, "pipeline")
		for _, e := range entries {
			if e.Key != "coll" && e.Key != "pipeline" {
				return invalidPipeline("%s: unsupported option %s", where, truncateText(e.Key, 40))
			}
		}
	}
	jc, err := pv.joinTarget(coll, where+".coll")
	if err != nil {
		return err
	}
	union, err := pv.joinedRows(jc, sub, hasPipeline, where)
	if err != nil {
		return err
	}
	// The joined class's documents flow on next to the pipeline's own: a
	// field comes from either, whatever earlier stages bound it to.
	s.shapes = []vref{{st: pv.frozen(s)}, union}
	s.alias = map[string][]vref{}
	return nil
}

// joinedRows is where the rows a $lookup or $unionWith brings in come
// from: the joined class's stored rows or, with a non-empty pipeline
// option (sub, present when hasPipeline), the documents at the end of that
// sub-pipeline, which starts from the joined class's own state, not the
// outer pipeline's.
func (pv *validator) joinedRows(jc *parsedb.Class, sub any, hasPipeline bool, where string) (vref, error) {
	rows := vref{cls: jc, join: true}
	if !hasPipeline {
		return rows, nil
	}
	arr, ok := parsedb.ArrayValues(sub)
	if !ok {
		return vref{}, invalidPipeline("%s.pipeline must be an array of stages", where)
	}
	if len(arr) == 0 {
		return rows, nil
	}
	end, err := pv.pipeline(pv.classState(jc, true), arr, where+".pipeline")
	if err != nil {
		return vref{}, err
	}
	end.frozen = true
	return vref{st: end}, nil
}
