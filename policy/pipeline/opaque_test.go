package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/policy/pipeline"
)

// Opaque values in pipelines (SECURITY.md "Hidden references"): a value
// that may hold an Object or Array — wherever it comes from — can flow
// whole to the output and be filtered in $match with the where rules, but
// is refused as an operand of any expression operator and as a $sort key,
// so nothing below it (a nested pointer to a hidden class, an embedded
// {className: Hidden} object, a "Hidden$id" string) can be taken apart.

// opaqueSource is a way to hold an opaque value: the stages that put it in
// place, and the reference to it afterwards.
type opaqueSource struct {
	name, class string
	prefix      string // stages before, as a JSON list body ("" for none)
	ref         string // the expression that reads the value
	wrap        string // a stage whose sub-pipeline holds the position (POS)
}

var opaqueSources = []opaqueSource{
	{"base Object field", "", "", `"$meta"`, ""},
	{"base Array field", "", "", `"$tags"`, ""},
	{"path below an Object field", "", "", `"$meta.credential"`, ""},
	{"field missing from the schema", "", "", `"$notInSchema"`, ""},
	{"$$ROOT", "", "", `"$$ROOT"`, ""},
	{"$$CURRENT.meta", "", "", `"$$CURRENT.meta"`, ""},
	{"$getField of an Object field", "", "", `{"$getField":"meta"}`, ""},
	{"renamed by $addFields", "", `{"$addFields":{"m":"$meta"}}`, `"$m"`, ""},
	{"renamed by $set, then a path below", "", `{"$set":{"m":"$meta"}}`, `"$m.credential"`, ""},
	{"renamed by $project", "", `{"$project":{"m":"$tags"}}`, `"$m"`, ""},
	{"kept by an inclusion $project", "", `{"$project":{"meta":1}}`, `"$meta"`, ""},
	{"inside an object literal", "", `{"$addFields":{"o":{"a":"$meta"}}}`, `"$o.a"`, ""},
	{"an object literal holding it", "", `{"$addFields":{"o":{"a":"$meta"}}}`, `"$o"`, ""},
	{"inside an array literal", "", `{"$addFields":{"o":["$meta"]}}`, `"$o"`, ""},
	{"unwound Array field", "", `{"$unwind":"$tags"}`, `"$tags"`, ""},
	{"unwound, includeArrayIndex next to it", "", `{"$unwind":{"path":"$tags","includeArrayIndex":"i"}}`, `"$tags"`, ""},
	{"group key", "", `{"$group":{"_id":"$meta"}}`, `"$_id"`, ""},
	{"group key object", "", `{"$group":{"_id":{"m":"$meta","g":"$genre"}}}`, `"$_id.m"`, ""},
	{"group key object whole", "", `{"$group":{"_id":{"m":"$meta","g":"$genre"}}}`, `"$_id"`, ""},
	{"$push", "", `{"$group":{"_id":null,"m":{"$push":"$meta"}}}`, `"$m"`, ""},
	{"$addToSet of a path below", "", `{"$group":{"_id":null,"m":{"$addToSet":"$meta.credential"}}}`, `"$m"`, ""},
	{"$first", "", `{"$group":{"_id":"$genre","m":{"$first":"$tags"}}}`, `"$m"`, ""},
	{"$mergeObjects accumulator", "", `{"$group":{"_id":null,"m":{"$mergeObjects":"$meta"}}}`, `"$m.credential"`, ""},
	{"$push of $$ROOT", "", `{"$group":{"_id":null,"docs":{"$push":"$$ROOT"}}}`, `"$docs.meta"`, ""},
	{"$bucket output $push", "", `{"$bucket":{"groupBy":"$plays","boundaries":[0,10],"default":"o","output":{"m":{"$push":"$meta"}}}}`, `"$m"`, ""},
	{"$sortByCount key", "", `{"$sortByCount":"$meta"}`, `"$_id"`, ""},
	{"$facet output", "", `{"$facet":{"f":[{"$project":{"meta":1}}]}}`, `"$f.meta"`, ""},
	{"$facet output whole", "", `{"$facet":{"f":[{"$match":{"genre":"x"}}]}}`, `"$f"`, ""},
	{"$replaceRoot into an Object", "", `{"$replaceRoot":{"newRoot":"$meta"}}`, `"$credential"`, ""},
	{"$replaceWith $$ROOT", "", `{"$replaceWith":"$$ROOT"}`, `"$meta"`, ""},
	{"$replaceRoot object literal", "", `{"$replaceRoot":{"newRoot":{"k":"$meta"}}}`, `"$k"`, ""},
	{"$setField on $$ROOT keeps the rest", "", `{"$replaceWith":{"$setField":{"field":"x","input":"$$ROOT","value":1}}}`, `"$meta"`, ""},
	{"$lookup as, a joined Object field", "", `{"$lookup":{"from":"Song","localField":"title","foreignField":"title","as":"j"}}`, `"$j.meta"`, ""},
	{"$lookup as, whole", "", `{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"j"}}`, `"$j"`, ""},
	{"$lookup as, unwound", "", `{"$lookup":{"from":"Song","localField":"title","foreignField":"title","as":"j"}},{"$unwind":"$j"}`, `"$j.tags"`, ""},
	{"$lookup pipeline output", "", `{"$lookup":{"from":"Song","pipeline":[{"$project":{"m":"$meta"}}],"as":"j"}}`, `"$j.m"`, ""},
	{"$graphLookup as", "", `{"$graphLookup":{"from":"Song","startWith":"$title","connectFromField":"title","connectToField":"title","as":"g"}}`, `"$g.meta"`, ""},
	{"$unionWith rows", "Artist", `{"$unionWith":"Song"}`, `"$meta"`, ""},
	{"$unionWith after a rename", "Artist", `{"$addFields":{"meta":"$name"}},{"$unionWith":"Song"}`, `"$meta"`, ""},
	{"$unionWith pipeline output", "Artist", `{"$unionWith":{"coll":"Song","pipeline":[{"$project":{"name":"$meta"}}]}}`, `"$name"`, ""},
	{"$facet branch sees the parent's", "", `{"$addFields":{"m":"$meta"}},{"$facet":{"f":[{"$unwind":"$m"}]}},{"$unwind":"$f"}`, `"$f.m"`, ""},
	// Positions inside sub-pipelines, on the joined class's own values.
	{"in a $lookup pipeline, the joined class's Object field", "Artist", "", `"$meta"`, `{"$lookup":{"from":"Song","pipeline":[POS],"as":"q"}}`},
	{"in a $lookup pipeline, after its own rename", "Artist", "", `"$m"`, `{"$lookup":{"from":"Song","pipeline":[{"$addFields":{"m":"$tags"}},POS],"as":"q"}}`},
	{"in a $unionWith pipeline", "Artist", "", `"$tags"`, `{"$unionWith":{"coll":"Song","pipeline":[POS]}}`},
	{"in a $facet branch", "", "", `"$meta.credential"`, `{"$facet":{"b":[POS]}}`},
	{"in a nested $lookup pipeline", "Artist", "", `"$$ROOT"`, `{"$lookup":{"from":"Album","pipeline":[{"$lookup":{"from":"Song","pipeline":[POS],"as":"s"}}],"as":"q"}}`},
}

