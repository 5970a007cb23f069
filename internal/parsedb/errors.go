package parsedb

import (
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

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
