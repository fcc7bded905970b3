//go:build unix

package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var summaryLine = regexp.MustCompile(`(?m)^(PENDING|SENDING|ACKED|DEAD|total)\s+(\d+)`)

// dbSummary runs `db wal-summary` and returns its counts by status and
// "total".
func dbSummary(t *testing.T, root *agentRoot) map[string]int {
	t.Helper()
	out, errOut, code := root.cli("db", "wal-summary")
	if code != 0 {
		t.Fatalf("db wal-summary: exit %d\n%s%s", code, out, errOut)
	}
	got := map[string]int{}
	for _, m := range summaryLine.FindAllStringSubmatch(out, -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(got) != 5 {
		t.Fatalf("db wal-summary output not understood:\n%s", out)
	}
	return got
}

// rowsAppended reads counters.rows_appended from /debug/status.
func rowsAppended(t *testing.T, root *agentRoot) int {
	t.Helper()
	code, body := root.apiGet(t, "/debug/status")
	var doc struct {
		Counters struct {
			RowsAppended int `json:"rows_appended"`
		} `json:"counters"`
	}
	if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
		t.Fatalf("/debug/status: %d %v\n%s", code, err, body)
	}
	return doc.Counters.RowsAppended
}

// While the agent runs under load, db asks it through its API: every
// wal-summary is one committed state (its statuses add up to its total,
// which, nothing being deleted, is at least the rows the agent reported
// appended before the call, never falls, and never exceeds the lines
// written), and wal-retry-dead --yes makes the loop send the DEAD rows
// again.
func TestDBThroughAPIWhileRunning(t *testing.T) {
	skipShort(t)
	port := startReceiver(t, "e2e-token-0123456789", "--fault-retry-every", "4").port
	// Every 4th row gets RETRY; with one send attempt and max-attempts 1 it
	// goes DEAD. ACKED rows are kept for an hour: no row leaves the WAL.
	root := newRoot(t, options{port: port, api: true, maxAttempts: 1, sendAttempts: 1, retentionMs: 3_600_000})
	agent := root.startReady()
	in := root.createFile("in/app.log")
	const rounds, perRound = 10, 300
	last := 0
	for i := range rounds {
		in.lines(makeLines(t.Name(), i*perRound, perRound))
		appended := rowsAppended(t, root)
		c := dbSummary(t, root)
		sum := c["PENDING"] + c["SENDING"] + c["ACKED"] + c["DEAD"]
		written := (i + 1) * perRound
		if sum != c["total"] || c["total"] < appended || c["total"] < last || c["total"] > written {
			t.Fatalf("round %d: summary %v (statuses add to %d); appended before it %d, previous total %d, lines written %d",
				i, c, sum, appended, last, written)
		}
		last = c["total"]
	}
	total := rounds * perRound
	var c map[string]int
	eventually(t, deliverTimeout, "every row ACKED or DEAD", func() bool {
		c = dbSummary(t, root)
		return c["total"] == total && c["ACKED"]+c["DEAD"] == total
	})
	if c["DEAD"] == 0 {
		t.Fatalf("no DEAD rows to retry: %v", c)
	}
	out, errOut, code := root.cli("db", "wal-retry-dead", "--yes")
	if code != 0 || !strings.Contains(out, "move DEAD rows to PENDING: "+strconv.Itoa(c["DEAD"])+" rows") ||
		!strings.Contains(out, "by the running agent") {
		t.Fatalf("db wal-retry-dead --yes: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("db wal-retry-dead --yes on the running agent: %s", strings.TrimSpace(out))
	acked := c["ACKED"]
	eventually(t, deliverTimeout, "retried rows delivered", func() bool {
		n := dbSummary(t, root)
		return n["ACKED"] > acked && n["PENDING"]+n["SENDING"] == 0
	})
	if !agent.running() {
		t.Fatal("agent died during db commands")
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	// Stopped, the same command reads the file.
	if c := dbSummary(t, root); c["total"] != total {
		t.Fatalf("stopped: %v", c)
	}
}