// opaquePositions compute on X (the source's reference, as JSON).
var opaquePositions = []struct{ name, stage string }{
	{"$project $objectToArray", `{"$project":{"x":{"$objectToArray":X}}}`},
	{"$project $concat", `{"$project":{"x":{"$concat":[X,""]}}}`},
	{"$project $toString", `{"$project":{"x":{"$toString":X}}}`},
	{"$project $split", `{"$project":{"x":{"$split":[X,"-"]}}}`},
	{"$project $substrCP", `{"$project":{"x":{"$substrCP":[X,0,20]}}}`},
	{"$project $regexMatch", `{"$project":{"x":{"$regexMatch":{"input":X,"regex":"^a"}}}}`},
	{"$addFields $arrayElemAt", `{"$addFields":{"x":{"$arrayElemAt":[X,0]}}}`},
	{"$set $first", `{"$set":{"x":{"$first":X}}}`},
	{"$set $last", `{"$set":{"x":{"$last":X}}}`},
	{"$project $filter", `{"$project":{"x":{"$filter":{"input":X,"as":"e","cond":true}}}}`},
	{"$project $map", `{"$project":{"x":{"$map":{"input":X,"as":"e","in":"$$e"}}}}`},
	{"$project $reduce", `{"$project":{"x":{"$reduce":{"input":X,"initialValue":"","in":"$$value"}}}}`},
	{"$project $getField input", `{"$project":{"x":{"$getField":{"field":"objectId","input":X}}}}`},
	{"$project $in", `{"$project":{"x":{"$in":[{"a":1},X]}}}`},
	{"$project $setIntersection", `{"$project":{"x":{"$setIntersection":[X,["a"]]}}}`},
	{"$project $let", `{"$project":{"x":{"$let":{"vars":{"v":X},"in":"$$v"}}}}`},
	{"$project $cond", `{"$project":{"x":{"$cond":[true,X,null]}}}`},
	{"$project $ifNull", `{"$project":{"x":{"$ifNull":[X,1]}}}`},
	{"$project $mergeObjects", `{"$project":{"x":{"$mergeObjects":[X,{}]}}}`},
	{"$project nested in an object literal", `{"$project":{"x":{"o":{"$toString":X}}}}`},
	{"$match $expr $eq", `{"$match":{"$expr":{"$eq":[X,{"__type":"Pointer","className":"Artist","objectId":"a"}]}}}`},
	{"$match $expr $gt", `{"$match":{"$expr":{"$gt":[X,"m"]}}}`},
	{"$match $expr whole", `{"$match":{"$expr":X}}`},
	{"$group _id computed", `{"$group":{"_id":{"$toString":X}}}`},
	{"$group $max", `{"$group":{"_id":null,"x":{"$max":X}}}`},
	{"$group $sum", `{"$group":{"_id":null,"x":{"$sum":X}}}`},
	{"$group $top output", `{"$group":{"_id":null,"x":{"$top":{"sortBy":{"plays":1},"output":X}}}}`},
	{"$group $push computed", `{"$group":{"_id":null,"x":{"$push":{"$toString":X}}}}`},
	{"$bucket groupBy", `{"$bucket":{"groupBy":X,"boundaries":[0,1],"default":"o"}}`},
	{"$bucketAuto groupBy", `{"$bucketAuto":{"groupBy":X,"buckets":2}}`},
	{"$bucket output $max", `{"$bucket":{"groupBy":"$plays","boundaries":[0,1],"default":"o","output":{"x":{"$max":X}}}}`},
	{"$sortByCount computed", `{"$sortByCount":{"$toString":X}}`},
	{"$facet branch", `{"$facet":{"a":[{"$project":{"x":{"$toString":X}}}]}}`},
	{"$lookup let", `{"$lookup":{"from":"Artist","let":{"v":X},"pipeline":[{"$match":{"$expr":{"$eq":["$$v","$name"]}}}],"as":"q"}}`},
	{"$replaceWith computed", `{"$replaceWith":{"$arrayToObject":{"$objectToArray":X}}}`},
	{"$replaceRoot $mergeObjects", `{"$replaceRoot":{"newRoot":{"$mergeObjects":[X,{"a":1}]}}}`},
	{"$redact", `{"$redact":{"$cond":[{"$eq":[X,1]},"$$KEEP","$$PRUNE"]}}`},
	{"$setField value", `{"$replaceWith":{"$setField":{"field":"x","input":"$$ROOT","value":{"$concat":[X]}}}}`},
	{"after $unwind of itself", `{"$unwind":X},{"$project":{"x":{"$toString":X}}}`},
}

