package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// Confirmation of writes (settings.confirm_writes): the person, not the
// model, approves the write, through Confirm (elicitation/create in the
// session revisions, input_required in 2026-07-28). The question shows
// exactly what will change — the storage document or update, the _SCHEMA
// additions, the relation pairs — with the write's timestamps and a new
// object's id left symbolic, so that the same write asks the same question
// on the 2026-07-28 retry (Confirm binds the answer to the question and the
// call's arguments).

// needsConfirmation applies settings.confirm_writes.
func (d *Deps) needsConfirmation(c *writeCall) bool {
	switch d.Policy.ConfirmWrites() {
	case policy.ConfirmNever:
		return false
	case policy.ConfirmAlways:
		return true
	}
	return c.req.Op.Destructive() || c.confirm
}

// confirm asks for the person's confirmation when the policy wants it. It
// returns confirmed=true after an accepted confirmation, confirmed=false
// with a nil result when none is needed, or a result to return instead of
// writing (declined or cancelled). A client that cannot ask is refused.
func (d *Deps) confirm(ctx context.Context, c *writeCall, plan *parsedb.WritePlan) (bool, any, error) {
	if !d.needsConfirmation(c) {
		return false, nil, nil
	}
	answer, err := Confirm(ctx, d, confirmQuestion(c, plan))
	if err != nil {
		return false, nil, err
	}
	switch answer {
	case ConfirmAccepted:
		return true, nil, nil
	case ConfirmUnsupported:
		return false, nil, toolerror.Denied("confirmation_unavailable",
			"%s needs the person's confirmation (settings.confirm_writes: %s), but this client cannot ask (it declared no elicitation support); nothing was written. Use a client with elicitation, or ask the operator to change confirm_writes",
			c.tool, d.Policy.ConfirmWrites())
	}
	return false, declined(c, plan, answer.String()), nil
}

// confirmQuestion is what the person is asked about a write: exactly what
// will change in the database.
func confirmQuestion(c *writeCall, plan *parsedb.WritePlan) string {
	change, _ := json.MarshalIndent(plan.StableChange(), "", "  ")
	return fmt.Sprintf("The assistant asks to %s. Exactly this will change in the database:\n%s\nApply it?", describeWrite(c, plan), truncate(string(change), 6000))
}

func describeWrite(c *writeCall, plan *parsedb.WritePlan) string {
	what := strings.ReplaceAll(string(plan.Op), "_", " ")
	if c.action != "" {
		what = "run the action " + c.action + " (" + what + ")"
	}
	target := plan.ClassName
	if plan.ObjectID != "" && plan.Op != parsedb.WriteCreateObject {
		target += " " + plan.ObjectID
	}
	return what + " on " + target
}

// declined is the result of a write the person declined or cancelled.
func declined(c *writeCall, plan *parsedb.WritePlan, outcome string) any {
	o := newJSONObject()
	if c.action != "" {
		o.str("action", c.action)
	}
	o.str("class_name", plan.ClassName)
	if plan.ObjectID != "" && plan.Op != parsedb.WriteCreateObject {
		o.str("object_id", plan.ObjectID)
	}
	o.val("written", false)
	o.str("confirmation", outcome)
	o.str("note", "the person did not confirm ("+outcome+"); nothing was written")
	return o.done()
}
