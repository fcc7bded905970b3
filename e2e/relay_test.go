//go:build unix

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// relayAgents is how many edge agents feed the relay in TestRelayFanIn;
// RELAY_AGENTS raises it (50 runs on a 2-core machine, slowly).
func relayAgents(t *testing.T) int {
	if v := os.Getenv("RELAY_AGENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RELAY_AGENTS=%q: want a positive number", v)
		}
		return n
	}
	return 10
}

func agentToken(i int) string { return fmt.Sprintf("edge-token-%03d-abcdef", i) }

// relayInput is the relay's `inputs:` section: an edgesocket input on
// port accepting the tokens of agents 0..n-1, by name edge-<i>.
func relayInput(port, n int, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "inputs:\n  - id: relay\n    type: edgesocket\n    listen: 127.0.0.1:%d\n    tokens:\n", port)
	for i := range n {
		fmt.Fprintf(&b, "      - name: edge-%d\n        token: %s\n", i, agentToken(i))
	}
	b.WriteString(extra)
	return b.String()
}

// relayFleet is a relay agent in front of the receiver and n edge agents
// tailing a file each into the relay.
type relayFleet struct {
	t      *testing.T
	rc     *receiver
	relay  *agentRoot
	port   int // the relay's listen port
	agents []*agentRoot
	procs  []*proc
	relayP *proc
	files  []*writer
}

func newRelayFleet(t *testing.T, n int, relayExtra string, agentOpts func(i int) options) *relayFleet {
	t.Helper()
	f := &relayFleet{t: t, rc: startReceiver(t, "engine-token-0123456789")}
	hold := holdPort(t)
	f.port = hold.port
	f.relay = newRoot(t, options{port: f.rc.port, token: "engine-token-0123456789", api: true,
		inputs: relayInput(f.port, n, relayExtra)})
	hold.release()
	f.relayP = f.relay.startReady()
	for i := range n {
		o := options{}
		if agentOpts != nil {
			o = agentOpts(i)
		}
		o.port, o.token = f.port, agentToken(i)
		r := newRoot(t, o)
		f.agents = append(f.agents, r)
		f.files = append(f.files, r.createFile("in/app.log"))
		f.procs = append(f.procs, r.startReady())
	}
	return f
}

func (f *relayFleet) stopAll() {
	for i, r := range f.agents {
		if code := r.stop(f.procs[i]); code != 0 {
			f.t.Errorf("agent %d stop exit code %d", i, code)
		}
	}
	if code := f.relay.stop(f.relayP); code != 0 {
		f.t.Errorf("relay stop exit code %d", code)
	}
}

// N edge agents → one relay → the fake engine, while the relay and some
// agents are killed with SIGKILL and restarted: every line arrives at
// least once; duplicates (batches stored or sent but not yet answered at
// a kill) are counted. Then `status` on the relay lists the collectors.
func TestRelayFanIn(t *testing.T) {
	skipShort(t)
	n := relayAgents(t)
	f := newRelayFleet(t, n, "", nil)

	const perAgent, chunk = 3000, 50
	var want []string
	lines := make([][]string, n)
	for i := range n {
		lines[i] = makeLines(fmt.Sprintf("%s-a%d", t.Name(), i), 0, perAgent)
		want = append(want, lines[i]...)
	}
	// Each agent's file grows at about 500 lines/s for 6 s while
	// processes die.
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perAgent; j += chunk {
				f.files[i].lines(lines[i][j : j+chunk])
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	eventually(t, deliverTimeout, "a fifth delivered", func() bool { return len(f.rc.received()) >= len(want)/5 })
	f.relayP.signal(t, syscall.SIGKILL)
	f.relayP.wait(t, 10*time.Second)
	killed := max(1, n/5)
	for i := range killed {
		f.procs[i].signal(t, syscall.SIGKILL)
		f.procs[i].wait(t, 10*time.Second)
	}
	atKill := len(f.rc.received())
	t.Logf("killed the relay and %d agents with %d distinct lines delivered", killed, atKill)
	if atKill >= len(want) {
		t.Errorf("everything was delivered before the kill: the run tests no kill mid-stream")
	}
	time.Sleep(500 * time.Millisecond) // the others retry against a dead relay
	f.relayP = f.relay.startReady()
	for i := range killed {
		f.procs[i] = f.agents[i].startReady()
	}
	wg.Wait()

	d := f.rc.waitDelivered(want, 3*deliverTimeout)
	t.Logf("%d agents through a relay, relay and %d agents killed -9 once: %d lines, %s", n, killed, len(want), d)

	out, _, code := f.relay.cli("status")
	if code != 0 || !strings.Contains(out, "collectors connected") || !strings.Contains(out, "collector:") {
		t.Errorf("relay status (exit %d) does not list its collectors:\n%s", code, out)
	}
	t.Logf("relay status:\n%s", out)
	for i, r := range f.agents {
		if got := r.logText(); strings.Contains(got, agentToken(i)) {
			t.Errorf("agent %d logs its token", i)
		}
	}
	if got := f.relay.logText(); containsAny(got, agentToken(0), agentToken(n-1)) {
		t.Error("the relay logs a collector's token")
	}
	f.stopAll()
}

// PACKET between agents and relay, with the relay's AES key and a
// different compression per agent; a wrong token is refused and logged
// without the token.
func TestRelayPacketAES(t *testing.T) {
	skipShort(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyB64 := base64.StdEncoding.EncodeToString(key)
	comps := []string{"gzip", "zlib", "deflate"}
	f := newRelayFleet(t, len(comps), "    packet-mode: PACKET\n    aes-secret-key-base64: "+keyB64+"\n", func(i int) options {
		return options{packetMode: "PACKET", compression: comps[i], encryption: "aes_gcm", keyB64: keyB64}
	})
	var want []string
	for i := range comps {
		l := makeLines(fmt.Sprintf("%s-%s", t.Name(), comps[i]), 0, 1000)
		f.files[i].lines(l)
		want = append(want, l...)
	}
	intruder := newRoot(t, options{port: f.port, token: "not-a-fleet-token-42"})
	intruderLines := makeLines("intruder", 0, 10)
	intruder.createFile("in/app.log").lines(intruderLines)
	ip := intruder.startReady()

	d := f.rc.waitDelivered(want, deliverTimeout)
	t.Logf("PACKET gzip/zlib/deflate + aes_gcm through the relay: %s", d)
	eventually(t, 10*time.Second, "the relay warns of the wrong token", func() bool {
		return strings.Contains(f.relay.logText(), "failed to authenticate")
	})
	if got := f.relay.logText(); containsAny(got, "not-a-fleet-token-42", keyB64) {
		t.Error("the relay logs the presented token or its key")
	}
	if got := f.rc.received(); got[intruderLines[0]] > 0 {
		t.Error("lines of an agent with a wrong token reached the engine")
	}
	intruder.stop(ip)
	f.stopAll()
}
