package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// bridge is a valid master-posture bridge configuration, then mutate.
func bridge(mutate func(*Config)) func(*Config) {
	return func(c *Config) {
		c.ServerURL = "http://127.0.0.1:1337/parse"
		c.ApplicationID = "app"
		c.MasterKey = NewSecret("master")
		mutate(c)
	}
}

func valid() *Config {
	return &Config{MongoDBURI: "mongodb://h:27017/app", Permissions: TierReadonly, LogLevel: "info", Workers: 16, ProgressInterval: 2 * time.Second}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantVar string // "" = valid
	}{
		{"valid", func(*Config) {}, ""},
		{"demo needs no URI", func(c *Config) { c.MongoDBURI = ""; c.Demo = true }, ""},
		{"missing URI", func(c *Config) { c.MongoDBURI = "" }, "PARSE_MCP_MONGODB_URI"},
		{"bad scheme", func(c *Config) { c.MongoDBURI = "postgres://h/db" }, "PARSE_MCP_MONGODB_URI"},
		{"no database", func(c *Config) { c.MongoDBURI = "mongodb://h:27017/" }, "PARSE_MCP_DATABASE"},
		{"database from variable", func(c *Config) { c.MongoDBURI = "mongodb://h:27017/"; c.Database = "app" }, ""},
		{"srv URI", func(c *Config) { c.MongoDBURI = "mongodb+srv://cluster.example.com/app" }, ""},
		{"unknown tier", func(c *Config) { c.Permissions = "root" }, "PARSE_MCP_PERMISSIONS"},
		{"two identities", func(c *Config) { c.SessionToken = "r:abc"; c.ACLRole = "Admin" }, "PARSE_MCP_SESSION_TOKEN/PARSE_MCP_ACL_USER/PARSE_MCP_ACL_ROLE"},
		{"bad ACL user", func(c *Config) { c.ACLUser = "a b" }, "PARSE_MCP_ACL_USER"},
		{"bad log level", func(c *Config) { c.LogLevel = "loud" }, "PARSE_MCP_LOG_LEVEL"},
		{"workers zero", func(c *Config) { c.Workers = 0 }, "PARSE_MCP_WORKERS"},
		{"http not host:port", func(c *Config) { c.HTTPAddr = "8080" }, "PARSE_MCP_HTTP_ADDR (or --http)"},
		{"http public without key", func(c *Config) { c.HTTPAddr = "0.0.0.0:8080" }, "PARSE_MCP_API_KEY"},
		{"http public with key", func(c *Config) { c.HTTPAddr = "0.0.0.0:8080"; c.APIKey = "0123456789abcdef" }, ""},
		{"http loopback", func(c *Config) { c.HTTPAddr = "127.0.0.1:8080" }, ""},
		{"metrics loopback", func(c *Config) { c.MetricsAddr = "127.0.0.1:9464" }, ""},
		{"metrics localhost", func(c *Config) { c.MetricsAddr = "localhost:9464" }, ""},
		{"metrics not host:port", func(c *Config) { c.MetricsAddr = "9464" }, "PARSE_MCP_METRICS_ADDR"},
		{"metrics public unasked", func(c *Config) { c.MetricsAddr = "0.0.0.0:9464" }, "PARSE_MCP_METRICS_ADDR"},
		{"metrics every interface unasked", func(c *Config) { c.MetricsAddr = ":9464" }, "PARSE_MCP_METRICS_ADDR"},
		{"metrics public asked", func(c *Config) { c.MetricsAddr = "0.0.0.0:9464"; c.MetricsPublic = true }, ""},
		{"metrics on the MCP port", func(c *Config) { c.HTTPAddr = "127.0.0.1:8080"; c.MetricsAddr = "127.0.0.1:8080" }, "PARSE_MCP_METRICS_ADDR"},
		{"http localhost", func(c *Config) { c.HTTPAddr = "localhost:8080" }, ""},
		{"short key", func(c *Config) { c.APIKey = "short" }, "PARSE_MCP_API_KEY"},
		{"short confirm secret", func(c *Config) { c.ConfirmSecret = NewSecret("0123456789abcdef") }, "PARSE_MCP_CONFIRM_SECRET"},
		{"confirm secret", func(c *Config) { c.ConfirmSecret = NewSecret("0123456789abcdef0123456789abcdef") }, ""},
		{"trusted proxies", func(c *Config) { c.TrustedProxies = " 10.0.0.0/8, 127.0.0.1 ,fd00::/8," }, ""},
		{"trusted proxy not an address", func(c *Config) { c.TrustedProxies = "10.0.0.0/8,proxy.internal" }, "PARSE_MCP_TRUSTED_PROXIES"},
		{"trusted proxies trust everyone", func(c *Config) { c.TrustedProxies = "0.0.0.0/0" }, "PARSE_MCP_TRUSTED_PROXIES"},
		{"trusted proxies trust every v6", func(c *Config) { c.TrustedProxies = "::/0" }, "PARSE_MCP_TRUSTED_PROXIES"},
		{"trusted proxies trust every mapped v4", func(c *Config) { c.TrustedProxies = "::ffff:0.0.0.0/96" }, "PARSE_MCP_TRUSTED_PROXIES"},
		{"named keys", func(c *Config) {
			c.HTTPAddr = "0.0.0.0:8080"
			c.APIKeys = NewSecret("alice:0123456789abcdef, ci-bot.2:fedcba9876543210")
		}, ""},
		{"named key without name", func(c *Config) { c.APIKeys = NewSecret("0123456789abcdef") }, "PARSE_MCP_API_KEYS"},
		{"named key bad name", func(c *Config) { c.APIKeys = NewSecret("a b:0123456789abcdef") }, "PARSE_MCP_API_KEYS"},
		{"named key short", func(c *Config) { c.APIKeys = NewSecret("alice:short") }, "PARSE_MCP_API_KEYS"},
		{"named key twice", func(c *Config) {
			c.APIKeys = NewSecret("alice:0123456789abcdef,alice:fedcba9876543210")
		}, "PARSE_MCP_API_KEYS"},
		{"one key for two names", func(c *Config) {
			c.APIKeys = NewSecret("alice:0123456789abcdef,bob:0123456789abcdef")
		}, "PARSE_MCP_API_KEYS"},
		{"named key equals the shared key", func(c *Config) {
			c.APIKey = "0123456789abcdef"
			c.APIKeys = NewSecret("alice:0123456789abcdef")
		}, "PARSE_MCP_API_KEYS"},
		{"session caps", func(c *Config) { c.HTTPMaxSessions = 1000; c.HTTPSessionsPerClient = 4 }, ""},
		{"no sessions", func(c *Config) { c.HTTPMaxSessions = -1 }, "PARSE_MCP_HTTP_MAX_SESSIONS"},
		{"per client above total", func(c *Config) { c.HTTPMaxSessions = 10; c.HTTPSessionsPerClient = 11 }, "PARSE_MCP_HTTP_SESSIONS_PER_CLIENT"},
		{"client rate fills the process", func(c *Config) { c.HTTPClientRateFactor = 4 }, "PARSE_MCP_HTTP_CLIENT_RATE_FACTOR"},
		{"rate factors", func(c *Config) { c.HTTPClientRateFactor = 3; c.HTTPProcessRateFactor = 10 }, ""},
		{"process rate below two", func(c *Config) { c.HTTPProcessRateFactor = 1 }, "PARSE_MCP_HTTP_PROCESS_RATE_FACTOR"},
		{"bridge master", bridge(func(c *Config) {}), ""},
		{"bridge session", bridge(func(c *Config) { c.MasterKey = Secret{}; c.SessionToken = "r:abc" }), ""},
		{"bridge acl user, no key", bridge(func(c *Config) { c.MasterKey = Secret{}; c.ACLUser = "abc" }), ""},
		{"bridge with livequery", bridge(func(c *Config) { c.LiveQueryURL = "ws://127.0.0.1:1337/" }), ""},
		{"bridge bad url", bridge(func(c *Config) { c.ServerURL = "127.0.0.1:1337/parse" }), "PARSE_MCP_SERVER_URL"},
		{"bridge url with credentials", bridge(func(c *Config) { c.ServerURL = "http://u:p@h/parse" }), "PARSE_MCP_SERVER_URL"},
		{"bridge no app id", bridge(func(c *Config) { c.ApplicationID = "" }), "PARSE_MCP_APPLICATION_ID"},
		{"bridge master posture without key", bridge(func(c *Config) { c.MasterKey = Secret{} }), "PARSE_MCP_MASTER_KEY"},
		{"bridge key with session", bridge(func(c *Config) { c.SessionToken = "r:abc" }), "PARSE_MCP_MASTER_KEY"},
		{"bridge bad livequery", bridge(func(c *Config) { c.LiveQueryURL = "http://h/" }), "PARSE_MCP_LIVEQUERY_URL"},
		{"app id without server", func(c *Config) { c.ApplicationID = "app" }, "PARSE_MCP_APPLICATION_ID"},
		{"master key without server", func(c *Config) { c.MasterKey = NewSecret("k") }, "PARSE_MCP_MASTER_KEY"},
		{"livequery without server", func(c *Config) { c.LiveQueryURL = "ws://h/" }, "PARSE_MCP_LIVEQUERY_URL"},
		{"http auth parse-session public", func(c *Config) { c.HTTPAddr = "0.0.0.0:8080"; c.HTTPAuth = "parse-session" }, ""},
		{"http auth unknown mode", func(c *Config) { c.HTTPAuth = "keys,passwords" }, "PARSE_MCP_HTTP_AUTH"},
		{"http auth twice", func(c *Config) { c.HTTPAuth = "parse-session, parse-session" }, "PARSE_MCP_HTTP_AUTH"},
		{"http auth empty list", func(c *Config) { c.HTTPAuth = " , " }, "PARSE_MCP_HTTP_AUTH"},
		{"http auth keys without keys", func(c *Config) { c.HTTPAuth = "keys" }, "PARSE_MCP_HTTP_AUTH"},
		{"http auth keys ignored", func(c *Config) { c.HTTPAuth = "parse-session"; c.APIKey = "0123456789abcdef" }, "PARSE_MCP_HTTP_AUTH"},
		{"key identity without keys mode", func(c *Config) { c.APIKeys = NewSecret("ops@master:0123456789abcdef") }, "PARSE_MCP_API_KEYS"},
		{"key identities", func(c *Config) {
			c.HTTPAuth = "keys,parse-session"
			c.APIKeys = NewSecret("ops@master:0123456789abcdef,eds@role=Editors/write:1123456789abcdef,al@user=AbC123:2123456789abcdef,ro/readonly:3123456789abcdef")
		}, ""},
		{"key unknown identity", func(c *Config) { c.HTTPAuth = "keys"; c.APIKeys = NewSecret("ops@root:0123456789abcdef") }, "PARSE_MCP_API_KEYS"},
		{"key bad user", func(c *Config) { c.HTTPAuth = "keys"; c.APIKeys = NewSecret("ops@user=a b:0123456789abcdef") }, "PARSE_MCP_API_KEYS"},
		{"key unknown tier", func(c *Config) { c.HTTPAuth = "keys"; c.APIKeys = NewSecret("ops/root:0123456789abcdef") }, "PARSE_MCP_API_KEYS"},
		{"identity cache too long", func(c *Config) { c.HTTPAuth = "parse-session"; c.IdentityCache = 2 * time.Hour }, "PARSE_MCP_IDENTITY_CACHE"},
		{"jwt without issuer", func(c *Config) { c.HTTPAuth = "jwt"; c.JWTSecret = NewSecret("0123456789abcdef0123456789abcdef") }, "PARSE_MCP_JWT_ISSUER"},
		{"jwt without audience", func(c *Config) { c.HTTPAuth = "jwt"; c.JWTIssuer = "https://id" }, "PARSE_MCP_JWT_AUDIENCE"},
		{"jwt without keys", func(c *Config) { c.HTTPAuth = "jwt"; c.JWTIssuer = "https://id"; c.JWTAudience = "mcp" }, "PARSE_MCP_JWT_JWKS_URL"},
		{"jwt", func(c *Config) {
			c.HTTPAuth = "jwt"
			c.JWTIssuer = "https://id"
			c.JWTAudience = "mcp"
			c.JWTSecret = NewSecret("0123456789abcdef0123456789abcdef")
		}, ""},
		{"oauth without bridge", func(c *Config) { c.HTTPAuth = "oauth"; c.PublicURL = "https://mcp.example" }, "PARSE_MCP_SERVER_URL"},
		{"oauth without public url", bridge(func(c *Config) { c.HTTPAuth = "oauth" }), "PARSE_MCP_PUBLIC_URL"},
		{"limits memory", func(c *Config) { c.LimitsStore = "memory" }, ""},
		{"limits mongodb, app database", func(c *Config) { c.LimitsStore = "mongodb" }, ""},
		{"limits mongodb, own URI", func(c *Config) {
			c.LimitsStore = "mongodb"
			c.LimitsURI = NewSecret("mongodb://u:pw@a:27017,b/limits?replicaSet=rs")
		}, ""},
		{"limits unknown store", func(c *Config) { c.LimitsStore = "redis" }, "PARSE_MCP_LIMITS_STORE"},
		{"limits URI without the store", func(c *Config) { c.LimitsURI = NewSecret("mongodb://h/limits") }, "PARSE_MCP_LIMITS_URI"},
		{"limits URI not mongodb", func(c *Config) {
			c.LimitsStore = "mongodb"
			c.LimitsURI = NewSecret("redis://u:pw@h/0")
		}, "PARSE_MCP_LIMITS_URI"},
		{"files url", func(c *Config) { c.FilesURL = "https://cdn.example/files/app/" }, ""},
		{"files url not http", func(c *Config) { c.FilesURL = "ftp://cdn.example/" }, "PARSE_MCP_FILES_URL"},
		{"files url with credentials", func(c *Config) { c.FilesURL = "https://u:p@cdn.example/" }, "PARSE_MCP_FILES_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(c)
			err := c.Validate()
			if tt.wantVar == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Variable != tt.wantVar {
				t.Fatalf("got %v, want an error naming %s", err, tt.wantVar)
			}
		})
	}
}

