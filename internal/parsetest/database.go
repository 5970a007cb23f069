package parsetest

import (
	"os"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Database is what the tests run against: the MongoDB at
// PARSE_MCP_TEST_MONGODB_URI when it is set (real is true), else a fresh
// embedded FerretDB with its files in dir. stop shuts the embedded one down
// (for the real one it does nothing).
func Database(dir string) (uri string, real bool, stop func(), err error) {
	if uri := os.Getenv("PARSE_MCP_TEST_MONGODB_URI"); uri != "" {
		return uri, true, func() {}, nil
	}
	srv, err := embeddeddb.Start(dir, nil)
	if err != nil {
		return "", false, nil, err
	}
	return srv.URI, false, srv.Stop, nil
}

// MongoURI is Database for one test or benchmark: an embedded FerretDB
// lives in the test's temporary directory and stops when the test ends.
func MongoURI(t testing.TB) string {
	t.Helper()
	uri, _, stop, err := Database(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return uri
}

// Outcome classifies a tool's or validator's error for table tests: "ok",
// "violation", the parse.error_code, "access_denied:<kind>" when the
// refusal names its kind, or "internal: <message>".
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if _, ok := toolerror.AsViolation(err); ok {
		return "violation"
	}
	if te, ok := toolerror.As(err); ok {
		if te.Code == toolerror.AccessDenied && te.Details != nil {
			return "access_denied:" + te.Details.Kind
		}
		return string(te.Code)
	}
	return "internal: " + err.Error()
}
