package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"

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
	c := &fileCheck{ctx: ctx, e: e, schema: schema, classNames: schema.Names()}
	c.classes()
	c.actions()
	c.agentTools()
	c.agentClasses()
	c.agentFilters()
	return c.out
}

// fileCheck is one run of Validate: one method per section of the policy
// file, each adding its problems to out in file order.
type fileCheck struct {
	ctx        context.Context
	e          *Engine
	schema     *parsedb.Schema
	classNames []string
	out        []*PathError
}

func (c *fileCheck) add(path, format string, args ...any) {
	c.out = append(c.out, perr(path, format, args...))
}

// suggestClass is " (did you mean X?)" for the closest visible class name,
// or "".
func (c *fileCheck) suggestClass(name string) string {
	var cands []string
	for _, n := range c.classNames {
		if !parsedb.IsInternalCollection(n) {
			cands = append(cands, n)
		}
	}
	if s := Suggest(name, cands, 1); len(s) > 0 {
		return " (did you mean " + s[0] + "?)"
	}
	return ""
}

// where checks a where object of the file (a canonical filter, an
// agent.filters entry) on cls by translating it.
func (c *fileCheck) where(path string, cls *parsedb.Class, w map[string]any) bool {
	_, err := parsedb.WhereToFilter(c.ctx, cls, w, parsedb.WhereOptions{Schema: c.schema})
	if err == nil {
		return true
	}
	if v, ok := toolerror.AsViolation(err); ok {
		c.add(path, "not allowed: %s", v.Reason)
	} else if te, ok := toolerror.As(err); ok {
		c.add(path, "%s", te.Message)
	} else {
		c.add(path, "%v", err)
	}
	return false
}

// classes checks the classes section, class by class in name order.
func (c *fileCheck) classes() {
	for _, name := range slices.Sorted(maps.Keys(c.e.file.Classes)) {
		cp := c.e.file.Classes[name]
		p := "classes." + name
		if cp.IsHidden() || parsedb.IsInternalCollection(name) {
			continue // hiding a class that does not exist (yet) is harmless
		}
		cls := c.schema.Class(name)
		if cls == nil {
			if cp.IsHiddenExceptMaster() && onlyHidden(cp) {
				continue
			}
			c.add(p, "no class %s in _SCHEMA%s", name, c.suggestClass(name))
			continue
		}
		c.class(p, name, cls, cp)
	}
}

// class checks one classes.<name> entry of a class in _SCHEMA.
func (c *fileCheck) class(p, name string, cls *parsedb.Class, cp *ClassPolicy) {
	fieldOK := c.fieldCheck(name, cls)
	for _, f := range slices.Sorted(maps.Keys(cp.Fields)) {
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
			c.add(jp, "%s is not in agent_fields (join_fields must be a subset of the allowlist)", f)
		}
	}
	validateSearch(p, cls, cp, fieldOK, c.add)
	if len(cp.CanonicalFilter) > 0 {
		c.where(p+".canonical_filter", cls, cp.CanonicalFilter)
	}
	if ts := cp.TenantScope; ts != nil {
		tp := p + ".tenant_scope.field"
		if fieldOK(tp, ts.Field) {
			if f := cls.Field(ts.Field); f != nil && f.Type != parsedb.TypeString && f.Type != parsedb.TypePointer {
				c.add(tp, "%s is a %s field; a tenant field must be a String or a Pointer", ts.Field, f.Type)
			}
		}
		if fu := ts.FromUser; fu != "" {
			up := p + ".tenant_scope.from_user"
			if other := c.e.TenantFromUser(); other != fu {
				c.add(up, "every tenant_scope.from_user must name the same _User field (one names %s, this one %s)", other, fu)
			}
			if u := c.schema.Class("_User"); u == nil || u.Field(fu) == nil {
				c.add(up, "_User has no field %s", fu)
			} else if f := u.Field(fu); f.Type != parsedb.TypeString && f.Type != parsedb.TypePointer {
				c.add(up, "_User.%s is a %s field; a tenant field must be a String or a Pointer", fu, f.Type)
			}
		}
	}
}

// fieldCheck returns the check of a field named in class name's entry: it
// exists in _SCHEMA (or is always visible) and is not internal.
func (c *fileCheck) fieldCheck(name string, cls *parsedb.Class) func(path, f string) bool {
	return func(path, f string) bool {
		if parsedb.IsInternalField(f) || f == "ACL" || f == "password" {
			c.add(path, "%s is an internal field: it is never shown or queryable", f)
			return false
		}
		if cls.Field(f) == nil && !alwaysVisible(f) {
			msg := fmt.Sprintf("no field %s in %s's _SCHEMA", f, name)
			if s := Suggest(f, cls.FieldNames(), 1); len(s) > 0 {
				msg += " (did you mean " + s[0] + "?)"
			}
			c.add(path, "%s", msg)
			return false
		}
		return true
	}
}

