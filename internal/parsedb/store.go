// Package parsedb is parse-mcp's Parse-on-MongoDB data layer: it knows how
// Parse Server lays an app out in MongoDB (collection prefix, _SCHEMA, _Join
// collections, _p_ pointers, _rperm ACLs) and translates between that storage
// format and the REST shapes Parse users and LLMs think in.
package parsedb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/telemetry"
)

// Store is a connection to one Parse app's database.
type Store struct {
	Client *mongo.Client
	DB     *mongo.Database
	// Prefix is Parse Server's collectionPrefix; it prefixes every
	// collection name, _SCHEMA and _Join:* included.
	Prefix string
	Schema *SchemaCache
}

// ConnectTimeout bounds the start-up connect + ping so that an unreachable
// database fails fast instead of hanging the MCP client.
const ConnectTimeout = 8 * time.Second

// Connect opens the client and pings the server within ConnectTimeout.
func Connect(ctx context.Context, uri, database, prefix string) (*Store, error) {
	opts := options.Client().ApplyURI(uri).
		SetServerSelectionTimeout(ConnectTimeout).
		SetConnectTimeout(ConnectTimeout).
		SetAppName("parse-mcp").
		SetRegistry(commandRegistry)
	if m := telemetry.CommandMonitor(); m != nil {
		opts.SetMonitor(m)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := client.Ping(pctx, nil); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, err
	}
	return NewStore(client, database, prefix), nil
}

// NewStore wraps an already-connected client.
func NewStore(client *mongo.Client, database, prefix string) *Store {
	s := &Store{Client: client, DB: client.Database(database), Prefix: prefix}
	s.Schema = NewSchemaCache(s, DefaultSchemaTTL)
	return s
}

// Close disconnects the client.
func (s *Store) Close(ctx context.Context) error {
	return s.Client.Disconnect(ctx)
}

// Collection is the collection holding a class's objects.
func (s *Store) Collection(className string) *mongo.Collection {
	return s.DB.Collection(s.Prefix + className)
}

// JoinCollection is the collection holding a relation field's pairs:
// _Join:<field>:<OwnerClass>.
func (s *Store) JoinCollection(field, ownerClass string) *mongo.Collection {
	return s.DB.Collection(fmt.Sprintf("%s_Join:%s:%s", s.Prefix, field, ownerClass))
}

// SchemaCollection is _SCHEMA (prefixed).
func (s *Store) SchemaCollection() *mongo.Collection {
	return s.DB.Collection(s.Prefix + "_SCHEMA")
}

// OAuthCollection holds the oauth mode's registered clients, pending
// authorizations and grants (internal/oauth): token hashes, never tokens.
// Like ConfirmationCollection its name is no valid Parse class name and no
// tool reads it.
const OAuthCollection = "_parse_mcp_oauth"

// IsInternalCollection reports whether a class name designates one of Parse
// Server's internal collections, or one of parse-mcp's own (the
// confirmation ledger, the oauth grants), which no tool may ever read.
func IsInternalCollection(name string) bool {
	if strings.HasPrefix(name, "_Join:") {
		return true
	}
	switch name {
	case "_SCHEMA", "_Hooks", "_GlobalConfig", "_GraphQLConfig", "_Idempotency", "_PushStatus",
		"_JobStatus", "_JobSchedule", "_Audience", "_Product", "_ExportProgress", ConfirmationCollection, OAuthCollection:
		return true
	}
	return false
}

// MaxTimeMS turns a context deadline into an explicit server-side time limit.
// The v2 driver does not derive maxTimeMS from a context deadline on cursor
// operations, so every find/count/aggregate sets it explicitly, leaving a
// small margin for the round trip. Returns 0 when there is no deadline.
func MaxTimeMS(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	left := time.Until(dl)
	margin := min(left/10, 500*time.Millisecond)
	left -= margin
	if left < time.Millisecond {
		left = time.Millisecond
	}
	return left
}
