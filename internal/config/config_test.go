package config

import (
	"errors"
	"testing"
	"time"
)

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
		{"http not host:port", func(c *Config) { c.HTTPAddr = "8080" }, "PARSE_MCP_HTTP_ADDR"},
		{"http public without key", func(c *Config) { c.HTTPAddr = "0.0.0.0:8080" }, "PARSE_MCP_API_KEY"},
		{"http public with key", func(c *Config) { c.HTTPAddr = "0.0.0.0:8080"; c.APIKey = "0123456789abcdef" }, ""},
		{"http loopback", func(c *Config) { c.HTTPAddr = "127.0.0.1:8080" }, ""},
		{"http localhost", func(c *Config) { c.HTTPAddr = "localhost:8080" }, ""},
		{"short key", func(c *Config) { c.APIKey = "short" }, "PARSE_MCP_API_KEY"},
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
	got := RedactedURI("mongodb://user:s3cret@db.example.com:27017/app?authSource=admin")
	if got != "mongodb://user@db.example.com:27017/app" {
		t.Fatalf("RedactedURI = %q", got)
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
