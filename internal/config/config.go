// Package config reads parse-mcp's configuration from the environment (envconfig,
// prefix PARSE_MCP_) and validates it before anything is started, so that a bad
// setting is reported as one clear line instead of a half-started server.
package config

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

//go:generate go test -run TestConfigurationDocIsCurrent -update .

// Permission tiers, ordered: readonly ⊂ write ⊂ admin.
const (
	TierReadonly = "readonly"
	TierWrite    = "write"
	TierAdmin    = "admin"
)

// Config is every PARSE_MCP_* setting. Field tags name the variable so that
// validation errors can say exactly which one is wrong. The comment at the end
// of a field's line is the variable's documentation (markdown; ". Default: X."
// when the default is not the tag's): docs/configuration.md's table is
// generated from it (go generate; TestConfigurationDocIsCurrent).
type Config struct {
	MongoDBURI       string `envconfig:"PARSE_MCP_MONGODB_URI"`                    // connection string; the database name comes from its path or `PARSE_MCP_DATABASE`. Default: required unless `--demo`.
	Database         string `envconfig:"PARSE_MCP_DATABASE"`                       // database name. Default: from the URI.
	CollectionPrefix string `envconfig:"PARSE_MCP_COLLECTION_PREFIX"`              // Parse Server's `collectionPrefix` (prefixes every collection, `_SCHEMA` and `_Join:*` too). Default: `""`.
	PolicyFile       string `envconfig:"PARSE_MCP_POLICY_FILE"`                    // [policy file](policy.md), YAML or JSON; a leading `~/` is your home directory, as in a shell (desktop clients pass variables without one). Default: none = built-in safe defaults.
	Permissions      string `envconfig:"PARSE_MCP_PERMISSIONS" default:"readonly"` // `readonly` \| `write` \| `admin` (any case)
	SessionToken     string `envconfig:"PARSE_MCP_SESSION_TOKEN" secret:"true"`    // act as the user owning this Parse session token (`r:…`)
	ACLUser          string `envconfig:"PARSE_MCP_ACL_USER"`                       // act as this `_User` objectId
	ACLRole          string `envconfig:"PARSE_MCP_ACL_ROLE"`                       // act as a member of this role (and the roles it inherits)
	TenantID         string `envconfig:"PARSE_MCP_TENANT_ID"`                      // tenant bound to the classes with `tenant_scope`; refused at start-up (exit 2) when no class of the policy has one, since it would scope nothing. With `tenant_scope.from_user: FIELD` the tenant is the identity's own `_User.FIELD` instead (per request with `PARSE_MCP_HTTP_AUTH`; a user without one is refused — 401, or exit 2 for the environment identity; every class names the same field; a set `PARSE_MCP_TENANT_ID` must agree with the environment identity's)
	HTTPAddr         string `envconfig:"PARSE_MCP_HTTP_ADDR"`                      // serve streamable HTTP on this `host:port` instead of stdio; bound before the database is touched, so a port in use is a configuration error (exit 2). Default: off.
	APIKey           string `envconfig:"PARSE_MCP_API_KEY" secret:"true"`          // API key for HTTP (required for a non-loopback bind; ≥ 16 chars)
	// APIKeys are named HTTP keys, "name:key,name:key": each name is one
	// client (docs/transports.md "Behind a load balancer"); see NamedAPIKeys.
	APIKeys Secret `envconfig:"PARSE_MCP_API_KEYS"` // named HTTP API keys, `name:key,name:key` (names of letters, digits, `.`, `_`, `-`; keys ≥ 16 chars, unique): each name is one client, wherever it connects from; accepted next to (or instead of) `PARSE_MCP_API_KEY`. With `PARSE_MCP_HTTP_AUTH=keys` a name may say who the key acts as and cap its tier: `name@user=ID`, `name@role=NAME`, `name@master`, `/TIER` ([Serve a team](team.md))
	// TrustedProxies are the reverse proxies / load balancers (CIDRs or
	// addresses, comma-separated) whose X-Forwarded-For names the client;
	// see TrustedProxyNets.
	TrustedProxies string `envconfig:"PARSE_MCP_TRUSTED_PROXIES"` // reverse proxies / load balancers whose `X-Forwarded-For` names the HTTP client: comma-separated CIDRs or addresses (`10.0.0.0/8,127.0.0.1`; a range trusting everyone is refused); see [Behind a load balancer](transports.md#behind-a-load-balancer). Default: none (the peer address is the client).
	// HTTP caps (docs/transports.md "Behind a load balancer"): sessions in the process
	// and per client, and the rate-limit buckets of one client and of the
	// process as multiples of the policy's rate_limit.requests.
	HTTPMaxSessions       int `envconfig:"PARSE_MCP_HTTP_MAX_SESSIONS" default:"256"`       // HTTP sessions in the process (and stateless listen streams), 1–100000
	HTTPSessionsPerClient int `envconfig:"PARSE_MCP_HTTP_SESSIONS_PER_CLIENT" default:"16"` // HTTP sessions (and stateless listen streams) of one client, 1–`PARSE_MCP_HTTP_MAX_SESSIONS`
	HTTPClientRateFactor  int `envconfig:"PARSE_MCP_HTTP_CLIENT_RATE_FACTOR" default:"2"`   // one HTTP client's rate-limit window, as a multiple of the policy's `rate_limit` (a session gets 1×); below the process factor
	HTTPProcessRateFactor int `envconfig:"PARSE_MCP_HTTP_PROCESS_RATE_FACTOR" default:"4"`  // the whole HTTP server's rate-limit window, same unit, 2–10000
	// ConfirmSecret signs 2026-07-28 confirmation tokens over HTTP (empty:
	// a secret stored once in the database, shared by every process).
	ConfirmSecret Secret `envconfig:"PARSE_MCP_CONFIRM_SECRET"` // HMAC key of 2026-07-28 confirmation tokens over HTTP (≥ 32 chars; the same on every process behind a load balancer; see [Confirmation](writes.md)). Default: a secret stored once in the database.
	// Per-request identity over HTTP (docs/team.md "Serve a team"): the modes
	// tried in order on every /mcp request (keys, parse-session, jwt,
	// oauth; internal/authn). Empty: one identity per process, from the
	// environment, as over stdio.
	HTTPAuth string `envconfig:"PARSE_MCP_HTTP_AUTH"` // per-request identity over HTTP: comma-separated modes tried in order, `keys`, `parse-session`, `jwt`, `oauth` ([Serve a team](team.md)); unset: one identity per process
	// IdentityCache is how long a resolved per-request identity is reused:
	// a deleted or expired session stops working within it.
	IdentityCache time.Duration `envconfig:"PARSE_MCP_IDENTITY_CACHE" default:"30s"` // how long a resolved per-request identity is reused (0s–1h; `0s` = none): a revoked session stops working within it
	// The jwt mode: keys from a JWKS URL or one HS256 secret; issuer and
	// audience are required.
	JWTJWKSURL  string `envconfig:"PARSE_MCP_JWT_JWKS_URL"` // the `jwt` mode's keys: the identity provider's JWKS (`jwks_uri`; https, or http on loopback), for RS/PS/ES/EdDSA tokens; see [Serve a team](team.md)
	JWTSecret   Secret `envconfig:"PARSE_MCP_JWT_SECRET"`   // the `jwt` mode's HS256 secret (≥ 32 characters), instead of the JWKS URL (not both)
	JWTIssuer   string `envconfig:"PARSE_MCP_JWT_ISSUER"`   // the `iss` every JWT must carry, exactly. Default: required with `jwt`.
	JWTAudience string `envconfig:"PARSE_MCP_JWT_AUDIENCE"` // the `aud` every JWT must hold: this server's URL, e.g. `https://mcp.example.com/mcp`. Default: required with `jwt`.
	// JWTUserClaim names the claim that names the user ("": sub);
	// JWTAuthProvider matches it to _User's authData.<provider>.id instead
	// of the objectId (validateJWT).
	JWTUserClaim    string `envconfig:"PARSE_MCP_JWT_USER_CLAIM"`    // the JWT claim naming the user (when there is no `parse_session_token` claim). Default: `sub`.
	JWTAuthProvider string `envconfig:"PARSE_MCP_JWT_AUTH_PROVIDER"` // match the user claim to `_User`'s `authData.<provider>.id` (the key Parse's auth adapters log in by) instead of the objectId. Default: none (objectId).
	// PublicURL is the address clients reach this server at, for the oauth
	// mode's metadata, issuer and resource indicator.
	PublicURL string `envconfig:"PARSE_MCP_PUBLIC_URL"` // the `oauth` mode's public origin (`https://mcp.example.com`; http only on loopback; no path): the issuer, and `/mcp` under it the resource tokens are bound to; see [Serve a team](team.md). Default: required with `oauth`.
	// LimitsStore keeps rate windows and spent confirmations: "memory" (one
	// process) or "mongodb" (shared by every process; LimitsURI, else the
	// app's database).
	LimitsStore string `envconfig:"PARSE_MCP_LIMITS_STORE" default:"memory"` // where HTTP rate windows and spent confirmations are kept: `memory` (this process's own) or `mongodb` (any case) (one collection shared by every process, so N processes behind a load balancer enforce one limit; see [Behind a load balancer](transports.md#behind-a-load-balancer)); anything else is refused (exit 2)
	LimitsURI   Secret `envconfig:"PARSE_MCP_LIMITS_URI"`                    // with `PARSE_MCP_LIMITS_STORE=mongodb`: the MongoDB connection string of the limits store (its path names the database, else the app's database name is used); refused without the `mongodb` store; unreachable at start-up → exit 1, malformed → exit 2, neither message quoting the password. Default: the app's database.
	LogLevel    string `envconfig:"PARSE_MCP_LOG_LEVEL" default:"info"`      // `debug` \| `info` \| `warn` \| `error`
	LogFile     string `envconfig:"PARSE_MCP_LOG_FILE"`                      // also append logs to this file (must be writable by the user the client runs the server as; desktop clients already keep the server's stderr, e.g. Claude Desktop in `~/Library/Logs/Claude/`); `~/` as for the policy file. Default: stderr only.
	// MetricsAddr is the Prometheus endpoint's own listener, GET /metrics,
	// in stdio mode too; "" serves none. A non-loopback address needs
	// MetricsPublic: the metrics name the app's tools and classes.
	MetricsAddr   string `envconfig:"PARSE_MCP_METRICS_ADDR"`   // host:port of the Prometheus endpoint `GET /metrics` ([Observability](observability.md)), its own listener, in stdio mode too; loopback unless `PARSE_MCP_METRICS_PUBLIC`, never `PARSE_MCP_HTTP_ADDR`; a port in use → exit 2. Default: no listener.
	MetricsPublic bool   `envconfig:"PARSE_MCP_METRICS_PUBLIC"` // `true` lets `PARSE_MCP_METRICS_ADDR` bind a non-loopback address (the metrics carry no secret, but name the app's tools and classes). Default: loopback only.
	// Workers bounds how many tool calls run at once; other requests (ping,
	// lists) never wait for a worker.
	Workers int `envconfig:"PARSE_MCP_WORKERS" default:"16"` // tool calls executed at once (ping and lists never wait)
	// ProgressInterval is how often a long tool call sends an elapsed-time
	// progress heartbeat (when the client asked for progress) until the tool
	// reports its own work units.
	ProgressInterval time.Duration `envconfig:"PARSE_MCP_PROGRESS_INTERVAL" default:"2s"` // heartbeat interval of progress notifications (100ms–1m)
	// The Parse Server bridge (docs/bridge.md "Parse Server bridge"): writes and
	// Cloud Code functions through the app's own Parse Server.
	ServerURL     string `envconfig:"PARSE_MCP_SERVER_URL"`     // Parse Server REST root incl. mount path (`http://127.0.0.1:1337/parse`): turns on the [bridge](bridge.md). Default: off.
	ApplicationID string `envconfig:"PARSE_MCP_APPLICATION_ID"` // the app's `appId`. Default: required with `PARSE_MCP_SERVER_URL`.
	MasterKey     Secret `envconfig:"PARSE_MCP_MASTER_KEY"`     // the app's master key: the bridge's master posture (refused next to a scoped identity). Default: required with `PARSE_MCP_SERVER_URL` and no identity.
	LiveQueryURL  string `envconfig:"PARSE_MCP_LIVEQUERY_URL"`  // Parse LiveQuery WebSocket (`ws://127.0.0.1:1337/`): resource subscriptions listen there. Default: off (change streams / polling).
	// FilesURL is where the app's files are served (docs/writes.md "Writes"):
	// write results show a File with url = FilesURL + its encoded name.
	FilesURL string `envconfig:"PARSE_MCP_FILES_URL"` // prefix of the app's file URLs (`https://api.example.com/parse/files/myAppId/`): write results show a File with `url` = prefix + the encoded name, as Parse's REST answers. Default: with the bridge, Parse's default files location `<PARSE_MCP_SERVER_URL>/files/<appId>/`; else none (a File shows its name only: the files adapter's location is not in the database).

	// Embeddings for the search tools (docs/search.md "Search and retrieval"): an
	// OpenAI-compatible /v1/embeddings endpoint, or "fixture" (the
	// deterministic, not semantic, test embedder; the demo's default).
	EmbeddingsURL        string `envconfig:"PARSE_MCP_EMBEDDINGS_URL"`        // OpenAI-compatible embeddings endpoint (`https://api.openai.com/v1`, Ollama `http://127.0.0.1:11434/v1`, LM Studio, vLLM, TEI), or `fixture` ([Search](search.md)). Default: none (`--demo`: `fixture`).
	EmbeddingsModel      string `envconfig:"PARSE_MCP_EMBEDDINGS_MODEL"`      // the embeddings model. Default: required with a URL.
	EmbeddingsAPIKey     Secret `envconfig:"PARSE_MCP_EMBEDDINGS_API_KEY"`    // bearer key of the endpoint (a secret: never logged, never shown)
	EmbeddingsDimensions int    `envconfig:"PARSE_MCP_EMBEDDINGS_DIMENSIONS"` // vector length every answer must have. Default: unchecked (stored vectors still are).
	// EmbeddingsBudget is the most embeddings requests per minute.
	EmbeddingsBudget int `envconfig:"PARSE_MCP_EMBEDDINGS_BUDGET" default:"60"` // embeddings requests per minute (`-1`: no limit)

	// DemoDir is where --demo keeps its SQLite files (default: user cache dir).
	DemoDir string `envconfig:"PARSE_MCP_DEMO_DIR"` // where `--demo` keeps its SQLite files (created if missing; one that cannot be created or written is a configuration error, exit 2); `~/` as for the policy file. Default: user cache dir.

	// Demo serves the embedded sample database (PARSE_MCP_DEMO or --demo);
	// the connection settings are then ignored.
	Demo bool `envconfig:"PARSE_MCP_DEMO"` // `true`: serve the embedded sample database, as `--demo` does (the connection settings are then ignored, with a warning). Default: `false`.

	// Blank lists the PARSE_MCP_* variables that were set but treated as
	// unset: empty, or an unsubstituted ${…} placeholder (docs/release.md "The
	// desktop bundle"). Names only, never values.
	Blank []string `ignored:"true"`

	Gates Gates `ignored:"true"`
}

