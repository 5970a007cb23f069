package limits

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Collection holds the shared rate windows. Its name is not a valid Parse
// class name, so no class can collide with it, and no tool reads it.
const Collection = "_parse_mcp_limits"

const (
	// checkTimeout bounds one check's round trip: a store that does not
	// answer in time is a failed store.
	checkTimeout = 2 * time.Second
	// failFastFor: after a failure, calls are refused without a round
	// trip for this long, so a dead store does not hold every call for
	// checkTimeout.
	failFastFor = time.Second
	// expiryGrace keeps a window's document this long past its end, so
	// that a process whose clock runs behind still counts in it.
	expiryGrace = time.Minute
	// logEvery is the least time between two log lines about a failing
	// store.
	logEvery = 10 * time.Second
)

// Mongo keeps fixed windows in a MongoDB collection: one document per
// bucket and window, {_id: hash(namespace, key) "@" window start, n,
// expires}. Windows are aligned to the Unix epoch, so every process with
// a synchronised clock counts a bucket's calls in the same document; an
// allowed call is one round trip (an ordered bulk of conditional upserts
// with $inc, which stops at the first full window). Expired windows are
// never read again (their start is in the key) and are removed by a TTL
// index on expires, or — where the server has none (FerretDB 1.x) — by a
// sweep here.
type Mongo struct {
	coll *mongo.Collection
	// namespace separates the apps that share one store (their database
	// and collection prefix).
	namespace string
	log       zerolog.Logger
	// redact removes the store's password from a driver error's text.
	redact func(string) string

	expiry *Expiry

	mu         sync.Mutex
	failUntil  time.Time // fail fast until then
	failing    bool
	lastLogged time.Time
}

// NewMongo is the store in coll. store names the store for the operator's
// log (a redacted URI); every non-empty secret (the URI's password, as
// written and decoded) is cut from every error logged.
func NewMongo(coll *mongo.Collection, namespace string, log zerolog.Logger, store string, secrets ...string) *Mongo {
	redact := func(s string) string {
		for _, secret := range secrets {
			if secret != "" {
				s = strings.ReplaceAll(s, secret, "xxxxx")
			}
		}
		return s
	}
	return &Mongo{coll: coll, namespace: namespace, redact: redact, expiry: &Expiry{Coll: coll, Field: "expires", Background: true},
		log: log.With().Str("limits_store", store).Logger()}
}

// windowDoc is what a Hit writes for one bucket.
type windowDoc struct {
	id    string
	limit int
	end   time.Time
}

// Hit implements Store.
func (m *Mongo) Hit(ctx context.Context, now time.Time, buckets []Bucket) (int, time.Duration) {
	var docs []windowDoc
	var index []int // docs[i] is buckets[index[i]]
	for i, b := range buckets {
		if b.Limit <= 0 || b.Window <= 0 {
			continue
		}
		docs = append(docs, m.doc(b, now))
		index = append(index, i)
	}
	if len(docs) == 0 {
		return -1, 0
	}
	if m.failFast(now) {
		return index[0], failedRetryAfter()
	}
	m.expiry.Maintain(ctx, now)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	var err error
	for range 2 {
		var stopped int
		stopped, err = m.hitOnce(ctx, docs)
		if err != nil {
			break
		}
		if stopped < 0 {
			m.recovered()
			return -1, 0
		}
		var full int
		full, err = m.settle(ctx, docs, stopped)
		if err != nil {
			break
		}
		if full >= 0 {
			m.recovered()
			return index[full], docs[full].end.Sub(now)
		}
		// No window was full: two processes created one at once (the
		// loser's upsert fails on the duplicate _id too). Count again.
	}
	if err == nil {
		err = errors.New("a window was neither full nor countable twice in a row")
	}
	m.failed(now, err)
	return index[0], failedRetryAfter()
}

// Full implements Store: one read of b's current window.
func (m *Mongo) Full(ctx context.Context, now time.Time, b Bucket) (bool, time.Duration) {
	if b.Limit <= 0 || b.Window <= 0 {
		return false, 0
	}
	if m.failFast(now) {
		return true, failedRetryAfter()
	}
	d := m.doc(b, now)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	var w struct {
		N int `bson:"n"`
	}
	err := m.coll.FindOne(ctx, bson.D{{Key: "_id", Value: d.id}}).Decode(&w)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		m.failed(now, err)
		return true, failedRetryAfter()
	}
	m.recovered()
	if w.N >= d.limit {
		return true, d.end.Sub(now)
	}
	return false, 0
}

