package check_test

import (
	"errors"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

func TestProblemsNameEveryKey(t *testing.T) {
	var p check.Problems
	p.Positive("bulk-max-size", 0)
	p.NonNegative("max-bytes", -1)
	p.PositiveMillis("idle-sleep-ms", -5*time.Millisecond)
	p.NonNegativeMillis("acked-retention-ms", 0) // fine
	p.Positive("poll-batch-size", 3)             // fine
	err := p.Err()
	want := map[string]string{
		"bulk-max-size": "must be > 0, got 0",
		"max-bytes":     "must be >= 0, got -1",
		"idle-sleep-ms": "must be > 0, got -5",
	}
	got := map[string]string{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *check.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a FieldError", e)
		}
		got[fe.FieldKey()] = fe.Unwrap().Error()
	}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	var none check.Problems
	if none.Err() != nil {
		t.Fatal("no problem must mean a nil error")
	}
}