// Gates are the operator kill switches (PARSE_AGENT_ALLOW_*), documented as
// Config's fields are. They are read outside the PARSE_MCP_ prefix on
// purpose: they are meant to be set by whoever launches the process,
// separately from the server's own configuration.
type Gates struct {
	WriteTools bool `env:"PARSE_AGENT_ALLOW_WRITE_TOOLS"` // with `PARSE_AGENT_ALLOW_RAW_CRUD`: object writes; alone: declared actions ([Writes](writes.md)); on for `1, true, yes, on`, off for `0, false, no, off` (any case), unset or empty. Default: off.
	RawCRUD    bool `env:"PARSE_AGENT_ALLOW_RAW_CRUD"`    // with `PARSE_AGENT_ALLOW_WRITE_TOOLS`: `create_object`, `update_object`, `delete_object`. Default: off.
	SchemaOps  bool `env:"PARSE_AGENT_ALLOW_SCHEMA_OPS"`  // with `PARSE_AGENT_ALLOW_RAW_SCHEMA`: `create_class`, `delete_class`. Default: off.
	RawSchema  bool `env:"PARSE_AGENT_ALLOW_RAW_SCHEMA"`  // with `PARSE_AGENT_ALLOW_SCHEMA_OPS`: `create_class`, `delete_class`. Default: off.
}

