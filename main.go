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
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"golang.org/x/term"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/server"
	"github.com/parse-mcp/parse-mcp/tools"
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

func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parse-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	demoFlag := fs.Bool("demo", false, "serve an embedded sample Parse database, no MongoDB needed (PARSE_MCP_DEMO)")
	httpAddr := fs.String("http", "", "serve streamable HTTP on this address (PARSE_MCP_HTTP_ADDR)")
	perms := fs.String("permissions", "", "readonly | write | admin (PARSE_MCP_PERMISSIONS)")
	policyFile := fs.String("policy", "", "policy file, YAML or JSON (PARSE_MCP_POLICY_FILE)")
	logLevel := fs.String("log-level", "", "debug | info | warn | error (PARSE_MCP_LOG_LEVEL)")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: parse-mcp [flags] [call TOOL JSON | describe | would-permit TOOL CLASS | audit | chat | ask [--trace] QUESTION | embed CLASS]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBadUsage
	}
	if *version {
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	}

	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return exitBadUsage
	}
	cfg.Demo = cfg.Demo || *demoFlag
	if *httpAddr != "" {
		cfg.HTTPAddr = *httpAddr
	}
	if *perms != "" {
		cfg.Permissions = *perms
	}
	if *policyFile != "" {
		cfg.PolicyFile = *policyFile
	}
	if *logLevel != "" {
		cfg.LogLevel = *logLevel
	}
	// The command's shape is checked before the configuration: a flag put
	// after the command (`call … --demo`) would otherwise surface as a
	// configuration error about what that flag was meant to set.
	cmd := fs.Args()
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
		if *logLevel == "" && os.Getenv("PARSE_MCP_LOG_LEVEL") == "" {
			cfg.LogLevel = "warn"
		}
	}

	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_LOG_FILE: %v\n", err)
		return exitBadUsage
	}
	defer closeLog()
	if f, ok := stderr.(*os.File); ok && conversational && cfg.LogFile == "" && term.IsTerminal(int(f.Fd())) {
		// A person reads this terminal: warnings as text lines, not JSON.
		log = log.Output(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.Kitchen})
	}
	if len(cfg.Blank) > 0 {
		log.Debug().Strs("variables", cfg.Blank).Msg("empty or unsubstituted ${…} settings are treated as unset")
	}
	if cfg.Demo && (cfg.MongoDBURI != "" || cfg.Database != "") {
		// Names only: the connection string may carry a password.
		log.Warn().Msg("demo mode: PARSE_MCP_MONGODB_URI and PARSE_MCP_DATABASE are ignored, the embedded sample database is served")
	}

	// In `chat`, Ctrl-C cancels the answer being written, not the program
	// (chat.REPL handles SIGINT itself).
	signals := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	if len(cmd) > 0 && cmd[0] == "chat" {
		signals = signals[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	defer stop()

	// The HTTP address is bound before the database is touched: a port in
	// use is a configuration error, reported at once and by its variable.
	var httpListener net.Listener
	if cfg.HTTPAddr != "" && len(cmd) == 0 {
		if httpListener, err = listenHTTP(cfg.HTTPAddr); err != nil {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
			return exitBadUsage
		}
		defer httpListener.Close()
	}

	app, code := start(ctx, cfg, log, stderr, len(cmd) > 0 && cmd[0] == "audit")
	if app == nil {
		return code
	}
	defer app.Close()

	if conversational {
		return runChat(ctx, app, cfg, chatCfg, cmd[0], stdin, stdout, stderr)
	}
	if len(cmd) > 0 {
		return runCommand(ctx, app, cmd, stdout, stderr)
	}
	// Package initialisation (the linked FerretDB, JSON Schema tables) and
	// start-up leave a few MB of garbage; hand it back to the OS once so the
	// long-lived server idles small.
	debug.FreeOSMemory()
	if cfg.HTTPAddr != "" {
		trusted, _ := cfg.TrustedProxyNets() // validated at start-up
		maxSessions, perClient, _, _ := cfg.HTTPCaps()
		named, _ := cfg.NamedAPIKeys() // validated at start-up
		auth, err := httpAuth(cfg, app)
		if err != nil {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
			return exitBadUsage
		}
		if err := server.ServeHTTP(ctx, app.dispatcher, server.HTTPOptions{Addr: cfg.HTTPAddr, APIKey: cfg.APIKey, Log: log,
			TrustedProxies: trusted, MaxSessions: maxSessions, SessionsPerClient: perClient, NamedKeys: named,
			Listener: httpListener, Health: app.pingDatabase, Auth: auth}); err != nil {
			fmt.Fprintf(stderr, "parse-mcp: http: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	if err := server.ServeStdio(ctx, app.dispatcher, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("stdio transport stopped")
		return exitFailure
	}
	return exitOK
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
		if len(cmd) < 2 || len(cmd) > 3 || len(cmd) == 3 && cmd[2] != "--all" {
			return "usage: parse-mcp embed CLASS [--all]"
		}
	default:
		return fmt.Sprintf("unknown command %q (expected call, describe, would-permit, audit, chat, ask or embed)", cmd[0])
	}
	return ""
}

// app is a started server: database connection, policy and MCP registry.
type app struct {
	store      *parsedb.Store
	deps       *tools.Deps
	dispatcher *server.Dispatcher
	embedded   *embeddeddb.Server
}

// pingDatabase is GET /health's database check.
func (a *app) pingDatabase(ctx context.Context) error {
	return a.store.Client.Ping(ctx, nil)
}

func (a *app) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = a.store.Close(ctx)
	if a.embedded != nil {
		a.embedded.Stop()
	}
}

// start connects to the database (or starts the demo one), loads the policy
// and builds the registry. On failure it has already printed one clear line
// and returns the exit code.
func start(ctx context.Context, cfg *config.Config, log zerolog.Logger, stderr io.Writer, lenientPolicy bool) (*app, int) {
	var file *policy.File
	var err error
	switch {
	case cfg.PolicyFile != "":
		file, err = policy.LoadFile(cfg.PolicyFile)
	case cfg.Demo:
		file, err = policy.Parse(demo.PolicyYAML, false)
	}
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
		return nil, exitBadUsage
	}

	// The Parse Server is checked first: a wrong setting there is reported
	// before anything else starts.
	bridge, code := connectBridge(ctx, cfg, log, stderr)
	if code != exitOK {
		return nil, code
	}

	a := &app{}
	uri, dbName := cfg.MongoDBURI, cfg.DatabaseName()
	if cfg.Demo {
		dir := cfg.DemoDir
		if dir == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				base = os.TempDir()
			}
			dir = filepath.Join(base, "parse-mcp", "demo")
		}
		if err := usableDir(dir); err != nil {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_DEMO_DIR: %v (set it to a writable directory)\n", err)
			return nil, exitBadUsage
		}
		// FerretDB's own logs are noise for a demo user; at debug level they
		// go to stderr (never stdout) to diagnose the embedded database.
		var dbLog io.Writer
		if strings.EqualFold(cfg.LogLevel, "debug") || strings.EqualFold(cfg.LogLevel, "trace") {
			dbLog = stderr
		}
		a.embedded, err = embeddeddb.Start(dir, dbLog)
		if err != nil {
			fmt.Fprintf(stderr, "parse-mcp: demo database: %v\n", err)
			return nil, exitFailure
		}
		uri, dbName = a.embedded.URI, "tunebase"
	}
	a.store, err = parsedb.Connect(ctx, uri, dbName, cfg.CollectionPrefix)
	if err != nil {
		if a.embedded != nil {
			a.embedded.Stop()
		}
		if problem, ok := uriSyntaxError(err); ok && !cfg.Demo {
			fix := "check the connection string"
			if strings.Contains(problem, "unescaped") || strings.Contains(problem, "user info") || strings.HasPrefix(problem, "invalid password") || strings.HasPrefix(problem, "invalid username") {
				fix = "percent-encode special characters of the user name and password, e.g. @ as %40"
			}
			fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_MONGODB_URI: not a valid connection string: %s (%s)\n", problem, fix)
			return nil, exitBadUsage
		}
		fmt.Fprintf(stderr, "parse-mcp: cannot connect to MongoDB at %s: %s\n", config.RedactedURI(uri), connectReason(err))
		return nil, exitFailure
	}
	if !cfg.Demo {
		warnIfNoParseClasses(ctx, a.store, log)
	}
	if cfg.Demo {
		written, err := demo.Seed(ctx, a.store.DB, cfg.CollectionPrefix)
		if err != nil {
			a.Close()
			fmt.Fprintf(stderr, "parse-mcp: seeding the demo database: %v\n", err)
			return nil, exitFailure
		}
		// Debug level: the demo is quiet until a client speaks to it.
		if written {
			log.Debug().Msg("demo: sample data seeded")
		} else {
			log.Debug().Msg("demo: sample data already in place, seed skipped")
		}
	}
	if cfg.Identity() == "master" {
		posture := log.Warn()
		if cfg.Demo && cfg.PolicyFile == "" {
			// The demo runs in master posture by design (README), on fake
			// data: no warning to a newcomer who did nothing wrong.
			posture = log.Debug()
		}
		posture.Msg("running in master posture: no PARSE_MCP_SESSION_TOKEN, PARSE_MCP_ACL_USER or PARSE_MCP_ACL_ROLE is set, so ACLs do not restrict reads (hidden classes and field rules still apply)")
	}
	engine := policy.New(cfg, file, log)
	a.deps = tools.NewDeps(a.store, engine, cfg, log)
	a.deps.Bridge = bridge
	if a.deps.Embedder, err = newEmbedder(cfg); err != nil {
		a.Close()
		fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_EMBEDDINGS_URL: %v\n", err)
		return nil, exitBadUsage
	}
	if cfg.HTTPAddr != "" {
		// Over HTTP several processes may serve one client (README
		// "Scale-out"): confirmations are single-use across all of them.
		a.deps.Confirmations = parsedb.NewConfirmationLedger(a.store, cfg.ConfirmSecret.Reveal())
	}
	if bridge != nil && cfg.LiveQueryURL != "" {
		lq, err := bridge.NewLiveQuery(cfg.LiveQueryURL, log)
		if err != nil {
			a.Close()
			fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_LIVEQUERY_URL: %v\n", err)
			return nil, exitBadUsage
		}
		a.deps.LiveQuery = lq
	}
	if bridge != nil {
		// Writes and Cloud functions go through Parse Server; reads stay direct.
		a.deps.Writes = &parseserver.Writer{Client: bridge, Store: a.store}
		a.deps.CloudFunctions = bridge
	}
	// The policy is validated against the live _SCHEMA and the identity
	// resolved before anything is served (`audit` reports policy problems
	// instead of failing on them).
	if err := engine.Setup(ctx, a.store, lenientPolicy); err != nil {
		a.Close()
		var se *policy.SetupError
		if errors.As(err, &se) && se.Config {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
			return nil, exitBadUsage
		}
		fmt.Fprintf(stderr, "parse-mcp: %v\n", err)
		return nil, exitFailure
	}
	if cfg.Demo && cfg.PolicyFile != "" && !engine.Hidden(demo.ClassVaultSecret) {
		// The demo's fake secrets are hidden by the demo policy only; an
		// operator's own policy file replaces it whole.
		log.Warn().Str("policy_file", cfg.PolicyFile).Msg("--demo with a policy file that does not hide " + demo.ClassVaultSecret + ": the model can read the demo's fake API keys (add `" + demo.ClassVaultSecret + ": {hidden: true}` under classes, as internal/demo/policy.yaml does)")
	}
	if schema, err := a.store.Schema.Get(ctx); err == nil {
		// A hidden class missing from _SCHEMA is either still to be created
		// or a typo that leaves the real class readable: say which it may be.
		for _, m := range engine.HiddenClassesNotInSchema(schema) {
			log.Warn().Str("class", m.Name).Str("visible_similar", m.Visible).Msg("PARSE_MCP_POLICY_FILE: " + m.String() + "; hiding a class before it exists is fine, a misspelt name hides nothing")
		}
	}
	opts, err := protocolSurface(a.deps, file, log)
	if err != nil {
		a.Close()
		fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_POLICY_FILE: %v\n", err)
		return nil, exitBadUsage
	}
	mcp := server.Build(opts)
	a.dispatcher = server.NewDispatcher(mcp, cfg.Workers, log)
	return a, exitOK
}