func opaquePipeline(src opaqueSource, stage string) string {
	body := strings.ReplaceAll(stage, "X", src.ref)
	if src.wrap != "" {
		body = strings.Replace(src.wrap, "POS", body, 1)
	}
	if src.prefix != "" {
		body = src.prefix + "," + body
	}
	return "[" + body + "]"
}

func TestPipelineOpaqueValuesRefused(t *testing.T) {
	e := pipeEngine(t, nil)
	for _, src := range opaqueSources {
		for _, pos := range opaquePositions {
			if strings.HasPrefix(pos.name, "after $unwind") && (!strings.HasPrefix(src.ref, `"$`) || strings.HasPrefix(src.ref, `"$$`)) {
				continue // $unwind takes a field path
			}
			if src.ref == `"$$ROOT"` && pos.name == "$project $getField input" {
				continue // {$getField: {field: "objectId", input: "$$ROOT"}} is "$objectId"
			}
			class := src.class
			if class == "" {
				class = "Song"
			}
			p := opaquePipeline(src, pos.stage)
			t.Run(src.name+"/"+pos.name, func(t *testing.T) {
				_, err := validatePipe(t, e, class, p)
				if got := pipeOutcome(err); got != "invalid_query" {
					t.Fatalf("%s\n got %s (%v)\nwant invalid_query", p, got, err)
				}
				if te, _ := toolerror.As(err); te == nil || !strings.Contains(te.Message, "may hold an Object or Array value") {
					t.Fatalf("%s: refused for another reason: %v", p, err)
				}
			})
		}
		if strings.HasPrefix(src.ref, `"$`) && !strings.HasPrefix(src.ref, `"$$`) {
			var ref string
			_ = json.Unmarshal([]byte(src.ref), &ref)
			class := src.class
			if class == "" {
				class = "Song"
			}
			p := opaquePipeline(src, `{"$sort":{"`+ref[1:]+`":1}}`)
			t.Run(src.name+"/$sort key", func(t *testing.T) {
				_, err := validatePipe(t, e, class, p)
				if got := pipeOutcome(err); got != "invalid_query" {
					t.Fatalf("%s\n got %s (%v)\nwant invalid_query", p, got, err)
				}
			})
		}
	}
}

