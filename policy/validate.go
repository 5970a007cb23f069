package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Validate checks the policy file against the live _SCHEMA and the tool
// catalog (call Register first) and returns every problem, each with its
// exact path, in file order. Start-up refuses to serve when there is any:
// a typo'd operator in a canonical filter, an allowlist field that is not
// in _SCHEMA, a join field outside the allowlist, an unknown tool or class
// name in agent.* …
func (e *Engine) Validate(ctx context.Context, schema *parsedb.Schema) []*PathError {
	if e.file == nil {
		return nil
	}
	var out []*PathError
	add := func(path, format string, args ...any) {
		out = append(out, perr(path, format, args...))
	}
	classNames := schema.Names()
	suggestClass := func(name string) string {
		var cands []string
		for _, n := range classNames {
			if !parsedb.IsInternalCollection(n) {
				cands = append(cands, n)
			}
		}
		if s := Suggest(name, cands, 1); len(s) > 0 {
			return " (did you mean " + s[0] + "?)"
		}
		return ""
	}
	whereErr := func(path string, err error) {
		if v, ok := toolerror.AsViolation(err); ok {
			add(path, "not allowed: %s", v.Reason)
			return
		}
		if te, ok := toolerror.As(err); ok {
			add(path, "%s", te.Message)
			return
		}
		add(path, "%v", err)
	}

	names := make([]string, 0, len(e.file.Classes))
	for n := range e.file.Classes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		cp := e.file.Classes[name]
		p := "classes." + name
		if cp.IsHidden() || parsedb.IsInternalCollection(name) {
			continue // hiding a class that does not exist (yet) is harmless
		}
		cls := schema.Class(name)
		if cls == nil {
			if cp.IsHiddenExceptMaster() && onlyHidden(cp) {
				continue
			}
			add(p, "no class %s in _SCHEMA%s", name, suggestClass(name))
			continue
		}
		fieldOK := func(path, f string) bool {
			if parsedb.IsInternalField(f) || f == "ACL" || f == "password" {
				add(path, "%s is an internal field: it is never shown or queryable", f)
				return false
			}
			if cls.Field(f) == nil && !alwaysVisible(f) {
				msg := fmt.Sprintf("no field %s in %s's _SCHEMA", f, name)
				if s := Suggest(f, cls.FieldNames(), 1); len(s) > 0 {
					msg += " (did you mean " + s[0] + "?)"
				}
				add(path, "%s", msg)
				return false
			}
			return true
		}
		fnames := make([]string, 0, len(cp.Fields))
		for f := range cp.Fields {
			fnames = append(fnames, f)
		}
		sort.Strings(fnames)
		for _, f := range fnames {
			fieldOK(p+".fields."+f, f)
		}
		for i, f := range cp.AgentFields {
			fieldOK(fmt.Sprintf("%s.agent_fields[%d]", p, i), f)
		}
		for i, f := range cp.WritableFields {
			if f != "ACL" {
				fieldOK(fmt.Sprintf("%s.writable_fields[%d]", p, i), f)
			}
		}
		for i, f := range cp.LargeFields {
			fieldOK(fmt.Sprintf("%s.large_fields[%d]", p, i), f)
		}
		for i, f := range cp.JoinFields {
			jp := fmt.Sprintf("%s.join_fields[%d]", p, i)
			if !fieldOK(jp, f) {
				continue
			}
			if len(cp.AgentFields) > 0 && !slices.Contains(cp.AgentFields, f) && !alwaysVisible(f) {
				add(jp, "%s is not in agent_fields (join_fields must be a subset of the allowlist)", f)
			}
		}
		validateSearch(p, cls, cp, fieldOK, add)
		if len(cp.CanonicalFilter) > 0 {
			if _, err := parsedb.WhereToFilter(ctx, cls, cp.CanonicalFilter, parsedb.WhereOptions{Schema: schema}); err != nil {
				whereErr(p+".canonical_filter", err)
			}
		}
		if ts := cp.TenantScope; ts != nil {
			tp := p + ".tenant_scope.field"
			if fieldOK(tp, ts.Field) {
				if f := cls.Field(ts.Field); f != nil && f.Type != parsedb.TypeString && f.Type != parsedb.TypePointer {
					add(tp, "%s is a %s field; a tenant field must be a String or a Pointer", ts.Field, f.Type)
				}
			}
		}
	}

	// actions: a class action's class exists and is visible; the fields it
	// writes are never internal (they may be new: writes add them to
	// _SCHEMA, as Parse does).
	for _, a := range e.file.Actions {
		if a.Class == "" {
			continue
		}
		p := "actions." + a.Name
		if e.Hidden(a.Class) {
			add(p+".class", "class %s is hidden: no action may write it", a.Class)
			continue
		}
		if schema.Class(a.Class) == nil {
			add(p+".class", "no class %s in _SCHEMA%s", a.Class, suggestClass(a.Class))
			continue
		}
		written := append(append([]string{}, a.Keys...), slices.Sorted(maps.Keys(a.Fixed))...)
		for _, f := range written {
			if parsedb.IsInternalField(f) || f == "ACL" || f == "objectId" || f == "createdAt" || f == "updatedAt" {
				add(p, "%s cannot be written by an action", f)
			}
		}
		if tf := e.TenantField(a.Class); tf != "" && slices.Contains(written, tf) {
			add(p, "%s is the tenant field of %s: writes set it to the bound tenant", tf, a.Class)
		}
	}

	// agent.tools: names of registered tools.
	if len(e.tools) > 0 {
		cands := e.toolNames()
		known := map[string]bool{}
		for _, n := range cands {
			known[n] = true
		}
		for _, l := range []struct {
			key  string
			list []string
		}{{"only", e.file.Agent.Tools.Only}, {"except", e.file.Agent.Tools.Except}} {
			for i, t := range l.list {
				if !known[t] {
					msg := "no tool " + t
					if s := Suggest(t, cands, 1); len(s) > 0 {
						msg += " (did you mean " + s[0] + "?)"
					}
					add(fmt.Sprintf("agent.tools.%s[%d]", l.key, i), "%s", msg)
				}
			}
		}
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"only", e.file.Agent.Classes.Only}, {"except", e.file.Agent.Classes.Except}} {
		for i, c := range l.list {
			cp := fmt.Sprintf("agent.classes.%s[%d]", l.key, i)
			switch {
			case l.key == "only" && e.Hidden(c):
				add(cp, "%s is hidden; agent.classes cannot re-enable a hidden class", c)
			case schema.Class(c) == nil && !e.Hidden(c):
				add(cp, "no class %s in _SCHEMA%s", c, suggestClass(c))
			}
		}
	}
	fkeys := make([]string, 0, len(e.file.Agent.Filters))
	for k := range e.file.Agent.Filters {
		fkeys = append(fkeys, k)
	}
	sort.Strings(fkeys)
	for _, k := range fkeys {
		w := e.file.Agent.Filters[k]
		fp := "agent.filters." + k
		if k == DefaultFilterKey {
			applied := 0
			for _, n := range classNames {
				cls := schema.Class(n)
				if e.Hidden(n) || !e.defaultFilterApplies(cls) {
					continue
				}
				applied++
				if _, err := parsedb.WhereToFilter(ctx, cls, w, parsedb.WhereOptions{Schema: schema}); err != nil {
					whereErr(fp+" (on "+n+")", err)
					break
				}
			}
			if applied == 0 {
				add(fp, "applies to no class: no visible class has all of its fields (%v)", whereFields(w))
			}
			continue
		}
		cls := schema.Class(k)
		if cls == nil {
			add(fp, "no class %s in _SCHEMA%s", k, suggestClass(k))
			continue
		}
		if _, err := parsedb.WhereToFilter(ctx, cls, w, parsedb.WhereOptions{Schema: schema}); err != nil {
			whereErr(fp, err)
		}
	}
	return out
}

// onlyHidden reports whether a class entry carries nothing but hidden.
func onlyHidden(cp *ClassPolicy) bool {
	return cp.Description == "" && len(cp.Fields) == 0 && len(cp.AgentFields) == 0 && len(cp.LargeFields) == 0 &&
		len(cp.JoinFields) == 0 && len(cp.CanonicalFilter) == 0 && cp.TenantScope == nil && !cp.AllowCollscan &&
		len(cp.WritableFields) == 0 && cp.DefaultACL == nil && cp.Search == nil
}
