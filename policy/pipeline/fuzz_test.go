package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
	"github.com/parse-mcp/parse-mcp/policy/pipeline"
)

// pipeFuzzSeeds are typical pipelines and attacks; the fuzzer mutates them.
var pipeFuzzSeeds = []string{
	`[{"$match":{"genre":"rock"}},{"$group":{"_id":"$artist","n":{"$sum":1}}},{"$sort":{"n":-1}},{"$limit":5}]`,
	`[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},{"$unwind":"$a"}]`,
	`[{"$facet":{"a":[{"$sortByCount":"$genre"}],"b":[{"$count":"n"}]}}]`,
	`[{"$unionWith":{"coll":"Album","pipeline":[{"$match":{"title":"x"}}]}}]`,
	`[{"$graphLookup":{"from":"Artist","startWith":"$artist","connectFromField":"parent","connectToField":"objectId","as":"t"}}]`,
	`[{"$project":{"x":"$_hashed_password"}}]`,
	`[{"$match":{"_rperm":{"$in":["*"]}}}]`,
	`[{"$out":"x"}]`,
	`[{"$facet":{"a":[{"$merge":{"into":"x"}}]}}]`,
	`[{"$lookup":{"from":"VaultSecret","pipeline":[],"as":"s"}}]`,
	`[{"$lookup":{"from":"_SCHEMA","pipeline":[],"as":"s"}}]`,
	`[{"$unset":["_rperm"]},{"$replaceWith":{"$mergeObjects":["$$ROOT",{"a":1}]}}]`,
	`[{"$project":{"x":{"$getField":{"field":"_rperm","input":"$$ROOT"}}}}]`,
	`[{"$addFields":{"x":{"$function":{"body":"f","args":[],"lang":"js"}}}}]`,
	`[{"$group":{"_id":"$_p_artist"}}]`,
	`[{"$bucket":{"groupBy":"$plays","boundaries":[0,10],"default":"o","output":{"n":{"$sum":1}}}}]`,
	`[{"$match":{"$expr":{"$regexMatch":{"input":"$title","regex":"^a"}}}}]`,
	`[{"$lookup":{"from":"_User","let":{"d":"$$ROOT"},"pipeline":[{"$match":{"$expr":{"$eq":["$username","$$d.title"]}}}],"as":"u"}}]`,
	// Values below an Object/Array taken apart (opaqueLeak).
	`[{"$project":{"x":{"$objectToArray":"$meta"}}}]`,
	`[{"$addFields":{"x":{"$arrayElemAt":["$tags",0]}}}]`,
	`[{"$match":{"$expr":{"$eq":[{"$getField":{"field":"objectId","input":"$meta.credential"}},"abc"]}}}]`,
	`[{"$group":{"_id":{"$toString":"$$ROOT"}}}]`,
	`[{"$sort":{"meta":1}}]`,
	`[{"$project":{"meta":1,"n":{"$size":"$tags"}}},{"$group":{"_id":"$meta","all":{"$push":"$tags"}}}]`,
}

// opaqueLeak returns why a pipeline accepted on Song computes on a value
// that may hold an Object or Array in its first stage (where documents are
// still Song's rows and references mean Song's fields): a direct operand
// of an expression operator other than the shape-only ones, or a $sort
// key (SECURITY.md "Hidden references").
func opaqueLeak(stages []any) string {
	if len(stages) == 0 {
		return ""
	}
	entries, ok := parsedb.Entries(stages[0])
	if !ok || len(entries) != 1 {
		return ""
	}
	name, arg := entries[0].Key, entries[0].Value
	args, _ := parsedb.Entries(arg)
	switch name {
	case "$sort":
		for _, e := range args {
			if isOpaqueSongRef("$" + e.Key) {
				return "$sort by " + e.Key
			}
		}
	case "$match":
		if x, ok := parsedb.EntryValue(args, "$expr"); ok {
			return exprOpaqueLeak(x, "")
		}
	case "$project", "$addFields", "$set":
		for _, e := range args {
			if r := exprOpaqueLeak(e.Value, ""); r != "" {
				return r
			}
		}
	case "$group", "$bucket", "$bucketAuto":
		for _, e := range args {
			switch e.Key {
			case "_id", "boundaries", "default", "buckets":
				if r := exprOpaqueLeak(e.Value, ""); r != "" {
					return r
				}
			case "groupBy":
				if isOpaqueSongRef(e.Value) {
					return name + " groupBy " + e.Value.(string)
				}
				if r := exprOpaqueLeak(e.Value, ""); r != "" {
					return r
				}
			default:
				accs := []parsedb.Entry{e}
				if e.Key == "output" {
					accs, _ = parsedb.Entries(e.Value)
				}
				for _, a := range accs {
					acc, ok := parsedb.Entries(a.Value)
					if ok && len(acc) == 1 && copyAccumulators[acc[0].Key] {
						if r := exprOpaqueLeak(acc[0].Value, ""); r != "" {
							return r
						}
						continue
					}
					if r := exprOpaqueLeak(a.Value, ""); r != "" {
						return r
					}
				}
			}
		}
	case "$sortByCount", "$replaceWith", "$redact":
		return exprOpaqueLeak(arg, "")
	case "$replaceRoot":
		if x, ok := parsedb.EntryValue(args, "newRoot"); ok {
			return exprOpaqueLeak(x, "")
		}
	}
	return ""
}

