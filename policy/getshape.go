package policy

import "context"

// Parse Server's DatabaseController.find checks a find whose where is
// exactly {objectId: "X"} (one key, a string) against the class's get
// permission, not find: a class may allow fetching a known id while
// refusing listing. The tool's own method stays find for everything else
// (Parse's master-only check of _Installation runs on the REST method, so
// such a find of _Installation is still refused).

// getShapedWhere reports whether a where argument is exactly
// {objectId: "<string>"}.
func getShapedWhere(where any) bool {
	m, ok := where.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	_, ok = m["objectId"].(string)
	return ok
}

// clpOperation is the CLP operation of op on class in ctx: get for the
// call's own class when its where is get-shaped, op otherwise.
func clpOperation(ctx context.Context, class, op string) string {
	if ci := callStateOf(ctx); ci != nil && ci.getShaped && op == OpFind && (ci.class == "" || ci.class == class) {
		return OpGet
	}
	return op
}