// Error is a configuration error: it names the variable and the fix.
type Error struct {
	Variable string
	Problem  string
	Fix      string
}

func (e *Error) Error() string {
	msg := e.Variable + ": " + e.Problem
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}

// Load reads the PARSE_MCP_* variables and the PARSE_AGENT_ALLOW_* gates from
// the process environment. A PARSE_MCP_* variable that is empty or still holds
// a ${…} placeholder counts as unset (see unsetBlank).
func Load() (*Config, error) {
	var c Config
	c.Blank = unsetBlank()
	if err := envconfig.Process("", &c); err != nil {
		// envconfig's ParseError names the field; translate it to the variable.
		if pe, ok := err.(*envconfig.ParseError); ok {
			return nil, &Error{Variable: envName(pe.KeyName), Problem: fmt.Sprintf("cannot parse %q as %s", pe.Value, pe.TypeName), Fix: parseFix(pe.TypeName)}
		}
		return nil, &Error{Variable: "PARSE_MCP_*", Problem: err.Error()}
	}
	// In a Config built in code a zero cap means its default (validateHTTPCaps);
	// from the environment a 0 is someone asking for no sessions or no rate,
	// which no range allows, so it is refused rather than read as the default.
	for _, v := range []struct {
		variable string
		value    int
		fix      string
	}{
		{"PARSE_MCP_HTTP_MAX_SESSIONS", c.HTTPMaxSessions, "use a number from 1 to 100000"},
		{"PARSE_MCP_HTTP_SESSIONS_PER_CLIENT", c.HTTPSessionsPerClient, "use a number from 1 to PARSE_MCP_HTTP_MAX_SESSIONS"},
		{"PARSE_MCP_HTTP_CLIENT_RATE_FACTOR", c.HTTPClientRateFactor, "use a number from 1 to PARSE_MCP_HTTP_PROCESS_RATE_FACTOR − 1"},
		{"PARSE_MCP_HTTP_PROCESS_RATE_FACTOR", c.HTTPProcessRateFactor, "use a number from 2 to 10000"},
	} {
		if v.value == 0 {
			return nil, &Error{Variable: v.variable, Problem: "0 is out of range", Fix: v.fix}
		}
	}
	// Desktop clients pass variables verbatim, without a shell: a tier is a
	// word in any case, as the gates are (so is the limits store), and a
	// path may start with ~/.
	c.Permissions = strings.ToLower(strings.TrimSpace(c.Permissions))
	c.LimitsStore = strings.ToLower(strings.TrimSpace(c.LimitsStore))
	for _, path := range []*string{&c.PolicyFile, &c.LogFile, &c.DemoDir} {
		*path = expandHome(*path)
	}
	var gateErr error
	gate := func(name string) bool {
		on, err := readGate(name)
		if gateErr == nil {
			gateErr = err
		}
		return on
	}
	c.Gates = Gates{
		WriteTools: gate("PARSE_AGENT_ALLOW_WRITE_TOOLS"),
		RawCRUD:    gate("PARSE_AGENT_ALLOW_RAW_CRUD"),
		SchemaOps:  gate("PARSE_AGENT_ALLOW_SCHEMA_OPS"),
		RawSchema:  gate("PARSE_AGENT_ALLOW_RAW_SCHEMA"),
	}
	if gateErr != nil {
		return nil, gateErr
	}
	return &c, nil
}