// isOpaqueSongRef: a reference to Song's Object/Array fields, below them,
// to a field missing from its schema, or to the whole document.
func isOpaqueSongRef(v any) bool {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "$") {
		return false
	}
	if s == "$$ROOT" || s == "$$CURRENT" {
		return true
	}
	s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(s, "$$ROOT."), "$$CURRENT."), "$")
	root := rootOf(s)
	return root == "meta" || root == "tags" || root == "notInSchema"
}

// exprOpaqueLeak walks an expression; op is the operator v is an operand
// of ("" for a position that copies v whole).
func exprOpaqueLeak(v any, op string) string {
	if op != "" && !shapeOperators[op] && isOpaqueSongRef(v) {
		return fmt.Sprintf("%v is an operand of %s", v, op)
	}
	if entries, ok := parsedb.Entries(v); ok {
		if parsedb.IsOperatorObject(entries) {
			o, arg := entries[0].Key, entries[0].Value
			switch o {
			case "$literal":
				return ""
			case "$getField", "$setField", "$unsetField":
				// A literal field of the current document is a reference.
				if a, ok := parsedb.Entries(arg); ok {
					if in, ok := parsedb.EntryValue(a, "input"); ok && in != "$$ROOT" && in != "$$CURRENT" {
						if r := exprOpaqueLeak(in, o); r != "" {
							return r
						}
					}
					if val, ok := parsedb.EntryValue(a, "value"); ok {
						return exprOpaqueLeak(val, o)
					}
				}
				return ""
			}
			if arr, ok := parsedb.ArrayValues(arg); ok {
				for _, el := range arr {
					if r := exprOpaqueLeak(el, o); r != "" {
						return r
					}
				}
				return ""
			}
			if named, ok := parsedb.Entries(arg); ok && !parsedb.IsOperatorObject(named) {
				for _, e := range named {
					if r := exprOpaqueLeak(e.Value, o); r != "" {
						return r
					}
				}
				return ""
			}
			return exprOpaqueLeak(arg, o)
		}
		for _, e := range entries {
			// An object literal inside an operand is part of the operand.
			if r := exprOpaqueLeak(e.Value, op); r != "" {
				return r
			}
		}
		return ""
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		for _, el := range arr {
			if r := exprOpaqueLeak(el, op); r != "" {
				return r
			}
		}
	}
	return ""
}

// nameFields are, per stage, the options that hold field names (not "$"
// references) in their string values.
var nameFields = map[string]map[string]bool{
	"$lookup":      {"localField": true, "foreignField": true, "as": true},
	"$graphLookup": {"connectFromField": true, "connectToField": true, "as": true, "depthField": true},
	"$unwind":      {"includeArrayIndex": true},
}

// pipelineLeak returns why a pipeline breaks the accepted-pipeline
// invariant: a blocked operator anywhere, or an internal field as a key,
// as a "$" reference, as a field name of a join/unwind/count option, or in
// $getField/$setField/$unsetField. $unset names are exempt (removal).
func pipelineLeak(stages any, hidden func(string) bool) string {
	arr, _ := parsedb.ArrayValues(stages)
	for _, st := range arr {
		if entries, ok := parsedb.Entries(st); ok && len(entries) == 1 && entries[0].Key == "$count" {
			if n, ok := entries[0].Value.(string); ok && hasInternalSegment(n) {
				return "internal name in $count"
			}
		}
		if r := valueLeak(st, "", hidden); r != "" {
			return r
		}
	}
	return ""
}

