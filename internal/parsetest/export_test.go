package parsetest

import "context"

var NodeVersionOK = nodeVersionOK

// InstallUncached runs one install attempt without the process-wide cache.
func InstallUncached(ctx context.Context) (*Runtime, error) { return install(ctx) }

// IsUnavailable reports whether err means "Node/npm cannot be had" (a skip).
func IsUnavailable(err error) bool {
	_, ok := err.(*unavailableError)
	return ok
}
