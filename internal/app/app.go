// Package app assembles a running parse-mcp from its configuration:
// database (or the demo one), Parse Server bridge, policy engine, tools,
// protocol surface and dispatcher (ARCHITECTURE.md "Packages"). The binary
// and the mountable handler (package mcphandler) both start here, so a
// handler mounted in another Go service serves exactly what the binary
// serves.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/demo"
	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
	"github.com/parse-mcp/parse-mcp/policy"
	"github.com/parse-mcp/parse-mcp/server"
	"github.com/parse-mcp/parse-mcp/tools"
)

// Exit codes of a failed start.
const (
	exitOK       = 0
	exitFailure  = 1 // runtime failure (database unreachable)
	exitBadUsage = 2 // bad configuration
)

// App is a started server: database connection, policy and MCP registry.
type App struct {
	Store      *parsedb.Store
	Deps       *tools.Deps
	Dispatcher *server.Dispatcher
	embedded   *embeddeddb.Server
	// limits is the database of PARSE_MCP_LIMITS_URI (nil: none).
	limits *parsedb.Store
	// rates is the shared rate-window store (PARSE_MCP_LIMITS_STORE=mongodb;
	// nil: each limit is this process's own).
	rates limits.Store
}

// PingDatabase is GET /health's database check.
func (a *App) PingDatabase(ctx context.Context) error {
	return a.Store.Client.Ping(ctx, nil)
}

// Close releases the database (and stops the demo one).
func (a *App) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = a.Store.Close(ctx)
	if a.limits != nil {
		_ = a.limits.Close(ctx)
	}
	if a.embedded != nil {
		a.embedded.Stop()
	}
}

// Start connects to the database (or starts the demo one), loads the policy
// and builds the registry. On failure it has already printed one clear line
// and returns the exit code.
func Start(ctx context.Context, cfg *config.Config, log zerolog.Logger, stderr io.Writer, lenientPolicy bool) (*App, int) {
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

	a := &App{}
	if code := a.openDatabase(ctx, cfg, log, stderr); code != exitOK {
		return nil, code
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
	if code := a.wireDeps(cfg, engine, bridge, log, stderr); code != exitOK {
		return nil, code
	}
	// The policy is validated against the live _SCHEMA and the identity
	// resolved before anything is served (`audit` reports policy problems
	// instead of failing on them).
	if err := engine.Setup(ctx, a.Store, lenientPolicy); err != nil {
		a.Close()
		var se *policy.SetupError
		if errors.As(err, &se) && se.Config {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
			return nil, exitBadUsage
		}
		fmt.Fprintf(stderr, "parse-mcp: %v\n", err)
		return nil, exitFailure
	}
	a.warnPolicyGaps(ctx, cfg, engine, log)
	opts, err := protocolSurface(a.Deps, file, log)
	if err != nil {
		a.Close()
		fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_POLICY_FILE: %v\n", err)
		return nil, exitBadUsage
	}
	mcp := server.Build(opts)
	a.Dispatcher = server.NewDispatcher(mcp, cfg.Workers, log)
	return a, exitOK
}

// openDatabase connects the store (starting the demo database first with
// --demo, and seeding it) and the limits store. On failure it has already
// printed one clear line, released what it opened, and returns the exit
// code.
func (a *App) openDatabase(ctx context.Context, cfg *config.Config, log zerolog.Logger, stderr io.Writer) int {
	uri, dbName := cfg.MongoDBURI, cfg.DatabaseName()
	if cfg.Demo {
		var code int
		if uri, code = a.startDemoDatabase(cfg, stderr); code != exitOK {
			return code
		}
		dbName = "tunebase"
	}
	var err error
	a.Store, err = parsedb.Connect(ctx, uri, dbName, cfg.CollectionPrefix)
	if err != nil {
		if a.embedded != nil {
			a.embedded.Stop()
		}
		if cfg.Demo {
			fmt.Fprintf(stderr, "parse-mcp: cannot connect to MongoDB at %s: %s\n", config.RedactedURI(uri), connectReason(err))
			return exitFailure
		}
		return connectFailed(stderr, "PARSE_MCP_MONGODB_URI", "MongoDB", uri, err)
	}
	if code := a.connectLimits(ctx, cfg, stderr); code != exitOK {
		a.Close()
		return code
	}
	if !cfg.Demo {
		warnIfNoParseClasses(ctx, a.Store, log)
		return exitOK
	}
	written, err := demo.Seed(ctx, a.Store.DB, cfg.CollectionPrefix)
	if err != nil {
		a.Close()
		fmt.Fprintf(stderr, "parse-mcp: seeding the demo database: %v\n", err)
		return exitFailure
	}
	// Debug level: the demo is quiet until a client speaks to it.
	if written {
		log.Debug().Msg("demo: sample data seeded")
	} else {
		log.Debug().Msg("demo: sample data already in place, seed skipped")
	}
	return exitOK
}

// startDemoDatabase starts the embedded database in PARSE_MCP_DEMO_DIR (or
// the user's cache) and returns its URI.
func (a *App) startDemoDatabase(cfg *config.Config, stderr io.Writer) (string, int) {
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
		return "", exitBadUsage
	}
	// FerretDB's own logs are noise for a demo user; at debug level they
	// go to stderr (never stdout) to diagnose the embedded database.
	var dbLog io.Writer
	if strings.EqualFold(cfg.LogLevel, "debug") || strings.EqualFold(cfg.LogLevel, "trace") {
		dbLog = stderr
	}
	var err error
	a.embedded, err = embeddeddb.Start(dir, dbLog)
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: demo database: %v\n", err)
		return "", exitFailure
	}
	return a.embedded.URI, exitOK
}

