package file

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/edge-agent/edge-agent/connector/input"
)

// savedOffset is the offset the harness (the WAL) holds for key.
func (h *harness) savedOffset(key string) int64 {
	h.t.Helper()
	var s savedState
	if err := json.Unmarshal(h.saved[key], &s); err != nil {
		h.t.Fatalf("saved position of %s: %v", key, err)
	}
	return s.Offset
}

func TestRereadMovesThePositionAndReadsAgain(t *testing.T) {
	const content = "a\nbb\nccc\n" // lines end at 2, 5, 9
	for _, tc := range []struct {
		name      string
		offset    int64
		start     int64
		aligned   bool
		lines     []string
		firstLine int64
		reread    int64
	}{
		{name: "from 0", offset: 0, start: 0, lines: []string{"a", "bb", "ccc"}, firstLine: 1, reread: 9},
		{name: "from a line start mid-file", offset: 2, start: 2, lines: []string{"bb", "ccc"}, firstLine: 2, reread: 7},
		{name: "from inside a line: the next line", offset: 3, start: 5, aligned: true, lines: []string{"ccc"}, firstLine: 3, reread: 4},
		{name: "from the last byte of a line: the next line", offset: 4, start: 5, aligned: true, lines: []string{"ccc"}, firstLine: 3, reread: 4},
		{name: "at the end", offset: 9, start: 9, reread: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.write("app.log", content)
			h.open()
			if got := texts(h.pollAll()); !slices.Equal(got, []string{"a", "bb", "ccc"}) {
				t.Fatalf("first read = %q", got)
			}
			res, err := h.in.Reread(context.Background(), h.path("app.log"), tc.offset)
			if err != nil {
				t.Fatalf("Reread: %v", err)
			}
			if res.Start != tc.start || res.Aligned != tc.aligned || res.Reread != tc.reread || res.Skipped != 0 ||
				res.Previous != 9 || res.Size != 9 || res.Requested != tc.offset || res.Path != h.path("app.log") {
				t.Fatalf("result = %+v; want start %d aligned %v reread %d of 9", res, tc.start, tc.aligned, tc.reread)
			}
			if want := int64(strings.Count(content[:tc.start], "\n")); res.Line != want {
				t.Fatalf("line = %d, want %d", res.Line, want)
			}
			evs, err := h.in.Poll(context.Background(), nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].Payload != nil || evs[0].Pos.Key != res.Identity {
				t.Fatalf("first event after Reread = %+v; want the position of %s alone", evs, res.Identity)
			}
			h.apply(evs)
			if got := h.savedOffset(res.Identity); got != tc.start {
				t.Fatalf("saved offset = %d, want %d", got, tc.start)
			}
			got := h.pollAll()
			if !slices.Equal(texts(got), tc.lines) {
				t.Fatalf("read again = %q, want %q", texts(got), tc.lines)
			}
			if len(got) > 0 && got[0].Line != tc.firstLine {
				t.Fatalf("first line read again is _line %d, want %d", got[0].Line, tc.firstLine)
			}
			if off := h.savedOffset(res.Identity); off != 9 {
				t.Fatalf("saved offset after the reread = %d, want 9", off)
			}
		})
	}
}

