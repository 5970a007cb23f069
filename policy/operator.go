package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/parse-mcp/parse-mcp/parsedb"
)

// Describe is the effective policy, for `parse-mcp describe`. Secrets are
// shown only as short SHA-256 fingerprints.
func (e *Engine) Describe() map[string]any {
	var hidden []string
	for c := range e.hidden {
		hidden = append(hidden, c)
	}
	sort.Strings(hidden)
	var tools []map[string]any
	names := make([]string, 0, len(e.tools))
	for n := range e.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := e.tools[n]
		entry := map[string]any{"name": n, "category": t.Category, "tier": t.Tier, "allowed": true}
		if err := e.Permit(t); err != nil {
			entry["allowed"] = false
			entry["reason"] = err.Message
		}
		tools = append(tools, entry)
	}
	identity := map[string]any{"type": e.cfg.Identity()}
	for _, s := range []string{e.cfg.SessionToken, e.cfg.ACLUser, e.cfg.ACLRole} {
		if s != "" {
			identity["fingerprint"] = Fingerprint(s)
		}
	}
	out := map[string]any{
		"permissions":        e.cfg.Permissions,
		"identity":           identity,
		"hidden_classes":     hidden,
		"tools":              tools,
		"max_response_bytes": e.MaxResponseBytes(),
	}
	if e.cfg.TenantID != "" {
		out["tenant"] = map[string]any{"fingerprint": Fingerprint(e.cfg.TenantID)}
	}
	if e.file != nil {
		out["classes"] = e.file.Classes
		out["agent"] = e.file.Agent
		out["settings"] = e.file.Settings
	}
	return out
}

// Fingerprint is a short, non-reversible identifier of a secret.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

// Verdict answers `parse-mcp would-permit TOOL CLASS`.
type Verdict struct {
	Tool    string `json:"tool"`
	Class   string `json:"class,omitempty"`
	Allowed bool   `json:"allowed"`
	Gate    string `json:"gate,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// WouldPermit runs the tool and class gates of the dispatch order without
// calling anything.
func (e *Engine) WouldPermit(ctx context.Context, schema *parsedb.Schema, tool, class string) Verdict {
	v := Verdict{Tool: tool, Class: class}
	info, ok := e.tools[tool]
	if !ok {
		v.Gate, v.Reason = "tool_filter", "no such tool"
		return v
	}
	if err := e.Permit(info); err != nil {
		v.Gate, v.Reason = string(err.Code), err.Message
		return v
	}
	if class != "" {
		if _, err := e.ResolveClass(ctx, schema, class); err != nil {
			v.Gate, v.Reason = "class_gate", err.Error()
			return v
		}
	}
	v.Allowed = true
	return v
}

// Audit lists metadata gaps for `parse-mcp audit`.
func (e *Engine) Audit(schema *parsedb.Schema) map[string]any {
	var undocumented []string
	for _, n := range e.VisibleClassNames(schema) {
		if cp := e.Class(n); cp == nil || cp.Description == "" {
			undocumented = append(undocumented, n)
		}
	}
	return map[string]any{"classes_without_description": undocumented}
}