func TestTruthy(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "YES": true, " on ": true, "0": false, "": false, "enable": false, "false": false} {
		if Truthy(v) != want {
			t.Errorf("Truthy(%q) = %v", v, !want)
		}
	}
}

func TestRedactedURI(t *testing.T) {
	for uri, want := range map[string]string{
		"mongodb://user:s3cret@db.example.com:27017/app?authSource=admin": "mongodb://user@db.example.com:27017/app",
		// A seed list whose last host has no port: url.Parse refuses it.
		"mongodb://u:s3cret@a.example.com:27017,b.example.com/app": "mongodb://u@a.example.com:27017,b.example.com/app",
		"mongodb://u:pa/s3cret@db.example.com/app":                 "mongodb://u@db.example.com/app",
		"mongodb+srv://u:p@ss:s3cret@cluster0.example.net/":        "mongodb+srv://u@cluster0.example.net",
		"mongodb://db.example.com":                                 "mongodb://db.example.com",
		// The driver takes a ? in a password (the user info runs to its @):
		// the query is not cut before the user info is found.
		"mongodb://u:s3cret?x@db.example.com/app":                   "mongodb://u@db.example.com/app",
		"mongodb://u:s3cret?x@db.example.com/app?appName=me@home":   "mongodb://u@db.example.com/app",
		"mongodb://u:s3cret@db.example.com/app?appName=me@home":     "mongodb://u@db.example.com/app",
		"mongodb://u:a@s3cret/x@db.example.com/app?appName=me@home": "mongodb://u@db.example.com/app",
		"db.example.com": "(unparseable URI)",
	} {
		if got := RedactedURI(uri); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("RedactedURI(%q) = %q, want %q", uri, got, want)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	for uri, want := range map[string]string{
		"mongodb://user:pw@db.example.com:27017/parse?authSource=admin":  "parse",
		"mongodb://a.example.com:27017,b.example.com/parse":              "parse",
		"mongodb://a:27017,b:27018/my%20app":                             "my app",
		"mongodb+srv://u:pw@cluster0.example.net/parse?retryWrites=true": "parse",
		"mongodb://db.example.com:27017/?authSource=admin":               "",
		"mongodb://db.example.com:27017":                                 "",
		"mongodb://u:pw?x@db.example.com/parse":                          "parse",
		"mongodb://u:pw@db.example.com/parse?appName=me@home":            "parse",
	} {
		if got := (&Config{MongoDBURI: uri}).DatabaseName(); got != want {
			t.Errorf("DatabaseName(%q) = %q, want %q", uri, got, want)
		}
	}
	if got := (&Config{MongoDBURI: "mongodb://h/uri_db", Database: "explicit"}).DatabaseName(); got != "explicit" {
		t.Errorf("PARSE_MCP_DATABASE does not win over the URI path: %q", got)
	}
}

func TestLoadGates(t *testing.T) {
	t.Setenv("PARSE_AGENT_ALLOW_WRITE_TOOLS", "true")
	t.Setenv("PARSE_AGENT_ALLOW_RAW_CRUD", "no")
	t.Setenv("PARSE_MCP_WORKERS", "3")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Gates.WriteTools || c.Gates.RawCRUD || c.Workers != 3 {
		t.Fatalf("gates %+v workers %d", c.Gates, c.Workers)
	}
	t.Setenv("PARSE_MCP_WORKERS", "many")
	if _, err := Load(); err == nil {
		t.Fatal("PARSE_MCP_WORKERS=many accepted")
	} else if ce, ok := err.(*Error); !ok || ce.Variable != "PARSE_MCP_WORKERS" {
		t.Fatalf("error %v does not name PARSE_MCP_WORKERS", err)
	}
}

// TestLoadSaysWhatAValueTakes: a value of the wrong type is refused with
// what the variable takes, not a bare "set a valid value".
func TestLoadSaysWhatAValueTakes(t *testing.T) {
	for _, tc := range []struct{ variable, value, want string }{
		{"PARSE_MCP_WORKERS", "1.5", `PARSE_MCP_WORKERS: cannot parse "1.5" as int (use a whole number)`},
		{"PARSE_MCP_DEMO", "yes", `PARSE_MCP_DEMO: cannot parse "yes" as bool (use true or false)`},
		{"PARSE_MCP_PROGRESS_INTERVAL", "5", `PARSE_MCP_PROGRESS_INTERVAL: cannot parse "5" as time.Duration (use a number with a unit, e.g. 500ms, 2s or 1m)`},
	} {
		t.Run(tc.variable, func(t *testing.T) {
			t.Setenv(tc.variable, tc.value)
			if _, err := Load(); err == nil || err.Error() != tc.want {
				t.Fatalf("Load() = %v, want %s", err, tc.want)
			}
		})
	}
}

// TestLoadReadsGates: a write kill switch is on for a yes word, off when
// unset, empty, a placeholder or a no word, and a typo is refused naming the
// variable rather than read as off.
func TestLoadReadsGates(t *testing.T) {
	for _, tc := range []struct {
		value string
		on    bool
		err   string
	}{
		{"true", true, ""}, {"YES", true, ""}, {"1", true, ""}, {" on ", true, ""},
		{"", false, ""}, {"false", false, ""}, {"0", false, ""}, {"Off", false, ""}, {"no", false, ""},
		{"${user_config.allow_writes}", false, ""},
		{"ture", false, `PARSE_AGENT_ALLOW_WRITE_TOOLS: cannot read "ture" as on or off (use true or false (also 1/0, yes/no, on/off), or leave it unset for off)`},
		{"maybe", false, `PARSE_AGENT_ALLOW_WRITE_TOOLS: cannot read "maybe" as on or off`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv("PARSE_AGENT_ALLOW_WRITE_TOOLS", tc.value)
			c, err := Load()
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("Load() = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || c.Gates.WriteTools != tc.on {
				t.Fatalf("Load() = %+v, %v; want on=%v", c, err, tc.on)
			}
		})
	}
}

