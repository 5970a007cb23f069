package jwtauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/rs/zerolog"
)

// JWKS fetching: the set is fetched on first use, refreshed when older than
// keysMaxAge, and refetched when a token names a key it does not hold (the
// provider rotated) — but never more often than once per refetchInterval,
// so tokens with made-up key ids cannot make us hammer the provider.
var (
	refetchInterval = 5 * time.Second
	keysMaxAge      = 10 * time.Minute
)

const (
	fetchTimeout = 5 * time.Second
	maxJWKSBytes = 1 << 20
	minRSABits   = 2048
)

type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time
	log    zerolog.Logger

	// mu is held across a fetch, so concurrent requests wait for it
	// instead of fetching again.
	mu      sync.Mutex
	keys    []verifyKey
	fetched time.Time // last successful fetch
	tried   time.Time // last attempt
}

// verifyKey is one usable JWKS key with the algorithms it is pinned to.
type verifyKey struct {
	kid  string
	algs []jose.SignatureAlgorithm
	key  any
}

func newKeySet(u string, client *http.Client, now func() time.Time, log zerolog.Logger) *keySet {
	if client == nil {
		client = &http.Client{
			Timeout: fetchTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return &keySet{url: u, client: client, now: now, log: log}
}

// keysFor returns the keys that may verify a token with this kid and alg:
// the key with that kid ("" matches every key) whose pinned algorithms
// include alg.
func (s *keySet) keysFor(ctx context.Context, kid string, alg jose.SignatureAlgorithm) ([]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.fetched.IsZero() || now.Sub(s.fetched) > keysMaxAge {
		s.refresh(ctx, now)
	}
	if s.fetched.IsZero() {
		return nil, errors.New("jwt: the JWKS is unavailable")
	}
	found := s.match(kid, alg)
	if len(found) == 0 {
		// An unknown key may be a rotation: look again, at most once per
		// refetchInterval.
		s.refresh(ctx, now)
		found = s.match(kid, alg)
	}
	if len(found) == 0 {
		return nil, refusal("no key in the JWKS has this kid and algorithm")
	}
	return found, nil
}

func (s *keySet) match(kid string, alg jose.SignatureAlgorithm) []any {
	var out []any
	for _, k := range s.keys {
		if (kid == "" || k.kid == kid) && slices.Contains(k.algs, alg) {
			out = append(out, k.key)
		}
	}
	return out
}

// refresh fetches the set unless the last attempt was under
// refetchInterval ago. A failed fetch keeps the keys already held and is
// logged for the operator.
func (s *keySet) refresh(ctx context.Context, now time.Time) {
	if !s.tried.IsZero() && now.Sub(s.tried) < refetchInterval {
		return
	}
	s.tried = now
	keys, err := s.fetch(ctx)
	if err != nil {
		s.log.Warn().Err(err).Str("jwks", redactURL(s.url)).Msg("jwt: cannot fetch the JWKS; keeping the keys already held")
		return
	}
	s.keys, s.fetched = keys, now
}

func (s *keySet) fetch(ctx context.Context) ([]verifyKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		// The cause without the URL, whose query could hold a credential.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, errors.New("reading the body failed")
	}
	if len(body) > maxJWKSBytes {
		return nil, errors.New("larger than 1 MiB")
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, errors.New("not a JWK set")
	}
	var keys []verifyKey
	for _, raw := range set.Keys {
		// One key go-jose cannot read (a new kty) must not take the others
		// down with it.
		var k jose.JSONWebKey
		if k.UnmarshalJSON(raw) != nil {
			continue
		}
		if vk, ok := usable(k); ok {
			keys = append(keys, vk)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no usable signing key")
	}
	return keys, nil
}

// usable pins a JWK to the algorithms its type allows — RSA to RS*/PS*
// (2048 bits or more), EC to the ES* of its curve, Ed25519 to EdDSA — and,
// when the JWK names an alg, to that one alone. Symmetric keys (kty oct)
// and encryption keys are not usable: HMAC is for the secret only.
func usable(k jose.JSONWebKey) (verifyKey, bool) {
	if k.Use != "" && k.Use != "sig" {
		return verifyKey{}, false
	}
	var algs []jose.SignatureAlgorithm
	var key any
	switch pk := k.Public().Key.(type) {
	case *rsa.PublicKey:
		if pk.N.BitLen() < minRSABits {
			return verifyKey{}, false
		}
		algs, key = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}, pk
	case *ecdsa.PublicKey:
		switch pk.Curve {
		case elliptic.P256():
			algs = []jose.SignatureAlgorithm{jose.ES256}
		case elliptic.P384():
			algs = []jose.SignatureAlgorithm{jose.ES384}
		case elliptic.P521():
			algs = []jose.SignatureAlgorithm{jose.ES512}
		}
		key = pk
	case ed25519.PublicKey:
		algs, key = []jose.SignatureAlgorithm{jose.EdDSA}, pk
	}
	if k.Algorithm != "" {
		if !slices.Contains(algs, jose.SignatureAlgorithm(k.Algorithm)) {
			return verifyKey{}, false
		}
		algs = []jose.SignatureAlgorithm{jose.SignatureAlgorithm(k.Algorithm)}
	}
	if len(algs) == 0 {
		return verifyKey{}, false
	}
	return verifyKey{kid: k.KeyID, algs: algs, key: key}, true
}

// redactURL is the JWKS URL for a log line: without user info or query,
// which could hold a credential.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
