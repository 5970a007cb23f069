package tools

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsetest"
	"github.com/parse-mcp/parse-mcp/internal/pipelinestage"
)

// stageExamples holds one valid use of every stage of the shared table
// (internal/pipelinestage), on aggSchema's Song class.
var stageExamples = map[string]string{
	"$match":       `{"$match":{"genre":"rock"}}`,
	"$group":       `{"$group":{"_id":"$genre","n":{"$sum":1}}}`,
	"$sort":        `{"$sort":{"plays":-1}}`,
	"$project":     `{"$project":{"title":1,"plays":1}}`,
	"$limit":       `{"$limit":5}`,
	"$skip":        `{"$skip":5}`,
	"$unwind":      `{"$unwind":"$tags"}`,
	"$lookup":      `{"$lookup":{"from":"Artist","localField":"artist","foreignField":"objectId","as":"a"}}`,
	"$count":       `{"$count":"n"}`,
	"$addFields":   `{"$addFields":{"double":{"$multiply":["$plays",2]}}}`,
	"$set":         `{"$set":{"double":{"$multiply":["$plays",2]}}}`,
	"$unset":       `{"$unset":"meta"}`,
	"$bucket":      `{"$bucket":{"groupBy":"$plays","boundaries":[0,100,1000],"default":"other"}}`,
	"$bucketAuto":  `{"$bucketAuto":{"groupBy":"$plays","buckets":3}}`,
	"$facet":       `{"$facet":{"byGenre":[{"$sortByCount":"$genre"}]}}`,
	"$sample":      `{"$sample":{"size":3}}`,
	"$sortByCount": `{"$sortByCount":"$genre"}`,
	"$replaceRoot": `{"$replaceRoot":{"newRoot":{"t":"$title"}}}`,
	"$replaceWith": `{"$replaceWith":{"t":"$title"}}`,
	"$redact":      `{"$redact":"$$KEEP"}`,
	"$graphLookup": `{"$graphLookup":{"from":"Artist","startWith":"$artist","connectFromField":"objectId","connectToField":"objectId","as":"chain"}}`,
	"$unionWith":   `{"$unionWith":{"coll":"Artist","pipeline":[{"$project":{"name":1}}]}}`,
}

// TestPipelineStagesAgree proves that the pipeline validator (policy), the
// translator (parsedb) and the aggregate tool agree on the one table of
// stages (internal/pipelinestage): every stage of the table passes all three
// (a dry run validates and translates), and stages outside it are refused
// before anything runs. That each layer has a function for every entry and
// none for a stage outside it is TestStageValidatorsMatchTable
// (policy/pipeline) and TestStageTranslationsCoverTable (parsedb); that no
// layer names a stage but through the table is TestStageNamesOnlyInTable.
func TestPipelineStagesAgree(t *testing.T) {
	d := aggDeps(t, func(c *config.Config) { c.Permissions = config.TierReadonly })
	for _, stage := range pipelinestage.Names() {
		ex, ok := stageExamples[stage]
		if !ok {
			t.Errorf("%s is in the stage table but has no example here: add one", stage)
			continue
		}
		args := fmt.Sprintf(`{"class_name":"Song","pipeline":[%s],"dry_run":true}`, ex)
		if _, err := aggCall(t, d, handlerOf("aggregate"), args); err != nil {
			t.Errorf("%s: refused by the validator or the translator: %v", stage, err)
		}
	}
	for stage := range stageExamples {
		if !slices.Contains(pipelinestage.Names(), stage) {
			t.Errorf("example for %s, which is not in the stage table", stage)
		}
	}
	for _, stage := range []string{"$densify", "$fill", "$setWindowFields", "$geoNear", "$collStats", "$indexStats",
		"$currentOp", "$listSessions", "$changeStream", "$documents", "$planCacheStats", "$out", "$merge"} {
		args := fmt.Sprintf(`{"class_name":"Song","pipeline":[{%q:{}}],"dry_run":true}`, stage)
		_, err := aggCall(t, d, handlerOf("aggregate"), args)
		if got := parsetest.Outcome(err); got != "violation" && got != "invalid_query" {
			t.Errorf("%s outside the table: %s, want a refusal", stage, got)
		}
	}
}

// TestStageNamesOnlyInTable: the pipeline layers — the validator
// (policy/pipeline), the translator (internal/parsedb/pipeline.go) and the
// aggregate tool (aggregate.go) — name a stage only through the table's
// constants, never as a string literal of their own (a message may mention
// one), so a stage's facts cannot drift from its entry.
func TestStageNamesOnlyInTable(t *testing.T) {
	files, err := filepath.Glob("../policy/pipeline/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no validator sources: %v", err)
	}
	files = append(files, "../internal/parsedb/pipeline.go", "aggregate.go")
	stages := map[string]bool{}
	for _, name := range pipelinestage.Names() {
		stages[name] = true
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && stages[s] {
				t.Errorf("%s names the stage %s as a string literal: use pipelinestage's constant and table", f, s)
			}
			return true
		})
	}
}
