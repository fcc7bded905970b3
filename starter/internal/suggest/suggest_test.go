package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"start", "start", 0},
		{"chek", "check", 1},
		{"strat", "start", 2},
		{"kitten", "sitting", 3},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	commands := []string{"start", "stop", "status", "version", "config", "db", "help"}
	for _, tt := range []struct {
		s          string
		candidates []string
		want       string
	}{
		{"strat", commands, "start"},
		{"stats", commands, "status"},
		{"confg", commands, "config"},
		{"bogus", commands, ""},
		{"xyz", nil, ""},
		{"wal-sumary", []string{"wal-summary", "wal-list", "wal-show"}, "wal-summary"},
		{"poll-batch-sise", []string{"poll-batch-size", "max-bytes"}, "poll-batch-size"},
		// A tie goes to the first candidate.
		{"ab", []string{"ax", "xb"}, "ax"},
	} {
		if got := Closest(tt.s, tt.candidates); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}
