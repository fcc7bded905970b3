package wal

import (
	"errors"
	"fmt"
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

// TestDamagedVerify: `db verify` (a read-only WAL, Verify) reports each
// damaged fixture without panicking, and leaves the file as it was.
func TestDamagedVerify(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			path := buildFixture(t)
			d.apply(t, path)
			before, _ := os.ReadFile(path)
			w, err := Open(Options{Path: path, ReadOnly: true})
			if d.noMeta {
				if !errors.Is(err, ErrNotWAL) {
					t.Fatalf("open: %v, want ErrNotWAL", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("open read-only: %v", err)
			}
			defer w.Close()
			problems, _, err := w.Verify(0)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			for _, p := range problems {
				t.Log(p)
			}
			switch {
			case d.name == "first meta page zeroed":
				// bbolt reads the other meta page: a consistent older state.
				if len(problems) != 0 {
					t.Fatalf("problems on the state of the other meta page")
				}
			case len(problems) == 0:
				t.Fatal("verify found nothing")
			}
			if d.name == "row key byte flipped in order" && !strings.Contains(fmt.Sprint(problems), fmt.Sprintf("row %d:", 0x47d0)) {
				t.Errorf("the row whose key was damaged is not reported")
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Error("verify changed the file")
			}
		})
	}
}
