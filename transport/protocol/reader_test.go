package protocol

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r *LineReader, raw bool) ([]string, error) {
	t.Helper()
	var lines []string
	for range 1000 { // bounded: inputs here have far fewer lines
		var line []byte
		var err error
		if raw {
			line, err = r.ReadRawLine()
		} else {
			line, err = r.ReadLine()
		}
		if err != nil {
			return lines, err
		}
		lines = append(lines, string(line))
	}
	t.Fatal("reader never ended")
	return nil, nil
}

func TestLineReaderTerminators(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"lf", "a\nb\n", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"cr", "a\rb\r", []string{"a", "b"}},
		{"mixed", "a\rb\nc\r\nd", []string{"a", "b", "c", "d"}},
		{"empty lines", "\n\r\n\r", []string{"", "", ""}},
		{"cr then cr lf", "a\r\r\nb", []string{"a", "", "b"}},
		{"partial last line", "abc", []string{"abc"}},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, wrap := range []func(io.Reader) io.Reader{
				func(r io.Reader) io.Reader { return r },
				iotest.OneByteReader, // terminators split across reads
			} {
				got, err := readAll(t, NewLineReader(wrap(strings.NewReader(tt.in)), 64), true)
				if !errors.Is(err, io.EOF) {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
					t.Fatalf("lines = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestReadLineTrims(t *testing.T) {
	r := NewLineReader(strings.NewReader("  ACK\r\n\tRECEIVED \n"), 0)
	got, err := readAll(t, r, false)
	if !errors.Is(err, io.EOF) || len(got) != 2 || got[0] != "ACK" || got[1] != "RECEIVED" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReadLineEOF(t *testing.T) {
	_, err := NewLineReader(strings.NewReader(""), 0).ReadLine()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v, want io.EOF", err)
	}
}

// endless yields 'a' forever: a reader that buffered a whole line before
// checking its length would never return.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestLineTooLongIsAnErrorNotAnAllocation(t *testing.T) {
	r := NewLineReader(endless{}, 1024)
	_, err := r.ReadLine()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	if !strings.Contains(err.Error(), "1024") {
		t.Errorf("error %q does not name the limit", err)
	}
	if cap(r.line) > 64<<10 {
		t.Errorf("reader grew to %d bytes for a 1 KiB limit", cap(r.line))
	}
}

func TestLineAtLimit(t *testing.T) {
	line := strings.Repeat("x", 100)
	got, err := NewLineReader(strings.NewReader(line+"\n"+line+"y\n"), 100).ReadLine()
	if err != nil || string(got) != line {
		t.Fatalf("line at the limit: %v", err)
	}
	r := NewLineReader(strings.NewReader(line+"y\n"), 100)
	if _, err := r.ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("line over the limit: err = %v", err)
	}
}

func TestTrimLikeJava(t *testing.T) {
	if got := Trim([]byte("\x00 \t ok \r\x1f")); !bytes.Equal(got, []byte("ok")) {
		t.Fatalf("Trim = %q", got)
	}
}

// splitReference is the obvious, unbounded splitter the reader must match.
func splitReference(in string) []string {
	var lines []string
	var cur strings.Builder
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case '\n':
			lines = append(lines, cur.String())
			cur.Reset()
		case '\r':
			lines = append(lines, cur.String())
			cur.Reset()
			if i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
		default:
			cur.WriteByte(in[i])
		}
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

func FuzzLineReader(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\nb\r", "\r\r\n\n", "ACK\r\n  RECEIVED  \n", strings.Repeat("z", 40) + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		const limit = 32
		want := splitReference(in)
		r := NewLineReader(iotest.HalfReader(strings.NewReader(in)), limit)
		for i := 0; ; i++ {
			line, err := r.ReadRawLine()
			if err != nil {
				if errors.Is(err, ErrLineTooLong) {
					if i >= len(want) || len(want[i]) <= limit {
						t.Fatalf("line %d: spurious ErrLineTooLong", i)
					}
					return
				}
				if !errors.Is(err, io.EOF) || i != len(want) {
					t.Fatalf("line %d: err %v, want %d lines %q", i, err, len(want), want)
				}
				return
			}
			if i >= len(want) || string(line) != want[i] {
				t.Fatalf("line %d = %q, want %q", i, line, want)
			}
		}
	})
}

func TestLineBuffered(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewLineReader(pr, 64)
	go func() {
		_, _ = pw.Write([]byte("A\rB\r"))
		_, _ = pw.Write([]byte("\npart"))
		_ = pw.Close()
	}()
	if r.LineBuffered() {
		t.Fatal("nothing read yet")
	}
	if l, _ := r.ReadLine(); string(l) != "A" || !r.LineBuffered() {
		t.Fatalf("after A: %q, LineBuffered %v", l, r.LineBuffered())
	}
	if l, _ := r.ReadLine(); string(l) != "B" || r.LineBuffered() {
		t.Fatalf("after B: %q, LineBuffered %v", l, r.LineBuffered())
	}
	if l, _ := r.ReadLine(); string(l) != "part" {
		t.Fatalf("last: %q", l)
	}
}
