package policy

import (
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Parse Server's master-only system classes (its SharedRest
// enforceRoleSecurity): a client without the master key may not find (nor
// count, a find with count) or delete _Installation objects — get by id is
// allowed, subject to ACL and CLP — and may not touch the volatile system
// classes at all. Parse applies the same check to every sub-read a query
// makes ($inQuery, $notInQuery, $select, $dontSelect, include), so a scoped
// identity is refused here for the tool's own class and for every class a
// join, include or sub-query reads (they resolve with the find operation).
// The volatile classes are also hidden by default (DefaultHiddenClasses);
// listing them here keeps them master-only even if that list changes.

// masterOnlyClasses may be read by the master posture only.
var masterOnlyClasses = map[string]bool{
	"_JobStatus": true, "_PushStatus": true, "_Hooks": true, "_GlobalConfig": true,
	"_GraphQLConfig": true, "_JobSchedule": true, "_Idempotency": true, "_Audience": true,
}

// masterOnlyOps are the operations Parse refuses to clients on a class that
// is master-only for some operations only.
var masterOnlyOps = map[string]map[string]bool{
	"_Installation": {OpFind: true, OpCount: true, OpDelete: true},
}

// checkMasterOnly refuses a scoped identity an operation Parse Server
// reserves to the master key (access_denied kind master_only, with Parse's
// own wording).
func (e *Engine) checkMasterOnly(class, op string) error {
	if e.MasterPosture() || op == "" {
		return nil
	}
	if masterOnlyClasses[class] {
		return toolerror.Denied("master_only", "Clients aren't allowed to perform the %s operation on the %s collection.", parseOpName(op), class)
	}
	if masterOnlyOps[class][op] {
		return toolerror.Denied("master_only", "Clients aren't allowed to perform the %s operation on the installation collection.", parseOpName(op))
	}
	return nil
}

// parseOpName is the operation as Parse names it in this error: a count is
// a find.
func parseOpName(op string) string {
	if op == OpCount {
		return OpFind
	}
	return op
}
