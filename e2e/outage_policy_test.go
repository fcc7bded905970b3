//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// outageDoc is the part of status --json and /debug/status the outage
// tests read.
type outageDoc struct {
	Running      bool   `json:"running"`
	InputID      string `json:"input_id"`
	Backpressure bool   `json:"backpressure"`
	WAL          struct {
		Pending  int64 `json:"pending"`
		Sending  int64 `json:"sending"`
		Bytes    int64 `json:"bytes"`
		Dropping bool  `json:"dropping"`
		Dropped  struct {
			FullRows  int64 `json:"full_rows"`
			FullBytes int64 `json:"full_bytes"`
			AgeRows   int64 `json:"age_rows"`
			AgeBytes  int64 `json:"age_bytes"`
		} `json:"dropped"`
	} `json:"wal"`
	Counters struct {
		EventsRead   uint64 `json:"events_read"`
		RowsAppended uint64 `json:"rows_appended"`
		Acked        uint64 `json:"acked"`
	} `json:"counters"`
	Files []struct {
		Offset int64 `json:"offset"`
		Size   int64 `json:"size"`
	} `json:"files"`
	Health *struct {
		Healthy    bool   `json:"healthy"`
		Reason     string `json:"reason"`
		Components map[string]struct {
			Status string `json:"status"`
		} `json:"components"`
	} `json:"health"`
}

func (d outageDoc) queued() int64 { return d.WAL.Pending + d.WAL.Sending }

// readToEnd says the one watched file is read to its end.
func (d outageDoc) readToEnd() bool {
	return len(d.Files) == 1 && d.Files[0].Size > 0 && d.Files[0].Offset == d.Files[0].Size
}

func outageStatus(t *testing.T, root *agentRoot) outageDoc {
	t.Helper()
	out, stderr, code := root.cli("status", "--json")
	var doc outageDoc
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	return doc
}

func debugStatus(t *testing.T, root *agentRoot) outageDoc {
	t.Helper()
	code, body := root.apiGet(t, "/debug/status")
	var doc outageDoc
	if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
		t.Fatalf("/debug/status: %d, %v\n%s", code, err, body)
	}
	return doc
}

// outageMetrics are the counters of /metrics that must add up.
type outageMetrics struct {
	read, acked, droppedFull, droppedAge float64
}

var metricLine = regexp.MustCompile(`(?m)^(edge_agent_events_read_total|edge_agent_events_acked_total|edge_agent_wal_dropped_events_total\{reason="(?:full|age)"\}) (\S+)$`)

func readOutageMetrics(t *testing.T, root *agentRoot) outageMetrics {
	t.Helper()
	code, body := httpGet(t, root.apiBase()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	var m outageMetrics
	found := 0
	for _, g := range metricLine.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(g[2], 64)
		if err != nil {
			t.Fatalf("/metrics %s: %v", g[1], err)
		}
		found++
		switch g[1] {
		case "edge_agent_events_read_total":
			m.read = v
		case "edge_agent_events_acked_total":
			m.acked = v
		case `edge_agent_wal_dropped_events_total{reason="full"}`:
			m.droppedFull = v
		case `edge_agent_wal_dropped_events_total{reason="age"}`:
			m.droppedAge = v
		}
	}
	if found != 4 {
		t.Fatalf("/metrics lacks a counter the outage tests read:\n%s", body)
	}
	return m
}

// dropLine is one WARN line of a drop episode, as the log file has it.
type dropLine struct {
	Level  string    `json:"level"`
	Msg    string    `json:"msg"`
	Reason string    `json:"reason"`
	Rows   int64     `json:"rows"`
	Bytes  int64     `json:"bytes"`
	Oldest time.Time `json:"oldest_created"`
	Newest time.Time `json:"newest_created"`
	Inputs string    `json:"inputs"`
}

