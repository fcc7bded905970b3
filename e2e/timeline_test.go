//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// A half-hour outage, simulated: the engine is down while the agent reads
// (lanes: alarms first; drop-oldest from the lowest lane under a small
// queue.max-bytes; queue.max-age-ms 20 minutes; agent.account), its clock
// moves half an hour on (wall and monotonic together: time passing, not
// a jump), more lines are read, and the engine comes back. The first rows
// the engine gets are the alarms read last, in order; every line arrives
// or is inside a gap record ("dropped: queue full", "dropped: max-age"),
// and `edge-agent audit` on what the engine got exits 0. The recovery's
// timeline (the first arrivals, the gap records, the audit) is logged.
func TestOutageTimeline(t *testing.T) {
	t.Parallel()
	const perPhase, every, maxBytes = 300, 20, 30_000
	engine := holdPort(t)
	root := newRoot(t, options{port: engine.port, api: true, account: true,
		queueExtra: "  max-bytes: " + fmt.Sprint(maxBytes) + "\n  when-full: drop-oldest\n  drop-from: lowest-lane\n" +
			"  max-age-ms: 1200000\n  lanes:\n    - name: alarm\n      when: 'payload contains \"ALARM\"'\n"})
	offsetFile := filepath.Join(t.TempDir(), "clock-offset")
	env := []string{envTestClock + "=" + offsetFile}
	phase := func(name string) (lines, alarms []string) {
		for i := range perPhase {
			l := fmt.Sprintf("%s %s info %03d", t.Name(), name, i)
			if i%every == every/2 {
				l = fmt.Sprintf("%s %s ALARM %03d", t.Name(), name, i)
				alarms = append(alarms, l)
			}
			lines = append(lines, l)
		}
		return lines, alarms
	}
	w := root.createFile("in/app.log")
	agent := root.startReadyEnv(env)
	old, _ := phase("old")
	w.lines(old)
	waitCommitted(t, root, "the lines read at the start of the outage in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == perPhase })

	setClockOffset(t, offsetFile, 0) // the file's first reading: no jump
	if err := os.WriteFile(offsetFile+".tmp", []byte("1800000 1800000"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(offsetFile+".tmp", offsetFile); err != nil { // half an hour later
		t.Fatal(err)
	}
	recent, recentAlarms := phase("recent")
	w.lines(recent)
	doc := waitCommitted(t, root, "the recent lines in the WAL, the old ones dropped for age", func(d outageDoc) bool {
		return d.Counters.EventsRead == 2*perPhase && d.WAL.Dropped.AgeRows > 0
	})
	t.Logf("outage over: %d rows dropped for queue.max-bytes, %d for queue.max-age-ms, %d rows waiting",
		doc.WAL.Dropped.FullRows, doc.WAL.Dropped.AgeRows, doc.WAL.Pending+doc.WAL.Sending)
	// A job claimed during the outage would go out first when the engine
	// is back: the restart returns its rows to the queue.
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	engine.release()
	rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
	agent = root.startReadyEnv(env)

	var rep auditDoc
	var auditOut string
	eventually(t, deliverTimeout, "the audit of what the engine got complete", func() bool {
		out, _, code := root.cli("audit", "--json", rc.out)
		rep = auditDoc{}
		if json.Unmarshal([]byte(out), &rep) != nil || code != 0 || len(rep.Streams) != 1 {
			return false
		}
		s := rep.Streams[0]
		return s.Max == 2*perPhase && s.Rows+s.GapRows-s.Duplicates == 2*perPhase
	})
	auditOut, _, _ = root.cli("audit", rc.out)
	got := receivedEvents(t, rc.out)
	var rows []string
	var timeline strings.Builder
	for i, e := range got {
		if !e.Gap {
			rows = append(rows, e.Payload)
		}
		if i < len(recentAlarms)+3 || e.Gap {
			if e.Gap {
				fmt.Fprintf(&timeline, "  #%d gap record: %s, count %d, _seq %d..%d\n", i+1, e.Reason, e.Count, e.FirstSeq, e.LastSeq)
			} else {
				fmt.Fprintf(&timeline, "  #%d row _seq %d: %s\n", i+1, e.Seq, strings.TrimPrefix(e.Payload, t.Name()+" "))
			}
		}
	}
	t.Logf("recovery timeline, %d events at the engine in the order it got them (rows past the first %d left out):\n%s",
		len(got), len(recentAlarms)+3, timeline.String())
	t.Logf("edge-agent audit:\n%s", auditOut)
	if len(rows) < len(recentAlarms) || !slices.Equal(rows[:len(recentAlarms)], recentAlarms) {
		t.Errorf("the first rows at the engine: %q\nwant the alarms read last, in order: %q", rows[:min(len(rows), len(recentAlarms))], recentAlarms)
	}
	s := rep.Streams[0]
	if !rep.OK || s.GapRows == 0 || len(s.Missing) != 0 || rep.Unstamped != 0 {
		t.Errorf("audit %+v: want complete, with gap records, nothing missing", rep)
	}
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit %d", code)
	}
}
