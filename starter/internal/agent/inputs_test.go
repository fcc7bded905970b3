package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// namedConfig is the config of a fake input in the `inputs:` list: its
// value names the *fakeInput the factory hands out.
type namedConfig string

func (namedConfig) Validate() error { return nil }

// listFactory hands out the fake input its config names.
type listFactory struct{ ins map[namedConfig]*fakeInput }

func (listFactory) Type() string                   { return "fake" }
func (listFactory) NewDefaultConfig() input.Config { return namedConfig("") }
func (f listFactory) Create(c input.Config, _ input.Settings) (input.Input, error) {
	in, ok := f.ins[c.(namedConfig)]
	if !ok {
		return nil, fmt.Errorf("no fake input %q", c)
	}
	return in, nil
}

func listOptions(t *testing.T, home string, ins map[namedConfig]*fakeInput, ids ...string) Options {
	opts := newOptions(t, testConfig(t), home, nil, newFakeSender(nil))
	opts.InputList = nil
	opts.Inputs = input.NewRegistry(listFactory{ins: ins})
	for _, id := range ids {
		opts.InputList = append(opts.InputList, InputSpec{ID: id, Type: "fake", Config: namedConfig(id)})
	}
	return opts
}

// Under a flood from one input every other input still gets its share of
// each poll: events are taken round-robin, an equal share of the room each.
func TestPollSharesTheBufferBetweenInputs(t *testing.T) {
	cases := []struct {
		name   string
		queued []int // events waiting per input
		bulk   int
		want   []int // events taken per input by one poll
	}{
		{"one input fills the buffer", []int{1000}, 64, []int{64}},
		{"two floods split evenly", []int{1000, 1000}, 64, []int{32, 32}},
		{"a quiet input leaves its share to the flood", []int{1000, 5}, 64, []int{59, 5}},
		{"three inputs", []int{1000, 1000, 1000}, 60, []int{20, 20, 20}},
		{"less than the buffer", []int{3, 4}, 64, []int{3, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Agent{opts: Options{Agent: Settings{BulkMaxSize: tc.bulk}, Queue: QueueSettings{PollBatchSize: 128}}, now: time.Now}
			l := &loop{r: r, q: newMemQueue(1000, 1<<20, time.Now())}
			l.group = newGrouping(r.opts, tc.bulk, false) // the group is bulk-max-size
			for i, n := range tc.queued {
				f := &fakeInput{}
				f.push(lineEvents("k", 0, n)...)
				l.in.list = append(l.in.list, &source{id: fmt.Sprint("in", i), typ: "fake", in: f})
			}
			if _, err := l.poll(t.Context(), time.Now()); err != nil {
				t.Fatal(err)
			}
			got := make([]int, len(tc.queued))
			for _, id := range l.buf.ids {
				var i int
				fmt.Sscanf(id, "in%d", &i)
				got[i]++
			}
			if !slices.Equal(got, tc.want) || len(l.buf.ids) != l.buf.len() {
				t.Fatalf("taken %v, want %v", got, tc.want)
			}
		})
	}
}