// TestLoadRefusesZeroCaps: a cap set to 0 in the environment is refused,
// not silently read as its default (0 means "default" only in code).
func TestLoadRefusesZeroCaps(t *testing.T) {
	for _, variable := range []string{"PARSE_MCP_HTTP_MAX_SESSIONS", "PARSE_MCP_HTTP_SESSIONS_PER_CLIENT", "PARSE_MCP_HTTP_CLIENT_RATE_FACTOR", "PARSE_MCP_HTTP_PROCESS_RATE_FACTOR"} {
		t.Run(variable, func(t *testing.T) {
			t.Setenv(variable, "0")
			if _, err := Load(); err == nil || !strings.HasPrefix(err.Error(), variable+": 0 is out of range") {
				t.Fatalf("Load() = %v, want %s refused", err, variable)
			}
		})
	}
	if _, err := Load(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestLoadReadsTheMasterKeyAsASecret(t *testing.T) {
	t.Setenv("PARSE_MCP_MASTER_KEY", "m4ster-value")
	t.Setenv("PARSE_MCP_SERVER_URL", "http://127.0.0.1:1337/parse")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.MasterKey.Reveal() != "m4ster-value" || c.ServerURL != "http://127.0.0.1:1337/parse" {
		t.Fatalf("loaded %q %q", c.MasterKey.Reveal(), c.ServerURL)
	}
	if s := fmt.Sprintf("%v %+v", c, *c); strings.Contains(s, "m4ster-value") {
		t.Fatal("printing the configuration shows the master key")
	}
}

// TestLoadBlankIsUnset: an MCP bundle's form fills every variable, with ""
// for an optional field left empty, and a host without a value may leave the
// ${user_config.…} placeholder. Both mean "unset": defaults stay, nothing
// fails to parse, and a placeholder is never taken for a value.
func TestLoadBlankIsUnset(t *testing.T) {
	t.Setenv("PARSE_MCP_MONGODB_URI", "")
	t.Setenv("PARSE_MCP_DATABASE", "${user_config.database}")
	t.Setenv("PARSE_MCP_PERMISSIONS", "")
	t.Setenv("PARSE_MCP_DEMO", "true")
	t.Setenv("PARSE_MCP_WORKERS", " ")
	t.Setenv("PARSE_MCP_SESSION_TOKEN", "${user_config.session_token}")
	t.Setenv("PARSE_MCP_POLICY_FILE", "")
	t.Setenv("PARSE_MCP_LOG_LEVEL", "")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.MongoDBURI != "" || c.Database != "" || c.SessionToken != "" || c.PolicyFile != "" {
		t.Fatalf("blank values kept: %+v", c)
	}
	if c.Permissions != TierReadonly || c.Workers != 16 || c.LogLevel != "info" || !c.Demo {
		t.Fatalf("defaults lost: permissions %q workers %d log %q demo %v", c.Permissions, c.Workers, c.LogLevel, c.Demo)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("demo with blank connection settings: %v", err)
	}
	want := []string{"PARSE_MCP_DATABASE", "PARSE_MCP_LOG_LEVEL", "PARSE_MCP_MONGODB_URI", "PARSE_MCP_PERMISSIONS", "PARSE_MCP_POLICY_FILE", "PARSE_MCP_SESSION_TOKEN", "PARSE_MCP_WORKERS"}
	got := slices.Sorted(slices.Values(c.Blank))
	if !slices.Equal(got, want) {
		t.Fatalf("Blank = %v, want %v", got, want)
	}

	// Blank is still not set: without the demo the URI is required.
	t.Setenv("PARSE_MCP_DEMO", "false")
	t.Setenv("PARSE_MCP_MONGODB_URI", "")
	c, err = Load()
	if err != nil {
		t.Fatal(err)
	}
	var ce *Error
	if err := c.Validate(); !errors.As(err, &ce) || ce.Variable != "PARSE_MCP_MONGODB_URI" {
		t.Fatalf("blank URI without the demo: %v", err)
	}
	// A value that merely contains ${…} is a value.
	for v, want := range map[string]bool{"${user_config.x}": true, "${}": true, "pa${ss}": false, "${a}${b}": false, "${a": false} {
		if IsPlaceholder(v) != want {
			t.Errorf("IsPlaceholder(%q) = %v", v, !want)
		}
	}
}

func TestLoadDemoFromTheEnvironment(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "1": true, "false": false} {
		t.Setenv("PARSE_MCP_DEMO", v)
		c, err := Load()
		if err != nil || c.Demo != want {
			t.Fatalf("PARSE_MCP_DEMO=%s: demo %v, %v", v, c != nil && c.Demo, err)
		}
	}
	t.Setenv("PARSE_MCP_DEMO", "maybe")
	if _, err := Load(); err == nil {
		t.Fatal("PARSE_MCP_DEMO=maybe accepted")
	}
}

// TestLoadIgnoresUnprefixedNames: envconfig falls back to a field's bare tag
// name when the prefixed variable is unset, so with short tags a stray
// PERMISSIONS=admin, DATABASE or MASTER_KEY in the launching shell would
// silently configure the server. Every tag is the full PARSE_MCP_* name, and
// only that name is read.
func TestLoadIgnoresUnprefixedNames(t *testing.T) {
	for _, name := range []string{"PARSE_MCP_PERMISSIONS", "PARSE_MCP_DATABASE", "PARSE_MCP_MASTER_KEY", "PARSE_MCP_API_KEY", "PARSE_MCP_SERVER_URL", "PARSE_MCP_DEMO"} {
		t.Setenv(name, "") // unset below: t.Setenv restores the original
		_ = os.Unsetenv(name)
	}
	t.Setenv("PERMISSIONS", "admin")
	t.Setenv("DATABASE", "stray")
	t.Setenv("MASTER_KEY", "stray-master")
	t.Setenv("API_KEY", "stray-key")
	t.Setenv("SERVER_URL", "http://stray.example/parse")
	t.Setenv("DEMO", "true")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.Permissions != TierReadonly || c.Database != "" || c.MasterKey.Reveal() != "" || c.APIKey != "" || c.ServerURL != "" || c.Demo {
		t.Fatalf("unprefixed variables were read: %+v", *c)
	}
	for f := range reflect.TypeFor[Config]().Fields() {
		if tag := f.Tag.Get("envconfig"); tag != "" && !strings.HasPrefix(tag, "PARSE_MCP_") {
			t.Errorf("field %s reads %s: every variable is a full PARSE_MCP_* name", f.Name, tag)
		}
	}
}

func TestFileURLBase(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{}, ""},
		{Config{FilesURL: "https://cdn.example/f"}, "https://cdn.example/f/"},
		{Config{ServerURL: "http://127.0.0.1:1337/parse/", ApplicationID: "app"}, "http://127.0.0.1:1337/parse/files/app/"},
		{Config{ServerURL: "http://h/parse", ApplicationID: "app", FilesURL: "https://cdn/x/"}, "https://cdn/x/"},
	} {
		if got := tc.c.FileURLBase(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestParseServerURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"http://127.0.0.1:1337/parse": true, "https://api.example.com/parse/": true,
		"ftp://x/parse": false, "127.0.0.1:1337": false, "http:///parse": false,
		"http://u:p@host/parse": false, "http://host/parse?x=1": false,
	} {
		_, err := ParseServerURL(raw)
		if (err == nil) != ok {
			t.Errorf("ParseServerURL(%q) error %v, want ok=%v", raw, err, ok)
		}
	}
	// The refusal of a URL with user info is printed at start-up: it does
	// not quote the password (parsable or not).
	for _, raw := range []string{"https://admin:hunter2@parse.example.com/parse", "https://admin:hunter2@parse.example.com:x/parse", "ftp://admin:hunter2@parse.example.com/parse", "https://admin:hun/ter2@parse.example.com/parse", "https://admin:hun?ter2@parse.example.com/parse",
		"https://parse.example.com/parse?token=hunter2", "ftp://parse.example.com/parse#hunter2"} {
		if _, err := ParseServerURL(raw); err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ter2") {
			t.Errorf("ParseServerURL(%q) error %v: want a refusal without the password", raw, err)
		}
	}
	c := valid()
	c.ServerURL, c.ApplicationID, c.MasterKey = "http://127.0.0.1:1337/parse", "app", NewSecret("m")
	c.LiveQueryURL = "wss://admin:hunter2@lq.example.com/"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "PARSE_MCP_LIVEQUERY_URL") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("PARSE_MCP_LIVEQUERY_URL with user info: %v", err)
	}
	c = valid()
	c.FilesURL = "https://files.example.com/parse/files/app/?X-Amz-Signature=hunter2"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "PARSE_MCP_FILES_URL") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("PARSE_MCP_FILES_URL with a query: %v", err)
	}
}

