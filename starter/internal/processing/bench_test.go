package processing

import (
	"fmt"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// typicalChain is the chain the speed target names: parse json, drop
// debug, redact e-mail and cards in the payload, set two fields.
func typicalChain(tb testing.TB) *Chain {
	return mustChain(tb,
		Step{Parse: &ParseConfig{Format: "json"}},
		Step{Drop: `payload.level == "debug"`},
		Step{Redact: &RedactConfig{Detectors: []string{"email", "credit-card"}}},
		Step{Set: map[string]string{"site": "plant-7", "env": "prod"}},
	)
}

// benchEvents are file-input events of ~200-byte JSON lines: one in six
// debug, one in ten with an e-mail, one in twenty with a card number.
func benchEvents(n int) []input.Event {
	out := make([]input.Event, n)
	for i := range out {
		level := []string{"info", "info", "warn", "debug", "error", "info"}[i%6]
		msg := fmt.Sprintf("request %d served in %d ms for session s-%06d upstream status 200 cache hit", i, i%997, i)
		switch {
		case i%20 == 0:
			msg += " paid with 4111 1111 1111 1111"
		case i%10 == 0:
			msg += " user jane.doe@example.com"
		}
		line := fmt.Sprintf(`{"ts":%d,"level":%q,"component":"http","msg":%q}`, int64(1764000000000)+int64(i), level, msg)
		out[i] = line1(line, i)
	}
	return out
}

func line1(text string, i int) input.Event {
	ev := line(text, i)
	return ev
}

// BenchmarkTypicalChain reports the chain's own cost per event; CPU-s
// per 1M lines is ns/op / 1000.
func BenchmarkTypicalChain(b *testing.B) {
	events := benchEvents(4096)
	c := typicalChain(b)
	batch := make([]input.Event, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 256 {
		batch = batch[:0]
		for k := 0; k < 256 && i+k < b.N; k++ {
			batch = append(batch, events[(i+k)%len(events)])
		}
		batch = c.Process(batch, 0, time.Unix(0, 0))
	}
}
