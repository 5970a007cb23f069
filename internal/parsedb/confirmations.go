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

	"github.com/parse-mcp/parse-mcp/internal/limits"
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
	// nonces holds the used nonces: coll, or the limits store's (SpendIn).
	nonces *mongo.Collection
	// fixed is the configured secret (PARSE_MCP_CONFIRM_SECRET), if any.
	fixed []byte

	// expiry removes used nonces after their expiresAt.
	expiry *limits.Expiry

	mu     sync.Mutex
	secret []byte
	now    func() time.Time
}

// NewConfirmationLedger is the ledger in store's database (under its
// collection prefix). secret, when not empty, signs tokens instead of the
// per-database secret.
func NewConfirmationLedger(store *Store, secret string) *ConfirmationLedger {
	coll := store.Collection(ConfirmationCollection)
	l := &ConfirmationLedger{coll: coll, nonces: coll, expiry: &limits.Expiry{Coll: coll, Field: "expiresAt"}, now: time.Now}
	if secret != "" {
		l.fixed = []byte(secret)
	}
	return l
}

// SpendIn records used nonces in store's database instead
// (PARSE_MCP_LIMITS_URI, docs/transports.md "Behind a load balancer"); the secret stays
// in the app's database. Call it before the ledger is used.
func (l *ConfirmationLedger) SpendIn(store *Store) {
	l.nonces = store.Collection(ConfirmationCollection)
	l.expiry = &limits.Expiry{Coll: l.nonces, Field: "expiresAt"}
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
	l.expiry.Maintain(ctx, l.now())
	_, err = l.nonces.InsertOne(ctx, bson.D{
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