func TestRereadRefusals(t *testing.T) {
	h := newHarness(t, nil)
	h.write("app.log", "a\nbb\n")
	h.write("other.txt", "x\n")
	h.open()
	h.pollAll()
	h.write("app.log", "partial")
	h.pollAll()
	for _, tc := range []struct {
		name, path string
		offset     int64
		want       string
		notRead    bool
	}{
		{name: "beyond the size", path: "app.log", offset: 13, want: "beyond the file's size, 12 bytes"},
		{name: "negative", path: "app.log", offset: -1, want: "negative"},
		{name: "inside the unterminated last line", path: "app.log", offset: 6, want: "inside the file's last line"},
		{name: "a path the globs do not match", path: "other.txt", offset: 0, want: "not read by this input", notRead: true},
		{name: "matched but not there", path: "gone.log", offset: 0, want: "not there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.in.Reread(context.Background(), h.path(tc.path), tc.offset)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), h.path(tc.path)) {
				t.Fatalf("Reread = %v; want an error naming the path and saying %q", err, tc.want)
			}
			if errors.Is(err, input.ErrNotRead) != tc.notRead {
				t.Fatalf("errors.Is(%v, ErrNotRead) = %v, want %v", err, !tc.notRead, tc.notRead)
			}
		})
	}
	if _, err := h.in.Reread(context.Background(), "app.log", 0); err == nil || !strings.Contains(err.Error(), "(absolute)") || !errors.Is(err, input.ErrNotRead) {
		t.Fatalf("a relative path: %v; want a hint to give it absolute", err)
	}
	// Nothing moved: the partial line still waits, nothing is read again.
	if got := h.pollAll(); len(got) != 0 {
		t.Fatalf("after refusals the input read %q", texts(got))
	}
	h.write("app.log", "\n")
	if got := texts(h.pollAll()); !slices.Equal(got, []string{"partial"}) {
		t.Fatalf("after the newline = %q, want [partial]", got)
	}
}

func TestRereadForwardSkips(t *testing.T) {
	h := newHarness(t, nil)
	h.write("app.log", "a\nbb\nccc\n")
	h.open()
	if got := texts(h.poll(1)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first poll = %q", got)
	}
	res, err := h.in.Reread(context.Background(), h.path("app.log"), 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Previous != 2 || res.Skipped != 3 || res.Reread != 0 || res.Line != 2 {
		t.Fatalf("result = %+v; want 3 bytes skipped from 2, line 2", res)
	}
	got := h.pollAll()
	if !slices.Equal(texts(got), []string{"ccc"}) || got[0].Line != 3 {
		t.Fatalf("after skipping = %+v, want ccc as line 3", got)
	}
}

func TestRereadRotatedFile(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Paths = []string{c.Paths[0] + "*"} }) // *.log*
	h.write("app.log", "old1\nold2\n")
	h.open()
	h.pollAll()
	if err := os.Rename(h.path("app.log"), h.path("app.log.1")); err != nil {
		t.Fatal(err)
	}
	h.write("app.log", "new1\n")
	if got := texts(h.pollAll()); !slices.Equal(got, []string{"new1"}) {
		t.Fatalf("after rotation = %q", got)
	}
	// The old content under its new name, the new file under the old.
	res, err := h.in.Reread(context.Background(), h.path("app.log.1"), 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != h.path("app.log.1") || res.Reread != 5 {
		t.Fatalf("result = %+v", res)
	}
	if got := texts(h.pollAll()); !slices.Equal(got, []string{"old2"}) {
		t.Fatalf("rotated file read again = %q, want [old2]", got)
	}
	if _, err := h.in.Reread(context.Background(), h.path("app.log"), 0); err != nil {
		t.Fatal(err)
	}
	if got := texts(h.pollAll()); !slices.Equal(got, []string{"new1"}) {
		t.Fatalf("new file read again = %q, want [new1]", got)
	}
}

func TestRereadSurvivesARestart(t *testing.T) {
	h := newHarness(t, nil)
	h.write("app.log", "a\nbb\nccc\n")
	h.open()
	h.pollAll()
	if _, err := h.in.Reread(context.Background(), h.path("app.log"), 2); err != nil {
		t.Fatal(err)
	}
	// Stopped before any line was read again: Drain hands the position on.
	h.restart()
	if got := texts(h.pollAll()); !slices.Equal(got, []string{"bb", "ccc"}) {
		t.Fatalf("after a restart = %q, want [bb ccc]", got)
	}
	h.restart()
	if got := h.pollAll(); len(got) != 0 {
		t.Fatalf("a second restart read %q again", texts(got))
	}
}

