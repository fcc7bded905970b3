package identity

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResolveGeneratesStableIDs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "edge-agent.id")
	first, err := Resolve(p, IDs{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first.Agent, first.Input, first.Output} {
		if !uuidV4.MatchString(id) {
			t.Errorf("%q is not a UUIDv4", id)
		}
	}
	if first.Agent == first.Input || first.Input == first.Output {
		t.Errorf("ids repeat: %+v", first)
	}
	// The exact Java format: three lines, no header.
	want := "agent.id=" + first.Agent + "\ninput.id=" + first.Input + "\noutput.id=" + first.Output + "\n"
	if got := readFile(t, p); got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	st1, _ := os.Stat(p)

	second, err := Resolve(p, IDs{})
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Errorf("second resolve %+v != first %+v", second, first)
	}
	// Unchanged content is not rewritten.
	if st2, _ := os.Stat(p); !os.SameFile(st1, st2) {
		t.Errorf("file rewritten without a change")
	}
	// No temp files left behind.
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries", len(entries))
	}
}

func TestResolveExplicitIDsWinAndAreWritten(t *testing.T) {
	p := filepath.Join(t.TempDir(), "edge-agent.id")
	if _, err := Resolve(p, IDs{}); err != nil {
		t.Fatal(err)
	}
	ids, err := Resolve(p, IDs{Agent: "agent-explicit", Input: " input-explicit ", Output: "output-explicit"})
	if err != nil {
		t.Fatal(err)
	}
	if ids != (IDs{"agent-explicit", "input-explicit", "output-explicit"}) {
		t.Errorf("ids = %+v", ids)
	}
	want := "agent.id=agent-explicit\ninput.id=input-explicit\noutput.id=output-explicit\n"
	if got := readFile(t, p); got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
}

func TestResolveFillsOnlyMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "edge-agent.id")
	first, err := Resolve(p, IDs{})
	if err != nil {
		t.Fatal(err)
	}
	// An input id from the WAL wins; the others stay.
	ids, err := Resolve(p, IDs{Input: "from-wal"})
	if err != nil {
		t.Fatal(err)
	}
	if ids.Agent != first.Agent || ids.Output != first.Output || ids.Input != "from-wal" {
		t.Errorf("ids = %+v, first = %+v", ids, first)
	}
	// A file missing a key (hand-edited) gets it generated.
	if err := os.WriteFile(p, []byte("agent.id=a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err = Resolve(p, IDs{})
	if err != nil {
		t.Fatal(err)
	}
	if ids.Agent != "a" || !uuidV4.MatchString(ids.Input) || !uuidV4.MatchString(ids.Output) {
		t.Errorf("ids = %+v", ids)
	}
	if got := readFile(t, p); got != string(Format(ids)) || !strings.HasPrefix(got, "agent.id=a\ninput.id=") {
		t.Errorf("file = %q", got)
	}
}

func TestReadToleratesJavaProperties(t *testing.T) {
	p := filepath.Join(t.TempDir(), "edge-agent.id")
	if err := os.WriteFile(p, []byte("# written by hand\r\n\r\n agent.id = a \r\ninput.id=i\r\noutput.id=o"), 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err := Resolve(p, IDs{})
	if err != nil || ids != (IDs{"a", "i", "o"}) {
		t.Errorf("Resolve = %+v, %v", ids, err)
	}
}

func TestCorruptFile(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"agent.id=a\ngarbage\n", ":2: expected key=value"},
		{"agent.id=a\ninput.id=b\nagent.id=c\n", ":3: agent.id already set on line 1"},
		{"color=blue\n", `:1: unknown key "color"`},
		{"agent.id=\n", ":1: agent.id is empty"},
	} {
		p := filepath.Join(t.TempDir(), "edge-agent.id")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Resolve(p, IDs{})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p+tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.content, err, p+tc.want)
		}
		// The corrupt file is left for the operator to inspect.
		if got := readFile(t, p); got != tc.content {
			t.Errorf("corrupt file was changed to %q", got)
		}
	}
}

func TestResolveUnwritable(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The parent "directory" is a file: creating it must fail cleanly.
	if _, err := Resolve(filepath.Join(blocker, "edge-agent.id"), IDs{}); err == nil {
		t.Error("Resolve under a file succeeded")
	}
}

func TestNewUUID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		u, err := NewUUID()
		if err != nil {
			t.Fatal(err)
		}
		if !uuidV4.MatchString(u) || seen[u] {
			t.Fatalf("bad or repeated uuid %q", u)
		}
		seen[u] = true
	}
}

// TestWriteAtomicThroughSymlink: a write through a link replaces the file
// it points to and leaves the link in place, whether the target exists yet
// or not and whether the link is relative, absolute or a chain. Replacing
// the link itself would also put the temp file in the link's folder, which
// the agent may not own.
func TestWriteAtomicThroughSymlink(t *testing.T) {
	for _, tc := range []struct {
		name        string
		targetExist bool
		link        func(t *testing.T, links, target string) string
	}{
		{"absolute, target missing", false, func(t *testing.T, links, target string) string {
			return symlink(t, target, filepath.Join(links, "edge-agent.id"))
		}},
		{"absolute, target present", true, func(t *testing.T, links, target string) string {
			return symlink(t, target, filepath.Join(links, "edge-agent.id"))
		}},
		{"relative", false, func(t *testing.T, links, target string) string {
			rel, err := filepath.Rel(links, target)
			if err != nil {
				t.Fatal(err)
			}
			return symlink(t, rel, filepath.Join(links, "edge-agent.id"))
		}},
		{"chain", true, func(t *testing.T, links, target string) string {
			mid := symlink(t, target, filepath.Join(links, "mid.id"))
			return symlink(t, mid, filepath.Join(links, "edge-agent.id"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			links, state := t.TempDir(), t.TempDir()
			target := filepath.Join(state, "edge-agent.id")
			if tc.targetExist {
				if err := os.WriteFile(target, []byte("old\n"), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			link := tc.link(t, links, target)
			if err := WriteAtomic(link, []byte("new\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link was replaced: %v, %v", fi, err)
			}
			if got, err := os.ReadFile(target); err != nil || string(got) != "new\n" {
				t.Errorf("target holds %q (%v), want the new content", got, err)
			}
			left, err := os.ReadDir(links)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				if e.Type()&os.ModeSymlink == 0 {
					t.Errorf("the link's folder gained %s", e.Name())
				}
			}
		})
	}
}

func TestWriteAtomicSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	symlink(t, b, a)
	symlink(t, a, b)
	if err := WriteAtomic(a, []byte("x"), 0o640); err == nil {
		t.Error("a write through a symlink loop succeeded")
	}
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// Read returns what the file holds and never writes it: a missing key
// stays empty, a missing file is an error wrapping fs.ErrNotExist.
func TestReadWritesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "edge-agent.id")
	const content = "agent.id=a\n"
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ids, err := Read(p)
	if err != nil || ids != (IDs{Agent: "a"}) {
		t.Errorf("Read = %+v, %v; want only the agent id", ids, err)
	}
	if got := readFile(t, p); got != content {
		t.Errorf("the file became %q", got)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing file: %v", err)
	}
}