// Whole-value positions keep working for every source: the output is
// redacted by the row codec, and nothing computes on the value.
func TestPipelineOpaqueValuesFlowWhole(t *testing.T) {
	e := pipeEngine(t, nil)
	positions := []struct{ name, stage string }{
		{"$project pass-through", `{"$project":{"x":X}}`},
		{"$addFields copy", `{"$addFields":{"x":X}}`},
		{"$project in an object literal", `{"$project":{"x":{"a":X,"n":1}}}`},
		{"$group _id", `{"$group":{"_id":X,"n":{"$sum":1}}}`},
		{"$group _id object", `{"$group":{"_id":{"k":X},"n":{"$count":{}}}}`},
		{"$push", `{"$group":{"_id":null,"all":{"$push":X}}}`},
		{"$addToSet", `{"$group":{"_id":null,"all":{"$addToSet":X}}}`},
		{"$first/$last", `{"$group":{"_id":null,"f":{"$first":X},"l":{"$last":X}}}`},
		{"$sortByCount", `{"$sortByCount":X}`},
		{"shape only: $size $isArray $type", `{"$project":{"n":{"$size":X},"a":{"$isArray":X},"t":{"$type":X}}}`},
		{"$graphLookup startWith", `{"$graphLookup":{"from":"Artist","startWith":X,"connectFromField":"parent","connectToField":"objectId","as":"t"}}`},
		{"$facet branch pass-through", `{"$facet":{"a":[{"$project":{"x":X}}]}}`},
	}
	for _, src := range opaqueSources {
		class := src.class
		if class == "" {
			class = "Song"
		}
		for _, pos := range positions {
			p := opaquePipeline(src, pos.stage)
			t.Run(src.name+"/"+pos.name, func(t *testing.T) {
				if _, err := validatePipe(t, e, class, p); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
			})
		}
	}
}

// $match on an opaque value follows the where rules: sub-paths are
// accepted (and read, so they get the conjunct); a literal naming a hidden
// class or a missing one is refused with the same answer.
// refPathCase is a pipeline the validator accepts and the stored paths it
// must report as read.
type refPathCase struct {
	name, class, pipeline string
	refPaths              []string // want among RefPaths
	join                  string   // "Class:path" among JoinRefPaths
}

// checkRefPaths validates each pipeline (on Song unless a class is given)
// and checks the paths that get the conjunct.
func checkRefPaths(t *testing.T, e *policy.Engine, cases []refPathCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class := c.class
			if class == "" {
				class = "Song"
			}
			vp, err := validatePipe(t, e, class, c.pipeline)
			if err != nil {
				t.Fatalf("%s: %v", c.pipeline, err)
			}
			for _, p := range c.refPaths {
				if !slices.Contains(vp.RefPaths, p) {
					t.Errorf("RefPaths %v lack %s", vp.RefPaths, p)
				}
			}
			if c.join != "" {
				cls, path, _ := strings.Cut(c.join, ":")
				if !slices.Contains(vp.JoinRefPaths[cls], path) {
					t.Errorf("JoinRefPaths %v lack %s", vp.JoinRefPaths, c.join)
				}
			}
		})
	}
}