// warnIfNoParseClasses says so at start-up when the database holds no Parse
// schema: a mistyped database name or collection prefix connects fine (MongoDB
// creates databases on first write) and would otherwise only show as every
// class answering "does not exist".
func warnIfNoParseClasses(ctx context.Context, store *parsedb.Store, log zerolog.Logger) {
	cctx, cancel := context.WithTimeout(ctx, parsedb.ConnectTimeout)
	defer cancel()
	coll := store.SchemaCollection()
	if err := coll.FindOne(cctx, bson.D{}).Err(); errors.Is(err, mongo.ErrNoDocuments) {
		log.Warn().Str("database", store.DB.Name()).Str("collection", coll.Name()).
			Msg("no Parse classes in this database (its " + coll.Name() + " collection is empty or missing): check the database name (the connection string's /path or PARSE_MCP_DATABASE) and PARSE_MCP_COLLECTION_PREFIX; until then every class answers as missing")
	}
}

// listenHTTP binds PARSE_MCP_HTTP_ADDR; its error names the variable.
func listenHTTP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	reason := err.Error()
	if errors.Is(err, syscall.EADDRINUSE) {
		reason = "address already in use (another process listens there; stop it or choose another host:port)"
	} else if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Err != nil {
		reason = oe.Err.Error()
	}
	return nil, fmt.Errorf("PARSE_MCP_HTTP_ADDR (or --http): cannot listen on %s: %s", addr, reason)
}