// expandHome replaces a leading ~ or ~/ with the user's home directory, as
// a shell would have; any other path, or a machine without a home, is kept.
func expandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return home + path[1:]
}

// gateValue is v for an error message, cut short: a gate value is a word,
// and anything long is not worth echoing.
func gateValue(v string) string {
	if r := []rune(v); len(r) > 20 {
		return string(r[:20]) + "…"
	}
	return v
}

// readGate reads one PARSE_AGENT_ALLOW_* kill switch. Unset, empty or an
// unsubstituted placeholder is off; a value that is neither a yes nor a no
// word ("ture", "maybe") is refused: read as off, it would leave an operator
// who meant on looking at refusals that tell them to set what they set.
func readGate(name string) (bool, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" || IsPlaceholder(v) {
		return false, nil
	}
	if Truthy(v) {
		return true, nil
	}
	switch strings.ToLower(v) {
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, &Error{Variable: name, Problem: fmt.Sprintf("cannot read %q as on or off", gateValue(v)), Fix: "use true or false (also 1/0, yes/no, on/off), or leave it unset for off"}
}

// parseFix says what a variable of envconfig's type name takes.
func parseFix(typeName string) string {
	switch typeName {
	case "bool":
		return "use true or false"
	case "int", "int64", "uint", "uint64":
		return "use a whole number"
	case "float64":
		return "use a number"
	case "time.Duration":
		return "use a number with a unit, e.g. 500ms, 2s or 1m"
	}
	return "set a valid value"
}

// unsetBlank removes from the process environment every PARSE_MCP_* variable
// that is empty or holds an unsubstituted placeholder, and returns their
// names. Desktop clients launch the server from a template: an MCP bundle's
// form fills each variable with what the user typed, which is "" for an
// optional field left empty — and a host that knows no value for a field
// may leave "${user_config.…}" in place. Either means "not set": "" would
// otherwise replace a default (PARSE_MCP_PERMISSIONS="" is no tier) or fail
// to parse (PARSE_MCP_DEMO="" is no bool), and a placeholder would be taken
// for a connection string, a token or a path. envconfig reads the process
// environment only, so the variables are unset rather than filtered.
func unsetBlank() []string {
	var names []string
	for _, kv := range os.Environ() {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "PARSE_MCP_") {
			continue
		}
		if v := strings.TrimSpace(value); v == "" || IsPlaceholder(v) {
			names = append(names, name)
			_ = os.Unsetenv(name)
		}
	}
	return names
}

// IsPlaceholder reports whether v is a whole unsubstituted template variable,
// e.g. "${user_config.mongodb_uri}". No setting's valid value has that shape.
func IsPlaceholder(v string) bool {
	return strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") && !strings.ContainsAny(v[2:len(v)-1], "{}")
}