func TestPipelineOpaqueMatch(t *testing.T) {
	e := pipeEngine(t, nil)
	checkRefPaths(t, e, []refPathCase{
		{"sub-path regex", "", `[{"$match":{"meta.credential.objectId":{"$regex":"^a"}}}]`, []string{"meta.credential.objectId"}, ""},
		{"sub-path of a renamed field", "", `[{"$addFields":{"m":"$meta"}},{"$match":{"m.credential.objectId":{"$gt":"m"}}}]`, []string{"meta.credential.objectId"}, ""},
		{"sub-path of a group key", "", `[{"$group":{"_id":"$meta"}},{"$match":{"_id.credential.objectId":"x"}}]`, []string{"meta.credential.objectId"}, ""},
		{"sub-path of $push", "", `[{"$group":{"_id":null,"m":{"$push":"$meta"}}},{"$match":{"m.credential.objectId":"x"}}]`, []string{"meta.credential.objectId"}, ""},
		{"unwound element sub-path", "", `[{"$unwind":"$tags"},{"$match":{"tags.className":"x"}}]`, []string{"tags.className"}, ""},
		{"$elemMatch sub-path", "", `[{"$match":{"tags":{"$elemMatch":{"objectId":{"$regex":"^a"}}}}}]`, []string{"tags.objectId"}, ""},
		{"$replaceRoot then a field", "", `[{"$replaceRoot":{"newRoot":"$meta"}},{"$match":{"credential.objectId":"x"}}]`, []string{"meta.credential.objectId"}, ""},
		{"joined field", "", `[{"$lookup":{"from":"Song","localField":"title","foreignField":"title","as":"j"}},{"$match":{"j.meta.credential.objectId":{"$regex":"^a"}}}]`, nil, "Song:meta.credential.objectId"},
		{"inside a $lookup pipeline", "", `[{"$lookup":{"from":"Song","pipeline":[{"$match":{"meta.credential.objectId":{"$regex":"^a"}}}],"as":"j"}}]`, nil, "Song:meta.credential.objectId"},
		{"$unionWith rows", "Artist", `[{"$unionWith":"Song"},{"$match":{"meta.credential.objectId":"x"}}]`, nil, "Song:meta.credential.objectId"},
		{"$graphLookup restrictSearchWithMatch", "", `[{"$graphLookup":{"from":"Song","startWith":"$title","connectFromField":"title","connectToField":"title","as":"g","restrictSearchWithMatch":{"meta.credential.objectId":"x"}}}]`, nil, "Song:meta.credential.objectId"},
	})

	// Whole-value literals naming a hidden class and a missing one: the same
	// refusal, in every way of reaching an opaque value.
	literals := []string{
		`{"credential":{"__type":"Pointer","className":%q,"objectId":"abc"}}`,
		`{"$gt":{"credential":{"__type":"Pointer","className":%q,"objectId":"m"}}}`,
		`{"$in":[{"credential":{"className":%q}}]}`,
		`{"credential":"%s$abc"}`,
		`{"$lt":{"credential":"%s$b~"}}`,
		`{"$elemMatch":{"$eq":{"className":%q}}}`,
	}
	paths := []struct{ prefix, path string }{
		{"", "meta"},
		{"", "tags"},
		{`{"$addFields":{"m":"$meta"}},`, "m"},
		{`{"$lookup":{"from":"Song","localField":"title","foreignField":"title","as":"j"}},`, "j.meta"},
		{`{"$group":{"_id":"$meta"}},`, "_id"},
	}
	for _, p := range paths {
		for _, lit := range literals {
			var msgs []string
			for _, class := range []string{"VaultSecret", "NoSuchClass"} {
				value := strings.ReplaceAll(lit, "%q", `"`+class+`"`)
				value = strings.ReplaceAll(value, "%s", class)
				pipeline := `[` + p.prefix + `{"$match":{"` + p.path + `":` + value + `}}]`
				_, err := validatePipe(t, e, "Song", pipeline)
				if pipeOutcome(err) != "invalid_query" {
					t.Fatalf("%s: %v", pipeline, err)
				}
				te, _ := toolerror.As(err)
				msgs = append(msgs, te.Message)
			}
			if msgs[0] != msgs[1] {
				t.Errorf("hidden and missing differ on %s %s:\n%s\n%s", p.path, lit, msgs[0], msgs[1])
			}
		}
	}
	// Ranges over a whole Object or Array with an object or array operand
	// bisect what lies below (field by field: {objectId: "m"} orders
	// against a stored {objectId, className} without naming the class).
	runPipeCases(t, e, []pipeCase{
		{"$gt object on an Object field", "", `[{"$match":{"meta":{"$gt":{"credential":{"objectId":"m"}}}}}]`, "invalid_query"},
		{"$lte array on an Array field", "", `[{"$match":{"tags":{"$lte":[{"objectId":"m"}]}}}]`, "invalid_query"},
		{"$lt inside $not", "", `[{"$match":{"meta":{"$not":{"$lt":{"a":"m"}}}}}]`, "invalid_query"},
		{"$gte inside $elemMatch", "", `[{"$match":{"tags":{"$elemMatch":{"$gte":{"objectId":"m"}}}}}]`, "invalid_query"},
		{"$gt on a group key", "", `[{"$group":{"_id":"$meta"}},{"$match":{"_id":{"$gt":{"credential":{"objectId":"m"}}}}}]`, "invalid_query"},
		{"$gt on a joined Object", "", `[{"$lookup":{"from":"Song","localField":"title","foreignField":"title","as":"j"}},{"$match":{"j.meta":{"$gt":{"objectId":"m"}}}}]`, "invalid_query"},
		{"$gt with a scalar on an Object field", "", `[{"$match":{"meta":{"$gt":"m"}}}]`, "ok"},
		{"$gte with a Parse date on a Date field", "", `[{"$match":{"releasedAt":{"$gte":{"__type":"Date","iso":"2020-01-01T00:00:00Z"}}}}]`, "ok"},
		{"$gt with a number below an Object field", "", `[{"$match":{"meta.bpm":{"$gt":100}}}]`, "ok"},
	})

	// A visible class in the literal is fine.
	if _, err := validatePipe(t, e, "Song", `[{"$match":{"meta":{"credential":{"__type":"Pointer","className":"Artist","objectId":"a"}}}}]`); err != nil {
		t.Fatal(err)
	}
}

