package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/limits"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/policy"
)

// connectLimits connects PARSE_MCP_LIMITS_URI when the HTTP rate windows
// are shared (PARSE_MCP_LIMITS_STORE=mongodb), right after the app's
// database and before anything else is said, so that a bad or unreachable
// store is the one line on stderr.
func (a *App) connectLimits(ctx context.Context, cfg *config.Config, stderr io.Writer) int {
	if cfg.HTTPAddr == "" || cfg.LimitsStore != config.LimitsMongoDB || !cfg.LimitsURI.IsSet() {
		return exitOK
	}
	uri := cfg.LimitsURI.Reveal()
	var err error
	if a.limits, err = parsedb.Connect(ctx, uri, cfg.LimitsDatabaseName(), ""); err != nil {
		return connectFailed(stderr, "PARSE_MCP_LIMITS_URI", "the limits store", uri, err)
	}
	return exitOK
}

// shareLimits installs PARSE_MCP_LIMITS_STORE=mongodb (docs/transports.md "Behind a
// load balancer"): the HTTP rate windows, and the spent confirmations, in
// PARSE_MCP_LIMITS_URI's database (connectLimits), else the app's.
func (a *App) shareLimits(cfg *config.Config, engine *policy.Engine, ledger *parsedb.ConfirmationLedger, log zerolog.Logger) {
	if cfg.LimitsStore != config.LimitsMongoDB {
		return
	}
	store, uri := a.Store, cfg.MongoDBURI
	if a.embedded != nil {
		uri = a.embedded.URI
	}
	if a.limits != nil {
		store, uri = a.limits, cfg.LimitsURI.Reveal()
		ledger.SpendIn(store)
	}
	log.Info().Str("limits_store", config.RedactedURI(uri)).Msg("rate windows and spent confirmations are shared with every process using this store (PARSE_MCP_LIMITS_STORE=mongodb)")
	raw, decoded := config.URIPasswords(uri)
	a.rates = limits.NewMongo(store.Collection(limits.Collection), cfg.DatabaseName()+"/"+cfg.CollectionPrefix, log,
		config.RedactedURI(uri), raw, decoded)
	engine.SetLimitsStore(a.rates)
}

// connectFailed prints why a connection string (variable) could not be
// used, never quoting its password, and returns the exit code: 2 for a
// string the driver refuses, 1 for a server it cannot reach.
func connectFailed(stderr io.Writer, variable, what, uri string, err error) int {
	if problem, ok := uriSyntaxError(err); ok {
		fix := "check the connection string"
		if strings.Contains(problem, "unescaped") || strings.Contains(problem, "user info") || strings.HasPrefix(problem, "invalid password") || strings.HasPrefix(problem, "invalid username") {
			fix = "percent-encode special characters of the user name and password, e.g. @ as %40"
		}
		fmt.Fprintf(stderr, "parse-mcp: configuration error: %s: not a valid connection string: %s (%s)\n", variable, problem, fix)
		return exitBadUsage
	}
	fmt.Fprintf(stderr, "parse-mcp: cannot connect to %s at %s: %s\n", what, config.RedactedURI(uri), connectReason(err))
	return exitFailure
}
