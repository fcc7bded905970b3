package file

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// groups returns each delivered event's lines joined by "|".
func groups(t *testing.T, h *harness, evs []rec) []string {
	t.Helper()
	_ = h
	var out []string
	var cur []string
	for i, r := range evs {
		if r.Index == 0 && i > 0 {
			out = append(out, strings.Join(cur, "|"))
			cur = nil
		}
		cur = append(cur, r.text())
	}
	if cur != nil {
		out = append(out, strings.Join(cur, "|"))
	}
	return out
}

func mlHarness(t *testing.T, pattern, match string, negate bool, maxLines int) *harness {
	return newHarness(t, func(c *Config) {
		c.Multiline.Pattern = pattern
		c.Multiline.Match = match
		c.Multiline.Negate = negate
		if maxLines > 0 {
			c.Multiline.MaxLines = maxLines
		}
		c.Multiline.FlushIdleTimeout = 1000 * time.Millisecond
	})
}

// TestMultilineCombinations covers every match/negate combination end to
// end, including what Drain delivers at shutdown.
func TestMultilineCombinations(t *testing.T) {
	cases := []struct {
		pattern, match string
		negate         bool
		in             string
		polled, drain  []string
	}{
		{`^\d{4}-`, "after", false, "2024- a\n at x\n at y\n2024- b\n at z\n",
			[]string{"2024- a| at x| at y"}, []string{"2024- b| at z"}},
		{`^\s`, "after", true, "head\n cont\nnext\n c2\n",
			[]string{"head| cont"}, []string{"next| c2"}},
		{`^END$`, "before", false, "line A\nline B\nEND\nline C\nEND\ntail\n",
			[]string{"line A|line B|END", "line C|END"}, []string{"tail"}},
		{`\\$`, "before", true, "a \\\nb \\\nc\nd \\\n",
			[]string{`a \|b \|c`}, []string{`d \`}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-negate=%v", c.match, c.negate), func(t *testing.T) {
			h := mlHarness(t, c.pattern, c.match, c.negate, 0)
			h.write("a.log", c.in)
			h.open()
			if got := groups(t, h, h.pollAll()); !slices.Equal(got, c.polled) {
				t.Fatalf("polled %q, want %q", got, c.polled)
			}
			if got := groups(t, h, h.apply(h.in.Drain(nil))); !slices.Equal(got, c.drain) {
				t.Fatalf("drained %q, want %q", got, c.drain)
			}
		})
	}
}

// TestMultilineEventShape: a group is a JSON array with _index 0..n-1 and
// the position after its last line; a single line stays an object.
func TestMultilineEventShape(t *testing.T) {
	h := mlHarness(t, `^\S`, "after", false, 0)
	h.write("a.log", "E1\n  c1\n  c2\nE2\n")
	h.open()
	evs, err := h.in.Poll(t.Context(), nil, 10)
	must(t, err)
	if len(evs) != 1 || evs[0].Payload[0] != '[' {
		t.Fatalf("want one array event, got %+v", evs)
	}
	rs := h.apply(evs)
	if len(rs) != 3 || rs[2].Index != 2 || rs[2].Line != 3 || rs[2].Offset != 13 {
		t.Fatalf("got %+v", rs)
	}
	if st := h.saved[evs[0].Pos.Key]; !strings.Contains(string(st), `"offset":13,"line":3`) {
		t.Fatalf("position %s, want offset after the group", st)
	}
	drained := h.in.Drain(nil)
	if len(drained) != 1 || drained[0].Payload[0] != '{' {
		t.Fatalf("single-line group should be an object: %+v", drained)
	}
}

// TestMultilineMaxLines splits long groups.
func TestMultilineMaxLines(t *testing.T) {
	h := mlHarness(t, `^S`, "after", false, 3)
	h.write("a.log", "S\n1\n2\n3\n4\nS\n")
	h.open()
	got := groups(t, h, h.pollAll())
	if !slices.Equal(got, []string{"S|1|2", "3|4"}) {
		t.Fatalf("got %q", got)
	}
}

// TestMultilineIdleFlush: the idle timer runs from the LAST line (the Java
// agent measures from the first and splits events still being written).
func TestMultilineIdleFlush(t *testing.T) {
	h := mlHarness(t, `^S`, "after", false, 0)
	h.step = 100 * time.Millisecond
	h.write("a.log", "S1\n")
	h.open()
	for i := 0; i < 6; i++ { // 600 ms: lines keep coming, no flush
		if got := h.poll(10); len(got) != 0 {
			t.Fatalf("flushed early at poll %d: %v", i, got)
		}
		h.write("a.log", fmt.Sprintf(" c%d\n", i))
	}
	for i := 0; i < 7; i++ {
		if got := h.poll(10); len(got) != 0 {
			t.Fatalf("flushed %v before 1000 ms of silence (poll %d)", texts(got), i)
		}
	}
	var got []rec
	for i := 0; i < 5 && len(got) == 0; i++ {
		got = h.poll(10)
	}
	if len(got) != 7 {
		t.Fatalf("idle flush gave %d lines: %v", len(got), texts(got))
	}
}

// TestMultilineCrossPollAndCap: a group is not split across polls, and a
// poll cap keeps the buffer for the next poll.
func TestMultilineCrossPollAndCap(t *testing.T) {
	h := mlHarness(t, `^S`, "after", false, 0)
	h.write("a.log", "S1\n a\n")
	h.open()
	if got := h.pollAll(); len(got) != 0 {
		t.Fatalf("incomplete group delivered: %v", texts(got))
	}
	h.write("a.log", " b\nS2\nS3\nS4\n")
	first := h.poll(1)
	if g := groups(t, h, first); !slices.Equal(g, []string{"S1| a| b"}) {
		t.Fatalf("first poll %q", g)
	}
	if g := groups(t, h, h.poll(1)); !slices.Equal(g, []string{"S2"}) {
		t.Fatalf("second poll %q", g)
	}
	rest := groups(t, h, append(h.pollAll(), h.apply(h.in.Drain(nil))...))
	if !slices.Equal(rest, []string{"S3", "S4"}) {
		t.Fatalf("rest %q", rest)
	}
}

// TestMultilineFileIsolation: each file has its own assembler.
func TestMultilineFileIsolation(t *testing.T) {
	h := mlHarness(t, `^S`, "after", false, 0)
	h.write("a.log", "Sa\n a1\n")
	h.write("b.log", "Sb\n b1\n b2\n")
	h.open()
	h.pollAll()
	h.write("a.log", "Sa2\n")
	got := h.pollAll()
	if g := groups(t, h, got); !slices.Equal(g, []string{"Sa| a1"}) {
		t.Fatalf("a boundary flushed %q", g)
	}
	h.write("b.log", " b3\nSb2\n")
	if g := groups(t, h, h.pollAll()); !slices.Equal(g, []string{"Sb| b1| b2| b3"}) {
		t.Fatalf("b got %q", g)
	}
}

// TestMultilineNotDropped: groups are delivered at close-inactive and
// when a rotated file is finished (the Java agent drops them in both
// cases).
func TestMultilineNotDropped(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Multiline.Pattern = `^S`
		c.Multiline.FlushIdleTimeout = 3_600_000 * time.Millisecond
		c.CloseInactive = 100 * time.Millisecond
	})
	h.write("a.log", "S1\n c\n")
	h.open()
	var got []rec
	for i := 0; i < 20; i++ { // 200 ms > close-inactive
		got = append(got, h.poll(10)...)
	}
	if g := groups(t, h, got); !slices.Equal(g, []string{"S1| c"}) || h.in.Stats().FilesOpen != 0 {
		t.Fatalf("close-inactive: %q", g)
	}
	h.write("b.log", "S2\n d\n")
	h.pollAll()
	h.write("b.log", " e\n")
	must(t, os.Rename(h.path("b.log"), h.path("b.old")))
	h.write("b.log", "S3\n")
	got = h.pollAll()
	h.clock = h.clock.Add(h.cfg.CloseInactive) // the rotated file is quiet: finished
	got = append(got, h.pollAll()...)
	g := groups(t, h, got)
	if !slices.Contains(g, "S2| d| e") {
		t.Fatalf("rotation: %q", g)
	}
}

// Java parity §3.2: Close with a buffered group neither fails nor emits;
// the lines are re-read from the saved offset on restart.
func TestMultilineCloseWithoutDrain(t *testing.T) {
	h := mlHarness(t, `^S`, "after", false, 0)
	h.write("a.log", "S1\n c\n")
	h.open()
	h.pollAll()
	must(t, h.in.Close())
	h.open()
	if got := h.pollAll(); len(got) != 0 {
		t.Fatalf("group delivered before its end: %v", texts(got))
	}
	got := groups(t, h, h.apply(h.in.Drain(nil)))
	if !slices.Equal(got, []string{"S1| c"}) {
		t.Fatalf("got %q", got)
	}
}