func TestRereadFindsAFileTheLastScanMissed(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.GlobScanInterval = time.Hour })
	h.write("app.log", "a\n")
	h.open()
	h.pollAll()
	h.write("late.log", "x\ny\n")
	res, err := h.in.Reread(context.Background(), h.path("late.log"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Start != 2 || res.Skipped != 2 {
		t.Fatalf("result = %+v; want start 2, 2 bytes skipped", res)
	}
	if got := texts(h.pollAll()); !slices.Equal(got, []string{"y"}) {
		t.Fatalf("late file = %q, want [y]", got)
	}
}

func TestRereadDropsBufferedMultilineLines(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Multiline.Pattern = `^\s`
		c.Multiline.Match = "after"
		c.Multiline.FlushIdleTimeout = time.Hour
	})
	h.write("app.log", "e1\n x\ne2\n y\n")
	h.open()
	got := h.pollAll()
	if len(got) == 0 || got[len(got)-1].Offset >= 12 {
		t.Fatalf("first read = %+v, want the last group still buffered", got)
	}
	delivered := got[len(got)-1].Offset
	res, err := h.in.Reread(context.Background(), h.path("app.log"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Previous != delivered || res.Reread != delivered {
		t.Fatalf("result = %+v; want %d bytes delivered before", res, delivered)
	}
	got = append(h.pollAll(), h.apply(h.in.Drain(nil))...)
	if want := []string{"e1", " x", "e2", " y"}; !slices.Equal(texts(got), want) {
		t.Fatalf("read again = %q; want %q, each line once", texts(got), want)
	}
}

// UTF-16: newlines are 2-byte code units at even offsets, and the
// byte-order mark stays out of the first line read again.
func TestRereadUTF16(t *testing.T) {
	for _, tc := range []struct {
		enc       string
		bigEndian bool
		bom       bool
	}{
		{"UTF-16LE", false, false},
		{"UTF-16BE", true, false},
		{"UTF-16", false, true},
	} {
		t.Run(tc.enc, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Encoding = tc.enc })
			h.write("app.log", utf16Text("a\u0a0a\nbb\nc\n", tc.bigEndian, tc.bom))
			h.open()
			h.pollAll()
			bom := int64(0)
			if tc.bom {
				bom = 2
			}
			// Lines end at bom+6, bom+12, bom+16.
			first := struct {
				start int64
				lines []string
			}{bom + 6, []string{"bb", "c"}} // inside "a": the next line
			if tc.bom {
				first.start, first.lines = 0, []string{"a\u0a0a", "bb", "c"} // inside the BOM: from 0, the BOM skipped
			}
			for _, rc := range []struct {
				offset, start int64
				lines         []string
			}{
				{1, first.start, first.lines},
				{bom + 3, bom + 6, []string{"bb", "c"}}, // odd, inside U+0A0A (both its bytes 0x0A): the next line
				{bom + 6, bom + 6, []string{"bb", "c"}}, // a line start
				{bom + 7, bom + 12, []string{"c"}},      // odd, inside "b"
			} {
				res, err := h.in.Reread(context.Background(), h.path("app.log"), rc.offset)
				if err != nil {
					t.Fatal(err)
				}
				got := h.pollAll()
				if res.Start != rc.start || !slices.Equal(texts(got), rc.lines) {
					t.Fatalf("from %d: start %d, read %q; want %d, %q", rc.offset, res.Start, texts(got), rc.start, rc.lines)
				}
			}
		})
	}
}

// utf16Text encodes s as UTF-16 in the byte order asked, with a BOM or not.
func utf16Text(s string, bigEndian, bom bool) string {
	var b []byte
	if bom {
		b = append(b, 0xFF, 0xFE)
		if bigEndian {
			b = []byte{0xFE, 0xFF}
		}
	}
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return string(b)
}