// TestLoadReadsAsAShellWould: a desktop client passes variables verbatim,
// so a tier in capitals is the tier (the gates take any case too) and a
// leading ~/ in a path is the home directory; other paths are kept.
func TestLoadReadsAsAShellWould(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	t.Setenv("PARSE_MCP_PERMISSIONS", " Write ")
	t.Setenv("PARSE_MCP_LIMITS_STORE", "MongoDB")
	t.Setenv("PARSE_MCP_POLICY_FILE", "~/parse-mcp/policy.yaml")
	t.Setenv("PARSE_MCP_LOG_FILE", "~")
	t.Setenv("PARSE_MCP_DEMO_DIR", "~other/dir")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil && strings.HasPrefix(err.Error(), "PARSE_MCP_PERMISSIONS") {
		t.Fatalf("Validate: %v", err)
	}
	if c.Permissions != TierWrite {
		t.Errorf("PARSE_MCP_PERMISSIONS=\" Write \" read as %q, want %q", c.Permissions, TierWrite)
	}
	if c.LimitsStore != LimitsMongoDB {
		t.Errorf("PARSE_MCP_LIMITS_STORE=MongoDB read as %q", c.LimitsStore)
	}
	if want := filepath.Join(home, "parse-mcp/policy.yaml"); c.PolicyFile != want {
		t.Errorf("policy file %q, want %q", c.PolicyFile, want)
	}
	if c.LogFile != home {
		t.Errorf("log file %q, want %q", c.LogFile, home)
	}
	if c.DemoDir != "~other/dir" {
		t.Errorf("another user's ~ was expanded: %q", c.DemoDir)
	}
}