// actions: a class action's class exists and is visible; the fields it
// writes are never internal (they may be new: writes add them to
// _SCHEMA, as Parse does).
func (c *fileCheck) actions() {
	for _, a := range c.e.file.Actions {
		if a.Class == "" {
			continue
		}
		p := "actions." + a.Name
		if c.e.Hidden(a.Class) {
			c.add(p+".class", "class %s is hidden: no action may write it", a.Class)
			continue
		}
		if c.schema.Class(a.Class) == nil {
			c.add(p+".class", "no class %s in _SCHEMA%s", a.Class, c.suggestClass(a.Class))
			continue
		}
		written := append(append([]string{}, a.Keys...), slices.Sorted(maps.Keys(a.Fixed))...)
		for _, f := range written {
			if parsedb.IsInternalField(f) || f == "ACL" || f == "objectId" || f == "createdAt" || f == "updatedAt" {
				c.add(p, "%s cannot be written by an action", f)
			}
		}
		if tf := c.e.TenantField(a.Class); tf != "" && slices.Contains(written, tf) {
			c.add(p, "%s is the tenant field of %s: writes set it to the bound tenant", tf, a.Class)
		}
	}
}

// agentTools: agent.tools names registered tools.
func (c *fileCheck) agentTools() {
	if len(c.e.tools) == 0 {
		return
	}
	cands := c.e.toolNames()
	known := map[string]bool{}
	for _, n := range cands {
		known[n] = true
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"only", c.e.file.Agent.Tools.Only}, {"except", c.e.file.Agent.Tools.Except}} {
		for i, t := range l.list {
			if !known[t] {
				msg := "no tool " + t
				if s := Suggest(t, cands, 1); len(s) > 0 {
					msg += " (did you mean " + s[0] + "?)"
				}
				c.add(fmt.Sprintf("agent.tools.%s[%d]", l.key, i), "%s", msg)
			}
		}
	}
}

// agentClasses: agent.classes names classes in _SCHEMA, and its only list
// names no hidden class.
func (c *fileCheck) agentClasses() {
	for _, l := range []struct {
		key  string
		list []string
	}{{"only", c.e.file.Agent.Classes.Only}, {"except", c.e.file.Agent.Classes.Except}} {
		for i, name := range l.list {
			cp := fmt.Sprintf("agent.classes.%s[%d]", l.key, i)
			switch {
			case l.key == "only" && c.e.Hidden(name):
				c.add(cp, "%s is hidden; agent.classes cannot re-enable a hidden class", name)
			case c.schema.Class(name) == nil && !c.e.Hidden(name):
				c.add(cp, "no class %s in _SCHEMA%s", name, c.suggestClass(name))
			}
		}
	}
}

// agentFilters: every agent.filters entry translates on its class; the
// default filter on every visible class it applies to, and to one at
// least.
func (c *fileCheck) agentFilters() {
	for _, k := range slices.Sorted(maps.Keys(c.e.file.Agent.Filters)) {
		w := c.e.file.Agent.Filters[k]
		fp := "agent.filters." + k
		if k == DefaultFilterKey {
			c.defaultFilter(fp, w)
			continue
		}
		cls := c.schema.Class(k)
		if cls == nil {
			c.add(fp, "no class %s in _SCHEMA%s", k, c.suggestClass(k))
			continue
		}
		c.where(fp, cls, w)
	}
}

func (c *fileCheck) defaultFilter(fp string, w map[string]any) {
	applied := 0
	for _, n := range c.classNames {
		cls := c.schema.Class(n)
		if c.e.Hidden(n) || !c.e.defaultFilterApplies(cls) {
			continue
		}
		applied++
		if !c.where(fp+" (on "+n+")", cls, w) {
			break
		}
	}
	if applied == 0 {
		c.add(fp, "applies to no class: no visible class has all of its fields (%v)", whereFields(w))
	}
}

// onlyHidden reports whether a class entry carries nothing but hidden.
func onlyHidden(cp *ClassPolicy) bool {
	return cp.Description == "" && len(cp.Fields) == 0 && len(cp.AgentFields) == 0 && len(cp.LargeFields) == 0 &&
		len(cp.JoinFields) == 0 && len(cp.CanonicalFilter) == 0 && cp.TenantScope == nil && !cp.AllowCollscan &&
		len(cp.WritableFields) == 0 && cp.DefaultACL == nil && cp.Search == nil
}
