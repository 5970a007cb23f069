package main

import "testing"

func TestAskArgs(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		q     string
		trace bool
	}{
		{[]string{"how many songs?"}, "how many songs?", false},
		{[]string{"--trace", "how", "many", "songs?"}, "how many songs?", true},
		{[]string{"how many songs?", "--trace"}, "how many songs?", true},
		{[]string{"-trace", "-"}, "-", true},
		{[]string{"--trace"}, "", true},
	} {
		q, trace := askArgs(tc.args)
		if q != tc.q || trace != tc.trace {
			t.Errorf("askArgs(%q) = %q, %v; want %q, %v", tc.args, q, trace, tc.q, tc.trace)
		}
	}
}
