// Command parse-mcp is an MCP server that gives desktop AI clients safe,
// policy-governed access to a Parse Server app's MongoDB database.
//
//	parse-mcp                      serve MCP over stdio (or HTTP with PARSE_MCP_HTTP_ADDR)
//	parse-mcp --demo               the same, over an embedded sample Parse database
//	parse-mcp call TOOL '{json}'   run one tool and print its result
//	parse-mcp describe             print the effective policy
//	parse-mcp would-permit TOOL CLASS
//	parse-mcp audit                list policy metadata gaps
//	parse-mcp chat                 talk to the data through an LLM (LLM_PROVIDER…)
//	parse-mcp ask "question"       one answer, for scripts
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/parse-mcp/parse-mcp/internal/version"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/parse-mcp/parse-mcp/internal/app"
	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/scrub"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
	"github.com/parse-mcp/parse-mcp/internal/terminal"
	"github.com/parse-mcp/parse-mcp/server"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1 // runtime failure (database unreachable, tool error in `call`)
	exitBadUsage = 2 // bad flags or configuration
	// exitInterrupted is `ask` cancelled by Ctrl-C (128 + SIGINT, as shells report).
	exitInterrupted = 130
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// cliFlags are the flags; each one set overrides its variable.
type cliFlags struct {
	demo                                  bool
	httpAddr, perms, policyFile, logLevel string
	version                               bool
}

func newFlagSet(stderr io.Writer, f *cliFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("parse-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&f.demo, "demo", false, "serve an embedded sample Parse database, no MongoDB needed (PARSE_MCP_DEMO)")
	fs.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on this address (PARSE_MCP_HTTP_ADDR)")
	fs.StringVar(&f.perms, "permissions", "", "readonly | write | admin (PARSE_MCP_PERMISSIONS)")
	fs.StringVar(&f.policyFile, "policy", "", "policy file, YAML or JSON (PARSE_MCP_POLICY_FILE)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug | info | warn | error (PARSE_MCP_LOG_LEVEL)")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: parse-mcp [flags] [call TOOL JSON | describe | would-permit TOOL CLASS | audit | chat | ask [--trace] QUESTION | embed CLASS]\n")
		fs.PrintDefaults()
	}
	return fs
}

// apply sets the configuration the flags override.
func (f *cliFlags) apply(cfg *config.Config) {
	cfg.Demo = cfg.Demo || f.demo
	if f.httpAddr != "" {
		cfg.HTTPAddr = f.httpAddr
	}
	if f.perms != "" {
		cfg.Permissions = f.perms
	}
	if f.policyFile != "" {
		cfg.PolicyFile = f.policyFile
	}
	if f.logLevel != "" {
		cfg.LogLevel = f.logLevel
	}
}

// scrubOutputs puts the scrubber on stderr, and for a command on stdout
// too, with the terminal filter (as escapes where JSON is written); flush
// writes out what they hold back.
func scrubOutputs(scrubber *scrub.Scrubber, cmd []string, stdout, stderr io.Writer) (io.Writer, io.Writer, func()) {
	scrubbedErr := scrubber.Writer(stderr)
	stderr = scrubbedErr
	if len(cmd) == 0 {
		// The server's stderr is its log (JSON lines): what the filter
		// would drop is written as its \u escape, for whoever tails it.
		return stdout, terminal.JSON(stderr), func() { scrubbedErr.Flush() }
	}
	stderr = terminal.Filter(stderr)
	scrubbedOut := scrubber.Writer(stdout)
	stdout = scrubbedOut
	if cmd[0] != "chat" && cmd[0] != "ask" {
		// JSON: what the filter would drop is written as its \u escape.
		stdout = terminal.JSON(stdout)
	}
	return stdout, stderr, func() {
		scrubbedOut.Flush()
		scrubbedErr.Flush()
	}
}