// wireDeps builds the tools' dependencies: the embedder, the shared
// confirmation ledger and limits over HTTP, and with the bridge its
// LiveQuery client and the write backend. On failure it has closed a.
func (a *App) wireDeps(cfg *config.Config, engine *policy.Engine, bridge *parseserver.Client, log zerolog.Logger, stderr io.Writer) int {
	a.Deps = tools.NewDeps(a.Store, engine, cfg, log)
	a.Deps.Bridge = bridge
	var err error
	if a.Deps.Embedder, err = newEmbedder(cfg); err != nil {
		a.Close()
		fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_EMBEDDINGS_URL: %v\n", err)
		return exitBadUsage
	}
	if cfg.HTTPAddr != "" {
		// Over HTTP several processes may serve one client (docs/transports.md
		// "Scale-out"): confirmations are single-use across all of them.
		ledger := parsedb.NewConfirmationLedger(a.Store, cfg.ConfirmSecret.Reveal())
		a.Deps.Confirmations = ledger
		a.shareLimits(cfg, engine, ledger, log)
	}
	if bridge != nil && cfg.LiveQueryURL != "" {
		lq, err := bridge.NewLiveQuery(cfg.LiveQueryURL, log)
		if err != nil {
			a.Close()
			fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_LIVEQUERY_URL: %v\n", err)
			return exitBadUsage
		}
		a.Deps.LiveQuery = lq
	}
	if bridge != nil {
		// Writes and Cloud functions go through Parse Server; reads stay direct.
		a.Deps.Writes = &parseserver.Writer{Client: bridge, Store: a.Store}
		a.Deps.CloudFunctions = bridge
	}
	return exitOK
}

// warnPolicyGaps logs what the policy seems to have missed: the demo's
// secrets left readable by an operator's policy file, hidden classes not
// in _SCHEMA.
func (a *App) warnPolicyGaps(ctx context.Context, cfg *config.Config, engine *policy.Engine, log zerolog.Logger) {
	if cfg.Demo && cfg.PolicyFile != "" && !engine.Hidden(demo.ClassVaultSecret) {
		// The demo's fake secrets are hidden by the demo policy only; an
		// operator's own policy file replaces it whole.
		log.Warn().Str("policy_file", cfg.PolicyFile).Msg("--demo with a policy file that does not hide " + demo.ClassVaultSecret + ": the model can read the demo's fake API keys (add `" + demo.ClassVaultSecret + ": {hidden: true}` under classes, as internal/demo/policy.yaml does)")
	}
	if schema, err := a.Store.Schema.Get(ctx); err == nil {
		// A hidden class missing from _SCHEMA is either still to be created
		// or a typo that leaves the real class readable: say which it may be.
		for _, m := range engine.HiddenClassesNotInSchema(schema) {
			log.Warn().Str("class", m.Name).Str("visible_similar", m.Visible).Msg("PARSE_MCP_POLICY_FILE: " + m.String() + "; hiding a class before it exists is fine, a misspelt name hides nothing")
		}
	}
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
