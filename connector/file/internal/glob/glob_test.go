package glob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"/var/log/*.log", "/var/log/a.log", true},
		{"/var/log/*.log", "/var/log/sub/a.log", false},
		{"/var/log/**/*.log", "/var/log/a.log", true},
		{"/var/log/**/*.log", "/var/log/x/y/a.log", true},
		{"/var/log/**", "/var/log/x/y/a.txt", true},
		{"/var/**/app/*.log", "/var/a/b/app/x.log", true},
		{"/var/**/app/*.log", "/var/app/x.log", true},
		{"/var/log/a?.log", "/var/log/ab.log", true},
		{"/var/log/[ab].log", "/var/log/c.log", false},
	}
	for _, c := range cases {
		ps, err := CompileAll(c.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := ps[0].Match(c.name); got != c.want {
			t.Errorf("%s ~ %s = %v", c.pat, c.name, got)
		}
	}
}

func TestBraces(t *testing.T) {
	ps, err := CompileAll("/l/{a,b{1,2}}.log")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	if !slices.Equal(got, []string{"/l/a.log", "/l/b1.log", "/l/b2.log"}) {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"/l/{a", "/l/a}", "/l/[", ""} {
		if _, err := CompileAll(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestExclude(t *testing.T) {
	ps, _ := CompileExclude("*.gz")
	if !ps[0].Match("/var/log/x/a.log.gz") || ps[0].Match("/var/log/a.log") {
		t.Fatal("base-name exclude wrong")
	}
}

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func walkAll(t *testing.T, pattern string) []string {
	t.Helper()
	ps, err := CompileAll(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		if err := p.Walk(context.Background(), OS{}, func(s string) { got = append(got, s) }, func(s string, err error) { t.Errorf("%s: %v", s, err) }); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	return got
}

func TestWalk(t *testing.T) {
	d := t.TempDir()
	for _, f := range []string{"a.log", "b.txt", "sub/c.log", "sub/deep/d.log", "other/e.log"} {
		touch(t, filepath.Join(d, f))
	}
	if err := os.Symlink(filepath.Join(d, "a.log"), filepath.Join(d, "link.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d, filepath.Join(d, "sub", "loop")); err != nil {
		t.Fatal(err)
	}
	j := func(s ...string) []string {
		for i := range s {
			s[i] = filepath.Join(d, s[i])
		}
		return s
	}
	if got := walkAll(t, filepath.Join(d, "*.log")); !slices.Equal(got, j("a.log", "link.log")) {
		t.Errorf("*.log: %v", got)
	}
	if got := walkAll(t, filepath.Join(d, "**", "*.log")); !slices.Equal(got, j("a.log", "link.log", "other/e.log", "sub/c.log", "sub/deep/d.log")) {
		t.Errorf("**/*.log: %v", got)
	}
	if got := walkAll(t, filepath.Join(d, "sub")); !slices.Equal(got, j("sub/c.log", "sub/deep/d.log", "sub/loop")) {
		t.Errorf("dir: %v", got)
	}
	if got := walkAll(t, filepath.Join(d, "b.txt")); !slices.Equal(got, j("b.txt")) {
		t.Errorf("literal: %v", got)
	}
	if got := walkAll(t, filepath.Join(d, "missing", "*.log")); len(got) != 0 {
		t.Errorf("missing: %v", got)
	}
}

// The depth limit is reported where it stops the walk, not silently.
func TestWalkTooDeep(t *testing.T) {
	d := t.TempDir()
	deep := d
	for range MaxDepth + 2 {
		deep = filepath.Join(deep, "d")
	}
	touch(t, filepath.Join(deep, "x.log"))
	touch(t, filepath.Join(d, "d", "y.log"))
	ps, err := CompileAll(filepath.Join(d, "**", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var stopped []string
	err = ps[0].Walk(context.Background(), OS{}, func(s string) { got = append(got, s) }, func(s string, err error) {
		if !errors.Is(err, ErrTooDeep) {
			t.Errorf("%s: %v", s, err)
		}
		stopped = append(stopped, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{filepath.Join(d, "d", "y.log")}) {
		t.Errorf("visited %v", got)
	}
	if len(stopped) != 1 || strings.Count(stopped[0][len(d):], string(filepath.Separator)) != MaxDepth {
		t.Errorf("reported %v, want the directory at depth %d", stopped, MaxDepth)
	}
}
