package linesplit

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

type gotLine struct {
	text      string
	end       int64
	truncated bool
}

// splitAll feeds data in chunks of the given sizes (cycled).
func splitAll(s *Splitter, data []byte, sizes []int) []gotLine {
	var out []gotLine
	pos := int64(0)
	k := 0
	for pos < int64(len(data)) {
		n := 1
		if len(sizes) > 0 {
			n = sizes[k%len(sizes)]
			k++
		}
		if n < s.Width() {
			n = s.Width()
		}
		end := pos + int64(n)
		if end > int64(len(data)) {
			end = int64(len(data))
		}
		acc := s.Feed(data[pos:end], pos)
		if acc == 0 && end == int64(len(data)) {
			break
		}
		for {
			line, e, tr, ok := s.Next()
			if !ok {
				break
			}
			out = append(out, gotLine{string(line), e, tr})
		}
		pos += int64(acc)
	}
	return out
}

// reference splits data on '\n' the obvious way.
func reference(data []byte, max int) []gotLine {
	var out []gotLine
	off := 0
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return out
		}
		seg := data[off : off+i]
		off += i + 1
		l := gotLine{end: int64(off)}
		if len(seg) > max {
			l.text, l.truncated = string(seg[:max]), true
		} else {
			l.text = string(bytes.TrimSuffix(seg, []byte("\r")))
		}
		out = append(out, l)
	}
}

func TestSplitTable(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want []gotLine
	}{
		{"empty", "", 10, nil},
		{"partial only", "abc", 10, nil},
		{"one", "abc\n", 10, []gotLine{{"abc", 4, false}}},
		{"crlf", "a\r\nb\n", 10, []gotLine{{"a", 3, false}, {"b", 5, false}}},
		{"empty lines", "\n\n", 10, []gotLine{{"", 1, false}, {"", 2, false}}},
		{"truncated", "0123456789abc\nx\n", 4, []gotLine{{"0123", 14, true}, {"x", 16, false}}},
		{"held partial", "a\nbc", 10, []gotLine{{"a", 2, false}}},
		{"bare cr kept inside", "a\rb\n", 10, []gotLine{{"a\rb", 4, false}}},
	}
	for _, c := range cases {
		for _, sizes := range [][]int{{1}, {3}, {1 << 20}} {
			got := splitAll(New(c.max, 1, false), []byte(c.in), sizes)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s sizes %v: got %v want %v", c.name, sizes, got, c.want)
			}
		}
	}
}

func TestPartialHeldAcrossFeeds(t *testing.T) {
	s := New(100, 1, false)
	s.Feed([]byte("partial "), 0)
	if _, _, _, ok := s.Next(); ok {
		t.Fatal("partial line returned")
	}
	if s.Partial() != 8 {
		t.Fatalf("Partial = %d", s.Partial())
	}
	s.Feed([]byte("line\nnext"), 8)
	line, end, _, ok := s.Next()
	if !ok || string(line) != "partial line" || end != 13 {
		t.Fatalf("got %q %d %v", line, end, ok)
	}
	if _, _, _, ok := s.Next(); ok || s.Partial() != 4 {
		t.Fatalf("want held 'next', partial=%d", s.Partial())
	}
}

func TestStopResumesAfterLastLine(t *testing.T) {
	s := New(100, 1, false)
	s.Feed([]byte("a\nb\nc\n"), 10)
	if _, end, _, _ := s.Next(); end != 12 {
		t.Fatalf("end %d", end)
	}
	if got := s.Stop(); got != 12 {
		t.Fatalf("Stop = %d", got)
	}
}

func TestLongLineMemoryBounded(t *testing.T) {
	s := New(64, 1, false)
	chunk := bytes.Repeat([]byte("x"), 4096)
	pos := int64(0)
	for i := 0; i < 1000; i++ {
		s.Feed(chunk, pos)
		pos += 4096
		if _, _, _, ok := s.Next(); ok {
			t.Fatal("unexpected line")
		}
	}
	if cap(s.carry) > 1024 {
		t.Fatalf("carry grew to %d", cap(s.carry))
	}
	s.Feed([]byte("\n"), pos)
	line, end, tr, ok := s.Next()
	if !ok || !tr || len(line) != 64 || end != pos+1 {
		t.Fatalf("got len %d tr %v end %d", len(line), tr, end)
	}
}

