// Package parsetest runs a real Parse Server (npm parse-server@9.10.0) for
// tests, against a MongoDB-compatible server such as the e2e harness's
// embedded FerretDB.
//
// Usage:
//
//	ps := parsetest.Start(t, parsetest.Options{MongoURI: uri})
//	ps.CreateClass(t, "Note", map[string]string{"title": "String"}, nil)
//	id, token := ps.SignUp(t, "alice", "pw")
//	obj := ps.MustDo(t, "POST", "/classes/Note", map[string]any{"title": "x"}, parsetest.AsSession(token))
//
// Start installs parse-server into a cache directory on first use
// (os.UserCacheDir()/parse-mcp/parse-server-9.10.0, or
// $PARSE_MCP_TEST_PARSE_SERVER_DIR), plus a Node 22 binary from npm when the
// system node is missing or older than parse-server accepts. The install
// takes one to two minutes once; a file lock keeps concurrent test processes
// from racing. When Node/npm cannot be had, Start skips the test with a message
// naming what is missing — or fails it when PARSE_MCP_TEST_REQUIRE_PARSE_SERVER
// is set (CI sets it).
//
// Each Start boots its own node process on a free loopback port with a fresh
// master key, loads the Cloud Code (DefaultCloudCode unless Options.CloudCode
// is set), waits for /health and stops the process on t.Cleanup. With
// Options.LiveQueryClasses it also serves LiveQuery for those classes at
// Server.LiveQueryURL.
//
// DefaultCloudCode (cloud.js in this package) defines, for class Note: a
// beforeSave that trims title and sets checkedBy = "beforeSave", rejecting an
// empty title or a priority outside 1..5 with Parse error 142
// (VALIDATION_ERROR); an afterSave and afterDelete that write a NoteAudit row
// {noteId, action: create|update|delete, user}; and the Cloud functions greet
// ({name, times} → {greeting, times, user, master}; no name → error 142),
// countNotes (the Notes the caller may see) and addNote ({title} → creates a
// Note as the caller, {objectId}; with dryRun: true it creates nothing).
package parsetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

//go:embed server.js
var serverJS string

// DefaultCloudCode is the Cloud Code loaded when Options.CloudCode is empty;
// the package documentation lists what it defines.
//
//go:embed cloud.js
var DefaultCloudCode string

// Options configure Start.
type Options struct {
	// MongoURI is the MongoDB connection string; its path (database) is
	// replaced by Database.
	MongoURI string
	// Database is the database Parse Server uses. Empty: a unique name is
	// generated and the database is dropped on cleanup. A given database is
	// left in place (the caller owns it).
	Database string
	// CloudCode is the JavaScript of main.js; empty means DefaultCloudCode.
	CloudCode string
	// LiveQueryClasses enables LiveQuery for these classes.
	LiveQueryClasses []string
	// Verbose forwards Parse Server's own log to the test log.
	Verbose bool
}

// Server is a running Parse Server.
type Server struct {
	URL          string // REST root, http://127.0.0.1:PORT/parse
	AppID        string
	MasterKey    string
	LiveQueryURL string // ws://127.0.0.1:PORT/ when LiveQuery is enabled
	Database     string
	MongoURI     string // the connection string including Database

	client *http.Client
}

var dbCounter atomic.Int64

// Start boots Parse Server and stops it when the test ends. It skips the test
// when Node/npm are not available (see the package documentation).
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.MongoURI == "" {
		t.Fatal("parsetest.Start: Options.MongoURI is required")
	}
	if testing.Short() {
		t.Skip("skipping under -short (make check): booting a real Parse Server takes seconds; make test runs it")
	}
	ctx := context.Background()
	rt, err := Install(ctx)
	if err != nil {
		if ue, ok := err.(*unavailableError); ok && os.Getenv(EnvRequire) == "" {
			t.Skipf("skipping: no real Parse Server: %s", ue.msg)
		}
		t.Fatalf("installing parse-server@%s: %v", ParseServerVersion, err)
	}
	s, drop := newServer(t, o)
	cmd := s.command(t, rt, o)
	stdout, exited, logs := s.launch(t, cmd, o, drop)
	port := waitReady(t, stdout, exited, logs)
	s.URL = "http://127.0.0.1:" + port + "/parse"
	if len(o.LiveQueryClasses) > 0 {
		s.LiveQueryURL = "ws://127.0.0.1:" + port + "/"
	}
	s.waitHealthy(t, exited, logs)
	return s
}

// newServer names the app, its keys and its database (a fresh one, dropped
// at the end, unless Options.Database names one); it reports whether the
// database is dropped.
func newServer(t testing.TB, o Options) (*Server, bool) {
	db := o.Database
	drop := false
	if db == "" {
		db = fmt.Sprintf("parsetest_%d_%d_%s", os.Getpid(), dbCounter.Add(1), randomHex(3))
		drop = true
	}
	u, err := url.Parse(o.MongoURI)
	if err != nil {
		t.Fatalf("parsetest: MongoURI: %v", err)
	}
	u.Path = "/" + db
	dbURI := u.String()
	return &Server{
		AppID:     "parsetest-" + randomHex(4),
		MasterKey: randomHex(24),
		Database:  db,
		MongoURI:  dbURI,
		client:    &http.Client{Timeout: 60 * time.Second},
	}, drop
}

