package policy

import (
	"context"
	"io"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// TestRequestScope: a request's scope replaces the environment identity,
// posture and tier for that request only; the shared engine is untouched.
func TestRequestScope(t *testing.T) {
	e := New(&config.Config{Permissions: config.TierWrite}, nil, zerolog.New(io.Discard)) // master posture
	write := ToolInfo{Name: "create_object", Tier: config.TierWrite}
	read := ToolInfo{Name: "count_objects", Tier: config.TierReadonly}
	e.Register(write, read)
	bob := &parsedb.Identity{Kind: parsedb.IdentitySession, UserID: "bob"}
	ctx := WithRequestScope(context.Background(), &RequestScope{Identity: bob, Tier: config.TierReadonly, User: "user:bob"})

	v := e.For(ctx)
	if v == e || v.MasterPosture() || v.Identity() != bob {
		t.Fatalf("the view acts as master or not as bob: %+v", v.Identity())
	}
	if !v.Hidden("_Session") || e.Hidden("_Session") {
		t.Fatal("_Session: hidden for bob, visible to the master-posture environment")
	}
	if err := v.Permit(write); err == nil || err.Code != "permission_denied" {
		t.Fatalf("a readonly credential calls a write tool: %v", err)
	}
	if err := e.Permit(write); err != nil && err.Code == "permission_denied" {
		t.Fatal("the shared engine lost its tier")
	}
	if v.For(ctx) != v || e.For(context.Background()) != e {
		t.Fatal("For copies when nothing changes")
	}
	tools := []mcp.Tool{{Name: write.Name}, {Name: read.Name}}
	if got := e.ToolFilter(ctx, tools); len(got) != 1 || got[0].Name != read.Name {
		t.Fatalf("tools/list for a readonly credential: %v", got)
	}
	// A credential's tier never raises the configured one.
	for _, tc := range []struct{ configured, requested, want string }{
		{config.TierReadonly, config.TierAdmin, config.TierReadonly},
		{config.TierAdmin, config.TierWrite, config.TierWrite},
		{config.TierWrite, "", config.TierWrite},
		{config.TierWrite, "root", config.TierWrite},
	} {
		if got := CapTier(tc.configured, tc.requested); got != tc.want {
			t.Errorf("CapTier(%s, %s) = %s, want %s", tc.configured, tc.requested, got, tc.want)
		}
	}
}
