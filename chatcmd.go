package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/app"
	"github.com/parse-mcp/parse-mcp/internal/chat"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/terminal"
)

// chatSetup is the LLM side of `chat` and `ask`, read before the database
// starts so that a missing LLM_PROVIDER fails at once.
type chatSetup struct {
	llm    chat.Config
	prices chat.Prices
	trace  bool   // ask --trace
	ask    string // the question of `ask`
}

// askArgs splits `ask [--trace] QUESTION…` (--trace may stand anywhere); a
// question of "-" is read from stdin.
func askArgs(args []string) (question string, trace bool) {
	var words []string
	for _, a := range args {
		if a == "--trace" || a == "-trace" {
			trace = true
			continue
		}
		words = append(words, a)
	}
	return strings.TrimSpace(strings.Join(words, " ")), trace
}

// llmEnv reads an LLM_* variable as the PARSE_MCP_* ones are read: empty or
// an unsubstituted ${…} placeholder counts as unset (docs/configuration.md "Configuration for a real Parse app").
func llmEnv(name string) string {
	v := strings.TrimSpace(os.Getenv(name))
	if config.IsPlaceholder(v) {
		return ""
	}
	return v
}

func loadChatSetup(cmd []string, stdin io.Reader, stderr io.Writer) (*chatSetup, int) {
	llm, err := chat.ConfigFromEnv(llmEnv)
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return nil, exitBadUsage
	}
	prices, err := chat.LoadPrices(llmEnv("LLM_PRICES"))
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return nil, exitBadUsage
	}
	s := &chatSetup{llm: llm, prices: prices}
	if cmd[0] != "ask" {
		return s, exitOK
	}
	s.ask, s.trace = askArgs(cmd[1:])
	if s.ask == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		if err != nil {
			fmt.Fprintf(stderr, "parse-mcp: ask: reading the question from stdin: %v\n", err)
			return nil, exitBadUsage
		}
		s.ask = strings.TrimSpace(string(b))
	}
	if s.ask == "" {
		fmt.Fprintln(stderr, "parse-mcp: usage: parse-mcp ask [--trace] \"question\" (or - to read it from stdin)")
		return nil, exitBadUsage
	}
	return s, exitOK
}

// runChat runs `chat` or `ask` on a started app: the model's tool calls go
// through the app's own dispatcher and policy (chat.MCPToolbox).
//
// stdout and stderr are run's: scrubbed, and stderr filtered for the
// terminal; rawStdout is stdout as the process got it (the line editor's
// echo of the person's typing, and whether it is a terminal).
func runChat(ctx context.Context, a *app.App, cfg *config.Config, setup *chatSetup, cmd string, stdin io.Reader, stdout, stderr, rawStdout io.Writer) int {
	setup.llm.OnRetry = func(attempt int, wait time.Duration, reason string) {
		fmt.Fprintf(stderr, "(%s: %s; retry %d in %s)\n", setup.llm.Kind, reason, attempt, wait.Round(100*time.Millisecond))
	}
	provider, err := chat.New(setup.llm)
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return exitBadUsage
	}
	if err := provider.Prepare(ctx); err != nil {
		if _, ok := errors.AsType[*chat.ConfigError](err); ok {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
			return exitBadUsage
		}
		fmt.Fprintf(stderr, "parse-mcp: %v\n", err)
		return exitFailure
	}
	sess := &chat.Session{Provider: provider, Toolbox: chat.NewMCPToolbox(a.Dispatcher), Permissions: cfg.Permissions}
	if err := sess.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "parse-mcp: %v\n", err)
		return exitFailure
	}
	if cmd == "chat" {
		r := &chat.REPL{Session: sess, Prices: setup.prices, In: stdin, Out: stdout, Echo: rawStdout,
			Banner: fmt.Sprintf("parse-mcp chat · %s %s · %d tools · permissions %s · identity %s\n/help lists the commands; Ctrl-C cancels an answer, Ctrl-D exits.",
				provider.Name(), provider.Model(), len(sess.Tools()), cfg.Permissions, cfg.Identity())}
		if err := r.Run(ctx); err != nil {
			fmt.Fprintf(stderr, "parse-mcp: chat: %v\n", err)
			return exitFailure
		}
		return exitOK
	}

	// ask: the answer streams to stdout; with --trace the tool calls and the
	// cost go to stderr.
	// The answer can carry what the model copied from untrusted rows: it
	// passes the terminal filter, in a pipe too (the script's reader may
	// be a terminal).
	sess.Out = terminal.Filter(stdout)
	sess.FinalOnly = !isTerminal(rawStdout)
	if setup.trace {
		sess.OnTool = func(e chat.TraceEntry) { fmt.Fprintf(stderr, "trace: %s\n", e) }
		sess.Narrate = func(text string) { fmt.Fprintf(stderr, "trace: model: %s\n", text) }
	}
	ans, err := sess.Ask(ctx, setup.ask)
	if err == nil && ans.CutOff {
		fmt.Fprintln(stderr, "parse-mcp: ask: "+chat.CutOffNote)
	}
	if setup.trace {
		fmt.Fprintf(stderr, "cost: %s\n", chat.CostLine(setup.prices, provider, sess.Total))
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "parse-mcp: ask: cancelled")
		return exitInterrupted
	default:
		fmt.Fprintf(stderr, "parse-mcp: ask: %v\n", err)
		return exitFailure
	}
}
