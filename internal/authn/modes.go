package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

// bearer is the credential of an Authorization: Bearer header ("" when
// there is none).
func bearer(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// acceptedKey is one API key: its principal and the SHA-256 of the key.
type acceptedKey struct {
	p    Principal
	hash [32]byte
}

// Keys is the keys mode: PARSE_MCP_API_KEY (shared, nameless) and the named
// PARSE_MCP_API_KEYS, presented as X-MCP-API-Key or Authorization: Bearer.
// A key is checked against every accepted key in constant time (hashing
// first, so that neither the key's length nor which key matched leaks). A
// named key's principal is the identity it names (user, role, master) and
// its tier, with the key's name as ClientID; a key naming no identity acts
// as the environment identity.
//
// An X-MCP-API-Key that matches no key is unauthorized; a bearer that
// matches none is left to the next mode (a Parse session token or a JWT).
func Keys(shared string, named []config.NamedAPIKey) Authenticator {
	var keys []acceptedKey
	if shared != "" {
		keys = append(keys, acceptedKey{p: Principal{Mode: ModeKeys}, hash: sha256.Sum256([]byte(shared))})
	}
	for _, k := range named {
		p := Principal{Mode: ModeKeys, ClientID: k.Name, UserID: k.User, Role: k.Role, Master: k.Master, Tier: k.Tier}
		keys = append(keys, acceptedKey{p: p, hash: sha256.Sum256([]byte(k.Key.Reveal()))})
	}
	return AuthenticatorFunc(func(r *http.Request) (Principal, error) {
		key, header := r.Header.Get("X-MCP-API-Key"), true
		if key == "" {
			key, header = bearer(r), false
		}
		if key == "" {
			return Principal{}, ErrNoCredential
		}
		got := sha256.Sum256([]byte(key))
		match := -1
		for i, k := range keys {
			if subtle.ConstantTimeCompare(got[:], k.hash[:]) == 1 {
				match = i
			}
		}
		switch {
		case match >= 0:
			return keys[match].p, nil
		case header:
			return Principal{}, fmt.Errorf("%w: X-MCP-API-Key matches no key", ErrUnauthorized)
		}
		return Principal{}, ErrNoCredential
	})
}

// ParseSession is the parse-session mode: a Parse session token as
// Authorization: Bearer r:… or X-Parse-Session-Token (the header Parse's
// own REST API reads). It only recognises the credential; the transport
// resolves it through _Session or the bridge's /users/me.
func ParseSession() Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (Principal, error) {
		tok := r.Header.Get("X-Parse-Session-Token")
		if tok == "" {
			if b := bearer(r); strings.HasPrefix(b, "r:") {
				tok = b
			}
		}
		if tok = strings.TrimSpace(tok); tok == "" {
			return Principal{}, ErrNoCredential
		}
		if len(tok) > 512 {
			return Principal{}, fmt.Errorf("%w: session token longer than 512 bytes", ErrUnauthorized)
		}
		return Principal{Mode: ModeParseSession, SessionToken: tok}, nil
	})
}

// Chain tries each mode in order: the first that recognises a credential
// decides (a credential that does not hold stops the chain); when none
// recognises one, the result is ErrNoCredential.
func Chain(modes ...Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (Principal, error) {
		for _, m := range modes {
			p, err := m.Authenticate(r)
			if errors.Is(err, ErrNoCredential) {
				continue
			}
			return p, err
		}
		return Principal{}, ErrNoCredential
	})
}
