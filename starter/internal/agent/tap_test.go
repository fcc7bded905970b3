package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/processing"
	"github.com/edge-agent/edge-agent/starter/internal/tap"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// A tap reader that never reads costs delivery nothing: every row is
// delivered while its subscription drops. The input stage shows events
// through the input's redaction, the later stages as processed.
func TestTapNeverBlocksAndRedacts(t *testing.T) {
	const n = 500 // within one burst of tap.MaxRate: nothing sampled out
	cfg := testConfig(t)
	in := &fakeInput{}
	for i := range n {
		ev := lineEvent("a.log", i)
		if i == 7 {
			ev.Payload = []byte(`{"_line":7,"payload":"mail bob@example.com"}`)
		}
		in.push(ev)
	}
	snd := newFakeSender(nil)
	opts := newOptions(t, cfg, t.TempDir(), in, snd)
	opts.InputList[0].Processors = []processing.Step{
		{Redact: &processing.RedactConfig{Detectors: []string{"email"}}},
		{Set: map[string]string{"tapped": "yes"}},
	}
	h := newRuntime(t, opts)
	stuck, err := h.rt.Tap(tap.Filter{Stage: tap.StageSent, Rate: tap.MaxRate, Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen, _ := h.rt.Tap(tap.Filter{Stage: tap.StageInput, Input: opts.InputList[0].ID, Rate: tap.MaxRate, Buffer: 2 * n})
	done, _ := h.rt.Tap(tap.Filter{Stage: tap.StageProcessed, Rate: tap.MaxRate, Buffer: 2 * n})
	h.run()
	transporttest.Eventually(t, 60*time.Second, "every row delivered", func() bool { d, _ := snd.stats(); return d == n })
	// The loop publishes a row once it took the engine's answer.
	transporttest.Eventually(t, 60*time.Second, "every row offered to the tap", func() bool {
		out, dropped, delivered := stuck.Counts()
		return out+dropped+delivered == n
	})
	_, dropped, delivered := stuck.Counts()
	if delivered != 1 || dropped != n-1 {
		t.Fatalf("stuck reader: delivered %d, dropped %d; want 1 and %d", delivered, dropped, n-1)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	var inputs, processed []string
	for ev := range seen.C() {
		inputs = append(inputs, string(ev.Payload))
	}
	for ev := range done.C() {
		processed = append(processed, string(ev.Payload))
	}
	if len(inputs) != n || len(processed) != n {
		t.Fatalf("tapped %d input and %d processed events, want %d each", len(inputs), len(processed), n)
	}
	if strings.Contains(inputs[7], "bob@example.com") || !strings.Contains(inputs[7], "mail ") || strings.Contains(inputs[7], "tapped") {
		t.Errorf("input stage shows %s", inputs[7])
	}
	if inputs[8] != `{"_line":8,"payload":"line-8"}` {
		t.Errorf("input stage changed an event without secrets: %s", inputs[8])
	}
	if !strings.Contains(processed[7], `"tapped":"yes"`) || strings.Contains(processed[7], "bob@") {
		t.Errorf("processed stage shows %s", processed[7])
	}
}
