package transport

import (
	"fmt"
	"testing"
)

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{NotSent: "not_sent", Received: "received", Failed: "failed", Outcome(9): "unknown"} {
		if o.String() != want {
			t.Errorf("%d: %q", int(o), o.String())
		}
	}
}

func TestIsFatal(t *testing.T) {
	for err, want := range map[error]bool{
		fmt.Errorf("x: %w", ErrAuthFailed):    true,
		fmt.Errorf("x: %w", ErrDecryptFailed): true,
		ErrRejected:                           false,
		ErrUnavailable:                        false,
		nil:                                   false,
	} {
		if IsFatal(err) != want {
			t.Errorf("IsFatal(%v) = %v", err, !want)
		}
	}
}
