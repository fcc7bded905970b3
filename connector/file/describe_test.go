package file

import (
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

// The file input describes the figures every input reports, its file
// ones, and its files: an empty list before any (it reads files), then
// the file it read.
func TestDescribe(t *testing.T) {
	h := newHarness(t, nil)
	h.open()
	d := h.in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if d.Files == nil || len(d.Files) != 0 {
		t.Errorf("before any file: Files = %#v, want an empty list", d.Files)
	}
	h.write("a.log", "one\ntwo\nthree\n")
	if got := len(h.pollAll()); got != 3 {
		t.Fatalf("read %d lines, want 3", got)
	}
	d = h.in.Describe()
	for key, want := range map[string]int64{input.KeyLinesRead: 3, input.KeyEvents: 3, input.KeyBytesRead: 14, "files_tracked": 1, input.KeyFiltered: 0} {
		if n, ok := d.Value(key); !ok || n != want {
			t.Errorf("%s = %d (reported %v), want %d", key, n, ok, want)
		}
	}
	if !strings.HasPrefix(d.Summary, "1 files tracked, ") || !strings.Contains(d.Summary, "3 events") {
		t.Errorf("summary %q", d.Summary)
	}
	metrics := map[string]bool{}
	for _, v := range d.Values {
		metrics[v.Metric] = v.Total
	}
	for m, total := range map[string]bool{"bytes_read_total": true, "files_open": true, "lines_truncated_total": true,
		"unread_bytes_lost_total": true, "input_events_filtered_total": false, "input_restarts_total": false, "input_dropped_total": false} {
		if got, ok := metrics[m]; !ok || got != total {
			t.Errorf("metric %s: described %v, total %v; want total %v", m, ok, got, total)
		}
	}
}