func utf16(s string, be bool) []byte {
	var out []byte
	for _, r := range s {
		if be {
			out = append(out, byte(r>>8), byte(r))
		} else {
			out = append(out, byte(r), byte(r>>8))
		}
	}
	return out
}

func TestUTF16(t *testing.T) {
	for _, be := range []bool{false, true} {
		// U+0A00 and U+000A-looking bytes inside characters must not split.
		data := utf16("a\u0a0a\u0a00b\r\ncd\n", be)
		for _, sizes := range [][]int{{1}, {3}, {1 << 10}} {
			got := splitAll(New(100, 2, be), data, sizes)
			if len(got) != 2 || got[0].text != string(utf16("a\u0a0a\u0a00b", be)) || got[0].end != 12 ||
				got[1].text != string(utf16("cd", be)) || got[1].end != 18 {
				t.Fatalf("be=%v sizes=%v got %+v", be, sizes, got)
			}
		}
	}
}

func TestLastLineEnd(t *testing.T) {
	cases := []struct {
		in    string
		limit int64
		want  int64
	}{
		{"", 100, 0},
		{"abc", 100, 0},
		{"abc\n", 100, 4},
		{"abc\ndef", 100, 4},
		{"abc\ndefgh", 2, 9},
	}
	for _, c := range cases {
		got, err := LastLineEnd(bytes.NewReader([]byte(c.in)), int64(len(c.in)), c.limit, 1, false, nil)
		if err != nil || got != c.want {
			t.Errorf("LastLineEnd(%q,%d) = %d, %v; want %d", c.in, c.limit, got, err, c.want)
		}
	}
	big := append(bytes.Repeat([]byte("y"), 200000), '\n')
	big = append(big, bytes.Repeat([]byte("z"), 150000)...)
	if got, _ := LastLineEnd(bytes.NewReader(big), int64(len(big)), 1<<20, 1, false, nil); got != 200001 {
		t.Fatalf("big: %d", got)
	}
	u := utf16("ab\ncd", false)
	if got, _ := LastLineEnd(bytes.NewReader(u), int64(len(u)), 100, 2, false, nil); got != 6 {
		t.Fatalf("utf16: %d", got)
	}
}

// FuzzSplit compares the splitter against a plain bytes.IndexByte split
// for every chunking.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\nccc"), uint8(1), uint8(5))
	f.Add([]byte("0123456789\n01\n"), uint8(3), uint8(4))
	f.Add([]byte("\r\n\r\r\n"), uint8(2), uint8(64))
	f.Fuzz(func(t *testing.T, data []byte, chunk, max uint8) {
		m := int(max)%80 + 1
		c := int(chunk)%17 + 1
		r := rand.New(rand.NewPCG(uint64(len(data)), uint64(chunk)))
		sizes := []int{c, r.IntN(9) + 1, r.IntN(33) + 1}
		got := splitAll(New(m, 1, false), data, sizes)
		want := reference(data, m)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("max %d sizes %v\n got %+v\nwant %+v", m, sizes, got, want)
		}
	})
}

// A caller's buffer is used whatever its size, and nothing is allocated:
// a first start tails every file it finds.
func TestLastLineEndUsesBuffer(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef\n"), 1000)
	r := bytes.NewReader(data)
	for _, n := range []int{3, 17, 64 << 10} {
		buf := make([]byte, n)
		got, err := LastLineEnd(r, int64(len(data)-5), 1<<20, 1, false, buf)
		if want := int64(len(data) - 17); err != nil || got != want {
			t.Fatalf("buffer %d: got %d, %v; want %d", n, got, err, want)
		}
		if a := testing.AllocsPerRun(20, func() { _, _ = LastLineEnd(r, int64(len(data)), 1<<20, 1, false, buf) }); a != 0 {
			t.Fatalf("buffer %d: %v allocations per call", n, a)
		}
	}
}