// dropLines are the episode lines of the log so far.
func dropLines(t *testing.T, root *agentRoot) []dropLine {
	t.Helper()
	var out []dropLine
	sc := bufio.NewScanner(strings.NewReader(root.logText()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"msg":"queue above queue.max-bytes with when-full: drop-oldest`) &&
			!strings.Contains(sc.Text(), `"msg":"dropped unsent rows older than queue.max-age-ms"`) {
			continue
		}
		var l dropLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("drop line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// checkDropLine waits for the one WARN line of the episode (logged once
// no row was dropped for 10 s) and checks it against the counters.
func checkDropLine(t *testing.T, root *agentRoot, reason string, rows int64, inputID string, from, to time.Time) {
	t.Helper()
	var lines []dropLine
	eventually(t, 40*time.Second, "the episode's WARN line", func() bool {
		lines = dropLines(t, root)
		return len(lines) > 0
	})
	if len(lines) != 1 {
		t.Fatalf("%d drop lines, want one for the episode: %+v", len(lines), lines)
	}
	l := lines[0]
	if l.Level != "WARN" || l.Reason != reason || l.Rows != rows || l.Bytes <= 0 || l.Inputs != inputID {
		t.Errorf("drop line %+v, want WARN, reason %s, %d rows, input %q", l, reason, rows, inputID)
	}
	if l.Oldest.Before(from.Add(-time.Second)) || l.Newest.After(to.Add(time.Second)) || l.Newest.Before(l.Oldest) {
		t.Errorf("drop line covers %v..%v, want within the outage %v..%v", l.Oldest, l.Newest, from, to)
	}
	t.Logf("episode line: %d rows, %d bytes, created %s..%s, inputs %s",
		l.Rows, l.Bytes, l.Oldest.Format(time.RFC3339Nano), l.Newest.Format(time.RFC3339Nano), l.Inputs)
}

// checkDropping checks that status, /debug/status and /healthz's health
// report the drops while they go on.
func checkDropping(t *testing.T, root *agentRoot, doc outageDoc) {
	t.Helper()
	dbg := debugStatus(t, root)
	for name, d := range map[string]outageDoc{"status --json": doc, "/debug/status": dbg} {
		if !d.WAL.Dropping {
			t.Errorf("%s: wal.dropping false while rows are dropped", name)
		}
		if d.Health == nil || !d.Health.Healthy || d.Health.Reason != "degraded: dropping" || d.Health.Components["wal"].Status != "dropping" {
			t.Errorf("%s: health %+v, want healthy, degraded: dropping", name, d.Health)
		}
	}
	out, _, code := root.cli("status")
	if code != 0 || !regexp.MustCompile(`dropped unsent:\s+\d+ rows \(\d+ bytes\) for size, \d+ rows \(\d+ bytes\) for age, dropping now`).MatchString(out) {
		t.Errorf("status: exit %d, no dropping line:\n%s", code, out)
	}
}

// waitCommitted waits until every line read is in the WAL (the last
// group of a burst waits up to agent.commit-interval-ms) and returns the
// status then.
func waitCommitted(t *testing.T, root *agentRoot, what string, cond func(outageDoc) bool) outageDoc {
	t.Helper()
	var doc outageDoc
	eventually(t, deliverTimeout, what, func() bool {
		doc = outageStatus(t, root)
		return doc.Counters.EventsRead == doc.Counters.RowsAppended && cond(doc)
	})
	return doc
}

// keptLines are the lines of want the WAL holds, read with `db wal-list`
// from the running agent. Row ids count the lines appended from 1, so row
// id n holds want[n-1]; `db wal-show` confirms it for the first and the
// last row kept.
func keptLines(t *testing.T, root *agentRoot, want []string) map[string]bool {
	t.Helper()
	out, stderr, code := root.cli("db", "wal-list", "--limit", "0")
	if code != 0 {
		t.Fatalf("db wal-list: exit %d: %s", code, stderr)
	}
	kept := map[string]bool{}
	var ids []int
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			continue // the header and the footer
		}
		if f[2] != "PENDING" && f[2] != "SENDING" {
			t.Fatalf("row %d is %s during the outage: %s", id, f[2], l)
		}
		if id < 1 || id > len(want) {
			t.Fatalf("row id %d beyond the %d lines written", id, len(want))
		}
		ids = append(ids, id)
		kept[want[id-1]] = true
	}
	if len(ids) == 0 {
		return kept
	}
	for _, id := range []int{ids[0], ids[len(ids)-1]} {
		show, stderr, code := root.cli("db", "wal-show", "--id", strconv.Itoa(id))
		quoted, _ := json.Marshal(want[id-1])
		if code != 0 || !strings.Contains(show, `"payload":`+string(quoted)) {
			t.Fatalf("db wal-show --id %d: exit %d, want line %d in it:\n%s%s", id, code, id-1, show, stderr)
		}
	}
	return kept
}

// deliveredOnce waits until the engine holds as many distinct lines as
// the WAL kept and checks that they are exactly those, each once (the
// engine was down, so no reply was lost to cause a duplicate).
func deliveredOnce(t *testing.T, rc *receiver, kept map[string]bool) map[string]bool {
	t.Helper()
	var got map[string]int
	eventually(t, deliverTimeout, strconv.Itoa(len(kept))+" lines at the engine", func() bool {
		got = rc.received()
		return len(got) >= len(kept)
	})
	out := map[string]bool{}
	for p, n := range got {
		if !kept[p] {
			t.Fatalf("the engine got a line the WAL did not keep: %q", p)
		}
		if n != 1 {
			t.Errorf("line %q received %d times", p, n)
		}
		out[p] = true
	}
	if len(out) != len(kept) {
		t.Fatalf("the engine got %d distinct lines, the WAL kept %d", len(out), len(kept))
	}
	return out
}

// ranges lists the runs of lines of want that got holds, as "a..b".
func ranges(want []string, got map[string]bool) string {
	var out []string
	for i := 0; i < len(want); i++ {
		if !got[want[i]] {
			continue
		}
		j := i
		for j+1 < len(want) && got[want[j+1]] {
			j++
		}
		out = append(out, strconv.Itoa(i)+".."+strconv.Itoa(j))
		i = j
	}
	return strings.Join(out, " ")
}

// checkNewestKept checks that drop-oldest kept the newest lines: every
// line after the last one dropped was delivered, and that last one is not
// the newest. Rows in flight at a drop are kept too, so the lines dropped
// need not be one run.
func checkNewestKept(t *testing.T, want []string, got map[string]bool) (dropped int) {
	t.Helper()
	last := -1
	for i, w := range want {
		if !got[w] {
			last = i
			dropped++
		}
	}
	if last == len(want)-1 {
		t.Fatalf("the newest line was dropped; delivered %s", ranges(want, got))
	}
	return dropped
}

// checkSums checks read = delivered + dropped on /metrics and logs the
// counters for the record.
func checkSums(t *testing.T, root *agentRoot, policy string, written int) {
	t.Helper()
	var m outageMetrics
	eventually(t, deliverTimeout, "the acks counted", func() bool {
		m = readOutageMetrics(t, root)
		return m.acked+m.droppedFull+m.droppedAge >= m.read && m.read > 0
	})
	if m.read != float64(written) || m.acked+m.droppedFull+m.droppedAge != m.read {
		t.Errorf("%s: /metrics read %v, acked %v + dropped %v (full) + %v (age), want read = %d = acked + dropped",
			policy, m.read, m.acked, m.droppedFull, m.droppedAge, written)
	}
	t.Logf("%s counters: written %d, read %.0f, delivered (acked) %.0f, dropped full %.0f, dropped age %.0f",
		policy, written, m.read, m.acked, m.droppedFull, m.droppedAge)
}

// A long outage compressed: the engine is down, a fast writer fills a
// small queue.max-bytes (or rows outlive queue.max-age-ms), then the
// engine comes back. Each policy keeps what it says: block pauses reading
// and delivers every line; drop-oldest reads on and delivers the rows in
// flight and the newest ones, never a dropped one; max-age drops the rows
// older than it and delivers the younger. The counters add up (read =
// delivered + dropped), the drops are reported while they go on, and one
// WARN line tells of each episode.
func TestOutagePolicies(t *testing.T) {
	skipShort(t)
	const lines, maxBytes = 20_000, 2_000_000
	quick := "  max-bytes: " + strconv.Itoa(maxBytes) + "\n"

	t.Run("block", func(t *testing.T) {
		t.Parallel()
		engine := holdPort(t)
		root := newRoot(t, options{port: engine.port, api: true, queueExtra: quick + "  when-full: block\n"})
		want := makeLines(t.Name(), 0, lines)
		w := root.createFile("in/app.log")
		w.lines(want[:lines/2])
		agent := root.startReady()
		w.lines(want[lines/2:])

		doc := waitCommitted(t, root, "reading paused with what was read in the WAL", func(d outageDoc) bool { return d.Backpressure })
		if doc.Counters.EventsRead >= lines || doc.WAL.Dropped.FullRows != 0 || doc.WAL.Dropped.AgeRows != 0 || doc.WAL.Dropping {
			t.Fatalf("block: read %d of %d, dropped %+v, dropping %v; want reading paused, nothing dropped",
				doc.Counters.EventsRead, lines, doc.WAL.Dropped, doc.WAL.Dropping)
		}
		t.Logf("block: paused at %d of %d lines read, %d bytes queued (max-bytes %d)", doc.Counters.EventsRead, lines, doc.WAL.Bytes, maxBytes)

		engine.release()
		rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
		all := map[string]bool{}
		for _, l := range want {
			all[l] = true
		}
		deliveredOnce(t, rc, all)
		checkSums(t, root, "block", lines)
		if n := len(dropLines(t, root)); n != 0 {
			t.Errorf("block: %d drop lines", n)
		}
		if !strings.Contains(root.logText(), "queue above queue.max-bytes; pausing input until rows are acknowledged") {
			t.Errorf("block: no backpressure line in the log")
		}
		if code := root.stop(agent); code != 0 {
			t.Errorf("stop exit %d", code)
		}
	})

	t.Run("drop-oldest", func(t *testing.T) {
		t.Parallel()
		engine := holdPort(t)
		srv := startOpAMP(t, "127.0.0.1:0")
		root := newRoot(t, options{port: engine.port, api: true, extra: managed(srv.Endpoint()),
			queueExtra: quick + "  when-full: drop-oldest\n"})
		want := makeLines(t.Name(), 0, lines)
		w := root.createFile("in/app.log")
		from := time.Now()
		w.lines(want[:lines/2])
		agent := root.startReady()
		uid := root.instanceUID()
		w.lines(want[lines/2:])

		doc := waitCommitted(t, root, "every line read and in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == lines })
		to := time.Now()
		if doc.Backpressure || doc.WAL.Dropped.FullRows == 0 || doc.WAL.Dropped.AgeRows != 0 || doc.WAL.Bytes > maxBytes {
			t.Fatalf("drop-oldest: backpressure %v, dropped %+v, %d bytes queued; want reading on, rows dropped for size, at most %d bytes",
				doc.Backpressure, doc.WAL.Dropped, doc.WAL.Bytes, maxBytes)
		}
		checkDropping(t, root, doc)
		a := waitAgent(t, srv, uid, "OpAMP health degraded: dropping", func(a opampdev.Agent) bool {
			return a.Health.GetHealthy() && a.Health.GetLastError() == "degraded: dropping"
		})
		if wal := a.Health.GetComponentHealthMap()["wal"]; wal.GetStatus() != "dropping" || !wal.GetHealthy() {
			t.Errorf("OpAMP wal health %v, want healthy and dropping", wal)
		}
		kept, dropped := keptLines(t, root, want), doc.WAL.Dropped.FullRows
		if int64(len(kept)) != doc.queued() || int64(len(kept))+dropped != lines {
			t.Fatalf("drop-oldest: %d rows kept (%d queued) + %d dropped, %d read", len(kept), doc.queued(), dropped, lines)
		}

		engine.release()
		rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
		got := deliveredOnce(t, rc, kept)
		if n := checkNewestKept(t, want, got); int64(n) != dropped {
			t.Errorf("drop-oldest: %d lines never delivered, %d rows counted dropped", n, dropped)
		}
		checkSums(t, root, "drop-oldest", lines)
		checkDropLine(t, root, "full", dropped, doc.InputID, from, to)
		if d := outageStatus(t, root); d.WAL.Dropping || d.Health == nil || d.Health.Reason != "" {
			t.Errorf("after the episode: dropping %v, health %+v; want both back to normal", d.WAL.Dropping, d.Health)
		}
		waitAgent(t, srv, uid, "OpAMP health back to plain healthy", func(a opampdev.Agent) bool {
			return a.Health.GetHealthy() && a.Health.GetLastError() == ""
		})
		if code := root.stop(agent); code != 0 {
			t.Errorf("stop exit %d", code)
		}
	})

	t.Run("max-age", func(t *testing.T) {
		t.Parallel()
		const maxAge = 12 * time.Second // the young lines must go out younger than this
		engine := holdPort(t)
		root := newRoot(t, options{port: engine.port, api: true,
			queueExtra: "  max-age-ms: " + strconv.Itoa(int(maxAge/time.Millisecond)) + "\n"})
		want := makeLines(t.Name(), 0, lines)
		old, young := want[:lines/2], want[lines/2:]
		w := root.createFile("in/app.log")
		from := time.Now()
		w.lines(old[:len(old)/2])
		agent := root.startReady()
		w.lines(old[len(old)/2:])
		waitCommitted(t, root, "the old lines in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == uint64(len(old)) })
		to := time.Now()

		// The old lines go once they are older than max-age-ms, all of
		// them: rows in flight when the drop came are dropped once back.
		doc := waitCommitted(t, root, "the old lines dropped for age", func(d outageDoc) bool {
			return d.WAL.Dropped.AgeRows == int64(len(old))
		})
		if doc.queued() != 0 || doc.WAL.Dropped.FullRows != 0 {
			t.Fatalf("max-age: %d rows left, dropped %+v; want the old lines dropped for age", doc.queued(), doc.WAL.Dropped)
		}
		checkDropping(t, root, doc)

		// Younger lines stay and go out once the engine is back.
		w.lines(young)
		doc = waitCommitted(t, root, "the young lines in the WAL", func(d outageDoc) bool { return d.Counters.EventsRead == lines })
		kept := keptLines(t, root, want)
		if doc.queued() != int64(len(young)) || len(kept) != len(young) {
			t.Fatalf("max-age: %d rows queued, %d listed, want the %d young lines", doc.queued(), len(kept), len(young))
		}
		engine.release()
		rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
		got := deliveredOnce(t, rc, kept)
		for i, l := range want {
			if got[l] != (i >= len(old)) {
				t.Fatalf("max-age: line %d delivered %v; want only the young lines", i, got[l])
			}
		}
		checkSums(t, root, "max-age", lines)
		checkDropLine(t, root, "age", int64(len(old)), doc.InputID, from, to)
		if code := root.stop(agent); code != 0 {
			t.Errorf("stop exit %d", code)
		}
	})

	// kill -9 while drop-oldest drops, then a restart: every line written
	// is delivered or counted dropped, the counts survive in the WAL.
	t.Run("drop-oldest-kill9", func(t *testing.T) {
		t.Parallel()
		engine := holdPort(t)
		root := newRoot(t, options{port: engine.port, api: true, queueExtra: quick + "  when-full: drop-oldest\n"})
		want := makeLines(t.Name(), 0, lines)
		w := root.createFile("in/app.log")
		w.lines(want[:lines*3/4])
		agent := root.startReady()
		eventually(t, deliverTimeout, "rows dropped", func() bool {
			return outageStatus(t, root).WAL.Dropped.FullRows > 0
		})
		agent.kill()
		if code := agent.wait(t, 10*time.Second); code != 128+9 {
			t.Fatalf("agent exit %d after SIGKILL", code)
		}
		w.lines(want[lines*3/4:])
		agent = root.startReady()
		// What the first run committed is not read again; the rest is.
		doc := waitCommitted(t, root, "the file read to its end", func(d outageDoc) bool {
			return d.readToEnd()
		})
		kept, dropped := keptLines(t, root, want), doc.WAL.Dropped.FullRows
		if int64(len(kept)) != doc.queued() || int64(len(kept))+dropped != lines {
			t.Fatalf("after kill -9: %d rows kept (%d queued) + %d dropped, %d written", len(kept), doc.queued(), dropped, lines)
		}
		engine.release()
		rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
		got := deliveredOnce(t, rc, kept)
		checkNewestKept(t, want, got)
		t.Logf("drop-oldest-kill9 counters: written %d, delivered %d, dropped full %d (across the kill)", lines, len(got), dropped)
		if code := root.stop(agent); code != 0 {
			t.Errorf("stop exit %d", code)
		}
	})
}
