package main

import (
	"encoding/json"
	"flag"
	"strings"
	"testing"
)

func TestUnescapeHTML(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, `{"a":"<b> &"}`},
		{`{"a":"\u003C\u003E"}`, `{"a":"<>"}`},
		{`{"a":"\\u003c"}`, `{"a":"\\u003c"}`},             // an escaped backslash, then literal text
		{`{"a":"\\\u003c"}`, `{"a":"\\<"}`},                // escaped backslash, then an escape
		{`{"a":"\u00e9\n\"q\""}`, `{"a":"\u00e9\n\"q\""}`}, // other escapes untouched
		{`"\`, `"\`}, // truncated input is copied
	} {
		got := string(unescapeHTML([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if json.Valid([]byte(tc.in)) {
			var a, b any
			_ = json.Unmarshal([]byte(tc.in), &a)
			if err := json.Unmarshal([]byte(got), &b); err != nil {
				t.Errorf("unescapeHTML(%s) is not valid JSON: %v", tc.in, err)
			}
			if ja, _ := json.Marshal(a); string(ja) != string(must(json.Marshal(b))) {
				t.Errorf("unescapeHTML(%s) changed the value: %v vs %v", tc.in, a, b)
			}
		}
	}
}

func must(b []byte, _ error) []byte { return b }

// TestCommandLineMistakes: what a newcomer gets wrong on the command line is
// refused with exit 2 and one line naming the mistake — before any database
// is touched, and never quoting a password.
func TestCommandLineMistakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		uri  string
		argv []string
		want string
	}{
		// Go's flag package stops at the command: a flag after it would be
		// an argument, and the missing --demo a configuration error.
		{"flag after call", "", []string{"call", "count_objects", `{"class_name":"Song"}`, "--demo"},
			"flag --demo must come before the command: parse-mcp --demo call"},
		{"flag after ask", "", []string{"ask", "how many songs?", "-policy=p.yaml"},
			"flag -policy=p.yaml must come before the command"},
		{"unescaped @ in the password", "mongodb://reader:p@ss@db.example.com/parse", nil,
			"configuration error: PARSE_MCP_MONGODB_URI: not a valid connection string: unescaped @ sign in user info (percent-encode"},
		{"bad escape in the password", "mongodb://reader:ss%zzs@db.example.com/parse", nil,
			"PARSE_MCP_MONGODB_URI: not a valid connection string: invalid password"},
		// An option may hold a secret (the client key's password): a bad
		// escape in it is not quoted either.
		{"bad escape in an option", "mongodb://db.example.com/parse?tls=true&tlsCertificateKeyFilePassword=ss%zzs", nil,
			"PARSE_MCP_MONGODB_URI: not a valid connection string: invalid option value"},
		{"bad option", "mongodb://db.example.com/parse?maxPoolSize=many", nil,
			`PARSE_MCP_MONGODB_URI: not a valid connection string: invalid value for "maxPoolSize": "many" (check the connection string)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PARSE_MCP_MONGODB_URI", tc.uri)
			t.Setenv("PARSE_MCP_DEMO", "")
			t.Setenv("PARSE_MCP_DATABASE", "")
			var stdout, stderr strings.Builder
			code := run(tc.argv, strings.NewReader(""), &stdout, &stderr)
			if code != exitBadUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
				t.Fatalf("exit %d, want %d; stderr %q does not say %q (stdout %q)", code, exitBadUsage, stderr.String(), tc.want, stdout.String())
			}
			if strings.Contains(stderr.String(), "p@ss") || strings.Contains(stderr.String(), "zz") {
				t.Fatalf("the password is quoted: %q", stderr.String())
			}
		})
	}
	// Command-local flags stay the command's.
	global := flag.NewFlagSet("parse-mcp", flag.ContinueOnError)
	global.Bool("demo", false, "")
	for _, cmd := range [][]string{{"ask", "--trace", "q"}, {"ask", "-"}, {"embed", "Song", "--all"}, {"embed", "--all", "Song"}} {
		if msg := checkCommand(cmd, global); msg != "" {
			t.Errorf("checkCommand(%q) = %q", cmd, msg)
		}
	}
}

// TestEmbedArgs: --all before or after the class; anything else is a usage
// error.
func TestEmbedArgs(t *testing.T) {
	for _, tc := range []struct {
		cmd   []string
		class string
		all   bool
		ok    bool
	}{
		{[]string{"embed", "Song"}, "Song", false, true},
		{[]string{"embed", "Song", "--all"}, "Song", true, true},
		{[]string{"embed", "--all", "Song"}, "Song", true, true},
		{[]string{"embed"}, "", false, false},
		{[]string{"embed", "--all"}, "", false, false},
		{[]string{"embed", "Song", "Note"}, "", false, false},
		{[]string{"embed", "--all", "--all", "Song"}, "", false, false},
		{[]string{"embed", "--force", "Song"}, "", false, false},
	} {
		class, all, ok := embedArgs(tc.cmd)
		if class != tc.class || all != tc.all || ok != tc.ok {
			t.Errorf("embedArgs(%q) = %q, %v, %v; want %q, %v, %v", tc.cmd, class, all, ok, tc.class, tc.all, tc.ok)
		}
	}
}

// Over stdio the server runs on one processor unless it is the demo (its
// database runs in the process) or the operator set GOMAXPROCS.
func TestStdioProcs(t *testing.T) {
	for _, tc := range []struct {
		demo       bool
		gomaxprocs string
		want       int
	}{
		{false, "", 1},
		{true, "", 0},
		{false, "4", 0},
		{true, "2", 0},
	} {
		if got := stdioProcs(tc.demo, tc.gomaxprocs); got != tc.want {
			t.Errorf("stdioProcs(%v, %q) = %d, want %d", tc.demo, tc.gomaxprocs, got, tc.want)
		}
	}
}
