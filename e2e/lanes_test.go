//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// laneDoc is the part of status --json the lanes test reads.
type laneDoc struct {
	WAL struct {
		Lanes []struct {
			Name string `json:"name"`
			Rows int64  `json:"rows"`
		} `json:"lanes"`
	} `json:"wal"`
	Counters struct {
		SendErrors uint64 `json:"send_errors"`
	} `json:"counters"`
}

func laneStatus(t *testing.T, root *agentRoot) laneDoc {
	t.Helper()
	out, stderr, code := root.cli("status", "--json")
	var doc laneDoc
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	return doc
}

// orderedPayloads are the event payloads of a receiver's output file in
// the order it wrote them (one event per batch in RAW mode).
func orderedPayloads(path string) []string {
	var out []string
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var v any
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &v) != nil {
			continue
		}
		counts := map[string]int{}
		collectEvents(v, counts, 0)
		for p := range counts {
			out = append(out, p)
		}
	}
	return out
}

// After an outage (the engine down from the start, every line read into
// the WAL) the alarm lane's rows are the first the engine gets, in the
// order they were written, and then the rest, each once; status shows the
// backlog per lane meanwhile.
func TestLanesAfterAnOutage(t *testing.T) {
	t.Parallel()
	const lines, every = 400, 20
	engine := holdPort(t)
	root := newRoot(t, options{port: engine.port, api: true,
		queueExtra: "  lanes:\n    - name: alarm\n      when: 'payload contains \"ALARM\"'\n"})
	var want, alarms []string
	for i := range lines {
		l := fmt.Sprintf("%s info %d", t.Name(), i)
		if i%every == every/2 {
			l = fmt.Sprintf("%s ALARM %d", t.Name(), i)
			alarms = append(alarms, l)
		}
		want = append(want, l)
	}
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	waitCommitted(t, root, "every line in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == lines })
	// Two more failed sends: the job out when the engine comes back was
	// claimed after every line was in the WAL.
	base := laneStatus(t, root).Counters.SendErrors
	var doc laneDoc
	eventually(t, deliverTimeout, "two more failed sends", func() bool {
		doc = laneStatus(t, root)
		return doc.Counters.SendErrors >= base+2
	})
	rows := map[string]int64{}
	for _, l := range doc.WAL.Lanes {
		rows[l.Name] = l.Rows
	}
	if len(doc.WAL.Lanes) != 2 || doc.WAL.Lanes[0].Name != "alarm" || rows["alarm"]+rows["default"] < lines-1 || rows["alarm"] > int64(len(alarms)) {
		t.Errorf("status wal.lanes = %+v, want alarm then default holding the %d rows (one may be in flight)", doc.WAL.Lanes, lines)
	}

	engine.release()
	rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
	var got []string
	eventually(t, deliverTimeout, fmt.Sprint(lines, " lines at the engine"), func() bool {
		got = orderedPayloads(rc.out)
		return len(got) >= lines
	})
	if first := got[:len(alarms)]; !slices.Equal(first, alarms) {
		t.Errorf("the first %d lines at the engine:\n%s\nwant the alarm lane in order:\n%s",
			len(alarms), strings.Join(first, "\n"), strings.Join(alarms, "\n"))
	}
	if d := checkDelivery(want, rc.received()); len(d.missing) != 0 || d.duplicates != 0 || d.foreign != 0 {
		t.Errorf("delivery: %d missing, %d duplicates, %d foreign", len(d.missing), d.duplicates, d.foreign)
	}
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit %d", code)
	}
}
