package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/api"
)

// The text status says why reading paused when never rows hold the queue.
func TestStatusTextDropHeld(t *testing.T) {
	for _, held := range []bool{false, true} {
		var b bytes.Buffer
		writeStatusText(&b, api.Status{Running: true, Backpressure: true, WAL: api.WALStatus{DropHeld: held}}, "edge-agent.pid", nil)
		if !strings.Contains(b.String(), "reading paused (queue above queue.max-bytes") {
			t.Fatalf("held %v: no backpressure line:\n%s", held, b.String())
		}
		if got := strings.Contains(b.String(), "queue-drop: never"); got != held {
			t.Errorf("held %v: text names queue-drop: never %v:\n%s", held, got, b.String())
		}
	}
}
