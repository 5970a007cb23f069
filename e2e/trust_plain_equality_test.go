package e2e

import (
	"regexp"
	"testing"
)

// TestTrustPlainEqualityComplement: on a String column holding a drifted
// array ["x", "Vault$<id>"] (Vault hidden), an equality and its negation
// answer one row alike whichever form they take: the row is not both equal
// and not equal to "x", and an $in operand that matches nothing does not
// change which rows match.
func TestTrustPlainEqualityComplement(t *testing.T) {
	r := plainEqualityServer(t)
	ids := regexp.MustCompile(`\\"(r[0-9])\\"`)
	match := func(id, where string) string {
		a := answer(aggRPC(r, id, "query_class", `{"class_name":"Memo","keys":["objectId"],"where":`+where+`}`))
		var got string
		for _, m := range ids.FindAllStringSubmatch(a, -1) {
			if m[1] == "r1" {
				got = "r1"
			}
		}
		return got
	}
	eq := match("eq", `{"title":"x","body":"ref"}`)
	ne := match("ne", `{"title":{"$ne":"x"},"body":"ref"}`)
	in := match("in", `{"title":{"$in":["x",{"k":"q"}]},"body":"ref"}`)
	if eq == "r1" && ne == "r1" {
		t.Errorf(`row ["x", hidden reference] matches both {"title":"x"} and {"title":{"$ne":"x"}}`)
	}
	if eq != in {
		t.Errorf(`row ["x", hidden reference]: {"title":"x"} → %q but {"title":{"$in":["x",{"k":"q"}]}} → %q`, eq, in)
	}
}
