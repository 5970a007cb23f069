package pipeline

import (
	"strings"
	"unicode/utf8"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Regex safety in pipelines is the where translator's (SECURITY.md): $regex
// in $match (at any depth, $lookup and $facet sub-pipelines included) and
// the regex of $regexMatch/$regexFind/$regexFindAll are refused when over
// parsedb.MaxRegexLength characters (the where cap) or when parsedb.UnsafeRegex finds a nested or
// polynomial quantifier; options are limited to i, m and x as in where. A
// regex given by an expression ("$field") cannot be checked and is refused.

func checkPipelineRegex(op string, v any) error {
	s, ok := v.(string)
	if !ok {
		return toolerror.Violationf("%s pattern that is not a literal string", op)
	}
	if op != "$regex" && strings.HasPrefix(s, "$") {
		return toolerror.Violationf("%s regex taken from a field or variable", op)
	}
	if utf8.RuneCountInString(s) > parsedb.MaxRegexLength {
		return toolerror.Violationf("%s regex longer than %d characters", op, parsedb.MaxRegexLength)
	}
	if parsedb.UnsafeRegex(s) {
		return toolerror.Violationf("%s regex with a nested or polynomial quantifier", op)
	}
	return nil
}

func checkPipelineRegexOptions(op string, v any) error {
	s, ok := v.(string)
	if !ok || strings.Trim(s, "imx") != "" {
		return toolerror.Violationf("%s options outside i, m, x", op)
	}
	return nil
}