func valueLeak(v any, parentKey string, hidden func(string) bool) string {
	if entries, ok := parsedb.Entries(v); ok {
		for _, e := range entries {
			if blockedPipeline[e.Key] {
				return "blocked operator " + e.Key
			}
			if hasInternalSegment(e.Key) {
				return "internal key " + e.Key
			}
			if str, ok := e.Value.(string); ok {
				if nameFields[parentKey][e.Key] && hasInternalSegment(str) {
					return "internal name in " + parentKey + "." + e.Key
				}
				fieldOp := parentKey == "$getField" || parentKey == "$setField" || parentKey == "$unsetField"
				if (e.Key == "$getField" || e.Key == "$setField" || e.Key == "$unsetField" || e.Key == "field" && fieldOp) && parsedb.IsInternalField(str) {
					return "internal field in " + e.Key
				}
				if (e.Key == "from" && (parentKey == "$lookup" || parentKey == "$graphLookup") || e.Key == "coll" && parentKey == "$unionWith" || e.Key == "$unionWith" && parentKey == "") && hidden(str) {
					return "join into hidden " + str
				}
			}
			switch {
			case e.Key == "$unset":
				continue
			case e.Key == "pipeline" && (parentKey == "$lookup" || parentKey == "$unionWith"):
				if r := pipelineLeak(e.Value, hidden); r != "" {
					return r
				}
				continue
			case e.Key == "$facet":
				branches, _ := parsedb.Entries(e.Value)
				for _, br := range branches {
					if r := pipelineLeak(br.Value, hidden); r != "" {
						return r
					}
				}
				continue
			}
			if r := valueLeak(e.Value, e.Key, hidden); r != "" {
				return r
			}
		}
		return ""
	}
	if arr, ok := parsedb.ArrayValues(v); ok {
		for _, el := range arr {
			if r := valueLeak(el, parentKey, hidden); r != "" {
				return r
			}
		}
		return ""
	}
	if str, ok := v.(string); ok && strings.HasPrefix(str, "$") && hasInternalSegment(str) {
		return "internal reference " + str
	}
	return ""
}

func FuzzValidatePipeline(f *testing.F) {
	for _, s := range pipeFuzzSeeds {
		f.Add([]byte(s))
	}
	e := pipeEngine(f, nil)
	schema := pipeSchema()
	hidden := func(c string) bool { return e.Hidden(c) }
	f.Fuzz(func(t *testing.T, data []byte) {
		var p []any
		if json.Unmarshal(data, &p) != nil {
			// Not JSON: let the bytes drive a generator that speaks the
			// pipeline grammar, so every input exercises the validator.
			p = genPipeline(&fuzzBytes{b: data})
		}
		for _, class := range []string{"Song", "Patient", "_User"} {
			vp, err := e.ValidatePipeline(context.Background(), schema, schema.Class(class), p)
			if err != nil {
				continue
			}
			if r := pipelineLeak(p, hidden); r != "" {
				t.Fatalf("accepted on %s but %s: %s", class, r, data)
			}
			if class == "Song" {
				if r := opaqueLeak(p); r != "" {
					t.Fatalf("accepted on Song but %s: %s", r, data)
				}
			}
			// The translated pipeline keeps the invariant too.
			joins := map[string]*parsedb.JoinScope{}
			for _, jc := range vp.Joins {
				if e.Hidden(jc.Name) {
					t.Fatalf("join into hidden class %s accepted: %s", jc.Name, data)
				}
				joins[jc.Name] = &parsedb.JoinScope{Filter: bson.D{{Key: "_rperm", Value: bson.D{{Key: "$in", Value: bson.A{nil, "*"}}}}}, Fields: []string{"_id", "name"}}
			}
			out, _, err := parsedb.TranslatePipeline(schema.Class(class), vp.Stages, parsedb.PipelineOptions{Schema: schema, Joins: joins})
			if err != nil {
				continue // a model-fixable value error (pointer shape, date)
			}
			// The injected scope filter names _rperm on purpose; strip it.
			b, _ := bson.MarshalExtJSON(bson.D{{Key: "p", Value: out}}, false, false)
			text := strings.ReplaceAll(string(b), `{"_rperm":{"$in":[null,"*"]}}`, `{}`)
			var back map[string]any
			if err := json.Unmarshal([]byte(text), &back); err != nil {
				t.Fatalf("translated pipeline does not round-trip: %v", err)
			}
			if r := pipelineLeak(back["p"], hidden); r != "" {
				t.Fatalf("translated pipeline on %s: %s: %s\n%s", class, r, data, text)
			}
		}
	})
}

// TestOpaqueLeakChecker makes sure the opaque-value oracle sees attacks and
// lets whole-value flows through.
func TestOpaqueLeakChecker(t *testing.T) {
	n := len(pipeFuzzSeeds)
	for i, s := range pipeFuzzSeeds[n-6:] {
		var p []any
		_ = json.Unmarshal([]byte(s), &p)
		r := opaqueLeak(p)
		if (r == "") != (i == 5) {
			t.Errorf("seed %s: oracle says %q", s, r)
		}
	}
}

