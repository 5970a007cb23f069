package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/app"
	"github.com/parse-mcp/parse-mcp/tools"
)

// embedArgs reads `embed CLASS [--all]`; the flag may also come first
// (`embed --all CLASS`), as a person who knows other CLIs writes it.
func embedArgs(cmd []string) (class string, all, ok bool) {
	for _, arg := range cmd[1:] {
		switch {
		case arg == "--all" && !all:
			all = true
		case class == "" && !strings.HasPrefix(arg, "-"):
			class = arg
		default:
			return "", false, false
		}
	}
	if class == "" {
		return "", false, false
	}
	return class, all, true
}

// runEmbed is `parse-mcp embed CLASS [--all]`: it backfills the class's
// vectors in batches, reporting progress on stderr; interrupted, it resumes
// where it stopped on the next run (rows done keep their vectors).
func runEmbed(ctx context.Context, a *app.App, cmd []string, stderr io.Writer) int {
	class, all, _ := embedArgs(cmd)
	n, err := tools.Backfill(ctx, a.Deps, class, all, func(done, total int64) {
		fmt.Fprintf(stderr, "parse-mcp: embed %s: %d/%d rows\n", class, done, total)
	})
	if err != nil {
		if n == 0 && ctx.Err() == nil {
			// Nothing was written (no embedder, no vector field, a first
			// request refused): running it again as is would not help.
			fmt.Fprintf(stderr, "parse-mcp: embed %s: %v\n", class, err)
			return exitFailure
		}
		fmt.Fprintf(stderr, "parse-mcp: embed %s stopped after %d rows: %v (run it again to resume)\n", class, n, err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "parse-mcp: embed %s: done, %d rows embedded\n", class, n)
	return exitOK
}
