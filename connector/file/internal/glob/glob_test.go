package glob

import (
	"context"
	"errors"
	"io/fs"
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
		{"/var/log/[!ab].log", "/var/log/c.log", true},
		{"/var/log/app-{web,api}.log", "/var/log/app-api.log", true},
		{"/var/log/app-{web,api}.log", "/var/log/app-db.log", false},
		{"/var/{log,tmp}/**/*.log", "/var/tmp/x/a.log", true},
		{`/var/log/a\*.log`, "/var/log/a*.log", true},
		{`/var/log/a\*.log`, "/var/log/ab.log", false},
	}
	for _, c := range cases {
		p, err := Compile(c.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(c.name); got != c.want {
			t.Errorf("%s ~ %s = %v", c.pat, c.name, got)
		}
	}
}

func TestBraces(t *testing.T) {
	p, err := Compile("/l/{a,b{1,2}}.log")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"/l/a.log": true, "/l/b1.log": true, "/l/b2.log": true, "/l/b3.log": false, "/l/b.log": false} {
		if p.Match(name) != want {
			t.Errorf("%s ~ %s = %v", p, name, !want)
		}
	}
	for _, bad := range []string{"/l/{a", "/l/[", ""} {
		if _, err := Compile(bad); !errors.Is(err, ErrBadPattern) {
			t.Errorf("%q: err = %v, want ErrBadPattern", bad, err)
		}
	}
}

// The walk starts below the literal part and skips subtrees no segment
// can match, also through alternatives.
func TestWalkPrunes(t *testing.T) {
	d := t.TempDir()
	for _, f := range []string{"web/a.log", "api/b.log", "db/c.log", "web/deep/x.log"} {
		touch(t, filepath.Join(d, f))
	}
	listed := map[string]bool{}
	fsys := listingFS{listed: listed}
	p, err := Compile(filepath.Join(d, "{web,api}", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := p.Walk(context.Background(), fsys, func(s string) { got = append(got, s) }, func(s string, err error) { t.Errorf("%s: %v", s, err) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{filepath.Join(d, "api/b.log"), filepath.Join(d, "web/a.log")}; !slices.Equal(got, want) {
		t.Errorf("walk = %v, want %v", got, want)
	}
	if listed[filepath.Join(d, "db")] || listed[filepath.Join(d, "web/deep")] {
		t.Errorf("listed directories no match can be in: %v", listed)
	}
}

// listingFS is the OS, recording which directories were listed.
type listingFS struct{ listed map[string]bool }

func (l listingFS) Stat(name string) (fs.FileInfo, error) { return OS{}.Stat(name) }
func (l listingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	l.listed[name] = true
	return OS{}.ReadDir(name)
}

func TestExclude(t *testing.T) {
	p, _ := CompileExclude("*.gz")
	if !p.Match("/var/log/x/a.log.gz") || p.Match("/var/log/a.log") {
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
	p, err := Compile(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := p.Walk(context.Background(), OS{}, func(s string) { got = append(got, s) }, func(s string, err error) { t.Errorf("%s: %v", s, err) }); err != nil {
		t.Fatal(err)
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
	p, err := Compile(filepath.Join(d, "**", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var stopped []string
	err = p.Walk(context.Background(), OS{}, func(s string) { got = append(got, s) }, func(s string, err error) {
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