// Truthy reports whether an env gate value means "on": 1, true, yes, on (any case).
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// Validate checks the configuration as a whole. It returns the first problem
// as an *Error.
func (c *Config) Validate() error {
	for _, check := range []func() error{
		c.validateDatabase, c.validateIdentity, c.validateBridge, c.validateJWT, c.validateFilesURL,
		c.validateRuntime, c.validateHTTPAddr, c.validateMetrics, c.validateEmbeddings, c.validateAPIKeys, c.validateHTTPCaps,
		c.validateHTTPAuth, c.validateConfirmSecret, c.validateLimits,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateDatabase checks the tier and, unless --demo, the MongoDB
// connection string and database.
func (c *Config) validateDatabase() error {
	switch c.Permissions {
	case TierReadonly, TierWrite, TierAdmin:
	default:
		return &Error{"PARSE_MCP_PERMISSIONS", fmt.Sprintf("unknown tier %q", c.Permissions), "use readonly, write or admin"}
	}
	if c.Demo {
		return nil
	}
	if c.MongoDBURI == "" {
		return &Error{"PARSE_MCP_MONGODB_URI", "is required", "set it to your Parse app's MongoDB connection string, or run with --demo (PARSE_MCP_DEMO=true)"}
	}
	if !strings.HasPrefix(c.MongoDBURI, "mongodb://") && !strings.HasPrefix(c.MongoDBURI, "mongodb+srv://") {
		return &Error{"PARSE_MCP_MONGODB_URI", "must start with mongodb:// or mongodb+srv://", "check the connection string"}
	}
	if c.DatabaseName() == "" {
		return &Error{"PARSE_MCP_DATABASE", "no database name in PARSE_MCP_MONGODB_URI and PARSE_MCP_DATABASE is empty", "add /dbname to the URI or set PARSE_MCP_DATABASE"}
	}
	return nil
}

// validateIdentity checks that at most one identity is set, and the user's
// objectId.
func (c *Config) validateIdentity() error {
	n := 0
	for _, v := range []string{c.SessionToken, c.ACLUser, c.ACLRole} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		return &Error{"PARSE_MCP_SESSION_TOKEN/PARSE_MCP_ACL_USER/PARSE_MCP_ACL_ROLE", "more than one identity is set", "set at most one of them"}
	}
	if c.ACLUser != "" && !validObjectID(c.ACLUser) {
		return &Error{"PARSE_MCP_ACL_USER", "is not a Parse objectId", "use the _User objectId (letters, digits, _ and -)"}
	}
	return nil
}

func (c *Config) validateFilesURL() error {
	if c.FilesURL == "" {
		return nil
	}
	u, err := url.Parse(c.FilesURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return &Error{"PARSE_MCP_FILES_URL", fmt.Sprintf("%q is not an http(s) URL without credentials, query or fragment", refusedURL(c.FilesURL)), "use the prefix of your files' URLs, e.g. https://api.example.com/parse/files/myAppId/"}
	}
	return nil
}

// validateRuntime checks the log level, the workers and the progress
// interval.
func (c *Config) validateRuntime() error {
	switch strings.ToLower(c.LogLevel) {
	case "trace", "debug", "info", "warn", "error", "fatal", "panic", "disabled":
	default:
		return &Error{"PARSE_MCP_LOG_LEVEL", fmt.Sprintf("unknown level %q", c.LogLevel), "use debug, info, warn or error"}
	}
	if c.Workers < 1 || c.Workers > 1024 {
		return &Error{"PARSE_MCP_WORKERS", fmt.Sprintf("%d is out of range", c.Workers), "use a number from 1 to 1024"}
	}
	if c.ProgressInterval != 0 && (c.ProgressInterval < 100*time.Millisecond || c.ProgressInterval > time.Minute) {
		return &Error{"PARSE_MCP_PROGRESS_INTERVAL", fmt.Sprintf("%v is out of range", c.ProgressInterval), "use a duration from 100ms to 1m, e.g. 2s"}
	}
	return nil
}

// validateHTTPAddr checks the HTTP address, and that a non-loopback one
// has a key or an authentication mode.
func (c *Config) validateHTTPAddr() error {
	if c.HTTPAddr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(c.HTTPAddr)
	if err != nil {
		return &Error{"PARSE_MCP_HTTP_ADDR (or --http)", fmt.Sprintf("%q is not host:port", c.HTTPAddr), "use e.g. 127.0.0.1:8080"}
	}
	if !IsLoopbackHost(host) && c.APIKey == "" && !c.APIKeys.IsSet() && c.HTTPAuth == "" {
		return &Error{"PARSE_MCP_API_KEY", "is required when PARSE_MCP_HTTP_ADDR binds a non-loopback address", "set an API key (or PARSE_MCP_API_KEYS) or bind 127.0.0.1"}
	}
	return nil
}

func (c *Config) validateAPIKeys() error {
	if c.APIKey != "" && len(c.APIKey) < 16 {
		return &Error{"PARSE_MCP_API_KEY", "is shorter than 16 characters", "use a long random key"}
	}
	_, err := c.NamedAPIKeys()
	return err
}

func (c *Config) validateConfirmSecret() error {
	if c.ConfirmSecret.IsSet() && len(c.ConfirmSecret.Reveal()) < 32 {
		return &Error{"PARSE_MCP_CONFIRM_SECRET", "is shorter than 32 characters", "use a long random secret, the same on every process (e.g. openssl rand -hex 32)"}
	}
	return nil
}

// The PARSE_MCP_LIMITS_STORE values.
const (
	LimitsMemory  = "memory"
	LimitsMongoDB = "mongodb"
)

// validateLimits checks PARSE_MCP_LIMITS_STORE and PARSE_MCP_LIMITS_URI
// (whose password no message quotes; the driver checks the rest of the
// string when it connects).
func (c *Config) validateLimits() error {
	switch c.LimitsStore {
	case "", LimitsMemory:
		if c.LimitsURI.IsSet() {
			return &Error{"PARSE_MCP_LIMITS_URI", "is set but PARSE_MCP_LIMITS_STORE is not mongodb", "set PARSE_MCP_LIMITS_STORE=mongodb to keep the limits there, or unset PARSE_MCP_LIMITS_URI"}
		}
	case LimitsMongoDB:
		if !c.LimitsURI.IsSet() {
			return nil
		}
		uri := c.LimitsURI.Reveal()
		if scheme, _, hosts, _ := splitURI(uri); (scheme != "mongodb" && scheme != "mongodb+srv") || hosts == "" {
			return &Error{"PARSE_MCP_LIMITS_URI", fmt.Sprintf("%s is not a mongodb:// or mongodb+srv:// connection string", RedactedURI(uri)), "check the connection string"}
		}
	default:
		return &Error{"PARSE_MCP_LIMITS_STORE", fmt.Sprintf("unknown store %q", gateValue(c.LimitsStore)), "use memory (this process's limits) or mongodb (one limit for every process sharing the store)"}
	}
	return nil
}

// LimitsDatabaseName is the database PARSE_MCP_LIMITS_URI names in its
// path, else the app's.
func (c *Config) LimitsDatabaseName() string {
	_, _, _, path := splitURI(c.LimitsURI.Reveal())
	if db, err := url.PathUnescape(path); err == nil && db != "" {
		return db
	}
	return c.DatabaseName()
}

// URIPasswords are the password in a connection string as written and
// percent-decoded (empty for none), so that messages can be cleared of it.
func URIPasswords(uri string) (raw, decoded string) {
	_, userinfo, _, _ := splitURI(uri)
	_, raw, _ = strings.Cut(userinfo, ":")
	decoded, err := url.PathUnescape(raw)
	if err != nil {
		decoded = raw
	}
	return raw, decoded
}

// DatabaseName is PARSE_MCP_DATABASE, or the path of the connection string.
func (c *Config) DatabaseName() string {
	if c.Database != "" {
		return c.Database
	}
	_, _, _, path := splitURI(c.MongoDBURI)
	if db, err := url.PathUnescape(path); err == nil {
		return db
	}
	return path
}

// splitURI cuts a MongoDB connection string into its parts without
// url.Parse, which refuses valid seed lists such as
// mongodb://a:27017,b/parse (it reads ":27017,b" as a port). The user info
// runs to the last @ (so a password with an unescaped @ or / stays in it and
// is never taken for a host), the hosts to the next /, the path (the
// database name) from there to ?.
func splitURI(uri string) (scheme, userinfo, hosts, path string) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "", "", "", ""
	}
	if i := userinfoEnd(rest); i >= 0 {
		userinfo, rest = rest[:i], rest[i+1:]
	}
	rest, _, _ = strings.Cut(rest, "?")
	hosts, path, _ = strings.Cut(rest, "/")
	return scheme, userinfo, hosts, path
}

// userinfoEnd is the index of the @ that ends the user info (-1: none): the
// first @ followed by what hosts and a database name can be (no @, / or ?
// before the path's /, no @ or / in the path; the options may hold
// anything, appName=me@home). The driver takes a ? in a password, so the
// query cannot be cut off before the user info is found; a password with an
// unescaped @ or / (which the driver refuses) still stays in the user info.
// When no @ qualifies, the last one is taken, so that nothing of a password
// is ever read as a host.
func userinfoEnd(rest string) int {
	for i := 0; i < len(rest); i++ {
		if rest[i] == '@' && hostsAndPath(rest[i+1:]) {
			return i
		}
	}
	return strings.LastIndex(rest, "@")
}

// hostsAndPath reports whether s can be what follows the user info:
// hosts[/database][?options].
func hostsAndPath(s string) bool {
	i := strings.IndexAny(s, "/?@")
	if i < 0 {
		return true
	}
	if s[i] != '/' {
		return false
	}
	path, _, _ := strings.Cut(s[i+1:], "?")
	return !strings.ContainsAny(path, "@/")
}

// RedactedURI is the connection string with any password and the options
// removed, for messages.
func RedactedURI(uri string) string {
	scheme, userinfo, hosts, path := splitURI(uri)
	if scheme == "" {
		return "(unparseable URI)"
	}
	out := scheme + "://"
	if userinfo != "" {
		user, _, _ := strings.Cut(userinfo, ":")
		out += user + "@"
	}
	out += hosts
	if path != "" {
		out += "/" + path
	}
	return out
}

