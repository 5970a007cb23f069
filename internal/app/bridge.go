package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parseserver"
)

// bridgeCheckTimeout bounds the start-up check of the Parse Server.
const bridgeCheckTimeout = 20 * time.Second

// connectBridge builds the Parse Server client when PARSE_MCP_SERVER_URL is
// set and checks the server, the application id and the credential. On
// failure it has printed one clear line and returns the exit code: 1 when
// the server is unreachable, 2 when a setting is wrong.
func connectBridge(ctx context.Context, cfg *config.Config, log zerolog.Logger, stderr io.Writer) (*parseserver.Client, int) {
	if !cfg.Bridge() {
		return nil, exitOK
	}
	pc := parseserver.Config{URL: cfg.ServerURL, ApplicationID: cfg.ApplicationID, MasterKey: cfg.MasterKey}
	switch cfg.Identity() {
	case "master":
		pc.Identity = &parseserver.Identity{Master: true}
	case "session_token":
		pc.Identity = &parseserver.Identity{SessionToken: config.NewSecret(cfg.SessionToken)}
	default:
		// Parse's REST API has no way to act as "this user id" or "this
		// role" without that user's session: only the master key could,
		// and it would bypass the very ACLs the identity stands for.
		pc.NoIdentity = fmt.Sprintf("the configured identity (%s) cannot act through Parse Server: its REST API acts as a user only with that user's session token; set PARSE_MCP_SESSION_TOKEN instead", cfg.Identity())
	}
	client, err := parseserver.New(pc)
	if err != nil {
		fmt.Fprintf(stderr, "parse-mcp: configuration error: PARSE_MCP_SERVER_URL: %v\n", err)
		return nil, exitBadUsage
	}
	check := parseserver.Identity{}
	if pc.Identity != nil {
		check = *pc.Identity
	}
	cctx, cancel := context.WithTimeout(ctx, bridgeCheckTimeout)
	defer cancel()
	if err := client.Check(cctx, check); err != nil {
		var ce *parseserver.CheckError
		if errors.As(err, &ce) && ce.Misconfigured {
			fmt.Fprintf(stderr, "parse-mcp: configuration error: %v\n", err)
			return nil, exitBadUsage
		}
		fmt.Fprintf(stderr, "parse-mcp: %v\n", err)
		return nil, exitFailure
	}
	log.Info().Str("parse_server", client.URL()).Str("bridge_identity", client.Posture()).Msg("Parse Server bridge: writes and Cloud functions go through Parse Server")
	return client, exitOK
}
