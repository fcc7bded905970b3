package wal

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestDamagedOpenForWrite: a read-write open (what `start` does) of a
// damaged file must not panic. It either works (damage below the B-tree)
// or fails with an error wrapping ErrDamaged that names the file and the
// salvage command.
func TestDamagedOpenForWrite(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := buildFixture(t)
			d.apply(t, path)
			before, _ := os.ReadFile(path)
			w, err := Open(Options{Path: path})
			if err == nil {
				defer w.Close()
			}
			switch {
			case d.opens:
				if err != nil {
					t.Fatalf("open: %v, want success", err)
				}
			case d.noMeta:
				if !errors.Is(err, ErrNotWAL) && !errors.Is(err, ErrDamaged) {
					t.Fatalf("open: %v, want ErrNotWAL or ErrDamaged", err)
				}
			default:
				if !errors.Is(err, ErrDamaged) {
					t.Fatalf("open: %v, want ErrDamaged", err)
				}
				for _, want := range []string{path, "edge-agent db salvage --db-path " + path + " --out "} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("message %q lacks %q", err, want)
					}
				}
				t.Logf("%v", err)
				if after, _ := os.ReadFile(path); string(after) != string(before) {
					t.Error("a refused open changed the file")
				}
			}
		})
	}
}
