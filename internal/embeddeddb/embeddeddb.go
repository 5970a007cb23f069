// Package embeddeddb runs FerretDB (a MongoDB-wire-compatible server) inside
// this process on SQLite files. It backs --demo and the e2e tests; production
// deployments point PARSE_MCP_MONGODB_URI at a real MongoDB instead.
package embeddeddb

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// Server is a running embedded FerretDB.
type Server struct {
	URI    string
	cancel context.CancelFunc
	done   chan struct{}
}

// Start launches FerretDB on a random loopback port with its SQLite files in
// dir. FerretDB's own logs are discarded unless logw is non-nil: stdout belongs
// to the MCP protocol and FerretDB logs every connection at INFO.
func Start(dir string, logw io.Writer) (*Server, error) {
	return StartAt(dir, "127.0.0.1:0", logw)
}

// StartAt is Start on a given TCP address: a test that stops the database
// under a live server restarts it where the server's URI points.
func StartAt(dir, addr string, logw io.Writer) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded database directory %s: %w", dir, err)
	}
	if logw == nil {
		logw = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: addr},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/",
	})
	if err != nil {
		return nil, fmt.Errorf("starting embedded FerretDB: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = f.Run(ctx)
	}()
	s.URI = f.MongoDBURI()
	return s, nil
}

// Stop shuts the listener down and waits for the backend to close.
func (s *Server) Stop() {
	s.cancel()
	<-s.done
}