func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var flags cliFlags
	fs := newFlagSet(stderr, &flags)
	if err := fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBadUsage
	}
	if flags.version {
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	}

	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return exitBadUsage
	}
	// From here on every byte written passes the one scrubber of the
	// process's secrets, and a command's stderr (a person reads it) the
	// terminal filter as well (SECURITY.md "Secrets in output", "Terminal
	// output"). stdout of the MCP server is protocol and stays as it is.
	cmd := fs.Args()
	// The chat's settings are read apart from the configuration: its key and
	// its base URL's password are secrets too (a server without a key gets
	// that password as Basic auth, and may echo it).
	// So are the OTLP exporter's headers (a collector's credential).
	secrets := append(append(cfg.Secrets(), llmEnv("LLM_API_KEY")), config.URIPassword(llmEnv("LLM_BASE_URL"))...)
	scrubber := scrub.New(append(secrets, telemetry.HeaderSecrets(os.Getenv)...))
	rawStdout, stderrTTY := stdout, isTerminal(stderr)
	stdout, stderr, flush := scrubOutputs(scrubber, cmd, stdout, stderr)
	defer flush()
	flags.apply(cfg)
	// The command's shape is checked before the configuration: a flag put
	// after the command (`call … --demo`) would otherwise surface as a
	// configuration error about what that flag was meant to set.
	if len(cmd) > 0 {
		if msg := checkCommand(cmd, fs); msg != "" {
			fmt.Fprintf(stderr, "parse-mcp: %s\n", msg)
			return exitBadUsage
		}
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return exitBadUsage
	}
	conversational := len(cmd) > 0 && (cmd[0] == "chat" || cmd[0] == "ask")
	var chatCfg *chatSetup
	if conversational {
		var code int
		if chatCfg, code = loadChatSetup(cmd, stdin, stderr); chatCfg == nil {
			return code
		}
		// The terminal is the person's: only warnings and errors unless a
		// level was asked for.
		if flags.logLevel == "" && os.Getenv("PARSE_MCP_LOG_LEVEL") == "" {
			cfg.LogLevel = "warn"
		}
	}

	log, closeLog, err := startLog(cfg, stderr, scrubber, stderrTTY && conversational)
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_LOG_FILE: %v\n", err)
		return exitBadUsage
	}
	defer closeLog()

	// In `chat`, Ctrl-C cancels the answer being written, not the program
	// (chat.REPL handles SIGINT itself).
	signals := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	if len(cmd) > 0 && cmd[0] == "chat" {
		signals = signals[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	defer stop()

	// The server's listeners are bound before the database is touched: a
	// port in use is a configuration error, reported by its variable.
	httpListener, closeListeners, err := serverListeners(ctx, cfg, cmd, log)
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return exitBadUsage
	}
	defer closeListeners()

	a, code := app.Start(ctx, cfg, log, stderr, len(cmd) > 0 && cmd[0] == "audit")
	if a == nil {
		return code
	}
	defer a.Close()

	if conversational {
		return runChat(ctx, a, cfg, chatCfg, cmd[0], stdin, stdout, stderr, rawStdout)
	}
	if len(cmd) > 0 {
		return runCommand(ctx, a, cmd, stdout, stderr)
	}
	return serve(ctx, a, cfg, log, httpListener, stdin, stdout, stderr)
}

// startLog opens the log (newLogger), as text lines when a person reads it
// at a terminal (personal), and logs what the configuration ignores.
func startLog(cfg *config.Config, stderr io.Writer, scrubber *scrub.Scrubber, personal bool) (zerolog.Logger, func(), error) {
	log, closeLog, err := newLogger(cfg, stderr, scrubber)
	if err != nil {
		return log, closeLog, err
	}
	if personal && cfg.LogFile == "" {
		// A person reads this terminal: warnings as text lines, not JSON
		// (uncoloured: the terminal filter lets no escape sequence through).
		log = log.Output(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.Kitchen, NoColor: true})
	}
	if len(cfg.Blank) > 0 {
		log.Debug().Strs("variables", cfg.Blank).Msg("empty or unsubstituted ${…} settings are treated as unset")
	}
	if cfg.Demo && (cfg.MongoDBURI != "" || cfg.Database != "") {
		// Names only: the connection string may carry a password.
		log.Warn().Msg("demo mode: PARSE_MCP_MONGODB_URI and PARSE_MCP_DATABASE are ignored, the embedded sample database is served")
	}
	return log, closeLog, nil
}

