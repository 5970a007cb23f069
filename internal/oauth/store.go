package oauth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// Kinds of record in the collection; a record's _id is its kind and the
// SHA-256 of its secret (request id, code, token), so the collection never
// holds a usable secret.
const (
	kindRequest = "request"
	kindCode    = "code"
	kindAccess  = "access"
	kindRefresh = "refresh"
	kindClient  = "client"
)

// grant is one record: a pending authorization request, an authorization
// code, an access or a refresh token. Session is the Parse session token
// sealed under the record's own secret (seal): reading the collection
// gives neither the token nor the session.
type grant struct {
	ID          string    `bson:"_id"`
	Kind        string    `bson:"kind"`
	Family      string    `bson:"family,omitempty"`
	ClientID    string    `bson:"client_id"`
	ClientName  string    `bson:"client_name,omitempty"`
	ClientURI   string    `bson:"client_uri,omitempty"`
	RedirectURI string    `bson:"redirect_uri,omitempty"`
	State       string    `bson:"state,omitempty"`
	Challenge   string    `bson:"code_challenge,omitempty"`
	Resource    string    `bson:"resource"`
	Tier        string    `bson:"tier"`
	Narrowed    bool      `bson:"narrowed,omitempty"`
	CSRF        string    `bson:"csrf,omitempty"` // hash
	Session     string    `bson:"session,omitempty"`
	Used        bool      `bson:"used"`
	ExpiresAt   time.Time `bson:"expiresAt"`
}

// client is a dynamically registered client (RFC 7591).
type client struct {
	ID           string    `bson:"_id"`
	Kind         string    `bson:"kind"`
	ClientID     string    `bson:"client_id"`
	Name         string    `bson:"client_name,omitempty"`
	URI          string    `bson:"client_uri,omitempty"`
	RedirectURIs []string  `bson:"redirect_uris"`
	AuthMethod   string    `bson:"token_endpoint_auth_method"`
	SecretHash   string    `bson:"secret_hash,omitempty"`
	CreatedAt    time.Time `bson:"createdAt"`
}

type store struct {
	coll *mongo.Collection
	now  func() time.Time

	once      sync.Once
	mu        sync.Mutex
	lastSweep time.Time
}

func recordID(kind, secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return kind + ":" + hex.EncodeToString(sum[:])
}

func hashOf(secret string) string {
	sum := sha256.Sum256([]byte("parse-mcp oauth secret\x00" + secret))
	return hex.EncodeToString(sum[:])
}

// newSecret is 256 random bits, base64url, after prefix.
func newSecret(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on a supported platform
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func sealKey(secret string) []byte {
	sum := sha256.Sum256([]byte("parse-mcp oauth session key\x00" + secret))
	return sum[:]
}

// seal encrypts the Parse session token under secret (AES-256-GCM with a
// key derived from it): only the holder of the code or token opens it.
func seal(secret string, session config.Secret) string {
	block, _ := aes.NewCipher(sealKey(secret))
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return base64.RawStdEncoding.EncodeToString(gcm.Seal(nonce, nonce, []byte(session.Reveal()), nil))
}

func open(secret, sealed string) (config.Secret, error) {
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	block, _ := aes.NewCipher(sealKey(secret))
	gcm, _ := cipher.NewGCM(block)
	if err != nil || len(raw) < gcm.NonceSize() {
		return config.Secret{}, errors.New("malformed sealed session")
	}
	plain, err := gcm.Open(nil, raw[:gcm.NonceSize()], raw[gcm.NonceSize():], nil)
	if err != nil {
		return config.Secret{}, errors.New("the sealed session does not open")
	}
	return config.NewSecret(string(plain)), nil
}

// prepare creates the TTL and family indexes once, and removes expired
// records at most once a minute. FerretDB 1.24 has no TTL indexes: the
// error is ignored, every read checks expiresAt, and the sweep keeps the
// collection from growing.
func (s *store) prepare(ctx context.Context) {
	s.once.Do(func() {
		_, _ = s.coll.Indexes().CreateOne(ctx, mongo.IndexModel{
			Keys:    bson.D{{Key: "expiresAt", Value: 1}},
			Options: options.Index().SetExpireAfterSeconds(0).SetName("expiresAt_ttl"),
		})
		_, _ = s.coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "family", Value: 1}}, Options: options.Index().SetName("family")})
	})
	s.mu.Lock()
	now := s.now()
	sweep := now.Sub(s.lastSweep) >= time.Minute
	if sweep {
		s.lastSweep = now
	}
	s.mu.Unlock()
	if sweep {
		_, _ = s.coll.DeleteMany(ctx, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lt", Value: now}}}})
	}
}

func (s *store) insert(ctx context.Context, doc any) error {
	s.prepare(ctx)
	if _, err := s.coll.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("oauth: storing in %s: %w", parsedb.OAuthCollection, err)
	}
	return nil
}

// find returns the record of kind for secret, nil when there is none or it
// expired (FerretDB 1.24 keeps expired records: checked here).
func (s *store) find(ctx context.Context, kind, secret string) (*grant, error) {
	var g grant
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: recordID(kind, secret)}}).Decode(&g)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: reading %s: %w", parsedb.OAuthCollection, err)
	}
	if g.Kind != kind || !s.now().Before(g.ExpiresAt) {
		return nil, nil
	}
	return &g, nil
}

// spend marks a code or refresh token used, atomically: first is false
// when it had been used before (a replay). g is nil when there is no such
// record; on first use it is the record as it was (its own expiry). keep,
// when not zero, is how long the used record stays to recognise a replay
// (a code's own life is shorter than that); else it stays until its own
// expiry.
func (s *store) spend(ctx context.Context, kind, secret string, keep time.Duration) (g *grant, first bool, err error) {
	id := recordID(kind, secret)
	set := bson.D{{Key: "used", Value: true}}
	if keep > 0 {
		set = append(set, bson.E{Key: "expiresAt", Value: s.now().Add(keep)})
	}
	var doc grant
	err = s.coll.FindOneAndUpdate(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "used", Value: false}},
		bson.D{{Key: "$set", Value: set}},
	).Decode(&doc)
	if err == nil {
		return &doc, true, nil
	}
	if !errors.Is(err, mongo.ErrNoDocuments) {
		return nil, false, fmt.Errorf("oauth: spending a %s: %w", kind, err)
	}
	err = s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("oauth: reading a %s: %w", kind, err)
	}
	return &doc, false, nil
}

func (s *store) update(ctx context.Context, kind, secret string, set bson.D) error {
	_, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: recordID(kind, secret)}}, bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return fmt.Errorf("oauth: updating %s: %w", parsedb.OAuthCollection, err)
	}
	return nil
}

// revokeFamily deletes every code and token descending from one
// authorization.
func (s *store) revokeFamily(ctx context.Context, family string) error {
	if family == "" {
		return nil
	}
	_, err := s.coll.DeleteMany(ctx, bson.D{{Key: "family", Value: family}})
	return err
}

func (s *store) client(ctx context.Context, clientID string) (*client, error) {
	var c client
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: kindClient + ":" + clientID}}).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: reading a client: %w", err)
	}
	return &c, nil
}
