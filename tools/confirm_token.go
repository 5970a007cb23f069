package tools

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// 2026-07-28 confirmation tokens (SECURITY.md "Writes"). The requestState of
// an input_required result is
//
//	parse-mcp.confirm.v2.<base64url(nonce ‖ expiry ‖ HMAC-SHA256)>
//
// where the MAC covers the nonce, the expiry, the call binding (tool,
// canonical arguments, identity; see callBinding) and the question. A retry
// is taken only when the MAC matches this call and question, the token has
// not expired, and — for an accepted answer, which authorises the write —
// its nonce is spent for the first time in the ConfirmationLedger. So one
// person's "yes" authorises exactly one execution of exactly one request by
// one identity, on every process that shares the ledger.

const (
	confirmTokenPrefix = "parse-mcp.confirm.v2."
	confirmNonceLen    = 16
	confirmMACLen      = sha256.Size
	// ConfirmTTL is how long the person has to answer (a token expires
	// this long after the question was issued).
	ConfirmTTL = 10 * time.Minute
)

// ConfirmationLedger signs confirmation tokens and records their single use.
type ConfirmationLedger interface {
	// Secret is the HMAC key of the tokens.
	Secret(ctx context.Context) ([]byte, error)
	// Spend records the nonce as used; fresh is false if it was used before.
	Spend(ctx context.Context, nonce []byte, expires time.Time) (fresh bool, err error)
}

// confirmNow is the clock of token expiry (tests move it).
var confirmNow = time.Now

// confirmationLedger is d's ledger, or this process's own: a stdio server is
// one process serving one client, so its tokens need no shared record (and a
// token from another process fails its MAC there).
func (d *Deps) confirmationLedger() ConfirmationLedger {
	if d != nil && d.Confirmations != nil {
		return d.Confirmations
	}
	return processLedger
}

var processLedger = newLocalLedger()

// localLedger is a process's own ledger: a random secret and the spent
// nonces in memory until they expire.
type localLedger struct {
	secret []byte
	mu     sync.Mutex
	spent  map[string]time.Time
}

func newLocalLedger() *localLedger {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return &localLedger{secret: secret, spent: map[string]time.Time{}}
}

func (l *localLedger) Secret(context.Context) ([]byte, error) { return l.secret, nil }

func (l *localLedger) Spend(_ context.Context, nonce []byte, expires time.Time) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := confirmNow()
	for k, exp := range l.spent {
		if now.After(exp) {
			delete(l.spent, k)
		}
	}
	if _, used := l.spent[string(nonce)]; used {
		return false, nil
	}
	l.spent[string(nonce)] = expires.Add(time.Minute)
	return true, nil
}

// issue makes the requestState of a new question.
func issue(ctx context.Context, info *confirmScope, question string) (string, error) {
	secret, err := info.ledger.Secret(ctx)
	if err != nil {
		return "", err
	}
	body := make([]byte, confirmNonceLen+8, confirmNonceLen+8+confirmMACLen)
	if _, err := rand.Read(body[:confirmNonceLen]); err != nil {
		return "", err
	}
	binary.BigEndian.PutUint64(body[confirmNonceLen:], uint64(confirmNow().Add(ConfirmTTL).Unix()))
	body = append(body, tokenMAC(secret, body, info, question)...)
	return confirmTokenPrefix + base64.RawURLEncoding.EncodeToString(body), nil
}

// redeem takes the person's answer when state is a valid token for this
// call and question; ok is false when it is not (the question is asked
// again). An accepted answer spends the token.
func redeem(ctx context.Context, info *confirmScope, question, state string, res *mcp.ElicitationResult) (answer Confirmation, ok bool, err error) {
	enc, found := strings.CutPrefix(state, confirmTokenPrefix)
	if !found {
		return 0, false, nil
	}
	body, decErr := base64.RawURLEncoding.DecodeString(enc)
	if decErr != nil || len(body) != confirmNonceLen+8+confirmMACLen {
		return 0, false, nil
	}
	secret, err := info.ledger.Secret(ctx)
	if err != nil {
		return 0, false, err
	}
	signed, mac := body[:confirmNonceLen+8], body[confirmNonceLen+8:]
	if !hmac.Equal(mac, tokenMAC(secret, signed, info, question)) {
		return 0, false, nil // another call, question, identity or key
	}
	expires := time.Unix(int64(binary.BigEndian.Uint64(signed[confirmNonceLen:])), 0)
	if !confirmNow().Before(expires) {
		return 0, false, nil
	}
	answer = confirmationOf(res)
	if answer != ConfirmAccepted {
		return answer, true, nil // nothing is written: no need to spend it
	}
	fresh, err := info.ledger.Spend(ctx, signed[:confirmNonceLen], expires)
	if err != nil {
		return 0, false, err
	}
	if !fresh {
		return 0, false, nil // a replay: ask again
	}
	return ConfirmAccepted, true, nil
}

func tokenMAC(secret, signed []byte, info *confirmScope, question string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(confirmTokenPrefix))
	m.Write(signed)
	m.Write(info.binding[:])
	q := sha256.Sum256([]byte(question))
	m.Write(q[:])
	return m.Sum(nil)
}
