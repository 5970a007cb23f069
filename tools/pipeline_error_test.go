package tools

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// TestPipelineRunErrorQuotesNoValue: MongoDB's expression errors quote the
// offending value — an embedded hidden pointer, a protected string cut
// out of its field, a joined class's value — so the message the model gets
// carries the code and code name only; the operator's log has the text.
func TestPipelineRunErrorQuotesNoValue(t *testing.T) {
	secrets := []string{"VaultSecret", "MT1TFYLBtk", "carol@example.com", "wu1JlVFHb8"}
	for _, ce := range []mongo.CommandError{
		{Code: 241, Name: "ConversionFailure", Message: `Failed to parse number 'wu1JlVFHb8' in $convert with no onError value: Did not consume whole string.`},
		{Code: 241, Name: "ConversionFailure", Message: `Error parsing date string 'carol@example.com'; 0: passing a time zone identifier as part of the string is not allowed`},
		{Code: 50711, Name: "Location50711", Message: `$dateFromString requires that 'dateString' be a string, found: object with value {source: "vault-sync", credential: {__type: "Pointer", className: "VaultSecret", objectId: "MT1TFYLBtk"}}`},
		{Code: 16006, Message: `can't convert from BSON type string to Date`},
	} {
		var log bytes.Buffer
		d := &Deps{Log: zerolog.New(&log)}
		err := pipelineRunError(d, "aggregate", ce)
		var te *toolerror.Error
		if !errors.As(err, &te) || te.Code != toolerror.InvalidQuery {
			t.Fatalf("%d: not an invalid_query: %v", ce.Code, err)
		}
		msg := err.Error()
		for _, s := range secrets {
			if strings.Contains(msg, s) {
				t.Errorf("the message quotes %q: %s", s, msg)
			}
		}
		if !strings.Contains(msg, "error "+strconv.Itoa(int(ce.Code))) || ce.Name != "" && !strings.Contains(msg, ce.Name) {
			t.Errorf("the message does not name the code: %s", msg)
		}
		if !strings.Contains(log.String(), ce.Message[:20]) {
			t.Errorf("the operator's log lacks the message: %s", log.String())
		}
	}
	// Not-supported answers and other errors pass through unchanged.
	other := errors.New("connection reset")
	if got := pipelineRunError(&Deps{Log: zerolog.Nop()}, "aggregate", other); got != other {
		t.Errorf("a non-server error was rewritten: %v", got)
	}
}
