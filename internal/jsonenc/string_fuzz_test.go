package jsonenc

import "testing"

// FuzzAppendString: any bytes, as a string and as []byte, escape as
// encoding/json escapes them (HTML off and on), and a compact message
// holding them converts as json.Marshal converts a json.RawMessage.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "\xe2\x80", "a\xe2\x80\xa9", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\x00\x7f<>&", "\xc0\xaf", "\xf0\x9f\x98"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		appendersMatchEncodingJSON(t, string(b))
	})
}
