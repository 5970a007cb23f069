package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString: any bytes, as a string and as []byte, escape as
// encoding/json escapes them (HTML off and on), and a compact message
// holding them converts as json.Marshal converts a json.RawMessage.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "\xe2\x80", "a\xe2\x80\xa9", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\x00\x7f<>&", "\xc0\xaf", "\xf0\x9f\x98"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		plain, err := Marshal(string(b))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, b); !bytes.Equal(got, plain) {
			t.Fatalf("AppendString(%q) = %s, want %s", b, got, plain)
		}
		if got := AppendString([]byte("x"), string(b)); !bytes.Equal(got[1:], plain) {
			t.Fatalf("AppendString(string %q) = %s, want %s", b, got[1:], plain)
		}
		html, _ := json.Marshal(string(b))
		if got := AppendHTMLString(nil, string(b)); !bytes.Equal(got, html) {
			t.Fatalf("AppendHTMLString(%q) = %s, want %s", b, got, html)
		}
		raw := []byte(`{` + string(plain) + `:[` + string(plain) + `]}`)
		want, _ := json.Marshal(json.RawMessage(raw))
		if got := AppendHTMLEscaped(nil, raw); !bytes.Equal(got, want) {
			t.Fatalf("AppendHTMLEscaped(%s) = %s, want %s", raw, got, want)
		}
	})
}
