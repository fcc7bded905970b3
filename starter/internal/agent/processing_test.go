package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/processing"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// TestProcessorsRunBeforeTheWAL: a chain that drops odd lines, folds a
// storm and redacts an e-mail: only what it emits reaches the WAL and the
// engine, the positions of dropped and folded lines are stored all the
// same, the storm's row comes at the window's end or at the stop, and a
// restart reads nothing again.
func TestProcessorsRunBeforeTheWAL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := testConfig(t)
		in := &fakeInput{}
		for i := range 10 {
			ev := lineEvent("a.log", i)
			if i == 2 {
				ev.Payload = []byte(`{"_line":2,"payload":"mail bob@example.com"}`)
			}
			in.push(ev)
		}
		for i := 10; i < 60; i++ {
			in.push(input.Event{Payload: []byte(fmt.Sprintf(`{"_line":%d,"payload":"storm"}`, i)),
				Pos: input.Position{Key: "a.log", State: fmt.Appendf(nil, "%d", i)}})
		}
		snd := newFakeSender(nil)
		opts := newOptions(t, cfg, home, in, snd)
		opts.InputList[0].Processors = []processing.Step{
			{Drop: `_line < 10 && _line % 2 == 1`},
			{Redact: &processing.RedactConfig{Detectors: []string{"email"}}},
			{Dedup: &processing.DedupConfig{Window: time.Hour, Key: `payload == "storm" ? "storm" : string(_line)`}},
		}
		h := startRuntime(t, opts)
		time.Sleep(time.Minute)
		synctest.Wait()
		// Every dedup window is open (an hour): nothing is emitted, and no
		// position at or past the first held line (0) is stored.
		if got := len(snd.payloads()); got != 0 {
			t.Fatalf("%d rows sent while every event is held", got)
		}
		var held []byte
		if err := h.rt.WAL().View(func(tx *wal.ReadTx) error {
			pos, err := tx.Positions("input-1")
			held = pos["a.log"]
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if held != nil {
			_ = h.stop()
			t.Fatalf("position %q stored while line 0 is held", held)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		st := h.rt.Snapshot()
		if st.EventsRead != 60 || st.RowsAppended != 6 {
			t.Errorf("events read %d rows %d, want 60 and 6", st.EventsRead, st.RowsAppended)
		}
		var procs []processing.Doc
		for _, is := range st.Inputs {
			for _, r := range is.Records {
				if r.Key == "processors" {
					procs, _ = r.Value.([]processing.Doc)
				}
			}
		}
		if len(procs) != 3 || procs[0].Dropped != 5 || procs[2].Folded != 49 {
			t.Errorf("processor counts = %+v", procs)
		}

		in2 := &fakeInput{}
		snd2 := newFakeSender(nil)
		opts2 := newOptions(t, cfg, home, in2, snd2)
		opts2.InputList[0].Processors = opts.InputList[0].Processors
		h2 := startRuntime(t, opts2)
		if o := in2.openOptions(); string(o.Saved["a.log"]) != "59" {
			t.Fatalf("restart opens at %q, want 59 (the last line, folded)", o.Saved["a.log"])
		}
		// What the stop flushed into the WAL goes out now.
		time.Sleep(time.Minute)
		synctest.Wait()
		if err := h2.stop(); err != nil {
			t.Fatal(err)
		}
		got := snd2.payloads()
		if len(got) != 6 {
			t.Fatalf("sent %d distinct rows, want lines 0 2 4 6 8 and the storm: %v", len(got), got)
		}
		var storm string
		for p := range got {
			if strings.Contains(p, "bob@") {
				t.Errorf("an e-mail reached the engine: %s", p)
			}
			if strings.Contains(p, `"storm"`) {
				storm = p
			}
		}
		if !strings.Contains(storm, `"_repeats":50`) || !strings.Contains(storm, `"_line":10`) {
			t.Errorf("storm row = %s; want line 10 with _repeats 50", storm)
		}
	})
}

// TestDedupRefusedOnAnAcker: an input that answers its senders once their
// events are stored cannot have them held.
func TestDedupRefusedOnAnAcker(t *testing.T) {
	home := t.TempDir()
	cfg := testConfig(t)
	in := &ackerInput{}
	opts := newOptions(t, cfg, home, in, newFakeSender(nil))
	opts.InputList[0].Processors = []processing.Step{{Dedup: &processing.DedupConfig{}}}
	rt, err := New(opts)
	if err == nil {
		err = rt.Run(t.Context())
	}
	if err == nil || !strings.Contains(err.Error(), "dedup holds events") {
		t.Fatalf("Run = %v; want the dedup refusal", err)
	}
}

type ackerInput struct{ fakeInput }

func (*ackerInput) Committed(int) {}

// TestReloadReplacesTheChain: a reload with another processors list
// emits what the old chain held, and the events read after it go through
// the new chain; a list that does not build keeps the old one running.
func TestReloadReplacesTheChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &fakeInput{}
		snd := newFakeSender(nil)
		opts := newOptions(t, testConfig(t), t.TempDir(), in, snd)
		opts.InputList[0].Processors = []processing.Step{
			{Dedup: &processing.DedupConfig{Window: time.Hour}},
			{Set: map[string]string{"chain": "old"}},
		}
		h := startRuntime(t, opts)
		in.push(lineEvent("a.log", 1), lineEvent("a.log", 1))
		time.Sleep(time.Second)
		synctest.Wait()

		bad := withSteps(opts, processing.Step{Drop: "payload =="})
		if err := h.rt.Reload(context.Background(), bad, Replace{Inputs: []string{""}}); err == nil {
			t.Fatal("a list that does not compile was applied")
		}
		next := withSteps(opts, processing.Step{Set: map[string]string{"chain": "new"}})
		if err := h.rt.Reload(context.Background(), next, Replace{Inputs: []string{""}}); err != nil {
			t.Fatal(err)
		}
		in.push(lineEvent("a.log", 2))
		time.Sleep(time.Minute)
		synctest.Wait()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		got := snd.payloads()
		// The held event, emitted by the old chain at the reload (its
		// times depend on when the loop polled), then line 2 through the
		// new chain.
		var old, fresh int
		for p, n := range got {
			switch {
			case strings.Contains(p, `"_line":1,"_repeats":2,"chain":"old","payload":"line-1"}`):
				old += n
			case p == `{"_line":2,"chain":"new","payload":"line-2"}`:
				fresh += n
			default:
				t.Errorf("unexpected row %s", p)
			}
		}
		if old != 1 || fresh != 1 {
			t.Errorf("sent %v; want the folded line 1 from the old chain and line 2 from the new, once each", got)
		}
	})
}

// withSteps is opts with the single input's processors replaced, its
// input list copied so that opts keeps its own.
func withSteps(opts Options, steps ...processing.Step) Options {
	opts.InputList = slices.Clone(opts.InputList)
	opts.InputList[0].Processors = steps
	return opts
}
