package toolerror

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	cause := errors.New("driver: connection reset")
	cases := []struct {
		err  error
		want Kind
	}{
		{New(InvalidArgument, "bad"), ModelFixable},
		{fmt.Errorf("wrapped: %w", Denied("hidden_class", "no")), ModelFixable},
		// A guard's structured refusal is model-fixable too.
		{Refuse(InvalidQuery, "collscan", "COLLSCAN on Song", "index"), ModelFixable},
		{Violationf("$where"), ViolationKind},
		{fmt.Errorf("in a stage: %w", Violationf("$function")), ViolationKind},
		// A violation behind a model-fixable error still wins.
		{New(InvalidQuery, "x").WithCause(Violationf("$where")), ViolationKind},
		{cause, Infrastructure},
		{context.DeadlineExceeded, Infrastructure},
	}
	for _, c := range cases {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

func TestCauseUnwraps(t *testing.T) {
	err := New(Timeout, "query_class timed out").WithCause(fmt.Errorf("find: %w", context.DeadlineExceeded))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the cause is not reachable through Unwrap")
	}
	if err.Error() != "query_class timed out" {
		t.Fatalf("the message must not include the cause: %q", err.Error())
	}
	ref := Refuse(InvalidQuery, "collscan", "COLLSCAN on Song", "").WithCause(context.Canceled)
	if !errors.Is(ref, context.Canceled) {
		t.Fatal("a refusal's cause is not reachable")
	}
}

func TestRecorder(t *testing.T) {
	if err := Record(context.Background(), Violationf("x")); err == nil {
		t.Fatal("Record without a recorder must return the error unchanged")
	}
	ctx, rec := WithRecorder(context.Background())
	_ = Record(ctx, errors.New("internal"))
	if rec.Err() != nil || rec.Violation() != nil {
		t.Fatal("an infrastructure error must not be recorded (it stays -32603)")
	}
	_ = Record(ctx, InvalidParams("Argument %s is required", "class_name"))
	if rec.Err() == nil || rec.Err().Message != "Argument class_name is required" || rec.Err().Code != InvalidArgument {
		t.Fatalf("params error: %+v", rec.Err())
	}
	_ = Record(ctx, Refuse(InvalidQuery, "collscan", "COLLSCAN on Song", "index"))
	if rec.Err().Message != "COLLSCAN on Song" || rec.Err().Code != InvalidQuery {
		t.Fatalf("refusal: %+v", rec.Err())
	}
	RecordViolation(ctx, Violationf("$where"))
	if rec.Violation() == nil || rec.Violation().Reason != "$where" {
		t.Fatal("violation not recorded")
	}
}

func TestRefusalJSON(t *testing.T) {
	got := string(Refuse(InvalidQuery, "collscan", "COLLSCAN on Song", "add an index").RefusalJSON())
	if want := `{"refused":true,"reason":"COLLSCAN on Song","suggestion":"add an index"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got := string(Refuse(InvalidQuery, "", "no plan", "").RefusalJSON()); got != `{"refused":true,"reason":"no plan"}` {
		t.Fatalf("without a suggestion: %s", got)
	}
}
