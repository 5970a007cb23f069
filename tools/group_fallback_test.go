package tools

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func rawOf(t *testing.T, v any) bson.RawValue {
	t.Helper()
	if v == nil {
		return bson.RawValue{Type: bson.TypeNull}
	}
	ty, b, err := bson.MarshalValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return bson.RawValue{Type: ty, Value: b}
}

// TestDateBucketMatchesDateToString pins the fallback's keys to what
// $dateToString gives for the same formats (the e2e suite compares both on
// a real MongoDB).
func TestDateBucketMatchesDateToString(t *testing.T) {
	// 2021-01-03 23:30 UTC is a Sunday: ISO week 2020-W53; in +09:00 it is
	// Monday 2021-01-04, week 2021-W01.
	at := rawOf(t, bson.NewDateTimeFromTime(time.Date(2021, 1, 3, 23, 30, 5, 0, time.UTC)))
	plus9, _ := fallbackLocation("+09:00")
	minus5, _ := fallbackLocation("-05:30")
	cases := []struct {
		interval string
		loc      *time.Location
		want     string
	}{
		{"year", time.UTC, "2021"},
		{"quarter", time.UTC, "2021-Q1"},
		{"month", minus5, "2021-01"},
		{"week", time.UTC, "2020-W53"},
		{"week", plus9, "2021-W01"},
		{"day", plus9, "2021-01-04"},
		{"hour", minus5, "2021-01-03 18:00"},
		{"minute", plus9, "2021-01-04 08:30"},
		{"second", time.UTC, "2021-01-03 23:30:05"},
	}
	for _, tc := range cases {
		got, err := dateBucket(at, tc.interval, tc.loc)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := got.StringValueOK(); s != tc.want {
			t.Errorf("%s in %v = %q, want %q", tc.interval, tc.loc, s, tc.want)
		}
	}
	if got, _ := dateBucket(bson.RawValue{}, "day", time.UTC); got.Type != bson.TypeNull {
		t.Errorf("missing date: %v, want null", got)
	}
	if _, err := dateBucket(rawOf(t, "2021-01-01"), "day", time.UTC); err == nil {
		t.Error("a string date was bucketed; $dateToString refuses it")
	}
}

func TestGroupIdentityAndOrder(t *testing.T) {
	if groupIdentity(rawOf(t, int32(1))) != groupIdentity(rawOf(t, 1.0)) || groupIdentity(rawOf(t, int64(1))) != groupIdentity(rawOf(t, int32(1))) {
		t.Error("1 and 1.0 are one group in MongoDB")
	}
	if groupIdentity(bson.RawValue{}) != groupIdentity(rawOf(t, nil)) {
		t.Error("missing and null are one group")
	}
	if groupIdentity(rawOf(t, "1")) == groupIdentity(rawOf(t, int32(1))) {
		t.Error("\"1\" and 1 are different groups")
	}
	order := []any{nil, int32(-3), 2.5, int64(7), "a", "b", bson.D{{Key: "x", Value: 1}}, bson.A{1}, true, bson.NewDateTimeFromTime(time.Unix(0, 0))}
	for i := 1; i < len(order); i++ {
		if c := compareBSON(rawOf(t, order[i-1]), rawOf(t, order[i])); c >= 0 {
			t.Errorf("%v should sort before %v (got %d)", order[i-1], order[i], c)
		}
	}
	if n := len(unwound(rawOf(t, bson.A{"a", nil, "b"}))); n != 3 {
		t.Errorf("$unwind keeps every element: %d", n)
	}
	if unwound(rawOf(t, bson.A{})) != nil || unwound(bson.RawValue{}) != nil || len(unwound(rawOf(t, "s"))) != 1 {
		t.Error("$unwind of [], missing or a scalar")
	}
}

func TestFallbackAccumulators(t *testing.T) {
	g := &fallbackGroup{}
	for _, v := range []any{int32(1), int64(2), "x", nil, 3.5} {
		g.add("avg", rawOf(t, v))
	}
	if r := g.result("avg"); r.Double() != 6.5/3 {
		t.Errorf("avg = %v", r)
	}
	g = &fallbackGroup{}
	for _, v := range []any{int64(1 << 62), int64(1 << 62)} {
		g.add("sum", rawOf(t, v))
	}
	if r := g.result("sum"); r.Type != bson.TypeDouble || r.Double() != float64(1<<63) {
		t.Errorf("overflowing sum = %v", r)
	}
	g = &fallbackGroup{}
	for _, v := range []any{nil, "b", int32(5), "a"} {
		g.add("max", rawOf(t, v))
	}
	if s, _ := g.result("max").StringValueOK(); s != "b" {
		t.Errorf("max in BSON order = %v", g.result("max"))
	}
	if r := (&fallbackGroup{}).result("min"); r.Type != bson.TypeNull {
		t.Errorf("min of nothing = %v", r)
	}
}