// validateMetrics checks PARSE_MCP_METRICS_ADDR: host:port, loopback unless
// PARSE_MCP_METRICS_PUBLIC says otherwise, and not the MCP listener.
func (c *Config) validateMetrics() error {
	if c.MetricsAddr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.MetricsAddr)
	if err != nil {
		return &Error{"PARSE_MCP_METRICS_ADDR", fmt.Sprintf("%q is not host:port", c.MetricsAddr), "use e.g. 127.0.0.1:9464"}
	}
	if !IsLoopbackHost(host) && !c.MetricsPublic {
		return &Error{"PARSE_MCP_METRICS_ADDR", fmt.Sprintf("%q is not a loopback address", c.MetricsAddr), "bind 127.0.0.1, or set PARSE_MCP_METRICS_PUBLIC=true to serve the metrics to the network"}
	}
	if c.MetricsAddr == c.HTTPAddr && port != "0" { // port 0: two different free ports
		return &Error{"PARSE_MCP_METRICS_ADDR", "is the MCP listener's address (PARSE_MCP_HTTP_ADDR)", "give the metrics their own port, e.g. 127.0.0.1:9464"}
	}
	return nil
}

// IsLoopbackHost reports whether host (no port) is a loopback name or address.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// RequestNotRebound defeats DNS rebinding on a listener (SECURITY.md
// "HTTP"): on a loopback bind the Host header must name a loopback
// host, and a browser's request (one with an Origin; other clients send
// none) must come from an http(s) loopback origin. The MCP listener and the
// metrics listener both ask it.
func RequestNotRebound(r *http.Request, loopbackBind bool) bool {
	host := r.Host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		host = hh
	}
	if loopbackBind && !IsLoopbackHost(host) {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// Identity describes which identity scope is configured, for logs and describe.
func (c *Config) Identity() string {
	switch {
	case c.SessionToken != "":
		return "session_token"
	case c.ACLUser != "":
		return "acl_user"
	case c.ACLRole != "":
		return "acl_role"
	}
	return "master"
}

func validObjectID(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func envName(key string) string {
	if strings.HasPrefix(key, "PARSE_MCP_") {
		return key
	}
	return "PARSE_MCP_" + key
}

// FileURLBase is the prefix of a File's url: PARSE_MCP_FILES_URL, else,
// with the bridge, Parse Server's default files location
// (<server URL>/files/<appId>/, its GridFS and filesystem adapters), else
// "" (not known: write results show a File's name only).
func (c *Config) FileURLBase() string {
	switch {
	case c.FilesURL != "":
		if strings.HasSuffix(c.FilesURL, "/") {
			return c.FilesURL
		}
		return c.FilesURL + "/"
	case c.ServerURL != "" && c.ApplicationID != "":
		return strings.TrimSuffix(c.ServerURL, "/") + "/files/" + c.ApplicationID + "/"
	}
	return ""
}

// Bridge reports whether the Parse Server bridge is configured.
func (c *Config) Bridge() bool { return c.ServerURL != "" }

// validateBridge checks the PARSE_MCP_SERVER_URL family. The master key is
// the master posture: it is refused next to a scoped identity, so that a
// user's writes can never silently run with master rights.
func (c *Config) validateBridge() error {
	if c.ServerURL == "" {
		for name, set := range map[string]bool{"PARSE_MCP_APPLICATION_ID": c.ApplicationID != "", "PARSE_MCP_MASTER_KEY": c.MasterKey.IsSet(), "PARSE_MCP_LIVEQUERY_URL": c.LiveQueryURL != ""} {
			if set {
				return &Error{name, "is set but PARSE_MCP_SERVER_URL is not", "set PARSE_MCP_SERVER_URL to your Parse Server's REST root, e.g. http://127.0.0.1:1337/parse"}
			}
		}
		return nil
	}
	if _, err := ParseServerURL(c.ServerURL); err != nil {
		return &Error{"PARSE_MCP_SERVER_URL", err.Error(), "use the REST root including the mount path, e.g. http://127.0.0.1:1337/parse"}
	}
	if c.ApplicationID == "" {
		return &Error{"PARSE_MCP_APPLICATION_ID", "is required with PARSE_MCP_SERVER_URL", "set it to the Parse app's appId"}
	}
	if c.Identity() == "master" && !c.MasterKey.IsSet() {
		return &Error{"PARSE_MCP_MASTER_KEY", "is required with PARSE_MCP_SERVER_URL in the master posture", "set the Parse master key, or PARSE_MCP_SESSION_TOKEN to act as a user"}
	}
	if c.Identity() != "master" && c.MasterKey.IsSet() {
		return &Error{"PARSE_MCP_MASTER_KEY", "is set together with a scoped identity (" + c.Identity() + ")", "unset the master key: with a scoped identity Parse Server must enforce that user's ACL and CLP"}
	}
	if c.LiveQueryURL != "" {
		u, err := url.Parse(c.LiveQueryURL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil {
			return &Error{"PARSE_MCP_LIVEQUERY_URL", fmt.Sprintf("%q is not a ws:// or wss:// URL", refusedURL(c.LiveQueryURL)), "use the LiveQuery server's address, e.g. ws://127.0.0.1:1337/"}
		}
	}
	return nil
}

// validateHTTPCaps checks the trusted proxies and the HTTP caps. Zero
// values (a Config built in code) mean the defaults.
func (c *Config) validateHTTPCaps() error {
	if _, err := c.TrustedProxyNets(); err != nil {
		return err
	}
	maxSessions := cmp.Or(c.HTTPMaxSessions, DefaultHTTPMaxSessions)
	if maxSessions < 1 || maxSessions > 100_000 {
		return &Error{"PARSE_MCP_HTTP_MAX_SESSIONS", fmt.Sprintf("%d is out of range", c.HTTPMaxSessions), "use a number from 1 to 100000"}
	}
	if per := cmp.Or(c.HTTPSessionsPerClient, DefaultHTTPSessionsPerClient); per < 1 || per > maxSessions {
		return &Error{"PARSE_MCP_HTTP_SESSIONS_PER_CLIENT", fmt.Sprintf("%d is out of range", c.HTTPSessionsPerClient), fmt.Sprintf("use a number from 1 to PARSE_MCP_HTTP_MAX_SESSIONS (%d)", maxSessions)}
	}
	process := cmp.Or(c.HTTPProcessRateFactor, DefaultHTTPProcessRateFactor)
	if process < 2 || process > 10_000 {
		return &Error{"PARSE_MCP_HTTP_PROCESS_RATE_FACTOR", fmt.Sprintf("%d is out of range", c.HTTPProcessRateFactor), "use a number from 2 to 10000"}
	}
	if client := cmp.Or(c.HTTPClientRateFactor, DefaultHTTPClientRateFactor); client < 1 || client >= process {
		return &Error{"PARSE_MCP_HTTP_CLIENT_RATE_FACTOR", fmt.Sprintf("%d is out of range", c.HTTPClientRateFactor),
			fmt.Sprintf("use a number from 1 to PARSE_MCP_HTTP_PROCESS_RATE_FACTOR − 1 (%d): one client must not be able to fill the process's bucket alone", process-1)}
	}
	return nil
}

// HTTP cap defaults (see Config).
const (
	DefaultHTTPMaxSessions       = 256
	DefaultHTTPSessionsPerClient = 16
	DefaultHTTPClientRateFactor  = 2
	DefaultHTTPProcessRateFactor = 4
)

// HTTPCaps are the effective HTTP caps (defaults for zero values).
func (c *Config) HTTPCaps() (maxSessions, perClient, clientRateFactor, processRateFactor int) {
	return cmp.Or(c.HTTPMaxSessions, DefaultHTTPMaxSessions), cmp.Or(c.HTTPSessionsPerClient, DefaultHTTPSessionsPerClient),
		cmp.Or(c.HTTPClientRateFactor, DefaultHTTPClientRateFactor), cmp.Or(c.HTTPProcessRateFactor, DefaultHTTPProcessRateFactor)
}

// TrustedProxyNets parses PARSE_MCP_TRUSTED_PROXIES: comma-separated CIDRs
// or single addresses. A range that trusts every address is refused: any
// client could then name itself in X-Forwarded-For.
func (c *Config) TrustedProxyNets() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(c.TrustedProxies, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			a, aerr := netip.ParseAddr(item)
			if aerr != nil {
				return nil, &Error{"PARSE_MCP_TRUSTED_PROXIES", fmt.Sprintf("%q is neither an address nor a CIDR", item), "list the proxies' addresses or ranges, e.g. 10.0.0.0/8,127.0.0.1"}
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		p = p.Masked()
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(0, p.Bits()-96))
		}
		if p.Bits() == 0 {
			return nil, &Error{"PARSE_MCP_TRUSTED_PROXIES", fmt.Sprintf("%q trusts every address", item), "list only the proxies' own addresses or ranges"}
		}
		out = append(out, p)
	}
	return out, nil
}

// NamedAPIKey is one entry of PARSE_MCP_API_KEYS.
type NamedAPIKey struct {
	Name string
	Key  Secret
	// The identity the key acts as with PARSE_MCP_HTTP_AUTH=keys (docs/team.md
	// "Serve a team"): at most one of User (a _User objectId), Role (a
	// role name) or Master; none acts as the environment identity.
	User   string
	Role   string
	Master bool
	// Tier caps the permission tier ("" = PARSE_MCP_PERMISSIONS).
	Tier string
}

// NamedAPIKeys parses PARSE_MCP_API_KEYS: comma-separated name:key pairs,
// names of letters, digits, '.', '_' and '-' (≤ 64), keys of ≥ 16
// characters; names and keys are unique, and no key equals
// PARSE_MCP_API_KEY. Errors never quote a key.
//
// A name may carry the identity the key acts as and a tier cap, neither of
// which can contain ':' (so the key is still everything after the first
// ':'): name@user=OBJECTID, name@role=ROLE, name@master, each optionally
// followed by /TIER; or name/TIER alone.
func (c *Config) NamedAPIKeys() ([]NamedAPIKey, error) {
	const variable = "PARSE_MCP_API_KEYS"
	var out []NamedAPIKey
	names, keys := map[string]bool{}, map[string]bool{c.APIKey: c.APIKey != ""}
	for i, item := range strings.Split(c.APIKeys.Reveal(), ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		spec, key, found := strings.Cut(item, ":")
		nk, problem := parseKeySpec(spec)
		name := nk.Name
		switch {
		case problem != "":
			return nil, &Error{variable, fmt.Sprintf("entry %d: %s", i+1, problem), "use e.g. alice@user=AbC123/write:KEY1,editors@role=Editors:KEY2,ops@master:KEY3"}
		case !found || !validKeyName(name):
			return nil, &Error{variable, fmt.Sprintf("entry %d is not name:key with a name of letters, digits, '.', '_' or '-'", i+1), "use e.g. alice:KEY1,ci-bot:KEY2"}
		case len(key) < 16:
			return nil, &Error{variable, fmt.Sprintf("the key of %q is shorter than 16 characters", name), "use long random keys"}
		case names[name]:
			return nil, &Error{variable, fmt.Sprintf("%q is named twice", name), "give every key its own name"}
		case keys[key]:
			return nil, &Error{variable, fmt.Sprintf("the key of %q is used twice (or is PARSE_MCP_API_KEY)", name), "give every client its own key"}
		}
		names[name], keys[key] = true, true
		nk.Key = NewSecret(key)
		out = append(out, nk)
	}
	return out, nil
}

// parseKeySpec reads the part of a PARSE_MCP_API_KEYS entry before the
// first ':': name[@user=ID|@role=NAME|@master][/TIER]. problem is "" when it
// parses; it never quotes the key.
func parseKeySpec(spec string) (nk NamedAPIKey, problem string) {
	rest, tier, hasTier := strings.Cut(spec, "/")
	if hasTier {
		switch tier {
		case TierReadonly, TierWrite, TierAdmin:
			nk.Tier = tier
		default:
			return nk, fmt.Sprintf("unknown tier %q (use readonly, write or admin)", tier)
		}
	}
	name, who, hasWho := strings.Cut(rest, "@")
	nk.Name = name
	if !hasWho {
		return nk, ""
	}
	kind, value, _ := strings.Cut(who, "=")
	switch {
	case kind == "master" && value == "":
		nk.Master = true
	case kind == "user" && validObjectID(value):
		nk.User = value
	case kind == "role" && validRoleName(value):
		nk.Role = value
	default:
		return nk, fmt.Sprintf("the key %q names no identity it can act as (use @user=OBJECTID, @role=NAME or @master)", name)
	}
	return nk, ""
}

// validRoleName accepts Parse's role names: letters, digits, '_', '-' and
// spaces.
func validRoleName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == ' ') {
			return false
		}
	}
	return true
}

