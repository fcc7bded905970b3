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
