package jsonenc

import (
	"encoding/json"
	"testing"
)

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{map[string]any{"a": "<b> & c"}, `{"a":"<b> & c"}`},
		{json.RawMessage(`{"r":"<x>&"}`), `{"r":"<x>&"}`},
		{struct {
			R json.RawMessage `json:"r"`
		}{json.RawMessage(`["\u003c"]`)}, `{"r":["\u003c"]}`}, // an escape already in raw bytes stays as it is
		{"\u2028", `"\u2028"`}, // line separators stay escaped, as encoding/json does
	} {
		got, err := Marshal(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
