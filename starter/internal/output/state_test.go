package output_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport"
)

func TestConnectionState(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{transport.ErrAuthFailed, "auth_failed"},
		{fmt.Errorf("send: %w", transport.ErrDecryptFailed), "decrypt_failed"},
		{fmt.Errorf("endpoint b: %w", transport.ErrRejected), "rejected"},
		{transport.ErrUnavailable, "unavailable"},
		{errors.New("connection reset"), "unavailable"},
	} {
		if got := output.ConnectionState(tc.err); got != tc.want {
			t.Errorf("ConnectionState(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
