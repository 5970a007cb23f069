package oauth

import (
	"slices"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

// The scopes, one per permission tier: a token's scope names the highest
// tier it allows, and never more than the server's configured tier.
const (
	ScopeRead  = "parse:read"
	ScopeWrite = "parse:write"
	ScopeAdmin = "parse:admin"
)

var tiers = []struct{ tier, scope string }{
	{config.TierReadonly, ScopeRead},
	{config.TierWrite, ScopeWrite},
	{config.TierAdmin, ScopeAdmin},
}

func tierRank(t string) int {
	return slices.IndexFunc(tiers, func(x struct{ tier, scope string }) bool { return x.tier == t })
}

// scopesUpTo lists the scopes a tier includes (write: parse:read
// parse:write).
func scopesUpTo(tier string) []string {
	var out []string
	for _, t := range tiers[:tierRank(tier)+1] {
		out = append(out, t.scope)
	}
	return out
}

// grantTier is the tier a scope request gets: the highest tier it names,
// capped at the configured one (narrowed reports the cap cut it). No known
// scope asks for the configured tier. Unknown scopes are ignored: they
// grant nothing.
func grantTier(scope, configured string) (tier string, narrowed bool) {
	asked := -1
	for s := range strings.FieldsSeq(scope) {
		for i, t := range tiers {
			if t.scope == s {
				asked = max(asked, i)
			}
		}
	}
	max := tierRank(configured)
	if asked < 0 {
		return configured, false
	}
	if asked > max {
		return configured, true
	}
	return tiers[asked].tier, false
}