// Plain values are protected by the conjunct wherever they come from: a
// renamed string, a joined class's string, a $unionWith row's string.
func TestPipelineConjunctFollowsCopies(t *testing.T) {
	e := pipeEngine(t, nil)
	checkRefPaths(t, e, []refPathCase{
		{"renamed by $project", "", `[{"$project":{"s":"$title"}},{"$project":{"x":{"$split":["$s","-"]}}}]`, []string{"title"}, ""},
		{"kept by an inclusion $project", "", `[{"$project":{"title":1}},{"$project":{"x":{"$substrCP":["$title",0,3]}}}]`, []string{"title"}, ""},
		{"group key", "", `[{"$group":{"_id":"$genre"}},{"$project":{"x":{"$split":["$_id","-"]}}}]`, []string{"genre"}, ""},
		{"$push then $reduce", "", `[{"$group":{"_id":null,"t":{"$push":"$title"}}},{"$project":{"x":{"$reduce":{"input":"$t","initialValue":"","in":{"$concat":["$$value","$$this"]}}}}}]`, []string{"title"}, ""},
		{"joined string", "", `[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},{"$unwind":"$a"},{"$project":{"n":{"$toUpper":"$a.name"}}}]`, nil, "Artist:name"},
		{"joined array of strings", "", `[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},{"$project":{"n":{"$arrayElemAt":["$a.name",0]}}}]`, nil, "Artist:name"},
		{"$unionWith after a computed field", "Artist", `[{"$addFields":{"title":"x"}},{"$unionWith":"Album"},{"$project":{"x":{"$split":["$title","-"]}}}]`, nil, "Album:title"},
		{"$lookup foreignField", "", `[{"$lookup":{"from":"Album","localField":"title","foreignField":"title","as":"a"}}]`, []string{"title"}, "Album:title"},
		{"$facet output", "", `[{"$facet":{"f":[{"$project":{"t":"$title"}}]}},{"$unwind":"$f"},{"$project":{"x":{"$split":["$f.t","-"]}}}]`, []string{"title"}, ""},
	})
}

// $redact with $$DESCEND evaluates its condition inside embedded
// documents, where "$objectId" is an embedded pointer's id: refused.
func TestPipelineRedactDescend(t *testing.T) {
	runPipeCases(t, pipeEngine(t, nil), []pipeCase{
		{"$$DESCEND", "", `[{"$redact":{"$cond":[{"$eq":["$objectId","abc"]},"$$PRUNE","$$DESCEND"]}}]`, "invalid_query"},
		{"$$DESCEND through $let", "", `[{"$redact":{"$let":{"vars":{"d":"$$DESCEND"},"in":"$$d"}}}]`, "invalid_query"},
		{"$$DESCEND in a $facet branch", "", `[{"$facet":{"a":[{"$redact":{"$cond":[true,"$$DESCEND","$$PRUNE"]}}]}}]`, "invalid_query"},
		{"top-level decision", "", `[{"$redact":{"$cond":[{"$eq":["$genre","rock"]},"$$KEEP","$$PRUNE"]}}]`, "ok"},
	})
}

