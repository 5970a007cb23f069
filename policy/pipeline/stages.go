package pipeline

import (
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
)

// One validate function per stage of the shared table
// (internal/pipelinestage): stageValidators is keyed by the table's names,
// and TestStageValidatorsMatchTable fails when a table stage has no
// function here or a function has no table stage.

// stageFunc validates one stage (name, its argument arg, its position where
// for messages) on the documents' state s, and advances s to the state
// after the stage. pv.prev is s as the stage started, frozen.
type stageFunc func(pv *validator, s *fieldState, name string, arg any, where string) error

// stageValidators is filled in init: the functions it holds validate
// sub-pipelines through it.
var stageValidators map[string]stageFunc

func init() {
	stageValidators = map[string]stageFunc{
		pipelinestage.Match:       (*validator).matchStage,
		pipelinestage.Group:       (*validator).groupStage,
		pipelinestage.Sort:        (*validator).sortStage,
		pipelinestage.Project:     (*validator).project,
		pipelinestage.Limit:       (*validator).limitStage,
		pipelinestage.Skip:        (*validator).limitStage,
		pipelinestage.Unwind:      (*validator).unwindStage,
		pipelinestage.Lookup:      (*validator).lookup,
		pipelinestage.Count:       (*validator).countStage,
		pipelinestage.AddFields:   (*validator).addFieldsStage,
		pipelinestage.Set:         (*validator).addFieldsStage,
		pipelinestage.Unset:       (*validator).unsetStage,
		pipelinestage.Bucket:      (*validator).bucketStage,
		pipelinestage.BucketAuto:  (*validator).bucketStage,
		pipelinestage.Facet:       (*validator).facetStage,
		pipelinestage.Sample:      (*validator).sampleStage,
		pipelinestage.SortByCount: (*validator).sortByCountStage,
		pipelinestage.ReplaceRoot: (*validator).replaceRootStage,
		pipelinestage.ReplaceWith: (*validator).replaceRootStage,
		pipelinestage.Redact:      (*validator).redactStage,
		pipelinestage.GraphLookup: (*validator).graphLookup,
		pipelinestage.UnionWith:   (*validator).unionWith,
	}
}

// stage validates one stage and advances s.
func (pv *validator) stage(s *fieldState, name string, arg any, where string) error {
	validate := stageValidators[name]
	if validate == nil {
		return invalidPipeline("%s: unsupported stage", where)
	}
	savedPrev, savedOf := pv.prev, pv.prevOf
	pv.prev, pv.prevOf = s.clone(), s
	pv.prev.frozen = true
	defer func() { pv.prev, pv.prevOf = savedPrev, savedOf }()
	return validate(pv, s, name, arg, where)
}

func (pv *validator) matchStage(s *fieldState, _ string, arg any, where string) error {
	return pv.filter(s, arg, where, true)
}

func (pv *validator) sortStage(s *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok || len(entries) == 0 {
		return invalidPipeline("%s needs an object of field: 1 or -1", where)
	}
	for _, e := range entries {
		v, err := pv.ref(s, e.Key, "")
		if err != nil {
			return err
		}
		if v.opaque {
			// Its place in the order would compare what lies inside.
			return opaqueOperand(v, "a $sort key")
		}
	}
	return nil
}

// limitStage validates $limit and $skip.
func (pv *validator) limitStage(_ *fieldState, name string, arg any, where string) error {
	if n, ok := pNumber(arg); !ok || n < 0 || (name == pipelinestage.Limit && n < 1) {
		return invalidPipeline("%s needs a positive whole number", where)
	}
	return nil
}

func (pv *validator) sampleStage(_ *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok {
		return invalidPipeline("%s needs {\"size\": n}", where)
	}
	if n, ok := parsedb.EntryValue(entries, "size"); !ok {
		return invalidPipeline("%s needs {\"size\": n}", where)
	} else if _, ok := pNumber(n); !ok {
		return invalidPipeline("%s needs {\"size\": n}", where)
	}
	return nil
}

func (pv *validator) countStage(s *fieldState, _ string, arg any, where string) error {
	n, ok := arg.(string)
	if !ok || strings.Contains(n, ".") {
		return invalidPipeline("%s needs the name of the output field, e.g. {\"$count\":\"total\"}", where)
	}
	if err := pv.checkOutputName(s, n, where); err != nil {
		return err
	}
	s.reset()
	s.bind(nil, n, exprVal{})
	return nil
}

