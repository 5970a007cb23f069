package e2e

// Refused credentials per client address (SECURITY.md "Per-request
// identity") through the built binary: made-up session tokens from one
// address are answered 429 before any lookup once their window is full;
// another address, and an identity the cache already holds, are not.

import (
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

func TestHTTPRefusedCredentialsPerAddress(t *testing.T) {
	for _, store := range []string{"memory", "mongodb"} {
		t.Run(store, func(t *testing.T) { refusedCredentialsPerAddress(t, store) })
	}
}

func refusedCredentialsPerAddress(t *testing.T, store string) {
	const perAddress = 20 // identity.refusalsPerAddress
	env := []string{"PARSE_MCP_HTTP_AUTH=parse-session", "PARSE_MCP_TRUSTED_PROXIES=127.0.0.1,::1", "PARSE_MCP_LIMITS_STORE=" + store}
	h := startHTTP(t, env...)
	if store == "mongodb" {
		// The shared store's windows are aligned to the minute: keep the
		// burst inside one.
		if s := time.Now().Second(); s > 45 {
			time.Sleep(time.Duration(61-s) * time.Second)
		}
	}
	const limited, other = "198.51.100.7", "198.51.100.8"
	callOn := func(h *httpServer, id, from string, cred map[string]string) (int, http.Header) {
		t.Helper()
		hdr := statelessHeaders("tools/call", "count_objects")
		hdr["X-Forwarded-For"] = from
		maps.Copy(hdr, cred)
		resp, _ := h.request("POST", "/mcp", statelessBody(id, "tools/call", `{"name":"count_objects","arguments":{"class_name":"Song"}}`, ""), hdr)
		return resp.StatusCode, resp.Header
	}
	call := func(id, from string, cred map[string]string) (int, http.Header) {
		t.Helper()
		return callOn(h, id, from, cred)
	}
	madeUp := func(i int) map[string]string {
		return map[string]string{"X-Parse-Session-Token": fmt.Sprintf("r:made-up-%028d", i)}
	}
	alice := map[string]string{"X-Parse-Session-Token": demo.AliceSessionToken}
	bob := map[string]string{"Authorization": "Bearer " + demo.BobSessionToken}

	if st, _ := call("alice-first", limited, alice); st != 200 {
		t.Fatalf("alice before the burst: %d", st)
	}
	for i := range perAddress {
		if st, _ := call(fmt.Sprint("guess-", i), limited, madeUp(i)); st != http.StatusUnauthorized {
			t.Fatalf("made-up token %d: %d, want 401", i, st)
		}
	}
	for i := perAddress; i < perAddress+5; i++ {
		st, hdr := call(fmt.Sprint("guess-", i), limited, madeUp(i))
		wait, err := strconv.Atoi(hdr.Get("Retry-After"))
		if st != http.StatusTooManyRequests || err != nil || wait < 1 || wait > 60 {
			t.Fatalf("made-up token %d past the window: %d, Retry-After %q; want 429 with 1–60 s", i, st, hdr.Get("Retry-After"))
		}
	}
	if store == "mongodb" {
		// Another process on the same store refuses the address too.
		other := startHTTP(t, env...)
		if st, _ := callOn(other, "other-process", limited, madeUp(500)); st != http.StatusTooManyRequests {
			t.Errorf("a second process sharing the store: %d, want 429", st)
		}
	}
	cases := []struct {
		name, from string
		cred       map[string]string
		want       int
	}{
		// The identity cache answers first: a person already resolved from
		// the limited address is not slowed.
		{"cached alice, limited address", limited, alice, 200},
		// Anyone else with a credential from that address waits: before the
		// credential holds, the address is all that is known.
		{"uncached bob, limited address", limited, bob, http.StatusTooManyRequests},
		{"no credential, limited address", limited, nil, http.StatusUnauthorized},
		{"made-up token, other address", other, madeUp(999), http.StatusUnauthorized},
		{"bob, other address", other, bob, 200},
	}
	for _, c := range cases {
		if st, _ := call(c.name, c.from, c.cred); st != c.want {
			t.Errorf("%s: %d, want %d", c.name, st, c.want)
		}
	}
	logs := h.stderr.String()
	// One refused credential logged per address and window (2), not one per
	// guess, and the request with no credential (1); one line saying the
	// address is being refused.
	if n := strings.Count(logs, "HTTP request refused: unauthorized"); n > 3 {
		t.Errorf("%d refusals logged for %d refused credentials from 2 addresses", n, perAddress+1)
	}
	if n := strings.Count(logs, "too many refused credentials from this client"); n != 1 {
		t.Errorf("%d lines about the limited address, want 1", n)
	}
	for i := range perAddress + 5 {
		if strings.Contains(logs, madeUp(i)["X-Parse-Session-Token"]) {
			t.Fatalf("a made-up token is in the log")
		}
	}
}
