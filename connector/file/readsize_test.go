package file

import (
	"fmt"
	"strings"
	"testing"
)

// TestPollsReadWhatTheyUse: a poll that stops at its event budget gives
// back the bytes it read past its last line, and the next poll reads them
// again; the read must be sized to the budget so that a file read in
// small polls (the scheduler's default is 128 events) is not read 2.5
// times over. Every line must still arrive, once, in order.
func TestPollsReadWhatTheyUse(t *testing.T) {
	cases := []struct {
		name    string
		lineLen int
		perPoll int
	}{
		{"200-byte lines, 128 per poll", 200, 128},
		{"60-byte lines, 128 per poll", 60, 128},
		{"200-byte lines, 1000 per poll", 200, 1000},
		{"3000-byte lines, 4 per poll", 3000, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			const lines = 3000
			var b strings.Builder
			for i := range lines {
				s := fmt.Sprintf("line %06d ", i)
				b.WriteString(s + strings.Repeat("x", c.lineLen-len(s)-1) + "\n")
			}
			h.write("a.log", b.String())
			h.open()
			var got []rec
			for range 4 * lines / c.perPoll {
				recs := h.poll(c.perPoll)
				if len(recs) == 0 && len(got) == lines {
					break
				}
				got = append(got, recs...)
			}
			if len(got) != lines {
				t.Fatalf("got %d lines, want %d", len(got), lines)
			}
			for i, r := range got {
				if want := fmt.Sprintf("line %06d ", i); !strings.HasPrefix(r.text(), want) || r.Line != int64(i+1) {
					t.Fatalf("event %d: line %d %.12q, want line %d %q", i, r.Line, r.text(), i+1, want)
				}
			}
			// The first read, before any line length is known, is a
			// whole chunk; then an eighth and a line more than wanted.
			size := int64(b.Len())
			if read := h.in.Stats().BytesRead; read > size*13/10+readChunk {
				t.Fatalf("read %d bytes for a file of %d (%.2fx)", read, size, float64(read)/float64(size))
			}
		})
	}
}
