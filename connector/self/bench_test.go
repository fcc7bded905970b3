package self

import (
	"io"
	"log/slog"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

// What the hub adds to a record the log file writes: nothing attached,
// and a self input taking it.
func BenchmarkHandler(b *testing.B) {
	file := slog.NewJSONHandler(io.Discard, nil)
	for _, tc := range []struct {
		name   string
		attach bool
	}{{"plain", false}, {"no-sink", false}, {"self-input", true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := slog.Handler(file)
			hub := NewHub()
			if tc.name != "plain" {
				h = hub.Handler(file)
			}
			if tc.attach {
				in, _ := New(NewDefaultConfig(), input.Settings{}, hub)
				_ = in.Open(b.Context(), input.OpenOptions{})
				stop := make(chan struct{})
				defer func() { close(stop); _ = in.Close() }()
				go func() { // the scheduler, polling
					for {
						select {
						case <-stop:
							return
						case <-in.Wakeup():
							_, _ = in.Poll(b.Context(), nil, 1<<20)
						}
					}
				}()
			}
			log := slog.New(h).With(slog.String("input_id", "app"))
			b.ReportAllocs()
			for b.Loop() {
				log.Warn("cannot open", slog.String("path", "/var/log/app.log"), slog.Int("attempt", 3))
			}
		})
	}
}