// command writes the server script and the Cloud Code to a temporary
// directory and returns the node command that runs them.
func (s *Server) command(t testing.TB, rt *Runtime, o Options) *exec.Cmd {
	dir := t.TempDir()
	cloud := o.CloudCode
	if cloud == "" {
		cloud = DefaultCloudCode
	}
	for name, content := range map[string]string{"server.js": serverJS, "main.js": cloud} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := map[string]any{
		"databaseURI":      s.MongoURI,
		"appId":            s.AppID,
		"masterKey":        s.MasterKey,
		"cloud":            filepath.Join(dir, "main.js"),
		"liveQueryClasses": o.LiveQueryClasses,
		"verbose":          o.Verbose,
	}
	if o.Verbose {
		cfg["logLevel"] = "info"
	}
	cmd := exec.Command(rt.Node, filepath.Join(dir, "server.js"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+rt.Modules,
		"PARSETEST_CONFIG="+marshalConfig(cfg),
		"NODE_ENV=test",
	)
	return cmd
}

// launch starts node and, when the test ends, stops it (SIGTERM, then kill
// after 20 seconds) and drops the database if drop. It returns node's
// stdout, a channel closed when node exits, and its log.
func (s *Server) launch(t testing.TB, cmd *exec.Cmd, o Options, drop bool) (io.Reader, <-chan struct{}, *SyncBuffer) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &SyncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting node: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = stdin.Close()
		if o.Verbose || t.Failed() {
			t.Logf("parse-server log:\n%s", logs.String())
		}
		if drop {
			dropDatabase(o.MongoURI, s.Database)
		}
	})
	return stdout, exited, logs
}

// waitReady reads node's stdout into the log until the server script prints
// its port, and returns the port.
func waitReady(t testing.TB, stdout io.Reader, exited <-chan struct{}, logs *SyncBuffer) string {
	t.Helper()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if port, ok := strings.CutPrefix(line, "PARSETEST_READY "); ok {
				ready <- port
				continue
			}
			logs.Write([]byte(line + "\n"))
		}
	}()
	select {
	case port := <-ready:
		return port
	case <-exited:
		t.Fatalf("parse-server exited during start-up:\n%s", logs.String())
	case <-time.After(5 * time.Minute):
		t.Fatalf("parse-server did not start within 5 minutes:\n%s", logs.String())
	}
	return ""
}

func (s *Server) waitHealthy(t testing.TB, exited <-chan struct{}, logs *SyncBuffer) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := s.client.Get(s.URL + "/health")
		if err == nil {
			var h struct{ Status string }
			_ = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.Status == "ok" {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("parse-server exited before /health was ok:\n%s", logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("parse-server /health not ok after 2 minutes (last error %v):\n%s", err, logs.String())
		}
	}
}

// Caller is who a REST request is sent as.
type Caller struct {
	Master       bool
	SessionToken string
}

// AsMaster sends requests with the master key.
var AsMaster = Caller{Master: true}

// AsAnonymous sends requests with only the application id.
var AsAnonymous = Caller{}

// AsSession sends requests as the user owning the session token.
func AsSession(token string) Caller { return Caller{SessionToken: token} }

// Do sends a REST request (path relative to URL, e.g. "/classes/Note") and
// returns the HTTP status and the decoded JSON body.
func (s *Server) Do(method, path string, body any, as Caller) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Parse-Application-Id", s.AppID)
	req.Header.Set("Content-Type", "application/json")
	if as.Master {
		req.Header.Set("X-Parse-Master-Key", s.MasterKey)
	}
	if as.SessionToken != "" {
		req.Header.Set("X-Parse-Session-Token", as.SessionToken)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("%s %s: response is not a JSON object: %s", method, path, raw)
		}
	}
	return resp.StatusCode, out, nil
}

// MustDo is Do that fails the test unless the status is 2xx.
func (s *Server) MustDo(t testing.TB, method, path string, body any, as Caller) map[string]any {
	t.Helper()
	status, out, err := s.Do(method, path, body, as)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status/100 != 2 {
		t.Fatalf("%s %s: HTTP %d %v", method, path, status, out)
	}
	return out
}

// CreateClass creates a class through POST /schemas/:class (Parse needs the
// schema before rows on FerretDB). fields maps field names to Parse types
// ("String", "Number", "Pointer:_User" …); clp is classLevelPermissions or nil.
func (s *Server) CreateClass(t testing.TB, class string, fields map[string]string, clp map[string]any) {
	t.Helper()
	fs := map[string]any{}
	for name, typ := range fields {
		if target, ok := strings.CutPrefix(typ, "Pointer:"); ok {
			fs[name] = map[string]any{"type": "Pointer", "targetClass": target}
		} else if target, ok := strings.CutPrefix(typ, "Relation:"); ok {
			fs[name] = map[string]any{"type": "Relation", "targetClass": target}
		} else {
			fs[name] = map[string]any{"type": typ}
		}
	}
	body := map[string]any{"className": class, "fields": fs}
	if clp != nil {
		body["classLevelPermissions"] = clp
	}
	s.MustDo(t, "POST", "/schemas/"+class, body, AsMaster)
}

// SignUp creates a user and returns its objectId and session token.
func (s *Server) SignUp(t testing.TB, username, password string) (userID, sessionToken string) {
	t.Helper()
	out := s.MustDo(t, "POST", "/users", map[string]any{"username": username, "password": password}, AsAnonymous)
	userID, _ = out["objectId"].(string)
	sessionToken, _ = out["sessionToken"].(string)
	if userID == "" || sessionToken == "" {
		t.Fatalf("sign-up of %s returned %v", username, out)
	}
	return userID, sessionToken
}

func dropDatabase(baseURI, db string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := mongo.Connect(options.Client().ApplyURI(baseURI))
	if err != nil {
		return
	}
	defer cl.Disconnect(ctx)
	_ = cl.Database(db).Drop(ctx)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SyncBuffer is a goroutine-safe buffer a child process can write its
// output to while a test reads it (Parse Server's log here; the e2e
// harness's server stderr too).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
