package parsedb

import (
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// IsUnavailable reports whether err says the database cannot be reached:
// no server could be selected (down, unreachable, restarting: the driver
// waited ConnectTimeout for one) or a connection failed mid-operation (a
// network error). Checked before IsTimeout: a server selection that gave up
// also counts as a timeout for the driver, but it is an outage, not a slow
// query.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	return errors.As(err, new(topology.ServerSelectionError)) || mongo.IsNetworkError(err)
}

// IsServerSelectionFailure reports that no server could be selected: the
// database could not be reached at all.
func IsServerSelectionFailure(err error) bool {
	return errors.As(err, new(topology.ServerSelectionError))
}

// IsConnectionFailure reports a network error on an established connection
// (a pooled connection gone stale when the database restarted, a reset): the
// driver drops the pool, so one more attempt runs on a fresh connection. A
// server selection failure is not one: it already waited for a server.
func IsConnectionFailure(err error) bool {
	return err != nil && mongo.IsNetworkError(err) && !errors.As(err, new(topology.ServerSelectionError))
}

// IsTimeout reports whether err is MongoDB's MaxTimeMSExpired (code 50) or a
// driver timeout.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	if mongo.IsTimeout(err) {
		return true
	}
	var se mongo.ServerError
	if errors.As(err, &se) && se.HasErrorCode(50) {
		return true
	}
	return false
}

// ferretNestedArrays is how FerretDB refuses to store an array inside an
// array (BadValue, code 2): a Polygon's GeoJSON coordinates, or an Array
// field holding arrays. MongoDB stores them.
const ferretNestedArrays = "nested arrays are not supported"

// AsNotSupported turns a server's "not implemented" answer (code 238, as
// FerretDB gives for $lookup, date expressions, $avg …, or 115
// CommandNotSupported), or FerretDB's refusal to store nested arrays, into
// an invalid_query the model and the user can understand, naming the
// feature the server lacks. It returns nil for any other error.
func AsNotSupported(err error) *toolerror.Error {
	var se mongo.ServerError
	if !errors.As(err, &se) {
		return nil
	}
	if se.HasErrorCodeWithMessage(2, ferretNestedArrays) {
		return toolerror.New(toolerror.InvalidQuery, "the database server does not support this operation: it stores no arrays inside arrays, so it cannot hold a Polygon (GeoJSON coordinates) or an Array of arrays (the embedded demo database, FerretDB, lacks some MongoDB features; a real MongoDB stores them)")
	}
	if !se.HasErrorCode(238) && !se.HasErrorCode(115) {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(msg, "message:"); i >= 0 {
		msg = strings.TrimSpace(msg[i+len("message:"):])
	}
	return toolerror.New(toolerror.InvalidQuery, "the database server does not support this operation: %s (the embedded demo database, FerretDB, lacks some MongoDB features; a real MongoDB runs it)", truncateMsg(msg, 200))
}

func truncateMsg(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
