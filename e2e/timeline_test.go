//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envTestClock is the agent's test-only clock setting (package
// clockjump): a file of milliseconds added to its wall clock.
const envTestClock = "EDGE_AGENT_TEST_CLOCK_OFFSET_FILE"

// setClockOffset writes the offset file by rename: the agent reads it at
// every reading of its clock and must never see it half written.
func setClockOffset(t *testing.T, file string, ms int64) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprint(ms)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// startReadyEnv is startReady with extra environment variables.
func (r *agentRoot) startReadyEnv(env []string) *proc {
	r.t.Helper()
	for attempt := 1; ; attempt++ {
		before := r.readyLines()
		p := r.startEnv(env)
		if r.awaitReady(p, before) {
			return p
		}
		msg := p.stderrText()
		if !r.opts.api || attempt == apiStartAttempts || !strings.Contains(msg, "address already in use") {
			r.t.Fatalf("agent exited before it was ready: %s", msg)
		}
		r.useAPI()
		r.writeConfig()
	}
}

// event is one event object a receiver wrote, with the members the
// timeline tests read.
type event struct {
	Payload    string `json:"payload"`
	TS         int64  `json:"_ts"`
	Repaired   bool   `json:"_ts_repaired"`
	Gap        bool   `json:"_gap"`
	Seq        uint64 `json:"_seq"`
	Reason     string `json:"reason"`
	Count      int64  `json:"count"`
	FirstSeq   uint64 `json:"first_seq"`
	LastSeq    uint64 `json:"last_seq"`
	FirstTS    int64  `json:"first_ts"`
	LastTS     int64  `json:"last_ts"`
	raw        string
	lineNumber int
}

// receivedEvents are the event objects (rows: with "_file"; gap records:
// with "_gap") of a receiver's output file, in the order it wrote them.
func receivedEvents(t *testing.T, path string) []event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var v any
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &v) != nil {
			continue
		}
		findEvents(v, n, &out, 0)
	}
	return out
}

func findEvents(v any, line int, out *[]event, depth int) {
	if depth > 6 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		_, file := x["_file"]
		_, gap := x["_gap"]
		if file || gap {
			raw, _ := json.Marshal(x)
			var e event
			_ = json.Unmarshal(raw, &e)
			e.raw, e.lineNumber = string(raw), line
			*out = append(*out, e)
			return
		}
		for _, inner := range x {
			findEvents(inner, line, out, depth+1)
		}
	case []any:
		for _, inner := range x {
			findEvents(inner, line, out, depth+1)
		}
	case string:
		if len(x) > 1 && (x[0] == '{' || x[0] == '[') {
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				findEvents(inner, line, out, depth+1)
			}
		}
	}
}

// A gateway without a real-time clock: the agent starts with its wall
// clock near 1970 (the test-only clock offset), reads lines while the
// engine is down, and then the clock is set (a jump to the real time).
// The lines read before the jump reach the engine with their "_ts" moved
// by the jump, to when they were read, and "_ts_repaired": true; the
// lines read after it go out as stamped, unmarked. (The agent restarts
// before the engine comes back, the clock still set: the repair is made
// when rows are claimed, and the restart has every row claimed anew.)
func TestClockJumpFrom1970(t *testing.T) {
	t.Parallel()
	const before, after = 20, 10
	engine := holdPort(t)
	root := newRoot(t, options{port: engine.port, api: true})
	offsetFile := filepath.Join(t.TempDir(), "clock-offset")
	start := time.Now()
	// 1970-01-02: a clock that was never set.
	setClockOffset(t, offsetFile, -(start.UnixMilli() - 86_400_000))
	w := root.createFile("in/app.log")
	agent := root.startReadyEnv([]string{envTestClock + "=" + offsetFile})
	early := makeLines(t.Name()+" early", 0, before)
	w.lines(early)
	waitCommitted(t, root, "the lines read at 1970 in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == before })
	readEarly := time.Now()

	setClockOffset(t, offsetFile, 0) // NTP answers
	late := makeLines(t.Name()+" late", 0, after)
	w.lines(late)
	waitCommitted(t, root, "the lines read after the jump in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == before+after })
	// Times are repaired when rows are claimed: a job claimed before the
	// jump and still being retried goes out as stamped. A restart returns
	// every row to the queue, claimed again after the jump.
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	engine.release()
	rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
	agent = root.startReadyEnv([]string{envTestClock + "=" + offsetFile})
	var got []event
	eventually(t, deliverTimeout, fmt.Sprint(before+after, " lines at the engine"), func() bool {
		got = receivedEvents(t, rc.out)
		return len(got) >= before+after
	})
	end := time.Now()
	isEarly := map[string]bool{}
	for _, l := range early {
		isEarly[l] = true
	}
	year2000 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	var repaired, asStamped int
	for _, e := range got {
		ts := time.UnixMilli(e.TS)
		if isEarly[e.Payload] {
			// Repaired to when it was read: between the start and the
			// jump, by the real clock (a second either side for the
			// millisecond roundings).
			if !e.Repaired || e.TS < year2000 || ts.Before(start.Add(-time.Second)) || ts.After(readEarly.Add(time.Second)) {
				t.Errorf("line read before the jump arrived as %s: want _ts_repaired and a _ts in [%s, %s]",
					e.raw, start.Format(time.RFC3339Nano), readEarly.Format(time.RFC3339Nano))
			}
			repaired++
			continue
		}
		if e.Repaired || ts.Before(readEarly.Add(-time.Second)) || ts.After(end.Add(time.Second)) {
			t.Errorf("line read after the jump arrived as %s: want it as stamped, unmarked", e.raw)
		}
		asStamped++
	}
	if repaired != before || asStamped != after {
		t.Errorf("%d repaired, %d as stamped; want %d and %d", repaired, asStamped, before, after)
	}
	if len(got) > 0 {
		t.Logf("first line at the engine: %s", got[0].raw)
	}
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit %d", code)
	}
}