func validKeyName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// validateEmbeddings checks the PARSE_MCP_EMBEDDINGS_* family.
func (c *Config) validateEmbeddings() error {
	if c.EmbeddingsURL == "" || c.EmbeddingsURL == "fixture" {
		if c.EmbeddingsModel != "" || c.EmbeddingsAPIKey.IsSet() {
			if c.EmbeddingsURL == "" {
				return &Error{"PARSE_MCP_EMBEDDINGS_URL", "is not set but PARSE_MCP_EMBEDDINGS_MODEL or _API_KEY is", "set the /v1/embeddings endpoint, e.g. https://api.openai.com/v1"}
			}
		}
	} else {
		u, err := url.Parse(c.EmbeddingsURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &Error{"PARSE_MCP_EMBEDDINGS_URL", "is not an http(s) URL", "use e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1, or fixture"}
		}
		if c.EmbeddingsModel == "" {
			return &Error{"PARSE_MCP_EMBEDDINGS_MODEL", "is required with PARSE_MCP_EMBEDDINGS_URL", "name the embeddings model, e.g. text-embedding-3-small"}
		}
	}
	if c.EmbeddingsDimensions < 0 || c.EmbeddingsDimensions > 65536 {
		return &Error{"PARSE_MCP_EMBEDDINGS_DIMENSIONS", "is out of range", "use the model's vector length, e.g. 1536"}
	}
	if c.EmbeddingsBudget < -1 {
		return &Error{"PARSE_MCP_EMBEDDINGS_BUDGET", "is out of range", "use requests per minute, or -1 for no limit"}
	}
	return nil
}

