package oauth

import (
	"context"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/limits"
)

// Login attempts allowed in loginWindow: per client address, and per
// username whatever the address (a spread-out guess at one account). Every
// attempt counts, right or wrong. With PARSE_MCP_LIMITS_STORE=mongodb the
// windows are shared by every process; Parse Server's own account lockout,
// when the app configures it, holds across every way in.
const (
	loginWindow          = 10 * time.Minute
	loginsPerAddress     = 50
	loginsPerUser        = 10
	authorizationsPerMin = 30
	registrationPerMin   = 20
)

// limiter counts the authorization server's attempts in rate windows; a
// store that cannot answer refuses (fail closed).
type limiter struct {
	store limits.Store
	now   func() time.Time
}

func (l *limiter) allow(ctx context.Context, buckets ...limits.Bucket) bool {
	refused, _ := l.store.Hit(ctx, l.now(), buckets)
	return refused < 0
}

func (l *limiter) allowLogin(ctx context.Context, addr, username string) bool {
	return l.allow(ctx,
		limits.Bucket{Key: "oauth-login-addr:" + addr, Limit: loginsPerAddress, Window: loginWindow},
		limits.Bucket{Key: "oauth-login-user:" + strings.ToLower(strings.TrimSpace(username)), Limit: loginsPerUser, Window: loginWindow})
}

// allowAuthorization bounds the sign-ins one address may start (each is a
// stored record for its 10 minutes).
func (l *limiter) allowAuthorization(ctx context.Context, addr string) bool {
	return l.allow(ctx, limits.Bucket{Key: "oauth-authorize:" + addr, Limit: authorizationsPerMin, Window: time.Minute})
}

func (l *limiter) allowRegistration(ctx context.Context, addr string) bool {
	return l.allow(ctx, limits.Bucket{Key: "oauth-register:" + addr, Limit: registrationPerMin, Window: time.Minute})
}