func TestNamedAPIKeyIdentities(t *testing.T) {
	c := valid()
	c.APIKeys = NewSecret("ops@master:0123456789abcdef,eds@role=Content Editors/write:1123456789abcdef,al@user=AbC123:2123456789:abcdefgh,ro/readonly:3123456789abcdef,plain:4123456789abcdef")
	keys, err := c.NamedAPIKeys()
	if err != nil {
		t.Fatal(err)
	}
	want := []NamedAPIKey{
		{Name: "ops", Master: true},
		{Name: "eds", Role: "Content Editors", Tier: TierWrite},
		{Name: "al", User: "AbC123"},
		{Name: "ro", Tier: TierReadonly},
		{Name: "plain"},
	}
	wantKeys := []string{"0123456789abcdef", "1123456789abcdef", "2123456789:abcdefgh", "3123456789abcdef", "4123456789abcdef"}
	for i, k := range keys {
		got := k
		got.Key = Secret{}
		if got != want[i] || k.Key.Reveal() != wantKeys[i] {
			t.Errorf("key %d = %+v (key ok: %v), want %+v", i, got, k.Key.Reveal() == wantKeys[i], want[i])
		}
	}
}

// TestLimitsURINeverQuoted: a refused PARSE_MCP_LIMITS_URI is named with
// its password cut; its database and password are read from it.
func TestLimitsURINeverQuoted(t *testing.T) {
	c := valid()
	c.LimitsStore = LimitsMongoDB
	c.LimitsURI = NewSecret("postgres://limits:hunter2-secret@h:5432/limits")
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "PARSE_MCP_LIMITS_URI") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error: %v", err)
	}
	c.LimitsURI = NewSecret("mongodb://limits:p%40ss@h1,h2/shared?authSource=admin")
	if got := c.LimitsDatabaseName(); got != "shared" {
		t.Fatalf("database %q", got)
	}
	if raw, decoded := URIPasswords(c.LimitsURI.Reveal()); raw != "p%40ss" || decoded != "p@ss" {
		t.Fatalf("password %q %q", raw, decoded)
	}
	c.LimitsURI = NewSecret("mongodb://h1/")
	if got := c.LimitsDatabaseName(); got != "app" {
		t.Fatalf("database without a path: %q, want the app's", got)
	}
}
