package main

import (
	"encoding/json"
	"testing"
)

func TestUnescapeHTML(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, `{"a":"<b> &"}`},
		{`{"a":"\u003C\u003E"}`, `{"a":"<>"}`},
		{`{"a":"\\u003c"}`, `{"a":"\\u003c"}`},             // an escaped backslash, then literal text
		{`{"a":"\\\u003c"}`, `{"a":"\\<"}`},                // escaped backslash, then an escape
		{`{"a":"\u00e9\n\"q\""}`, `{"a":"\u00e9\n\"q\""}`}, // other escapes untouched
		{`"\`, `"\`}, // truncated input is copied
	} {
		got := string(unescapeHTML([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if json.Valid([]byte(tc.in)) {
			var a, b any
			_ = json.Unmarshal([]byte(tc.in), &a)
			if err := json.Unmarshal([]byte(got), &b); err != nil {
				t.Errorf("unescapeHTML(%s) is not valid JSON: %v", tc.in, err)
			}
			if ja, _ := json.Marshal(a); string(ja) != string(must(json.Marshal(b))) {
				t.Errorf("unescapeHTML(%s) changed the value: %v vs %v", tc.in, a, b)
			}
		}
	}
}

func must(b []byte, _ error) []byte { return b }
