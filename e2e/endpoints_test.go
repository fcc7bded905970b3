//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// batchIDs lists the batch ids a receiver wrote (--format envelope), in
// the order it received them.
func (rc *receiver) batchIDs() []int64 {
	b, err := os.ReadFile(rc.out)
	if err != nil {
		return nil
	}
	var ids []int64
	for _, line := range bytes.Split(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte(`{"batch_id":`))
		if !ok {
			continue
		}
		end := bytes.IndexByte(rest, ',')
		if end < 0 {
			continue
		}
		if id, err := strconv.ParseInt(string(rest[:end]), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// union adds up what every receiver got.
func union(rcs ...*receiver) map[string]int {
	all := map[string]int{}
	for _, rc := range rcs {
		for p, n := range rc.received() {
			all[p] += n
		}
	}
	return all
}

// waitUnion waits until every line of want reached some receiver.
func waitUnion(t *testing.T, want []string, d time.Duration, rcs ...*receiver) delivery {
	t.Helper()
	var last delivery
	eventually(t, d, "every line delivered to some endpoint", func() bool {
		last = checkDelivery(want, union(rcs...))
		return len(last.missing) == 0
	})
	if last.foreign > 0 {
		t.Errorf("receivers got %d payloads that were never written", last.foreign)
	}
	return last
}

// Failover over three endpoints on the built binary: the preferred one
// is down at start (the second takes everything), comes back (the agent
// returns to it), and is stopped mid-run by its pid (the second takes
// over again). Nothing is lost; duplicates are counted.
func TestFailoverEndpoints(t *testing.T) {
	skipShort(t)
	const token = "e2e-token-0123456789"
	first := holdPort(t)
	second, third := startReceiver(t, token), startReceiver(t, token)
	root := newRoot(t, options{endpoints: []int{first.port, second.port, third.port}})
	w := root.createFile("in/app.log")
	want := makeLines(t.Name(), 0, 1000)
	w.lines(want)
	agent := root.startReady()
	waitUnion(t, want, deliverTimeout, second)
	if n := len(third.received()); n != 0 {
		t.Fatalf("the third endpoint got %d lines while the second was up", n)
	}

	first.release()
	// Slow (2 ms a reply), so that rows are on the wire when it stops.
	back := startReceiverAt(t, first.port, token, "--fault-delay-ms", "2")
	n := len(want)
	eventually(t, deliverTimeout, "the preferred endpoint takes lines again", func() bool {
		more := makeLines(t.Name(), n, 20) // keep lines flowing while the probe runs
		w.lines(more)
		want, n = append(want, more...), n+20
		return len(back.received()) > 0
	})
	got := len(back.received())
	more := makeLines(t.Name(), n, 2000)
	w.lines(more)
	want, n = append(want, more...), n+2000
	eventually(t, deliverTimeout, "the preferred endpoint midway through 2000 lines", func() bool {
		return len(back.received()) >= got+200
	})
	// Stopped by its pid, mid-run, with SIGTERM: a receiver killed with
	// SIGKILL loses the records it answered RECEIVED but had not written
	// yet, as an engine loses what no checkpoint covered, and this test
	// counts what the agent lost.
	back.stop()
	more = makeLines(t.Name(), n, 1000)
	w.lines(more)
	want = append(want, more...)
	d := waitUnion(t, want, deliverTimeout, back, second, third)
	t.Logf("%d lines: preferred %d, second %d, third %d; %s", len(want), len(back.received()), len(second.received()), len(third.received()), d)
	if code := root.stop(agent); code != 0 {
		t.Fatalf("graceful stop exit code %d", code)
	}
	if n := len(third.received()); n != 0 {
		t.Errorf("the third endpoint got %d lines while the second was up", n)
	}
	log := root.logText()
	for _, line := range []string{"failed over to another output endpoint", "returning to the preferred output endpoint"} {
		if !strings.Contains(log, line) {
			t.Errorf("agent log lacks %q", line)
		}
	}
	for name, rc := range map[string]*receiver{"preferred": back, "second": second} {
		if ids := rc.batchIDs(); len(ids) == 0 {
			t.Errorf("%s endpoint wrote no batch ids", name)
		}
	}
}

// Spread over two endpoints on the built binary: every line delivered
// once, each endpoint a share, batch ids increasing at each endpoint,
// and status lists both endpoints.
func TestSpreadEndpoints(t *testing.T) {
	skipShort(t)
	const token = "e2e-token-0123456789"
	a, b := startReceiver(t, token), startReceiver(t, token)
	root := newRoot(t, options{endpoints: []int{a.port, b.port}, endpointMode: "spread", api: true})
	want := makeLines(t.Name(), 0, 20000)
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	d := waitUnion(t, want, deliverTimeout, a, b)
	if d.duplicates != 0 {
		t.Errorf("%d duplicates without any failure", d.duplicates)
	}
	out, _, code := root.cli("status", "--json")
	if code != 0 {
		t.Fatalf("status --json exit %d", code)
	}
	var st struct {
		Endpoints []struct {
			Endpoint string `json:"endpoint"`
			State    string `json:"state"`
			Active   bool   `json:"active"`
			Received uint64 `json:"received"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(st.Endpoints) != 2 || !st.Endpoints[0].Active || !st.Endpoints[1].Active || st.Endpoints[0].State != "connected" {
		t.Fatalf("status endpoints = %+v", st.Endpoints)
	}
	text, _, _ := root.cli("status")
	if strings.Count(text, "endpoint:") != 2 {
		t.Errorf("status does not list both endpoints:\n%s", text)
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("graceful stop exit code %d", code)
	}
	a.stop()
	b.stop()
	for name, rc := range map[string]*receiver{"a": a, "b": b} {
		ids := rc.batchIDs()
		if len(ids) < len(want)/10 {
			t.Errorf("endpoint %s got %d of %d lines: want a share", name, len(ids), len(want))
		}
		if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Errorf("endpoint %s got batch ids that do not increase", name)
		}
	}
	t.Logf("%d lines: a %d, b %d; status %+v", len(want), len(a.batchIDs()), len(b.batchIDs()), st.Endpoints)
}

// An OpAMP remote config changes the endpoint list: from one endpoint to
// a spread pair, applied like a reload; later rows reach both.
func TestOpAMPChangesTheEndpoints(t *testing.T) {
	skipShort(t)
	const token = "e2e-token-0123456789"
	one, a, b := startReceiver(t, token), startReceiver(t, token), startReceiver(t, token)
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: one.port, extra: managed(srv.Endpoint())})
	w := root.createFile("in/app.log")
	want := makeLines(t.Name(), 0, 500)
	w.lines(want)
	agent := root.startReady()
	defer root.stop(agent)
	uid := root.instanceUID()
	one.waitDelivered(want, deliverTimeout)

	spread := *root
	spread.opts.endpoints, spread.opts.endpointMode = []int{a.port, b.port}, "spread"
	hash := srv.Push([]byte(spread.configText()))
	waitAgent(t, srv, uid, "APPLIED", func(ag opampdev.Agent) bool {
		return ag.RemoteStatus() == "APPLIED" && string(ag.RemoteConfig.GetLastRemoteConfigHash()) == string(hash)
	})
	more := makeLines(t.Name(), 500, 5000)
	w.lines(more)
	d := waitUnion(t, append(want, more...), deliverTimeout, one, a, b)
	if len(a.received()) == 0 || len(b.received()) == 0 {
		t.Fatalf("after the remote config: a %d, b %d lines", len(a.received()), len(b.received()))
	}
	t.Logf("one %d, a %d, b %d lines; %s", len(one.received()), len(a.received()), len(b.received()), d)
}
