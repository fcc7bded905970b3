//go:build unix

package e2e

import (
	"encoding/json"
	"strconv"
	"testing"
)

// auditDoc is the part of `edge-agent audit --json` the test reads.
type auditDoc struct {
	OK      bool `json:"ok"`
	Streams []struct {
		Host       string      `json:"host"`
		Input      string      `json:"input"`
		Max        uint64      `json:"max_seq"`
		Rows       int64       `json:"rows"`
		GapRecords int64       `json:"gap_records"`
		GapRows    int64       `json:"gap_rows"`
		Duplicates int64       `json:"duplicates"`
		Missing    [][2]uint64 `json:"missing"`
	} `json:"streams"`
	Unstamped int64 `json:"unstamped"`
}

// drop-oldest under a full queue with agent.account: while the engine is
// down a writer overfills queue.max-bytes, the agent drops the oldest
// rows and accounts for each with gap records in the WAL; once the engine
// is back, `edge-agent audit` over what it received finds every line
// either delivered or inside a gap record, exactly once, and the gap
// records add up to the rows the agent counted dropped.
func TestAccountDropOldestAudit(t *testing.T) {
	t.Parallel()
	const lines, maxBytes = 4_000, 150_000
	engine := holdPort(t)
	root := newRoot(t, options{port: engine.port, api: true, account: true,
		queueExtra: "  max-bytes: " + strconv.Itoa(maxBytes) + "\n  when-full: drop-oldest\n"})
	want := makeLines(t.Name(), 0, lines)
	w := root.createFile("in/app.log")
	agent := root.startReady()
	w.lines(want)
	doc := waitCommitted(t, root, "every line read and in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == lines })
	if doc.WAL.Dropped.FullRows == 0 {
		t.Fatalf("nothing dropped: %+v", doc.WAL.Dropped)
	}
	engine.release()
	rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
	var rep auditDoc
	eventually(t, deliverTimeout, "the audit of what the engine got complete", func() bool {
		out, _, code := root.cli("audit", "--json", rc.out)
		rep = auditDoc{} // a field left out of this report must not keep the last one's value
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return false
		}
		return code == 0 && rep.OK && len(rep.Streams) == 1 && rep.Streams[0].Max == lines &&
			rep.Streams[0].Rows+rep.Streams[0].GapRows >= lines
	})
	s := rep.Streams[0]
	dropped := outageStatus(t, root).WAL.Dropped.FullRows
	if s.Rows+s.GapRows != lines || s.Duplicates != 0 || s.GapRows != dropped || len(s.Missing) != 0 || rep.Unstamped != 0 {
		t.Errorf("audit %+v: want %d lines = rows + gap rows, gap rows = %d dropped, no duplicate", rep, lines, dropped)
	}
	out, _, code := root.cli("audit", rc.out)
	t.Logf("audit, exit %d:\n%s", code, out)
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit %d", code)
	}
}
