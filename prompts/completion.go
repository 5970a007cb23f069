package prompts

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/resources"
)

// CompletePromptArgument completes class-name arguments with the classes
// this server may see, and field arguments with the visible fields of the
// class named by an argument already given (count_by.group_by from
// class_name; find_relationship.pointer_field from child_class, pointers to
// parent_class only).
func (p *Provider) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	empty := &mcp.Completion{Values: []string{}}
	pr := p.byName[name]
	if pr == nil {
		return empty, nil
	}
	var a *Arg
	for i := range pr.Args {
		if pr.Args[i].Name == arg.Name {
			a = &pr.Args[i]
		}
	}
	if a == nil {
		return empty, nil
	}
	switch a.Type {
	case ArgClass:
		return p.res.CompleteClassName(ctx, arg.Value)
	case ArgClassList:
		// Complete the last comma-separated name, keeping the ones before.
		head, last := "", arg.Value
		if i := strings.LastIndex(arg.Value, ","); i >= 0 {
			head, last = arg.Value[:i+1], strings.TrimLeft(arg.Value[i+1:], " ")
		}
		c, err := p.res.CompleteClassName(ctx, last)
		if err != nil {
			return nil, err
		}
		for i, v := range c.Values {
			c.Values[i] = head + v
		}
		return c, nil
	case ArgField:
		return p.completeField(ctx, name, arg, cc)
	}
	return empty, nil
}

func (p *Provider) completeField(ctx context.Context, prompt string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	empty := &mcp.Completion{Values: []string{}}
	classArg, pointerTo := "class_name", ""
	if prompt == "find_relationship" {
		classArg, pointerTo = "child_class", cc.Arguments["parent_class"]
	}
	className := cc.Arguments[classArg]
	if className == "" {
		return empty, nil
	}
	v := &Values{raw: map[string]string{}, classes: map[string]*parsedb.Class{}}
	cls, err := p.resolveClass(ctx, v, classArg, className)
	if err != nil {
		return empty, nil // nothing to complete from an unknown or hidden class
	}
	if pointerTo != "" {
		// A hidden parent class completes like a missing one: nothing.
		if _, err := p.resolveClass(ctx, v, "parent_class", pointerTo); err != nil {
			return empty, nil
		}
	}
	var names []string
	for _, f := range p.d.Policy.For(ctx).VisibleFields(cls) {
		if pointerTo != "" && (f.Type != parsedb.TypePointer || f.TargetClass != pointerTo) {
			continue
		}
		names = append(names, f.Name)
	}
	return resources.Complete(names, arg.Value), nil
}
