package logging

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestRingKeepsTheLastRecords(t *testing.T) {
	tests := []struct {
		keep, write int
		first, last int // record numbers expected at both ends
	}{
		{keep: 3, write: 2, first: 0, last: 1},
		{keep: 3, write: 3, first: 0, last: 2},
		{keep: 3, write: 10, first: 7, last: 9},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("keep%d-write%d", tt.keep, tt.write), func(t *testing.T) {
			ring := NewRing(tt.keep)
			logger, _, err := New(Options{Settings: Settings{Level: Level(slog.LevelInfo)}, Ring: ring})
			if err != nil {
				t.Fatal(err)
			}
			logger.Debug("below the level")
			for i := range tt.write {
				logger.Info("record", "n", i)
			}
			lines := ring.Lines()
			if want := min(tt.keep, tt.write); len(lines) != want {
				t.Fatalf("kept %d lines, want %d: %q", len(lines), want, lines)
			}
			if !strings.Contains(lines[0], fmt.Sprintf(`"n":%d}`, tt.first)) || !strings.Contains(lines[len(lines)-1], fmt.Sprintf(`"n":%d}`, tt.last)) {
				t.Errorf("lines %q, want records %d..%d", lines, tt.first, tt.last)
			}
			for _, l := range lines {
				if strings.Contains(l, "below the level") || strings.HasSuffix(l, "\n") {
					t.Errorf("line %q", l)
				}
			}
		})
	}
}

func TestRingCutsLongRecords(t *testing.T) {
	ring := NewRing(2)
	if _, err := ring.Write([]byte(strings.Repeat("x", 3*maxRingLine) + "\n")); err != nil {
		t.Fatal(err)
	}
	if l := ring.Lines()[0]; len(l) > maxRingLine+16 || !strings.HasSuffix(l, "(cut)") {
		t.Errorf("kept %d bytes ending %q", len(l), l[len(l)-8:])
	}
}
