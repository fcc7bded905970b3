package file

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestHeadCheckAfterKeptHead: a file read over many turns keeps its
// verified head bytes; a copytruncate whose new content grows past the
// read position before the next turn is still told by its head, whether
// the new head differs in its first byte, its last, or its length is the
// same and only the middle differs.
func TestHeadCheckAfterKeptHead(t *testing.T) {
	for _, tc := range []struct {
		name string
		head string // the new content's first 16 bytes (fingerprint-bytes)
	}{
		{"first byte", "Xine 000 of the\n"},
		{"last byte", "line 000 of theX"},
		{"middle", "line 0X0 of the\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.FingerprintBytes = 16 })
			var old strings.Builder
			for i := range 8 {
				fmt.Fprintf(&old, "line %03d of the old content\n", i)
			}
			h.write("app.log", old.String())
			h.open()
			if got := h.pollAll(); len(got) != 8 {
				t.Fatalf("first read: %d lines, want 8", len(got))
			}
			// More turns on the same head: the kept bytes are what is
			// compared from here on.
			for i := 8; i < 12; i++ {
				h.write("app.log", fmt.Sprintf("line %03d of the old content\n", i))
				if got := h.pollAll(); len(got) != 1 {
					t.Fatalf("append %d: %d lines, want 1", i, len(got))
				}
			}
			must(t, os.Truncate(h.path("app.log"), 0))
			fresh := tc.head + strings.Repeat("n", 400) + "\n"
			h.write("app.log", fresh)
			got := h.pollAll()
			want := strings.Split(strings.TrimSuffix(fresh, "\n"), "\n")
			if len(got) != len(want) || got[0].text() != want[0] {
				t.Fatalf("after copytruncate: %d lines %q, want the new content from its start", len(got), texts(got))
			}
			if s := h.in.Stats(); s.Truncations != 1 {
				t.Fatalf("truncations = %d, want 1", s.Truncations)
			}
		})
	}
}

// TestKeptHeadBounded: an open file keeps at most keptHeadMax head bytes
// (a fingerprint longer than that is matched by its hash), and none once
// it is closed; a truncation is told either way.
func TestKeptHeadBounded(t *testing.T) {
	for _, fpBytes := range []int{keptHeadMax, keptHeadMax + 1} {
		t.Run(fmt.Sprint(fpBytes), func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.FingerprintBytes = fpBytes })
			line := strings.Repeat("a", 99) + "\n"
			h.write("app.log", strings.Repeat(line, 3*fpBytes/100))
			h.open()
			h.pollAll()
			h.write("app.log", line)
			h.pollAll()
			if len(h.in.ring) != 1 || h.in.ring[0].f == nil {
				t.Fatalf("want one open file")
			}
			tr := h.in.ring[0]
			want := fpBytes
			if fpBytes > keptHeadMax {
				want = 0
			}
			if len(tr.head) != want || cap(tr.head) > max(want, 2*keptHeadMax) {
				t.Fatalf("kept head: len %d cap %d, want len %d", len(tr.head), cap(tr.head), want)
			}
			must(t, os.Truncate(h.path("app.log"), 0))
			h.write("app.log", strings.Repeat("b"+line, 3*fpBytes/100+2))
			if got := h.pollAll(); len(got) != 3*fpBytes/100+2 || got[0].text() != "b"+line[:len(line)-1] {
				t.Fatalf("after copytruncate: %d lines, want the new content from its start", len(got))
			}
			h.clock = h.clock.Add(h.cfg.CloseInactive + h.step)
			h.pollAll()
			if tr.f != nil || tr.head != nil {
				t.Fatalf("closed file: open %v, kept head %d bytes; want none", tr.f != nil, len(tr.head))
			}
		})
	}
}
