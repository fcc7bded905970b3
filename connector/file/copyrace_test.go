package file

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// ctStep is one step of a copytruncate as the file system shows it.
type ctStep byte

const (
	ctCreate   ctStep = 'c' // the copy is created, empty
	ctHalf     ctStep = 'h' // the copy holds its first bytes (cut mid-line)
	ctRest     ctStep = 'r' // the copy holds all of it
	ctTruncate ctStep = 't' // the original is truncated
	ctRefill   ctStep = 'w' // the application writes to the emptied original
)

// ctOrderings are the orders of the steps in which the copy is listed
// half-written before and after the truncate: the copy is made of what
// the original held when its copy was created, so the truncate can come
// at any point after that (logrotate's order is "chrtw").
var ctOrderings = []string{"chrtw", "chtrw", "chtwr", "cthrw", "cthwr", "ctwhr"}

// agentStep is what the input does between two file system steps.
type agentStep byte

const (
	agentNothing agentStep = '-'
	agentScan    agentStep = 's' // lists the files, reads nothing
	agentPollAll agentStep = 'p' // polls until idle
)

var agentSteps = []agentStep{agentNothing, agentScan, agentPollAll}

// TestCopyListedHalfWritten: with the copies in the glob, a copy that the
// input lists while it is still being written (empty, or holding a first
// part shorter than fingerprint-bytes, or at least that long, cut
// mid-line) is still told for a copy, whether the original is truncated
// before the copy is complete or after, and whatever the input does
// between the steps: every line is delivered exactly once.
func TestCopyListedHalfWritten(t *testing.T) {
	const fpBytes = 64
	before := ctPadded("A", 1, 20)  // delivered before the rotation
	pending := ctPadded("A", 21, 5) // written just before it: in the copy only, once truncated
	after := ctPadded("B", 1, 3)    // written to the emptied original
	content := strings.Join(append(append([]string{}, before...), pending...), "\n") + "\n"
	for _, half := range []int{fpBytes / 2, fpBytes, len(content) - 5} {
		for _, order := range ctOrderings {
			for combo := range pow(len(agentSteps), len(order)-1) {
				agent := agentCombo(combo, len(order)-1)
				name := fmt.Sprintf("half=%d/%s/%s", half, order, agent)
				t.Run(name, func(t *testing.T) {
					h := newHarness(t, func(c *Config) {
						c.Paths = []string{c.Paths[0] + "*"} // *.log*, the copies too
						c.FingerprintBytes = fpBytes
					})
					h.writeLines("a.log", before)
					h.open()
					got := texts(h.pollAll())
					h.writeLines("a.log", pending)
					var copyFile *os.File
					for i, s := range order {
						switch ctStep(s) {
						case ctCreate:
							f, err := os.Create(h.path("a.log.1"))
							must(t, err)
							t.Cleanup(func() { _ = f.Close() })
							copyFile = f
						case ctHalf:
							_, err := copyFile.WriteString(content[:half])
							must(t, err)
						case ctRest:
							_, err := copyFile.WriteString(content[half:])
							must(t, err)
						case ctTruncate:
							h.truncate("a.log")
						case ctRefill:
							h.writeLines("a.log", after)
						}
						if i < len(agent) {
							got = append(got, h.agentStep(agentStep(agent[i]))...)
						}
					}
					got = append(got, texts(h.pollAll())...)
					checkOnce(t, got, before, pending, after)
				})
			}
		}
	}
}

// ctPadded returns n numbered lines of tag, long enough that a few fill
// the fingerprint.
func ctPadded(tag string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s line %03d of the generation, padded to a realistic length", tag, from+i)
	}
	return out
}

// agentStep runs one step of the input and returns the lines it delivered.
func (h *harness) agentStep(s agentStep) []string {
	h.t.Helper()
	switch s {
	case agentScan:
		h.scanOnly()
	case agentPollAll:
		return texts(h.pollAll())
	}
	return nil
}

// scanOnly lists the files as the next poll would, without reading any.
func (h *harness) scanOnly() {
	h.t.Helper()
	if err := h.in.set.scan(context.Background(), h.clock); err != nil {
		h.t.Fatal(err)
	}
}

// checkOnce fails unless got holds each line of want exactly once, and
// nothing else.
func checkOnce(t *testing.T, got []string, want ...[]string) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	for _, ls := range want {
		for _, l := range ls {
			if seen[l] != 1 {
				t.Errorf("%q delivered %d times, want once", l, seen[l])
			}
			delete(seen, l)
		}
	}
	for l, n := range seen {
		t.Errorf("unexpected line %q delivered %d times", l, n)
	}
	if t.Failed() {
		t.Logf("delivered: %q", got)
	}
}

func pow(b, e int) int {
	n := 1
	for range e {
		n *= b
	}
	return n
}

// agentCombo spells the combo-th of the len(agentSteps)^n sequences of n
// agent steps.
func agentCombo(combo, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(agentSteps[combo%len(agentSteps)])
		combo /= len(agentSteps)
	}
	return string(b)
}
