package multiline

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func feed(a *Assembler, lines ...string) [][]string {
	var out [][]string
	for i, l := range lines {
		a.Add(Line{Text: []byte(l), Num: int64(i + 1), TS: int64(i + 1)})
		out = append(out, take(a)...)
	}
	return out
}

func take(a *Assembler) [][]string {
	var out [][]string
	for g := a.Ready(); g != nil; g = a.Ready() {
		var s []string
		for _, l := range g {
			s = append(s, string(l.Text))
		}
		out = append(out, s)
		a.Done()
	}
	return out
}

func TestModes(t *testing.T) {
	date := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)
	end := regexp.MustCompile(`^END$`)
	space := regexp.MustCompile(`^\s`)
	cases := []struct {
		name      string
		cfg       Config
		in        []string
		want      string // groups released by Add
		remaining string // released by Flush
	}{
		{"after flushes on boundary", Config{Pattern: date, Mode: After},
			[]string{"2024-01-01 a", "  at x", "  at y", "2024-01-02 b"},
			"[[2024-01-01 a   at x   at y]]", "[[2024-01-02 b]]"},
		{"after consecutive matches", Config{Pattern: date, Mode: After},
			[]string{"2024-01-01 a", "2024-01-01 b", "2024-01-01 c"},
			"[[2024-01-01 a] [2024-01-01 b]]", "[[2024-01-01 c]]"},
		{"after negate", Config{Pattern: space, Mode: After, Negate: true},
			[]string{"head", " cont", " cont2", "next"},
			"[[head  cont  cont2]]", "[[next]]"},
		{"before", Config{Pattern: end, Mode: Before},
			[]string{"line A", "line B", "END", "line C", "END"},
			"[[line A line B END] [line C END]]", "[]"},
		{"before negate", Config{Pattern: regexp.MustCompile(`\\$`), Mode: Before, Negate: true},
			[]string{`a \`, `b \`, "c", "d"},
			`[[a \ b \ c] [d]]`, "[]"},
		{"max lines splits", Config{Pattern: date, Mode: After, MaxLines: 2},
			[]string{"2024-01-01 a", "x", "y", "z"},
			"[[2024-01-01 a x]]", "[[y z]]"},
		{"max lines before with match", Config{Pattern: end, Mode: Before, MaxLines: 2},
			[]string{"a", "b", "END"},
			"[[a b] [END]]", "[]"},
	}
	for _, c := range cases {
		a := New(c.cfg)
		got := feed(a, c.in...)
		if fmt.Sprint(got) != c.want {
			t.Errorf("%s: got %v want %s", c.name, got, c.want)
		}
		a.Flush()
		if rest := fmt.Sprint(take(a)); rest != c.remaining && !(rest == "[]" && c.remaining == "[]") {
			t.Errorf("%s: flush got %v want %s", c.name, rest, c.remaining)
		}
	}
}

func TestJavaStackTrace(t *testing.T) {
	a := New(Config{Pattern: regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`), Mode: After})
	trace := []string{
		"2024-01-01 10:00:00 ERROR boom",
		"java.lang.IllegalStateException: x",
		"\tat a.b.C.d(C.java:1)",
		"\tat a.b.C.e(C.java:2)",
		"\tat a.b.C.f(C.java:3)",
		"Caused by: java.io.IOException: y",
		"\tat a.b.D.g(D.java:4)",
		"\tat a.b.D.h(D.java:5)",
		"\tat a.b.D.i(D.java:6)",
		"\t... 4 more",
	}
	got := feed(a, append(trace, "2024-01-01 10:00:01 INFO next")...)
	if len(got) != 1 || len(got[0]) != 10 {
		t.Fatalf("got %d groups, first %d lines", len(got), len(got[0]))
	}
	a2 := New(Config{Pattern: regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`), Mode: After})
	two := []string{"2024-01-01 E1", "ex1", "\tat x", "2024-01-01 E2", "ex2", "\tat a", "\tat b", "\tat c", "\t... 1 more", "2024-01-01 end"}
	got = feed(a2, two...)
	if len(got) != 2 || len(got[0]) != 3 || len(got[1]) != 6 {
		t.Fatalf("got %v", got)
	}
}

func TestFlushAndPending(t *testing.T) {
	a := New(Config{Pattern: regexp.MustCompile(`^x`), Mode: After})
	if a.Pending() || a.LastAt() != 0 {
		t.Fatal("empty assembler pending")
	}
	a.Add(Line{Text: []byte("x1"), TS: 10})
	a.Add(Line{Text: []byte("c"), TS: 20})
	if !a.Pending() || a.LastAt() != 20 {
		t.Fatalf("LastAt = %d, want the last line's time", a.LastAt())
	}
	a.Flush()
	if len(take(a)) != 1 {
		t.Fatal("flush released nothing")
	}
	a.Flush()
	if len(take(a)) != 0 || a.Pending() || a.LastAt() != 0 {
		t.Fatal("second flush not empty")
	}
}

// TestReadyKeptUntilTaken: groups released while the caller has no
// budget stay queued, and the text buffer stays bounded once taken.
func TestReadyKeptUntilTaken(t *testing.T) {
	a := New(Config{Pattern: regexp.MustCompile(`^x`), Mode: After})
	for i := 0; i < 10; i++ {
		a.Add(Line{Text: []byte(fmt.Sprintf("x%d", i))})
	}
	got := take(a)
	if len(got) != 9 || got[8][0] != "x8" {
		t.Fatalf("got %v", got)
	}
	for i := 0; i < 100000; i++ {
		a.Add(Line{Text: []byte(strings.Repeat("x", 100))})
		take(a)
	}
	if cap(a.text) > 4096 {
		t.Fatalf("text buffer grew to %d", cap(a.text))
	}
}

// FuzzAssembler checks that no line is lost, duplicated or reordered, and
// that groups respect max-lines, whatever the input.
func FuzzAssembler(f *testing.F) {
	f.Add("a\n b\n c\nd\n", false, false, uint8(3))
	f.Add("END\nx\nEND\n\n", true, true, uint8(1))
	f.Fuzz(func(t *testing.T, in string, before, negate bool, max uint8) {
		mode := After
		if before {
			mode = Before
		}
		ml := int(max)%8 + 1
		a := New(Config{Pattern: regexp.MustCompile(`^[a-z]`), Mode: mode, Negate: negate, MaxLines: ml})
		lines := strings.Split(in, "\n")
		var out []string
		check := func() {
			for g := a.Ready(); g != nil; g = a.Ready() {
				if len(g) == 0 || len(g) > ml {
					t.Fatalf("group of %d lines (max %d)", len(g), ml)
				}
				for _, l := range g {
					out = append(out, string(l.Text))
				}
				a.Done()
			}
		}
		for i, l := range lines {
			a.Add(Line{Text: []byte(l), Num: int64(i)})
			if i%3 == 0 {
				check()
			}
		}
		a.Flush()
		check()
		if strings.Join(out, "\n") != strings.Join(lines, "\n") || len(out) != len(lines) {
			t.Fatalf("lines changed: %q -> %q", lines, out)
		}
	})
}
