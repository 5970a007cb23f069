package tools

import (
	"encoding/json"
	"testing"
)

// TestArgsInt: a number is a number whether it came from JSON (float64) or
// from a Go caller (int, int64, json.Number); a Go int used to be refused
// with "limit must be a number, got int".
func TestArgsInt(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int
		err  string
	}{
		{nil, 7, ""},
		{float64(3), 3, ""},
		{3, 3, ""},
		{int64(3), 3, ""},
		{uint8(3), 3, ""},
		{json.Number("3"), 3, ""},
		{3.5, 0, "limit must be a whole number"},
		{json.Number("x"), 0, "limit must be a number, got json.Number"},
		{"3", 0, "limit must be a number, got a string"},
		{true, 0, "limit must be a number, got a boolean"},
		{101, 0, "limit must be between 1 and 100, got 101"},
		{int64(-1), 0, "limit must be between 1 and 100, got -1"},
	} {
		args := Args{}
		if tc.in != nil {
			args["limit"] = tc.in
		}
		got, err := args.Int("limit", 7, 1, 100)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if got != tc.want || msg != tc.err {
			t.Errorf("Int(%#v) = %d, %q; want %d, %q", tc.in, got, msg, tc.want, tc.err)
		}
	}
}
