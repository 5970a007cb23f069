package oauth

import (
	"strings"
	"testing"
)

// TestPKCEShapes: the bounds of a code_verifier (43 to 128 unreserved
// characters) and of an S256 code_challenge (43 base64url characters).
func TestPKCEShapes(t *testing.T) {
	for _, tt := range []struct {
		verifier string
		want     bool
	}{
		{strings.Repeat("a", 42), false},
		{strings.Repeat("a", 43), true},
		{strings.Repeat("A0._~-", 21) + "zz", true},
		{strings.Repeat("a", 129), false},
		{strings.Repeat("a", 42) + "+", false},
		{strings.Repeat("a", 42) + "é", false},
	} {
		if got := validVerifier(tt.verifier); got != tt.want {
			t.Errorf("validVerifier(%q) = %v, want %v", tt.verifier, got, tt.want)
		}
	}
	for _, tt := range []struct {
		challenge string
		want      bool
	}{
		{strings.Repeat("a", 42), false},
		{strings.Repeat("Az09_-", 7) + "x", true},
		{strings.Repeat("a", 44), false},
		{strings.Repeat("a", 42) + ".", false},
		{strings.Repeat("a", 42) + "=", false},
	} {
		if got := validChallenge(tt.challenge); got != tt.want {
			t.Errorf("validChallenge(%q) = %v, want %v", tt.challenge, got, tt.want)
		}
	}
}