// addFieldsStage validates $addFields and $set.
func (pv *validator) addFieldsStage(s *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok || len(entries) == 0 {
		return invalidPipeline("%s needs an object of new fields", where)
	}
	prev := pv.prev
	vals := make([]exprVal, len(entries))
	for i, e := range entries {
		if err := pv.checkOutputName(s, e.Key, where); err != nil {
			return err
		}
		// A non-operator object is a set of paths below e.Key that
		// MongoDB merges into the stored value, not a new value.
		if (parsedb.IsSubProjection(e.Value) || isPlainObject(e.Value)) && s.names(e.Key) {
			if err := pv.checkNotBelowOpaque(s, e.Key+".*", where); err != nil {
				return err
			}
		}
		v, err := pv.value(s, e.Value)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	for i, e := range entries {
		s.bind(prev, e.Key, vals[i])
	}
	return nil
}

func (pv *validator) unsetStage(s *fieldState, _ string, arg any, where string) error {
	var names []any
	if str, ok := arg.(string); ok {
		names = []any{str}
	} else if arr, ok := parsedb.ArrayValues(arg); ok && len(arr) > 0 {
		names = arr
	} else {
		return invalidPipeline("%s needs a field name or an array of field names", where)
	}
	for _, n := range names {
		str, ok := n.(string)
		if !ok || str == "" || strings.HasPrefix(str, "$") {
			return invalidPipeline("%s needs field names (without $)", where)
		}
		// Removing an internal field reveals nothing: accepted.
		if !hasInternalSegment(str) && isStorageForm(rootOf(str), s.cls != nil) {
			return storageFormError(str, "")
		}
		if err := pv.checkNotBelowOpaque(s, str, where); err != nil {
			return err
		}
		if !strings.Contains(str, ".") {
			delete(s.usable, str)
		}
	}
	return nil
}

func (pv *validator) unwindStage(s *fieldState, _ string, arg any, where string) error {
	prev := pv.prev
	path := arg
	var entries []parsedb.Entry
	if e, ok := parsedb.Entries(arg); ok {
		entries = e
		path, _ = parsedb.EntryValue(entries, "path")
	}
	p, ok := path.(string)
	if !ok || !strings.HasPrefix(p, "$") || strings.HasPrefix(p, "$$") {
		return invalidPipeline("%s needs a field path such as \"$tags\"", where)
	}
	// The unwound field holds its elements: the same stored paths.
	if _, err := pv.ref(s, p[1:], "$"); err != nil {
		return err
	}
	if idx, ok := parsedb.EntryValue(entries, "includeArrayIndex"); ok {
		n, ok := idx.(string)
		if !ok {
			return invalidPipeline("%s: includeArrayIndex must be a field name", where)
		}
		if err := pv.checkOutputName(s, n, where); err != nil {
			return err
		}
		s.bind(prev, n, exprVal{})
	}
	return nil
}

func (pv *validator) groupStage(s *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok {
		return invalidPipeline("%s needs an object with _id and accumulators", where)
	}
	id, ok := parsedb.EntryValue(entries, "_id")
	if !ok {
		return invalidPipeline("%s needs an _id (the grouping key, e.g. \"$genre\", or null for one group)", where)
	}
	idVal, err := pv.value(s, id)
	if err != nil {
		return err
	}
	var outs []string
	var vals []exprVal
	for _, e := range entries {
		if e.Key == "_id" {
			continue
		}
		if err := pv.checkOutputName(s, e.Key, where); err != nil {
			return err
		}
		if strings.Contains(e.Key, ".") {
			return invalidPipeline("%s: output field %q cannot contain a dot", where, truncateText(e.Key, 60))
		}
		acc, ok := parsedb.Entries(e.Value)
		if !ok || !parsedb.IsOperatorObject(acc) {
			return invalidPipeline("%s: %s must be an accumulator such as {\"$sum\":1}", where, truncateText(e.Key, 60))
		}
		v, err := pv.accumulator(s, acc[0].Key, acc[0].Value)
		if err != nil {
			return err
		}
		outs = append(outs, e.Key)
		vals = append(vals, v)
	}
	s.reset(outs...)
	s.bind(nil, "_id", idVal)
	for i, o := range outs {
		s.bind(nil, o, vals[i])
	}
	return nil
}

// bucketStage validates $bucket and $bucketAuto.
func (pv *validator) bucketStage(s *fieldState, name string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok {
		return invalidPipeline("%s needs an object with groupBy", where)
	}
	gb, ok := parsedb.EntryValue(entries, "groupBy")
	if !ok {
		return invalidPipeline("%s needs groupBy", where)
	}
	// Buckets compare the value with the boundaries.
	if err := pv.operand(s, gb, name+" groupBy"); err != nil {
		return err
	}
	outs := []string{"count"}
	vals := []exprVal{{}}
	if out, ok := parsedb.EntryValue(entries, "output"); ok {
		oe, ok := parsedb.Entries(out)
		if !ok {
			return invalidPipeline("%s: output must be an object of accumulators", where)
		}
		outs, vals = outs[:0], vals[:0]
		for _, e := range oe {
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			var v exprVal
			var err error
			if acc, ok := parsedb.Entries(e.Value); ok && parsedb.IsOperatorObject(acc) {
				v, err = pv.accumulator(s, acc[0].Key, acc[0].Value)
			} else {
				err = pv.operand(s, e.Value, "a "+name+" output")
			}
			if err != nil {
				return err
			}
			outs = append(outs, e.Key)
			vals = append(vals, v)
		}
	}
	s.reset(outs...)
	for i, o := range outs {
		s.bind(nil, o, vals[i])
	}
	return nil
}

func (pv *validator) sortByCountStage(s *fieldState, _ string, arg any, _ string) error {
	// A group key: the value is copied whole into _id.
	v, err := pv.value(s, arg)
	if err != nil {
		return err
	}
	s.reset("count")
	s.bind(nil, "_id", v)
	s.bind(nil, "count", exprVal{})
	return nil
}

// replaceRootStage validates $replaceRoot and $replaceWith.
func (pv *validator) replaceRootStage(s *fieldState, name string, arg any, where string) error {
	root := arg
	if name == pipelinestage.ReplaceRoot {
		entries, ok := parsedb.Entries(arg)
		if !ok {
			return invalidPipeline("%s needs {\"newRoot\": …}", where)
		}
		if root, ok = parsedb.EntryValue(entries, "newRoot"); !ok {
			return invalidPipeline("%s needs {\"newRoot\": …}", where)
		}
	}
	v, err := pv.value(s, root)
	if err != nil {
		return err
	}
	if lit, ok := parsedb.Entries(root); ok && !parsedb.IsOperatorObject(lit) {
		var outs []string
		for _, e := range lit {
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			outs = append(outs, rootOf(e.Key))
		}
		s.reset(outs...)
		s.shapes = v.refs
		return nil
	}
	s.reset()
	s.anyRoot = true
	// The new documents are the value's: its fields come from where
	// its fields came from (nothing, for a computed root).
	s.shapes = v.refs
	return nil
}

func (pv *validator) redactStage(s *fieldState, _ string, arg any, where string) error {
	// $$DESCEND evaluates the condition again inside every embedded
	// document, where "$objectId" is an embedded pointer's id: the
	// paths would read below Object and Array values.
	if mentionsString(arg, "$$DESCEND") {
		return invalidPipeline("%s: $$DESCEND is not supported (it evaluates the condition inside embedded documents, below Object and Array values); decide with $$KEEP or $$PRUNE for the whole document", where)
	}
	return pv.operand(s, arg, "a $redact condition")
}

func (pv *validator) facetStage(s *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok || len(entries) == 0 {
		return invalidPipeline("%s needs an object of named sub-pipelines", where)
	}
	var outs []string
	var ends []*fieldState
	for _, e := range entries {
		if err := pv.checkOutputName(s, e.Key, where); err != nil {
			return err
		}
		branch, ok := parsedb.ArrayValues(e.Value)
		if !ok {
			return invalidPipeline("%s.%s must be an array of stages", where, truncateText(e.Key, 40))
		}
		end, err := pv.pipeline(s.clone(), branch, where+"."+e.Key)
		if err != nil {
			return err
		}
		end.frozen = true
		outs = append(outs, e.Key)
		ends = append(ends, end)
	}
	s.reset(outs...)
	for i, o := range outs {
		s.bind(nil, o, exprVal{refs: []vref{{st: ends[i]}}})
	}
	return nil
}

// project validates $project.
func (pv *validator) project(s *fieldState, _ string, arg any, where string) error {
	entries, ok := parsedb.Entries(arg)
	if !ok || len(entries) == 0 {
		return invalidPipeline("%s needs an object of fields", where)
	}
	inclusion := false
	for _, e := range entries {
		if e.Key == "_id" {
			continue
		}
		if !isExclusionValue(e.Value) {
			inclusion = true
		}
	}
	if !inclusion {
		for _, e := range entries {
			if isStorageForm(rootOf(e.Key), s.cls != nil) {
				return storageFormError(e.Key, "")
			}
			if err := pv.checkNotBelowOpaque(s, e.Key, where); err != nil {
				return err
			}
			if !strings.Contains(e.Key, ".") {
				delete(s.usable, e.Key)
			}
		}
		return nil
	}
	prev := pv.frozen(s)
	outs := []string{}
	var binds []binding
	for _, e := range entries {
		if e.Key == "_id" {
			if isExclusionValue(e.Value) {
				continue
			}
		}
		switch {
		case isInclusionValue(e.Value):
			// The field as it was (the root: a dotted inclusion keeps
			// part of it).
			if _, err := pv.ref(s, e.Key, ""); err != nil {
				return err
			}
			binds = append(binds, binding{rootOf(e.Key), exprVal{refs: []vref{{st: prev, path: rootOf(e.Key)}}}})
		case parsedb.IsSubProjection(e.Value):
			// {"meta": {"source": 1}}: a projection inside a field — of an
			// opaque one, a path below it (as the dotted form is).
			if s.names(e.Key) {
				if err := pv.checkNotBelowOpaque(s, e.Key+".*", where); err != nil {
					return err
				}
			}
			if _, err := pv.ref(s, e.Key, ""); err != nil {
				return err
			}
			binds = append(binds, binding{rootOf(e.Key), exprVal{refs: []vref{{st: prev, path: rootOf(e.Key)}}}})
			if err := pv.nestedProjection(s, e.Key, e.Value, &binds); err != nil {
				return err
			}
		default:
			if err := pv.checkOutputName(s, e.Key, where); err != nil {
				return err
			}
			v, err := pv.value(s, e.Value)
			if err != nil {
				return err
			}
			binds = append(binds, binding{e.Key, v})
		}
		outs = append(outs, rootOf(e.Key))
	}
	// An inclusion projection keeps storage names, so documents stay
	// class-shaped for the translation, but only the listed fields remain.
	cls := s.cls
	s.reset(outs...)
	s.cls = cls
	for _, b := range binds {
		s.bind(prev, b.key, b.v)
	}
	return nil
}

// names reports whether key names a value the documents hold — a field a
// stage bound, or a field of the class's schema — rather than a new name
// (a nested spec on a new name builds a new object: nothing to merge into).
func (s *fieldState) names(key string) bool {
	if _, _, ok := s.aliasOf(key); ok {
		return true
	}
	return s.cls != nil && s.cls.Field(rootOf(key)) != nil
}

// isPlainObject reports whether v is an object whose first key is not an
// operator ({"zz": 1}, as opposed to {"$concat": …}).
func isPlainObject(v any) bool {
	entries, ok := parsedb.Entries(v)
	return ok && len(entries) > 0 && !strings.HasPrefix(entries[0].Key, "$")
}

// binding is an output field of a stage and the value it gets.
type binding struct {
	key string
	v   exprVal
}

// nestedProjection checks a sub-projection's computed values: output
// fields below the projected field (path), copies like $project's.
func (pv *validator) nestedProjection(s *fieldState, path string, v any, binds *[]binding) error {
	entries, _ := parsedb.Entries(v)
	for _, e := range entries {
		if isInclusionValue(e.Value) || isExclusionValue(e.Value) {
			continue
		}
		if parsedb.IsSubProjection(e.Value) {
			if err := pv.nestedProjection(s, path+"."+e.Key, e.Value, binds); err != nil {
				return err
			}
			continue
		}
		ev, err := pv.value(s, e.Value)
		if err != nil {
			return err
		}
		*binds = append(*binds, binding{path + "." + e.Key, ev})
	}
	return nil
}

func isExclusionValue(v any) bool {
	if b, ok := v.(bool); ok {
		return !b
	}
	n, ok := pNumber(v)
	return ok && n == 0
}

func isInclusionValue(v any) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	n, ok := pNumber(v)
	return ok && n != 0
}
