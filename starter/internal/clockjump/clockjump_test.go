package clockjump

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestEpochs(t *testing.T) {
	var e Epochs
	steps := []struct {
		first  uint64
		boot   string
		offset int64
		starts bool
	}{
		{1, "b1", 1_000, true},               // boot at 1970
		{50, "b1", 1_500, false},             // drift under the threshold
		{100, "b1", 1_700_000_000_000, true}, // NTP sets the clock
		{200, "b2", 1_700_000_100_000, true}, // a new boot, clock right
		{300, "b3", 5_000, true},             // a boot at 1970 again
	}
	for _, s := range steps {
		if got := e.Observe(s.first, s.boot, s.offset); got != s.starts {
			t.Fatalf("Observe(%d, %s, %d) = %v, want %v", s.first, s.boot, s.offset, got, s.starts)
		}
	}
	// b3 ends without its clock set: nothing relates its rows to the clock.
	now, boot := int64(1_700_000_300_000), "b4"
	for _, tc := range []struct {
		id   uint64
		want int64
		ok   bool
	}{
		{0, 0, false},                         // before any epoch
		{10, 1_700_000_000_000 - 1_000, true}, // b1 before its jump: to b1's last offset
		{150, 0, false},                       // b1 after its jump
		{250, 0, false},                       // b2, right all along
		{350, 0, false},                       // b3, never set
	} {
		got, ok := e.Correction(tc.id, boot, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Correction(%d) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	// In the current boot the live offset is the target.
	if d, ok := e.Correction(350, "b3", 1_700_000_400_000); !ok || d != 1_700_000_400_000-5_000 {
		t.Errorf("current boot: %d, %v", d, ok)
	}
	back, err := Parse(e.Marshal())
	if err != nil || len(back) != len(e) || back[2] != e[2] {
		t.Errorf("Parse(Marshal) = %v, %v", back, err)
	}
	if !e.Jumped(boot, now) || (Epochs{{1, "b", 7}}).Jumped("b", 7) {
		t.Error("Jumped")
	}
	for range 2 * maxEpochs {
		e.Observe(1000, "bx", int64(len(e))*1e6)
	}
	if len(e) != maxEpochs {
		t.Errorf("%d epochs kept, want %d", len(e), maxEpochs)
	}
}

func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`{"_line":1,"_ts":1000,"payload":"x"}`, `{"_line":1,"_ts":6000,"payload":"x","_ts_repaired":true}`, true},
		{`{"_ts":-1000}` + "\n", `{"_ts":4000,"_ts_repaired":true}`, true},
		{`{"payload":"no time"}`, ``, false},
		{`{"_ts":"text"}`, ``, false},
		{`{"_ts":12.5}`, ``, false},
		{`[1]`, ``, false},
	} {
		got, ok := Repair(nil, []byte(tc.in), 5000)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("Repair(%s) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzRepair(f *testing.F) {
	f.Add([]byte(`{"_ts":1,"payload":"x"}`), int64(5))
	f.Add([]byte(`{"a":{"_ts":1}}`), int64(-5))
	f.Fuzz(func(t *testing.T, in []byte, ms int64) {
		out, ok := Repair(nil, in, ms)
		if ok && json.Valid(in) && !json.Valid(out) {
			t.Fatalf("Repair(%s) = %s: not JSON", in, out)
		}
	})
}

// A shifted clock moves the wall clock and the monotonic clock by what
// its file says, at every reading, and leaves the boot alone.
func TestShifted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "offset")
	base := fixedClock{wall: time.UnixMilli(1_700_000_000_000), since: 5 * time.Second, boot: "b1"}
	c := Shifted(base, file)
	for _, tc := range []struct {
		content    string
		wall, boot int64
	}{
		{"", 1_700_000_000_000, 5_000}, // no file
		{"-1699999000000\n", 1_000_000, 5_000},
		{"0", 1_700_000_000_000, 5_000},
		{"not a number", 1_700_000_000_000, 5_000},
		{"1800000 1800000", 1_700_001_800_000, 1_805_000},
		{"1 2 3", 1_700_000_000_000, 5_000},
		{"2500", 1_700_000_002_500, 5_000},
	} {
		if tc.content != "" {
			if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.Wall().UnixMilli(); got != tc.wall {
			t.Errorf("file %q: Wall = %d, want %d", tc.content, got, tc.wall)
		}
		if got := c.SinceBoot().Milliseconds(); got != tc.boot {
			t.Errorf("file %q: SinceBoot = %d ms, want %d", tc.content, got, tc.boot)
		}
		if c.Boot() != "b1" {
			t.Errorf("Boot %q, want the base's", c.Boot())
		}
	}
}

type fixedClock struct {
	wall  time.Time
	since time.Duration
	boot  string
}

func (c fixedClock) Wall() time.Time          { return c.wall }
func (c fixedClock) SinceBoot() time.Duration { return c.since }
func (c fixedClock) Boot() string             { return c.boot }

func FuzzParseOffsets(f *testing.F) {
	f.Add("-1700000000000")
	f.Add("1800000 1800000\n")
	f.Add("1 2 3")
	f.Fuzz(func(t *testing.T, s string) {
		wall, boot := parseOffsets(s)
		if wall == 0 && boot == 0 {
			return
		}
		if w, b := parseOffsets(fmt.Sprintf("%d %d", wall, boot)); w != wall || b != boot {
			t.Fatalf("parseOffsets(%q) = %d %d, and again %d %d", s, wall, boot, w, b)
		}
	})
}