// serve serves MCP over HTTP or stdio until ctx ends.
func serve(ctx context.Context, a *app.App, cfg *config.Config, log zerolog.Logger, httpListener net.Listener, stdin io.Reader, stdout, stderr io.Writer) int {
	// Package initialisation (the linked FerretDB, JSON Schema tables) and
	// start-up leave a few MB of garbage; hand it back to the OS once so the
	// long-lived server idles small.
	debug.FreeOSMemory()
	if cfg.HTTPAddr != "" {
		trusted, _ := cfg.TrustedProxyNets() // validated at start-up
		maxSessions, perClient, _, _ := cfg.HTTPCaps()
		named, _ := cfg.NamedAPIKeys() // validated at start-up
		auth, err := a.HTTPAuth(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
			return exitBadUsage
		}
		if err := server.ServeHTTP(ctx, a.Dispatcher, server.HTTPOptions{Addr: cfg.HTTPAddr, APIKey: cfg.APIKey, Log: log,
			TrustedProxies: trusted, MaxSessions: maxSessions, SessionsPerClient: perClient, NamedKeys: named,
			Listener: httpListener, Health: a.PingDatabase, Auth: auth}); err != nil {
			fmt.Fprintf(stderr, "parse-mcp: http: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	opts := server.StdioOptions{ProcsWhenAlone: stdioProcs(cfg.Demo, os.Getenv("GOMAXPROCS"))}
	if err := server.ServeStdio(ctx, a.Dispatcher, stdin, stdout, opts); err != nil && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("stdio transport stopped")
		return exitFailure
	}
	return exitOK
}

// stdioProcs is the GOMAXPROCS to serve stdio with while one call runs
// alone (server.StdioOptions), 0 to keep Go's default throughout: one
// client at a desk mostly calls one call at a time, and a call is a
// database round trip around a little CPU (server/stdio.go procGovernor).
// Not for --demo, whose database runs in this process, nor over HTTP, which
// serves many people; an operator's GOMAXPROCS wins.
func stdioProcs(demo bool, gomaxprocs string) int {
	if demo || gomaxprocs != "" {
		return 0
	}
	return 1
}

// commit is the source revision, stamped by `make release`
// (-ldflags "-X main.commit=…"); the version is version.Version, stamped the
// same way. A plain `go build` in a git checkout falls back to the revision
// Go records in the build info.
var commit string

// versionLine is what --version prints: the version, the commit (with
// "-dirty" when built from a modified tree) and the platform.
func versionLine() string {
	rev, dirty := commit, false
	if info, ok := debug.ReadBuildInfo(); ok && rev == "" {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	} else if dirty {
		rev += "-dirty"
	}
	return fmt.Sprintf("parse-mcp %s (commit %s, %s %s/%s)", version.Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// checkCommand checks a command's arguments; fs holds the global flags, which
// Go's flag package reads only before the command.
func checkCommand(cmd []string, fs *flag.FlagSet) string {
	for _, arg := range cmd[1:] {
		name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if strings.HasPrefix(arg, "-") && fs.Lookup(name) != nil {
			return fmt.Sprintf("flag %s must come before the command: parse-mcp %s %s …", arg, arg, cmd[0])
		}
	}
	switch cmd[0] {
	case "call":
		if len(cmd) < 2 || len(cmd) > 3 {
			return "usage: parse-mcp call TOOL ['{json arguments}']"
		}
	case "describe", "audit":
		if len(cmd) != 1 {
			return "usage: parse-mcp " + cmd[0]
		}
	case "would-permit":
		if len(cmd) < 2 || len(cmd) > 3 {
			return "usage: parse-mcp would-permit TOOL [CLASS]"
		}
	case "chat":
		if len(cmd) != 1 {
			return "usage: parse-mcp chat (the LLM is configured by LLM_PROVIDER, LLM_API_KEY, LLM_MODEL, LLM_BASE_URL)"
		}
	case "ask":
		if len(cmd) < 2 {
			return "usage: parse-mcp ask [--trace] \"question\" (or - to read it from stdin)"
		}
	case "embed":
		if _, _, ok := embedArgs(cmd); !ok {
			return "usage: parse-mcp embed CLASS [--all]"
		}
	default:
		return fmt.Sprintf("unknown command %q (expected call, describe, would-permit, audit, chat, ask or embed)", cmd[0])
	}
	return ""
}

// listenHTTP binds PARSE_MCP_HTTP_ADDR; its error names the variable.
func listenHTTP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	return nil, fmt.Errorf("PARSE_MCP_HTTP_ADDR (or --http): cannot listen on %s: %s", addr, listenReason(err))
}

// listenReason says why a listen failed, in the operator's words.
func listenReason(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return "address already in use (another process listens there; stop it or choose another host:port)"
	} else if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}

// serverListeners binds PARSE_MCP_HTTP_ADDR (when set) and
// PARSE_MCP_METRICS_ADDR and starts what the OTEL_* variables ask for
// (docs/observability.md), when the server is to run (no command); chat
// and ask start the traces only. The
// returned function flushes the last spans and closes the listeners.
func serverListeners(ctx context.Context, cfg *config.Config, cmd []string, log zerolog.Logger) (net.Listener, func(), error) {
	conversational := len(cmd) > 0 && (cmd[0] == "chat" || cmd[0] == "ask")
	if len(cmd) > 0 && !conversational {
		return nil, func() {}, nil
	}
	var httpListener, metrics net.Listener
	closeAll := func() {
		for _, l := range []net.Listener{httpListener, metrics} {
			if l != nil {
				_ = l.Close()
			}
		}
	}
	var err error
	// chat and ask trace (their model requests and tool calls) but
	// serve nothing: no MCP port, no metrics listener.
	if cfg.HTTPAddr != "" && !conversational {
		if httpListener, err = listenHTTP(cfg.HTTPAddr); err != nil {
			return nil, nil, err
		}
	}
	if cfg.MetricsAddr != "" && !conversational {
		if metrics, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("PARSE_MCP_METRICS_ADDR: cannot listen on %s: %s", cfg.MetricsAddr, listenReason(err))
		}
	}
	stop, err := telemetry.Start(ctx, telemetry.Options{Metrics: metrics, Log: log})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return httpListener, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stop(sctx)
		closeAll()
	}, nil
}

// newLogger logs to stderr (never stdout: it belongs to the protocol) and,
// with PARSE_MCP_LOG_FILE, to a file as well, through the scrubber and the
// terminal filter's JSON form (stderr has both already: run wraps it).
func newLogger(cfg *config.Config, stderr io.Writer, scrubber *scrub.Scrubber) (zerolog.Logger, func(), error) {
	level, err := zerolog.ParseLevel(strings.ToLower(cfg.LogLevel))
	if err != nil {
		level = zerolog.InfoLevel
	}
	var w io.Writer = stderr
	closeFn := func() {}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return zerolog.Logger{}, nil, err
		}
		file := scrubber.Writer(f)
		w = zerolog.MultiLevelWriter(stderr, terminal.JSON(file))
		closeFn = func() { _ = file.Flush(); _ = f.Close() }
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), closeFn, nil
}

// isTerminal reports whether w is a terminal (checked before run wraps it).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