// HTTP authentication modes (PARSE_MCP_HTTP_AUTH; internal/authn names
// them too, this package imports no other of the module).
const (
	HTTPAuthKeys         = "keys"
	HTTPAuthParseSession = "parse-session"
	HTTPAuthJWT          = "jwt"
	HTTPAuthOAuth        = "oauth"
)

// HTTPAuthModes is PARSE_MCP_HTTP_AUTH as a list, in order (nil: unset).
func (c *Config) HTTPAuthModes() []string {
	var out []string
	for m := range strings.SplitSeq(c.HTTPAuth, ",") {
		if m = strings.ToLower(strings.TrimSpace(m)); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// modeSet is PARSE_MCP_HTTP_AUTH's modes as a set, each known and listed
// once.
func modeSet(modes []string) (map[string]bool, error) {
	const v = "PARSE_MCP_HTTP_AUTH"
	seen := map[string]bool{}
	for _, m := range modes {
		switch m {
		case HTTPAuthKeys, HTTPAuthParseSession, HTTPAuthJWT, HTTPAuthOAuth:
		default:
			return nil, &Error{v, fmt.Sprintf("unknown mode %q", m), "use a comma-separated list of keys, parse-session, jwt, oauth"}
		}
		if seen[m] {
			return nil, &Error{v, fmt.Sprintf("lists %s twice", m), "name each mode once"}
		}
		seen[m] = true
	}
	return seen, nil
}

// validateHTTPAuth checks PARSE_MCP_HTTP_AUTH and what each listed mode
// needs (docs/team.md "Serve a team").
func (c *Config) validateHTTPAuth() error {
	const v = "PARSE_MCP_HTTP_AUTH"
	modes := c.HTTPAuthModes()
	seen, err := modeSet(modes)
	if err != nil {
		return err
	}
	if c.HTTPAuth != "" && len(modes) == 0 {
		return &Error{v, "lists no mode", "use a comma-separated list of keys, parse-session, jwt, oauth, or unset it"}
	}
	if c.IdentityCache < 0 || c.IdentityCache > time.Hour {
		return &Error{"PARSE_MCP_IDENTITY_CACHE", fmt.Sprintf("%v is out of range", c.IdentityCache), "use a duration from 0s (no cache) to 1h, e.g. 30s"}
	}
	keys, _ := c.NamedAPIKeys()
	switch {
	case seen[HTTPAuthKeys] && c.APIKey == "" && len(keys) == 0:
		return &Error{v, "lists keys but neither PARSE_MCP_API_KEY nor PARSE_MCP_API_KEYS is set", "set the keys, or remove keys from the list"}
	case len(modes) > 0 && !seen[HTTPAuthKeys] && (c.APIKey != "" || len(keys) > 0):
		return &Error{v, "does not list keys, but PARSE_MCP_API_KEY or PARSE_MCP_API_KEYS is set (those keys would not be accepted)", "add keys to the list, or unset the keys"}
	}
	if !seen[HTTPAuthKeys] {
		for _, k := range keys {
			if k.User != "" || k.Role != "" || k.Master || k.Tier != "" {
				return &Error{"PARSE_MCP_API_KEYS", fmt.Sprintf("the key %q names an identity or a tier, which only PARSE_MCP_HTTP_AUTH=keys honours", k.Name), "set PARSE_MCP_HTTP_AUTH=keys (or a list with keys), or drop the @identity and /tier parts"}
			}
		}
	}
	return c.validateAuthModeNeeds(seen)
}

// validateAuthModeNeeds checks the settings the jwt and oauth modes need.
func (c *Config) validateAuthModeNeeds(seen map[string]bool) error {
	if seen[HTTPAuthJWT] {
		switch {
		case c.JWTIssuer == "":
			return &Error{"PARSE_MCP_JWT_ISSUER", "is required by PARSE_MCP_HTTP_AUTH=jwt", "set the issuer (iss) your identity provider puts in its tokens"}
		case c.JWTAudience == "":
			return &Error{"PARSE_MCP_JWT_AUDIENCE", "is required by PARSE_MCP_HTTP_AUTH=jwt", "set the audience (aud) your identity provider mints tokens for"}
		case c.JWTJWKSURL == "" && !c.JWTSecret.IsSet():
			return &Error{"PARSE_MCP_JWT_JWKS_URL", "or PARSE_MCP_JWT_SECRET is required by PARSE_MCP_HTTP_AUTH=jwt", "set the provider's JWKS URL (or an HS256 secret)"}
		}
	}
	if seen[HTTPAuthOAuth] {
		switch {
		case !c.Bridge():
			return &Error{"PARSE_MCP_SERVER_URL", "is required by PARSE_MCP_HTTP_AUTH=oauth (the login is checked by Parse Server itself)", "set the Parse Server bridge (PARSE_MCP_SERVER_URL and PARSE_MCP_APPLICATION_ID)"}
		case c.PublicURL == "":
			return &Error{"PARSE_MCP_PUBLIC_URL", "is required by PARSE_MCP_HTTP_AUTH=oauth", "set the https:// address clients reach this server at"}
		}
	}
	return nil
}