// Each input's rows and positions are stored under its own id, and come
// back to it (and only to it) at the next start.
func TestInputsPositionsPerID(t *testing.T) {
	home := t.TempDir()
	a, b := &fakeInput{}, &fakeInput{}
	a.push(lineEvents("k", 0, 300)...)
	b.push(lineEvents("k", 1000, 1010)...)
	h := startRuntime(t, listOptions(t, home, map[namedConfig]*fakeInput{"a": a, "b": b}, "a", "b"))
	transporttest.Eventually(t, 10*time.Second, "every event stored", func() bool { return h.rt.Snapshot().RowsAppended == 310 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	a2, b2, c2 := &fakeInput{}, &fakeInput{}, &fakeInput{}
	h = startRuntime(t, listOptions(t, home, map[namedConfig]*fakeInput{"a": a2, "b": b2, "c": c2}, "a", "b", "c"))
	defer func() { _ = h.stop() }()
	if got := string(a2.openOptions().Saved["k"]); got != "299" || a2.openOptions().FirstStart {
		t.Fatalf("input a reopened at %q (first start %v), want 299", got, a2.openOptions().FirstStart)
	}
	if got := string(b2.openOptions().Saved["k"]); got != "1009" {
		t.Fatalf("input b reopened at %q, want 1009", got)
	}
	if o := c2.openOptions(); len(o.Saved) != 0 || !o.FirstStart {
		t.Fatalf("new input c opened with %+v, want nothing saved and a first start", o)
	}
	if st := h.rt.Snapshot(); st.InputID != "a,b,c" || len(st.Inputs) != 3 || st.Inputs[2].ID != "c" {
		t.Fatalf("status input id %q, inputs %+v", st.InputID, st.Inputs)
	}
}

// A reload that removes one entry of inputs: and adds another closes the
// one, opens the other, and leaves the unchanged entry running untouched.
func TestReloadAddsAndRemovesOneInput(t *testing.T) {
	home := t.TempDir()
	a, b, c := &fakeInput{}, &fakeInput{}, &fakeInput{}
	ins := map[namedConfig]*fakeInput{"a": a, "b": b, "c": c}
	a.push(lineEvents("k", 0, 10)...)
	b.push(lineEvents("k", 100, 110)...)
	opts := listOptions(t, home, ins, "a", "b")
	h := startRuntime(t, opts)
	defer func() { _ = h.stop() }()
	transporttest.Eventually(t, 10*time.Second, "a and b stored", func() bool { return h.rt.Snapshot().RowsAppended == 20 })
	aOpen := a.openOptions()

	next := listOptions(t, home, ins, "a", "c")
	if err := h.rt.Reload(context.Background(), next, Replace{}); err != nil {
		t.Fatal(err)
	}
	if a.isClosed() || !b.isClosed() || c.isClosed() || !c.isOpened() {
		t.Fatalf("after the reload: a closed %v, b closed %v, c closed %v, c opened %v", a.isClosed(), b.isClosed(), c.isClosed(), c.isOpened())
	}
	if a.openOptions().FirstStart != aOpen.FirstStart || a.pollCount() == 0 {
		t.Fatal("input a was reopened")
	}
	a.push(lineEvents("k", 10, 15)...)
	c.push(lineEvents("k", 200, 205)...)
	transporttest.Eventually(t, 10*time.Second, "a and c stored", func() bool { return h.rt.Snapshot().RowsAppended == 30 })
	if st := h.rt.Snapshot(); st.InputID != "a,c" {
		t.Fatalf("status input id %q, want a,c", st.InputID)
	}

	// An entry whose config changed is rebuilt from its saved positions.
	a2 := &fakeInput{}
	ins["a2"] = a2
	changed := listOptions(t, home, ins, "a", "c")
	changed.InputList[0].Config = namedConfig("a2")
	if err := h.rt.Reload(context.Background(), changed, Replace{Inputs: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if !a.isClosed() || c.isClosed() {
		t.Fatalf("a closed %v (want true), c closed %v (want false)", a.isClosed(), c.isClosed())
	}
	if got := string(a2.openOptions().Saved["k"]); got != "14" {
		t.Fatalf("rebuilt input a reopened at %q, want 14", got)
	}
}

func TestWakeMuxFansIn(t *testing.T) {
	quiet, loud := &wakingInput{c: make(chan struct{}, 1)}, &wakingInput{c: make(chan struct{}, 1)}
	m := newWakeMux([]*source{{id: "q", in: quiet}, {id: "l", in: loud}})
	defer m.stop()
	loud.c <- struct{}{}
	select {
	case <-m.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the second input's wake-up did not reach the loop")
	}
	if newWakeMux([]*source{{id: "x", in: &fakeInput{}}}).C() != nil {
		t.Fatal("inputs without Wakeup gave a channel")
	}
	if one := (&wakingInput{c: make(chan struct{})}); newWakeMux([]*source{{in: one}}).C() != one.c {
		t.Fatal("a single input's channel is not used as it is")
	}
}

type wakingInput struct {
	fakeInput
	c chan struct{}
}

func (w *wakingInput) Wakeup() <-chan struct{} { return w.c }

func (f *fakeInput) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// otherFactory is listFactory under a second type name.
type otherFactory struct{ listFactory }

func (otherFactory) Type() string { return "other" }

// BOOTSTRAP_READY names the input type as before when all inputs share
// it, "mixed" when they do not, and lists the types in input_types.
func TestReadyLineListsInputTypes(t *testing.T) {
	cases := []struct {
		name      string
		types     []string // nil: the single input: form
		wantType  string
		wantTypes string
	}{
		{"single input", nil, "fake", "fake"},
		{"one type", []string{"fake", "fake"}, "fake", "fake"},
		{"two types", []string{"fake", "other", "fake"}, "mixed", "fake,other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ins := map[namedConfig]*fakeInput{}
			opts := newOptions(t, testConfig(t), t.TempDir(), &fakeInput{}, newFakeSender(nil))
			if tc.types != nil {
				opts = listOptions(t, t.TempDir(), ins)
				opts.Inputs = input.NewRegistry(listFactory{ins: ins}, otherFactory{listFactory{ins: ins}})
				for i, typ := range tc.types {
					id := namedConfig(fmt.Sprint("in", i))
					ins[id] = &fakeInput{}
					opts.InputList = append(opts.InputList, InputSpec{ID: string(id), Type: typ, Config: id})
				}
			}
			var logs lockedBuffer
			opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			h := startRuntime(t, opts)
			defer func() { _ = h.stop() }()
			lines := logs.lines("BOOTSTRAP_READY")
			if len(lines) != 1 {
				t.Fatalf("%d BOOTSTRAP_READY lines", len(lines))
			}
			var rec struct {
				InputType  string `json:"input_type"`
				InputTypes string `json:"input_types"`
			}
			if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.InputType != tc.wantType || rec.InputTypes != tc.wantTypes {
				t.Fatalf("input_type %q, input_types %q; want %q, %q: %s", rec.InputType, rec.InputTypes, tc.wantType, tc.wantTypes, lines[0])
			}
		})
	}
}
