package parsedb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ConfirmationCollection records which confirmations (2026-07-28
// requestState tokens, see tools/confirm.go) were used, so that "used once"
// holds across every parse-mcp process on the database, and keeps the
// per-database signing secret when no PARSE_MCP_CONFIRM_SECRET is set. Its
// name is not a valid Parse class name, so no Parse class can collide with
// it, and it is an internal collection: no tool reads it.
const ConfirmationCollection = "_parse_mcp_confirmation"

// confirmationSecretID is the document holding the per-database secret.
const confirmationSecretID = "signing-secret"

// confirmationRetention keeps a used nonce this long past its token's
// expiry, so that a process whose clock runs behind still finds it.
const confirmationRetention = 10 * time.Minute

// ConfirmationLedger is the MongoDB record of used confirmations.
type ConfirmationLedger struct {
	coll *mongo.Collection
	// fixed is the configured secret (PARSE_MCP_CONFIRM_SECRET), if any.
	fixed []byte

	mu        sync.Mutex
	secret    []byte
	indexed   bool
	lastSweep time.Time
	now       func() time.Time
}

// NewConfirmationLedger is the ledger in store's database (under its
// collection prefix). secret, when not empty, signs tokens instead of the
// per-database secret.
func NewConfirmationLedger(store *Store, secret string) *ConfirmationLedger {
	l := &ConfirmationLedger{coll: store.Collection(ConfirmationCollection), now: time.Now}
	if secret != "" {
		l.fixed = []byte(secret)
	}
	return l
}

// Secret is the key tokens are signed with: the configured secret, else
// the database's own, created once by whichever process needs it first
// (every process then reads the same one).
func (l *ConfirmationLedger) Secret(ctx context.Context) ([]byte, error) {
	if l.fixed != nil {
		return l.fixed, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.secret != nil {
		return l.secret, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	_, err := l.coll.InsertOne(ctx, bson.D{{Key: "_id", Value: confirmationSecretID}, {Key: "secret", Value: hex.EncodeToString(fresh)}})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return nil, fmt.Errorf("storing the confirmation secret in %s: %w", ConfirmationCollection, err)
	}
	var doc struct {
		Secret string `bson:"secret"`
	}
	if err := l.coll.FindOne(ctx, bson.D{{Key: "_id", Value: confirmationSecretID}}).Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading the confirmation secret from %s: %w", ConfirmationCollection, err)
	}
	b, err := hex.DecodeString(doc.Secret)
	if err != nil || len(b) < 32 {
		return nil, errors.New("the confirmation secret in " + ConfirmationCollection + " is malformed: delete that document to let parse-mcp create a new one")
	}
	l.secret = b
	return b, nil
}

// Spend records that the confirmation nonce was used; fresh is false when
// it had been used before (by this process or any other). expires is the
// token's own expiry: the record is kept a little longer and then removed
// by a TTL index where the server has them (MongoDB), else by a sweep of
// expired records here (FerretDB 1.24 has no TTL indexes) — either way only
// after the token itself can no longer be accepted.
func (l *ConfirmationLedger) Spend(ctx context.Context, nonce []byte, expires time.Time) (fresh bool, err error) {
	l.prepare(ctx)
	_, err = l.coll.InsertOne(ctx, bson.D{
		{Key: "_id", Value: "nonce:" + hex.EncodeToString(nonce)},
		{Key: "expiresAt", Value: expires.Add(confirmationRetention)},
	})
	switch {
	case err == nil:
		return true, nil
	case mongo.IsDuplicateKeyError(err):
		return false, nil
	}
	return false, fmt.Errorf("recording a used confirmation in %s: %w", ConfirmationCollection, err)
}

// prepare creates the TTL index once (ignoring a server without TTL
// indexes) and sweeps expired records at most once a minute.
func (l *ConfirmationLedger) prepare(ctx context.Context) {
	l.mu.Lock()
	now := l.now()
	index := !l.indexed
	l.indexed = true
	sweep := now.Sub(l.lastSweep) >= time.Minute
	if sweep {
		l.lastSweep = now
	}
	l.mu.Unlock()
	if index {
		_, _ = l.coll.Indexes().CreateOne(ctx, mongo.IndexModel{
			Keys:    bson.D{{Key: "expiresAt", Value: 1}},
			Options: options.Index().SetExpireAfterSeconds(0).SetName("expiresAt_ttl"),
		})
	}
	if sweep {
		_, _ = l.coll.DeleteMany(ctx, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lt", Value: now}}}})
	}
}
