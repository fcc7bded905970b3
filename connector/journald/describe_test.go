//go:build linux

package journald

import (
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/connector/input"
)

// The journald input describes the figures every input reports (entries
// as LinesRead, its restarts) and the cursor of the last entry handed
// over: absent before any, in the summary as "-".
func TestDescribe(t *testing.T) {
	r := newRig(t)
	r.write("a.journal", entries("m", 0, 3, "a.service")...)
	in, err := New(r.config(), inputSettings(r))
	if err != nil {
		t.Fatal(err)
	}
	d := in.Describe()
	if err := component.Check(d); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(d.Summary, "cursor -") || d.Files != nil {
		t.Errorf("before Open: summary %q, files %v", d.Summary, d.Files)
	}
	_ = in.Close()

	r.open(r.config())
	r.collect(3, 20*time.Second)
	d = r.in.Describe()
	for key, want := range map[string]int64{input.KeyLinesRead: 3, input.KeyEvents: 3, input.KeyRestarts: 0} {
		if n, ok := d.Value(key); !ok || n != want {
			t.Errorf("%s = %d (reported %v), want %d", key, n, ok, want)
		}
	}
	if len(d.Texts) != 1 || d.Texts[0].Key != "cursor" || d.Texts[0].Value != r.in.Cursor() || d.Texts[0].Value == "" {
		t.Errorf("texts %+v, cursor %q", d.Texts, r.in.Cursor())
	}
	if !strings.HasPrefix(d.Summary, "3 entries, ") || !strings.HasSuffix(d.Summary, "cursor "+r.in.Cursor()) {
		t.Errorf("summary %q", d.Summary)
	}
}