// Typical pipelines keep working.
func TestPipelineOpaqueAccepts(t *testing.T) {
	runPipeCases(t, pipeEngine(t, nil), []pipeCase{
		{"count", "", `[{"$match":{"genre":"rock"}},{"$count":"n"}]`, "ok"},
		{"group by a string field", "", `[{"$group":{"_id":"$genre","n":{"$sum":1},"p":{"$avg":"$plays"}}},{"$sort":{"n":-1}}]`, "ok"},
		{"group by a path inside an Object", "", `[{"$group":{"_id":"$meta.source","n":{"$sum":1}}}]`, "ok"},
		{"pass-through projection", "", `[{"$project":{"title":1,"meta":1,"tags":1}}]`, "ok"},
		{"$lookup, $unwind, joined string computed on", "", `[{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}},{"$unwind":"$a"},{"$project":{"title":1,"n":{"$concat":["$a.name","!"]}}}]`, "ok"},
		{"tags count", "", `[{"$project":{"n":{"$size":{"$ifNull":["$title",[]]}}}}]`, "ok"},
		{"size of an Array field", "", `[{"$project":{"n":{"$size":"$tags"}}},{"$group":{"_id":null,"t":{"$sum":"$n"}}}]`, "ok"},
		{"unwind then group by element", "", `[{"$unwind":"$tags"},{"$sortByCount":"$tags"}]`, "ok"},
		{"$match on a whole Array with a plain value", "", `[{"$match":{"tags":"rock"}}]`, "ok"},
		{"computed plain fields stay plain", "", `[{"$addFields":{"n":{"$size":"$tags"}}},{"$project":{"d":{"$multiply":["$n",2]}}}]`, "ok"},
		{"$$ROOT into $push and back", "", `[{"$group":{"_id":"$genre","docs":{"$push":"$$ROOT"}}},{"$project":{"titles":"$docs.title","n":{"$size":"$docs"}}}]`, "ok"},
		{"joined docs counted", "", `[{"$lookup":{"from":"Album","localField":"album","foreignField":"objectId","as":"al"}},{"$project":{"n":{"$size":"$al"}}}]`, "ok"},
	})
}

// The refusal names the reference and not the data: an Object field with
// no hidden reference anywhere is refused exactly like one with some.
func TestPipelineOpaqueRefusalIsByType(t *testing.T) {
	e := pipeEngine(t, nil)
	_, err1 := validatePipe(t, e, "Song", `[{"$project":{"x":{"$objectToArray":"$meta"}}}]`)
	_, err2 := validatePipe(t, e, "Song", `[{"$project":{"x":{"$objectToArray":"$meta"}}},{"$match":{"meta.credential.className":"VaultSecret"}}]`)
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Fatalf("%v\n%v", err1, err2)
	}
	// A joined class's Pointer into a hidden class is refused as the base
	// class's is.
	_, err := validatePipe(t, e, "Song", `[{"$lookup":{"from":"AuditLog","pipeline":[],"as":"a"}},{"$project":{"x":"$a.secret"}}]`)
	_, base := validatePipe(t, e, "AuditLog", `[{"$project":{"x":"$secret"}}]`)
	if err == nil || pipeOutcome(err) != pipeOutcome(base) {
		t.Fatalf("joined pointer into a hidden class: %v (base: %v)", err, base)
	}
}