// doc is b's window document at now.
func (m *Mongo) doc(b Bucket, now time.Time) windowDoc {
	w := max(b.Window.Milliseconds(), 1)
	start := now.UnixMilli() - ((now.UnixMilli()%w)+w)%w
	sum := sha256.Sum256([]byte(m.namespace + "\x00" + b.Key + "\x00" + strconv.FormatInt(w, 10)))
	return windowDoc{
		id:    hex.EncodeToString(sum[:16]) + "@" + strconv.FormatInt(start, 10),
		limit: b.Limit,
		end:   time.UnixMilli(start + w),
	}
}

// hitOnce counts one call in every window, in order, stopping at the first
// full one (its filter n < limit does not match, and the upsert then fails
// on the duplicate _id); it returns that one's index, -1 when all counted.
func (m *Mongo) hitOnce(ctx context.Context, docs []windowDoc) (int, error) {
	models := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		models[i] = mongo.NewUpdateOneModel().
			SetFilter(bson.D{{Key: "_id", Value: d.id}, {Key: "n", Value: bson.D{{Key: "$lt", Value: d.limit}}}}).
			SetUpdate(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "$setOnInsert", Value: bson.D{{Key: "expires", Value: d.end.Add(expiryGrace)}}}}).
			SetUpsert(true)
	}
	_, err := m.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(true))
	if err == nil {
		return -1, nil
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) == 1 &&
		bwe.WriteErrors[0].Code == duplicateKey && bwe.WriteErrors[0].Index < len(docs) {
		return bwe.WriteErrors[0].Index, nil
	}
	return 0, err
}

// duplicateKey is the server's duplicate key error code (E11000).
const duplicateKey = 11000

// settle handles a bulk that stopped at docs[stopped]: it finds the first
// full window from there (the server reports where it stopped; FerretDB
// 1.x always says 0, hence the search) and takes back the hits counted
// before it. full is -1 when none is full (an insert race, see Hit); the
// hits before stopped are then taken back.
func (m *Mongo) settle(ctx context.Context, docs []windowDoc, stopped int) (full int, err error) {
	ids := make(bson.A, 0, len(docs)-stopped)
	for _, d := range docs[stopped:] {
		ids = append(ids, d.id)
	}
	cur, err := m.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return 0, err
	}
	var found []struct {
		ID string `bson:"_id"`
		N  int    `bson:"n"`
	}
	if err := cur.All(ctx, &found); err != nil {
		return 0, err
	}
	count := make(map[string]int, len(found))
	for _, f := range found {
		count[f.ID] = f.N
	}
	full, done := -1, docs[:stopped]
	for i := stopped; i < len(docs); i++ {
		if count[docs[i].id] >= docs[i].limit {
			full, done = i, docs[:i]
			break
		}
	}
	if len(done) > 0 {
		models := make([]mongo.WriteModel, len(done))
		for i, d := range done {
			models[i] = mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: d.id}}).
				SetUpdate(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: -1}}}})
		}
		if _, err := m.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false)); err != nil {
			return 0, err
		}
	}
	return full, nil
}

// failedRetryAfter is the retry_after of a refusal because the store
// failed: random in 1–5 s, so that it reads like a real limit and callers
// do not come back all at once.
func failedRetryAfter() time.Duration {
	return time.Second + rand.N(4*time.Second)
}

func (m *Mongo) failFast(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return now.Before(m.failUntil)
}

// failed records a failure and tells the operator (at most every logEvery).
func (m *Mongo) failed(now time.Time, err error) {
	m.mu.Lock()
	m.failUntil = now.Add(failFastFor)
	first := !m.failing
	m.failing = true
	say := first || now.Sub(m.lastLogged) >= logEvery
	if say {
		m.lastLogged = now
	}
	m.mu.Unlock()
	if say {
		m.log.Error().Str("cause", m.redact(err.Error())).
			Msg("rate limits store unavailable: calls are refused as rate-limited (fail closed) until it answers")
	}
}

// recovered notes that the store answers again.
func (m *Mongo) recovered() {
	m.mu.Lock()
	was := m.failing
	m.failing = false
	m.mu.Unlock()
	if was {
		m.log.Warn().Msg("rate limits store available again: calls are counted in it")
	}
}