// TestPipelineLeakChecker makes sure the fuzz oracle itself sees attacks.
func TestPipelineLeakChecker(t *testing.T) {
	e := pipeEngine(t, nil)
	for i, s := range pipeFuzzSeeds[5:15] {
		var p []any
		_ = json.Unmarshal([]byte(s), &p)
		r := pipelineLeak(p, e.Hidden)
		if i == 6 || i == 9 {
			continue // $unset / $_p_ seeds are not leaks
		}
		if r == "" {
			t.Errorf("seed %d not flagged: %s", i+5, s)
		}
	}
}

// fuzzBytes hands out fuzz input bytes (zeros once exhausted).
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next(n int) int {
	if f.i >= len(f.b) || n <= 0 {
		return 0
	}
	v := int(f.b[f.i]) % n
	f.i++
	return v
}

var (
	genStages = append(pipelinestage.Names(), "$out", "$merge", "$search", "$collStats", "$documents", "$foo")
	genKeys   = []string{"title", "genre", "ssn", "name", "_id", "objectId", "createdAt", "_created_at", "_rperm", "_hashed_password",
		"_auth_data_github", "authData", "sessionToken", "_p_artist", "artist", "meta.x", "$sum", "$avg", "$push", "$out", "$function",
		"$accumulator", "$where", "$getField", "$setField", "field", "input", "value", "from", "as", "localField", "foreignField",
		"pipeline", "coll", "let", "newRoot", "path", "includeArrayIndex", "$regex", "regex", "$regexMatch", "groupBy", "output",
		"$literal", "$expr", "$and", "$or", "$eq", "$in", "$concat", "startWith", "connectFromField", "connectToField", "depthField",
		"restrictSearchWithMatch", "boundaries", "default", "size", "$mergeObjects", "$objectToArray", "$let", "vars", "in",
		"meta", "tags", "$toString", "$split", "$arrayElemAt", "$filter", "$size", "$type", "$first", "$addToSet", "$max"}
	genStrings = []string{"$title", "$genre", "$ssn", "$artist", "$_hashed_password", "$_p_artist", "$$ROOT", "$$ROOT._rperm",
		"$$ROOT.name", "$$CURRENT.ssn", "$authData.github", "$_auth_data_x", "$sessionToken", "$$x", "$_id", "$createdAt",
		"Artist", "VaultSecret", "_SCHEMA", "_User", "_Session", "_Join:users:_Role", "Patient", "_Hooks", "_Role", "Song",
		"_rperm", "_hashed_password", "title", "ssn", "n", "x", "", "$", "$$", strings.Repeat("a", 600),
		"$meta", "$tags", "$meta.credential", "$$ROOT.meta", "$notInSchema"}
)

func genValue(f *fuzzBytes, depth int) any {
	if depth > 6 {
		return genStrings[f.next(len(genStrings))]
	}
	switch f.next(7) {
	case 0, 1:
		return genStrings[f.next(len(genStrings))]
	case 2:
		return float64(f.next(5) - 1)
	case 3:
		return f.next(2) == 1
	case 4:
		n := f.next(4)
		a := make([]any, 0, n)
		for range n {
			a = append(a, genValue(f, depth+1))
		}
		return a
	case 5:
		return genPipelineN(f, depth+1, 1+f.next(3))
	}
	n := 1 + f.next(3)
	m := map[string]any{}
	for range n {
		m[genKeys[f.next(len(genKeys))]] = genValue(f, depth+1)
	}
	return m
}

func genPipelineN(f *fuzzBytes, depth, n int) []any {
	p := make([]any, 0, n)
	for range n {
		p = append(p, map[string]any{genStages[f.next(len(genStages))]: genValue(f, depth+1)})
	}
	return p
}

func genPipeline(f *fuzzBytes) []any { return genPipelineN(f, 0, 1+f.next(4)) }

// hasInternalSegment reports whether a segment of a field reference
// ("$a.b", "$$ROOT.a", "a.b") is an internal field (the oracle's own copy
// of the validator's rule).
func hasInternalSegment(ref string) bool {
	return slices.ContainsFunc(strings.Split(strings.TrimLeft(ref, "$"), "."), parsedb.IsInternalField)
}

// The validator's operator sets, for the oracles.
var (
	copyAccumulators = pipeline.CopyAccumulators
	shapeOperators   = pipeline.ShapeOperators
	blockedPipeline  = func() map[string]bool {
		m := map[string]bool{}
		for _, op := range pipeline.BlockedOperators {
			m[op] = true
		}
		return m
	}()
)

// rootOf is the first segment of a path.
func rootOf(path string) string {
	before, _, _ := strings.Cut(path, ".")
	return before
}
