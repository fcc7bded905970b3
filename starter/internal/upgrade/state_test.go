package upgrade

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDecide(t *testing.T) {
	installed := Slot{Version: "1.0.0", Path: "/opt/edge-agent/bin/edge-agent"}
	staged := Slot{Version: "1.1.0", Path: "/opt/edge-agent/versions/1.1.0/bin/edge-agent"}
	for _, tc := range []struct {
		name       string
		st         State
		self       Slot
		installed  Slot
		want       Action
		path       string
		dropsState bool
	}{
		{name: "never upgraded", self: installed, installed: installed, want: RunSelf},
		{name: "upgraded: the launcher execs it", st: State{Current: staged, Previous: &installed}, self: installed, installed: installed,
			want: ExecOther, path: staged.Path},
		{name: "the upgraded one runs itself", st: State{Current: staged}, self: staged, installed: installed, want: RunSelf},
		{name: "trial pending", st: State{Current: installed, Trial: &Trial{Slot: staged}}, self: installed, installed: installed,
			want: SuperviseTrial, path: staged.Path},
		{name: "package upgrade wins", st: State{Current: staged}, self: Slot{Version: "1.2.0", Path: installed.Path},
			installed: Slot{Version: "1.2.0", Path: installed.Path}, want: RunSelf, dropsState: true},
		{name: "older package keeps the self-upgrade", st: State{Current: staged}, self: Slot{Version: "1.0.5", Path: installed.Path},
			installed: Slot{Version: "1.0.5", Path: installed.Path}, want: ExecOther, path: staged.Path},
		{name: "rolled back to the installed binary", st: State{Current: installed, Last: &Outcome{Version: "1.1.0", Failed: true}},
			self: installed, installed: installed, want: RunSelf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.st, tc.self, tc.installed)
			if d.Action != tc.want || d.Path != tc.path || (d.Save != nil) != tc.dropsState {
				t.Errorf("got %+v, want action %d path %q drops state %t", d, tc.want, tc.path, tc.dropsState)
			}
		})
	}
}

func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1.1.0", "1.0.0", true}, {"1.0.0", "1.1.0", false}, {"v2.0.0", "1.9.9", true}, {"1.0.0", "1.0.0", false},
		{"1.0.0", "1.0.0-rc1", true}, {"1.0.0-rc2", "1.0.0-rc1", true}, {"1.0.0-rc1", "1.0.0", false},
		{"1.10.0", "1.9.0", true}, {"dev", "1.0.0", false}, {"1.0.0", "dev", false}, {"1.0", "0.9.0", false},
	} {
		if got := Newer(tc.a, tc.b); got != tc.want {
			t.Errorf("Newer(%q, %q) = %t", tc.a, tc.b, got)
		}
	}
	for _, v := range []string{"../1.0.0", "1.0.0/x", "", "dev", "1.0.0-../x"} {
		if ValidVersion(v) {
			t.Errorf("ValidVersion(%q) = true", v)
		}
	}
}

// A kill -9 while state.json is replaced leaves the old file or the new
// one, never a torn one: Save writes a temporary file and renames it.
func TestSaveLeavesNoTornState(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	if err := l.Save(State{Current: Slot{Version: "1.0.0", Path: "/a"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Save(State{Current: Slot{Version: "1.1.0", Path: "/b"}}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(l.Root())
	if len(entries) != 1 || entries[0].Name() != "state.json" {
		t.Errorf("versions/ holds %v", entries)
	}
	st, err := l.Load()
	if err != nil || st.Current.Version != "1.1.0" {
		t.Errorf("%+v %v", st, err)
	}
	if err := os.WriteFile(l.StateFile(), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(); err == nil {
		t.Error("a corrupt state file loaded")
	}
	if st, err := (Layout{Dir: filepath.Join(t.TempDir(), "none")}).Load(); err != nil || st.Current.Path != "" {
		t.Errorf("a missing state: %+v %v", st, err)
	}
}

func FuzzNewer(f *testing.F) {
	for _, s := range []string{"1.0.0", "v1.2.3-rc1", "1.0", "x.y.z", "1.0.0+build", "-1.0.0"} {
		f.Add(s, "1.0.0")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if Newer(a, b) && Newer(b, a) {
			t.Fatalf("%q and %q are each newer than the other", a, b)
		}
		if Newer(a, a) {
			t.Fatalf("%q is newer than itself", a)
		}
	})
}