// usableDir makes dir (the demo database's home) and checks that files can
// be created in it, so a bad PARSE_MCP_DEMO_DIR is reported as such instead
// of as a database failure.
func usableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// connectReason shortens driver errors to what an operator needs: what
// really happened (a DNS failure names the name that did not resolve; only a
// real timeout says it timed out).
func connectReason(err error) string {
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		// mongodb+srv:// resolves its SRV (and TXT) records while the URI is
		// parsed: the failure is immediate, nothing timed out.
		return fmt.Sprintf("DNS lookup of %s failed: %s (check the host name in the URI)", dns.Name, dnsErrText(dns))
	}
	msg := err.Error()
	if i := strings.Index(msg, "lookup "); i >= 0 && strings.Contains(msg, "no such host") {
		// A plain mongodb:// host that does not resolve: the driver retries
		// the lookup until server selection gives up.
		name, _, _ := strings.Cut(msg[i+len("lookup "):], " ")
		return "DNS lookup of " + name + " failed: no such host (check the host name in the URI; gave up after " + parsedb.ConnectTimeout.String() + ")"
	}
	switch {
	case strings.Contains(msg, "server selection"), strings.Contains(msg, "connection refused"), strings.Contains(msg, "i/o timeout"):
		return "server unreachable (check the host, port and network; timed out after " + parsedb.ConnectTimeout.String() + ")"
	case strings.Contains(msg, "auth"):
		return "authentication failed (check the user name and password)"
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// uriSyntaxError reports whether the driver refused the connection string
// itself (a configuration error, exit 2) rather than failing to reach the
// server, and returns the driver's reason: it names the part at fault (an
// option's key or value, an unescaped character), never the password.
func uriSyntaxError(err error) (string, bool) {
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return "", false // mongodb+srv:// resolves while parsing: not a syntax error
	}
	msg := err.Error()
	for _, prefix := range []string{"error parsing uri: ", "error validating uri: "} {
		if _, problem, found := strings.Cut(msg, prefix); found {
			switch {
			case strings.HasPrefix(problem, "invalid password"):
				// The driver quotes the bad escape, i.e. part of the password.
				problem = "invalid password: a % not followed by two hex digits"
			case strings.HasPrefix(problem, "invalid option value"):
				// The driver quotes the whole value, which may be a secret
				// (tlsCertificateKeyFilePassword, authMechanismProperties).
				problem = "invalid option value: a % not followed by two hex digits"
			}
			return problem, true
		}
	}
	return "", false
}

func dnsErrText(dns *net.DNSError) string {
	switch {
	case dns.IsNotFound:
		return "no such host"
	case dns.IsTimeout:
		return "the DNS server did not answer in time"
	}
	return dns.Err
}

// newLogger logs to stderr (never stdout: it belongs to the protocol) and,
// with PARSE_MCP_LOG_FILE, to a file as well.
func newLogger(cfg *config.Config, stderr io.Writer) (zerolog.Logger, func(), error) {
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
		w = zerolog.MultiLevelWriter(stderr, f)
		closeFn = func() { _ = f.Close() }
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), closeFn, nil
}
