package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/file"
	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// brokenOutputFactory is output type "broken": its Create always fails, as
// a TLS file that cannot be read would.
type brokenOutputFactory struct{}

func (brokenOutputFactory) Type() string                    { return "broken" }
func (brokenOutputFactory) NewDefaultConfig() output.Config { return output.NewConsoleConfig() }
func (brokenOutputFactory) Create(output.Config, output.Settings) (transport.Sender, output.Encoder, error) {
	return nil, nil, errors.New("read output.tls.ca-file: permission denied")
}

// Reloads while events flow lose and duplicate nothing, and each one is
// counted with the hash it put in force.
func TestReloadWhileEventsFlowLosesAndDuplicatesNothing(t *testing.T) {
	in := &fakeInput{}
	snd := newFakeSender(nil)
	cfg := testConfig(t)
	opts := newOptions(t, cfg, t.TempDir(), in, snd)
	opts.ConfigHash = "hash-0"
	h := startRuntime(t, opts)

	// Status readers (metrics, the summary) run while reloads replace the
	// loop's options: the race detector checks they share nothing.
	stopReading := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stopReading:
				return
			default:
				_ = h.rt.Snapshot()
			}
		}
	}()
	const total = 3000
	for i := 0; i < total; i += 100 {
		in.push(lineEvents("a.log", i, i+100)...)
		if i%500 == 0 {
			next := opts
			next.Retry.Backoff += time.Millisecond // a change the loop must apply
			next.ConfigHash = "hash-" + strconv.Itoa(i)
			if err := h.rt.Reload(context.Background(), next, Replace{}); err != nil {
				t.Fatalf("reload at %d: %v", i, err)
			}
		}
	}
	close(stopReading)
	<-readerDone
	transporttest.Eventually(t, 20*time.Second, "every event acked", func() bool {
		st := h.rt.Snapshot()
		return st.Acked == total && st.Queue.Pending == 0 && st.Queue.Sending == 0
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	got := snd.payloads()
	for _, p := range payloadsOf(0, total) {
		if got[p] != 1 {
			t.Fatalf("payload %s delivered %d times, want once", p, got[p])
		}
	}
	st := h.rt.Snapshot()
	if st.ConfigReloads != (ReloadCounts{OK: 6}) || st.ConfigHash != "hash-2500" {
		t.Fatalf("reloads = %+v, hash %q; want 6 ok and the last hash", st.ConfigReloads, st.ConfigHash)
	}
}

// A reload whose output cannot be built keeps the old output delivering
// and is counted as failed.
func TestReloadWithBrokenOutputKeepsTheOldOne(t *testing.T) {
	in := &fakeInput{}
	snd := newFakeSender(nil)
	cfg := testConfig(t)
	opts := newOptions(t, cfg, t.TempDir(), in, snd)
	opts.Outputs = output.NewRegistry(fakeOutputFactory{snd: snd}, brokenOutputFactory{})
	opts.ConfigHash = "old"
	h := startRuntime(t, opts)
	in.push(lineEvents("a.log", 0, 100)...)
	transporttest.Eventually(t, 10*time.Second, "first events acked", func() bool { return h.rt.Snapshot().Acked == 100 })

	next := opts
	next.OutputType = "broken"
	next.ConfigHash = "new"
	err := h.rt.Reload(context.Background(), next, Replace{}) // the type changed: rebuilt anyway
	if err == nil {
		t.Fatal("reload to an output that cannot be built succeeded")
	}
	in.push(lineEvents("a.log", 100, 200)...)
	transporttest.Eventually(t, 10*time.Second, "events after the failed reload acked", func() bool { return h.rt.Snapshot().Acked == 200 })
	st := h.rt.Snapshot()
	if st.State != "running" || st.ConfigHash != "old" || st.OutputType != "fake" || st.ConfigReloads != (ReloadCounts{Failed: 1}) {
		t.Fatalf("after a failed reload: state %s, hash %q, output %s, reloads %+v", st.State, st.ConfigHash, st.OutputType, st.ConfigReloads)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(h.rt.Reload(context.Background(), opts, Replace{}), ErrNotRunning) {
		t.Fatal("reload of a stopped agent did not report ErrNotRunning")
	}
}

// fileLineCounts maps "file:payload" of each delivered record to how often
// it arrived.
func (e *engine) fileLineCounts(t testing.TB) map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for rec, n := range e.got {
		var ev struct {
			Payload string `json:"payload"`
			File    string `json:"_file"`
		}
		if err := json.Unmarshal([]byte(rec), &ev); err != nil {
			t.Fatalf("record %q is not the event JSON: %v", rec, err)
		}
		out[filepath.Base(ev.File)+":"+ev.Payload] += n
	}
	return out
}

// A reload that widens the input's paths starts shipping the newly matched
// file and goes on with the file both configs match at its offset.
func TestReloadNewPathStartsShippingKeptPathKeepsOffset(t *testing.T) {
	eng := startEngine(t, "127.0.0.1:0", standin.Faults{}, nil)
	dir, home := t.TempDir(), t.TempDir()
	aLog, bLog := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	appendLines(t, aLog, 0, 500)
	// Other lines than a.log's: a file holding a prefix of another's
	// bytes is taken for its copy (copytruncate) and not read twice.
	appendLines(t, bLog, 1000, 1300)
	cfg := transportConfig(t, eng.srv.Addr())
	fileConfig(t, cfg, dir)
	cfg.Input.(*file.Config).Paths = []string{aLog}
	opts := fileOptions(t, cfg, home)
	h := startRuntime(t, opts)
	transporttest.Eventually(t, 20*time.Second, "a.log shipped", func() bool { return eng.distinct() == 500 })

	wide := file.NewDefaultConfig()
	*wide = *cfg.Input.(*file.Config)
	wide.Paths = []string{filepath.Join(dir, "*.log")}
	next := opts
	next.InputList = []InputSpec{singleInput(file.TypeName, wide)}
	if err := h.rt.Reload(context.Background(), next, Replace{Inputs: []string{""}}); err != nil {
		t.Fatal(err)
	}
	appendLines(t, aLog, 500, 600)
	transporttest.Eventually(t, 20*time.Second, "a.log's new lines and b.log shipped", func() bool { return eng.distinct() == 900 })
	transporttest.Eventually(t, 5*time.Second, "all acked", func() bool {
		st := h.rt.Snapshot()
		return st.Queue.Pending == 0 && st.Queue.Sending == 0 && st.RowsAppended == 900
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	got := eng.fileLineCounts(t)
	for _, l := range wantLines(0, 600) {
		if got["a.log:"+l] != 1 {
			t.Fatalf("a.log %q delivered %d times, want once", l, got["a.log:"+l])
		}
	}
	for _, l := range wantLines(1000, 1300) {
		if got["b.log:"+l] != 1 {
			t.Fatalf("b.log %q delivered %d times, want once", l, got["b.log:"+l])
		}
	}
}

// namedOutputFactory is a fake output under another type name.
type namedOutputFactory struct {
	name string
	snd  transport.Sender
}

func (f namedOutputFactory) Type() string                  { return f.name }
func (namedOutputFactory) NewDefaultConfig() output.Config { return output.NewConsoleConfig() }
func (f namedOutputFactory) Create(output.Config, output.Settings) (transport.Sender, output.Encoder, error) {
	return f.snd, nil, nil
}

// namedInputFactory is a fake input under another type name.
type namedInputFactory struct {
	name string
	in   input.Input
}

func (f namedInputFactory) Type() string                 { return f.name }
func (namedInputFactory) NewDefaultConfig() input.Config { return fakeInputConfig{} }
func (f namedInputFactory) Create(input.Config, input.Settings) (input.Input, error) {
	return f.in, nil
}

// A reload that changes the output sends what follows through the new one
// and closes the old one; one that changes the input closes the old input
// (its held-back group delivered first) and opens the new one from the
// positions saved so far, also in NON mode where they live in memory only.
func TestReloadReplacesInputAndOutput(t *testing.T) {
	for _, delivery := range []Delivery{DeliveryBestEffort, DeliveryNon} {
		t.Run(delivery.String(), func(t *testing.T) {
			in1, in2 := &fakeInput{}, &fakeInput{}
			snd1, snd2 := newFakeSender(nil), newFakeSender(nil)
			cfg := testConfig(t)
			cfg.Agent.Delivery = delivery
			opts := newOptions(t, cfg, t.TempDir(), in1, snd1)
			opts.Inputs = input.NewRegistry(fakeFactory{in: in1}, namedInputFactory{name: "fake2", in: in2})
			opts.Outputs = output.NewRegistry(fakeOutputFactory{snd: snd1}, namedOutputFactory{name: "fake2", snd: snd2})
			h := startRuntime(t, opts)
			in1.push(lineEvents("a.log", 0, 100)...)
			transporttest.Eventually(t, 10*time.Second, "first events acked", func() bool { return h.rt.Snapshot().Acked == 100 })
			in1.mu.Lock()
			in1.held = lineEvents("a.log", 100, 101) // a multiline group still open
			in1.mu.Unlock()

			next := opts
			next.InputList = []InputSpec{singleInput("fake2", opts.InputList[0].Config)}
			next.OutputType = "fake2"
			if err := h.rt.Reload(context.Background(), next, Replace{}); err != nil {
				t.Fatal(err)
			}
			in2.push(lineEvents("a.log", 101, 200)...)
			transporttest.Eventually(t, 10*time.Second, "events after the reload acked", func() bool { return h.rt.Snapshot().Acked == 200 })
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			if got := in2.openOptions().Saved["a.log"]; string(got) != "100" {
				t.Fatalf("new input opened at position %q, want the old input's last, 100", got)
			}
			in1.mu.Lock()
			closed := in1.closed
			in1.mu.Unlock()
			snd1.mu.Lock()
			sndClosed := snd1.closed
			snd1.mu.Unlock()
			if !closed || !sndClosed {
				t.Fatalf("old input closed %v, old output closed %v; want both", closed, sndClosed)
			}
			p1, p2 := snd1.payloads(), snd2.payloads()
			for _, p := range payloadsOf(0, 200) {
				if p1[p]+p2[p] != 1 {
					t.Fatalf("payload %s delivered %d times, want once", p, p1[p]+p2[p])
				}
			}
			if len(p2) < 99 {
				t.Fatalf("the new output got %d payloads, want at least the 99 read after the reload", len(p2))
			}
			if st := h.rt.Snapshot(); st.InputType != "fake2" || st.OutputType != "fake2" {
				t.Fatalf("status shows input %s, output %s after the reload", st.InputType, st.OutputType)
			}
		})
	}
}

// okOutputFactory is output type "fixed": the output an operator's fix
// (a new token, say) builds in a reload.
type okOutputFactory struct{ snd transport.Sender }

func (okOutputFactory) Type() string                    { return "fixed" }
func (okOutputFactory) NewDefaultConfig() output.Config { return output.NewConsoleConfig() }
func (f okOutputFactory) Create(output.Config, output.Settings) (transport.Sender, output.Encoder, error) {
	return f.snd, nil, nil
}

// A reload that replaces a refused output tries the new one at once: the
// pause the refusal imposed (output.max-backoff-ms, an hour here) was
// about the old settings, so a fleet's fix of the token takes effect
// without waiting it out. A reload that keeps the output keeps the pause.
func TestReloadOfARefusedOutputSendsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		newOutput bool
		wantAcked int
	}{
		{"output replaced", true, 50},
		{"output kept", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				clientOptions(t, cfg).MaxBackoff = time.Hour
				in := &fakeInput{}
				refused := newFakeSender(nil)
				refused.callErr = func(int) error { return fmt.Errorf("authenticate: %w", transport.ErrAuthFailed) }
				fixed := newFakeSender(nil)
				opts := newOptions(t, cfg, t.TempDir(), in, refused)
				opts.Outputs = output.NewRegistry(fakeOutputFactory{snd: refused}, okOutputFactory{snd: fixed})
				h := startRuntime(t, opts)
				in.push(lineEvents("a.log", 0, 50)...)
				transporttest.Eventually(t, 5*time.Second, "the token refused", func() bool { return h.rt.Snapshot().Connection == "auth_failed" })

				next := opts
				if tc.newOutput {
					next.OutputType = "fixed"
				}
				if err := h.rt.Reload(context.Background(), next, Replace{Output: tc.newOutput}); err != nil {
					t.Fatal(err)
				}
				// A minute of the bubble's clock: far less than the hour's pause.
				time.Sleep(time.Minute)
				synctest.Wait()
				got := h.rt.Snapshot().Acked
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				if got != uint64(tc.wantAcked) {
					t.Fatalf("acked %d a minute after the reload, want %d", got, tc.wantAcked)
				}
			})
		})
	}
}
