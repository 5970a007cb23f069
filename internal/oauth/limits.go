package oauth

import (
	"strings"
	"sync"
	"time"
)

// Login attempts allowed in loginWindow: per client address, and per
// username whatever the address (a spread-out guess at one account). A
// successful login gives its attempt back. These hold per process; Parse
// Server's own account lockout, when the app configures it, holds across
// every process and every way in.
const (
	loginWindow      = 10 * time.Minute
	loginsPerAddress = 20
	loginsPerUser    = 10
	limiterKeys      = 50_000

	authorizationsPerMin = 30
	registrationPerMin   = 20
)

// loginLimiter counts attempts in fixed windows.
type loginLimiter struct {
	mu      sync.Mutex
	now     func() time.Time
	windows map[string]*window
}

type window struct {
	start time.Time
	n     int
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, windows: map[string]*window{}}
}

// take counts one attempt against each key; false (nothing counted) when
// any of them is spent.
func (l *loginLimiter) take(limits map[string]int, span time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.windows) > limiterKeys {
		for k, w := range l.windows {
			if now.Sub(w.start) >= loginWindow {
				delete(l.windows, k)
			}
		}
		if len(l.windows) > limiterKeys {
			return false // flooded: refuse rather than forget who guessed
		}
	}
	for k, max := range limits {
		if w := l.windows[k]; w != nil && now.Sub(w.start) < span && w.n >= max {
			return false
		}
	}
	for k := range limits {
		w := l.windows[k]
		if w == nil || now.Sub(w.start) >= span {
			w = &window{start: now}
			l.windows[k] = w
		}
		w.n++
	}
	return true
}

func (l *loginLimiter) giveBack(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if w := l.windows[k]; w != nil && w.n > 0 {
			w.n--
		}
	}
}

func loginKeys(addr, username string) (string, string) {
	return "addr:" + addr, "user:" + strings.ToLower(strings.TrimSpace(username))
}

func (l *loginLimiter) allowLogin(addr, username string) bool {
	a, u := loginKeys(addr, username)
	return l.take(map[string]int{a: loginsPerAddress, u: loginsPerUser}, loginWindow)
}

func (l *loginLimiter) loginSucceeded(addr, username string) {
	a, u := loginKeys(addr, username)
	l.giveBack(a, u)
}

// allowAuthorization bounds the sign-ins one address may start (each is a
// stored record for its 10 minutes).
func (l *loginLimiter) allowAuthorization(addr string) bool {
	return l.take(map[string]int{"authorize:" + addr: authorizationsPerMin}, time.Minute)
}

func (l *loginLimiter) allowRegistration(addr string) bool {
	return l.take(map[string]int{"register:" + addr: registrationPerMin}, time.Minute)
}