// Resolving where a value comes from costs in proportion to the pipeline,
// not to the number of ways a value can be reached: $$ROOT copied into
// three fields at every stage reaches the first stage's rows 3^n ways.
func TestPipelineResolveIsLinear(t *testing.T) {
	e := pipeEngine(t, nil)
	schema := pipeSchema()
	steps := func(stages int) int {
		p := decodePipeline(t, "["+strings.Repeat(`{"$addFields":{"a":"$$ROOT","b":"$$ROOT","c":"$$ROOT"}},`, stages)+`{"$project":{"x":"$$ROOT"}}]`)
		n, err := pipeline.ResolveSteps(context.Background(), e.PipelinePolicy(), schema, schema.Class("Song"), p)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	small, large := steps(3), steps(10)
	if large > 8*small {
		t.Fatalf("resolution steps: %d for 3 stages, %d for 10: not linear", small, large)
	}
}

// TestPipelineNoWritesBelowOpaque: a stage
// that sets, removes or projects a path below an opaque value could strip
// the className/__type that marks an embedded reference, and the row
// encoder would show a hidden object's id; such output paths are refused,
// whole-value ones kept. Nested specs count as the dotted paths MongoDB
// makes of them (it merges {"meta":{…}} into the stored document).
func TestPipelineNoWritesBelowOpaque(t *testing.T) {
	e := pipeEngine(t, nil)
	validateDemo := func(t *testing.T, p string) error {
		_, err := validatePipe(t, e, "Song", p)
		return err
	}
	refused := []string{
		`[{"$unset":"meta.credential.className"}]`,
		`[{"$unset":["meta.credential.__type","meta.credential.className"]}]`,
		`[{"$project":{"meta.credential.className":0}}]`,
		`[{"$project":{"meta":{"credential":{"className":0}}}}]`,
		`[{"$project":{"meta":{"credential":{"objectId":1}}}}]`,
		`[{"$addFields":{"meta.credential.className":"Song"}}]`,
		`[{"$set":{"meta.extra":1}}]`,
		`[{"$addFields":{"meta":{"zz":1}}}]`,
		`[{"$addFields":{"meta":{"credential":{"className":"Song"}}}}]`,
		`[{"$addFields":{"m":"$meta"}},{"$unset":"m.credential.className"}]`,
		`[{"$unwind":{"path":"$tags","includeArrayIndex":"meta.credential.className"}}]`,
		`[{"$lookup":{"from":"Album","localField":"title","foreignField":"title","as":"meta.credential.className"}}]`,
		`[{"$addFields":{"tags.0":1}}]`,
	}
	for _, p := range refused {
		if got := pipeOutcome(validateDemo(t, p)); got != "invalid_query" {
			t.Errorf("%s: %s, want invalid_query", p, got)
		}
	}
	accepted := []string{
		`[{"$unset":"meta"}]`,
		`[{"$project":{"meta":0}}]`,
		`[{"$addFields":{"meta":"$title"}}]`,
		`[{"$addFields":{"loc":{"t":"$title","n":1}}}]`,
		`[{"$project":{"o":{"t":"$title"}}}]`,
		`[{"$project":{"meta.source":1}}]`,
	}
	for _, p := range accepted {
		if got := pipeOutcome(validateDemo(t, p)); got != "ok" {
			t.Errorf("%s: %s, want ok", p, got)
		}
	}
}

// TestPipelineLiteralsNameNoInvisibleClass: a literal naming a hidden class came back redacted and one
// naming a missing class as written — one call told them apart, and a join
// or group could compare the literal whole with a stored value. Every value
// position refuses such a literal, hidden and missing alike; a visible
// class's stays usable.
func TestPipelineLiteralsNameNoInvisibleClass(t *testing.T) {
	e := pipeEngine(t, nil)
	positions := []string{
		`[{"$addFields":{"x":"%s$abcdefghij"}}]`,
		`[{"$addFields":{"x":"%s$ab~"}}]`,
		`[{"$project":{"x":{"$literal":{"className":"%s","objectId":"a"}}}}]`,
		`[{"$project":{"x":{"$literal":"%s$abcdefghij"}}}]`,
		`[{"$addFields":{"k":{"credential":{"__type":"Pointer","className":"%s","objectId":"a"}}}}]`,
		`[{"$project":{"y":{"$concat":["%s$","$title"]}}}]`,
		`[{"$group":{"_id":"%s$abcdefghij","n":{"$sum":1}}}]`,
		`[{"$addFields":{"k":["%s$abcdefghij"]}}]`,
	}
	for _, p := range positions {
		var answers []string
		for _, cls := range []string{"VaultSecret", "NoSuchClzz"} {
			_, err := validatePipe(t, e, "Song", fmt.Sprintf(p, cls))
			answers = append(answers, pipeOutcome(err))
			if pipeOutcome(err) != "invalid_query" {
				t.Errorf("%s with %s: %s, want invalid_query", p, cls, pipeOutcome(err))
			}
		}
		if answers[0] != answers[1] {
			t.Errorf("%s: hidden %s, missing %s", p, answers[0], answers[1])
		}
		if _, err := validatePipe(t, e, "Song", fmt.Sprintf(p, "Artist")); err != nil {
			t.Errorf("%s with a visible class: %v", p, err)
		}
	}
}
