//go:build unix

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The receiver in engine-model mode writes to its out file only the rows a
// completed checkpoint of the simulated job committed: a line missing
// there is a line the job lost. These tests run the agent against it.

const ckptToken = "e2e-token-0123456789"

// ckptDoc is the part of status --json the checkpoint tests read.
type ckptDoc struct {
	WAL struct {
		Pending  int64 `json:"pending"`
		Sending  int64 `json:"sending"`
		Received int64 `json:"received"`
	} `json:"wal"`
	Files []struct {
		Path   string `json:"path"`
		Offset int64  `json:"offset"`
		Size   int64  `json:"size"`
	} `json:"files"`
	Health *struct {
		Healthy bool   `json:"healthy"`
		Reason  string `json:"reason"`
	} `json:"health"`
}

// inWAL is every row the WAL still holds for delivery.
func (d ckptDoc) inWAL() int64 { return d.WAL.Pending + d.WAL.Sending + d.WAL.Received }

// readAll says every tracked file is read to its end.
func (d ckptDoc) readAll() bool {
	for _, f := range d.Files {
		if f.Offset != f.Size {
			return false
		}
	}
	return len(d.Files) > 0
}

func ckptStatus(t *testing.T, root *agentRoot) ckptDoc {
	t.Helper()
	out, stderr, code := root.cli("status", "--json")
	var doc ckptDoc
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	return doc
}

// waitStatus polls status --json until cond holds, bounded by d; on a
// timeout it fails with the last status seen.
func waitStatus(t *testing.T, root *agentRoot, d time.Duration, what string, cond func(ckptDoc) bool) ckptDoc {
	t.Helper()
	doc, ok := pollStatus(t, root, d, cond)
	if !ok {
		t.Fatalf("timed out after %s waiting for %s; last status: %+v health %+v", d, what, doc, doc.Health)
	}
	return doc
}

// pollStatus polls status --json until cond holds or d passes, and
// returns the last status and whether cond held.
func pollStatus(t *testing.T, root *agentRoot, d time.Duration, cond func(ckptDoc) bool) (ckptDoc, bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		doc := ckptStatus(t, root)
		if cond(doc) {
			return doc, true
		}
		if time.Now().After(deadline) {
			return doc, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// figureRe is one key=number pair of the model's stats or summary line.
var figureRe = regexp.MustCompile(`(\w+)=(\d+)`)

// modelFigures parses the receiver's last stats or summary line that
// carries the model's figures (checkpoints=...); nil before the first.
func (rc *receiver) modelFigures() map[string]int {
	lines := strings.Split(rc.p.stderrText(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], " checkpoints=") {
			continue
		}
		got := map[string]int{}
		for _, m := range figureRe.FindAllStringSubmatch(lines[i], -1) {
			got[m[1]], _ = strconv.Atoi(m[2])
		}
		return got
	}
	return nil
}

// modelArgs are the receiver's flags for the engine model: stats often
// enough for the tests to follow checkpoints, and the PACKET key if any.
func modelArgs(keyB64 string, extra ...string) []string {
	args := []string{"--engine-model", "--stats-interval", "100ms"}
	if keyB64 != "" {
		args = append(args, "--packet-mode", "packet", "--secret-key", keyB64)
	}
	return append(args, extra...)
}

// ckptRun is one run of the failover scenario.
type ckptRun struct {
	rc    *receiver
	root  *agentRoot
	agent *proc
	want  []string
}

// runFailoverScenario starts the engine model with flags, an agent with
// the given guarantee (PACKET gzip + AES-GCM when packet), and writes
// 10,000 lines in 50 chunks over about 5 s (so that failovers strike
// while rows flow) while it runs: the file is renamed away and
// a new one created after chunk 20, the agent is killed with SIGKILL
// after chunk 35 and started again. It returns once every line is
// written and the restarted agent is ready.
func runFailoverScenario(t *testing.T, guarantee string, packet bool, flags ...string) ckptRun {
	t.Helper()
	var keyB64 string
	opts := options{guarantee: guarantee, checkpointPollMs: 200, paths: []string{"in/app.log*"}, api: true}
	if packet {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			t.Fatal(err)
		}
		keyB64 = base64.StdEncoding.EncodeToString(key)
		opts.packetMode, opts.compression, opts.encryption, opts.keyB64 = "PACKET", "gzip", "aes_gcm", keyB64
	}
	rc := startReceiver(t, ckptToken, modelArgs(keyB64, flags...)...)
	opts.port = rc.port
	root := newRoot(t, opts)
	const chunks, chunk = 50, 200
	want := makeLines(t.Name(), 0, chunks*chunk)
	w := root.createFile("in/app.log")
	agent := root.startReady()
	if !strings.Contains(root.logText(), `"delivery_guarantee":"`+guarantee+`"`) {
		t.Fatalf("the agent did not start in %s mode:\n%s", guarantee, tail(root.path("log/edge-agent.log"), 5))
	}
	for i := 0; i < chunks; i++ {
		w.lines(want[i*chunk : (i+1)*chunk])
		switch i {
		case 20:
			if err := os.Rename(root.path("in/app.log"), root.path("in/app.log.1")); err != nil {
				t.Fatal(err)
			}
			w.close()
			w = root.createFile("in/app.log")
		case 35:
			agent.signal(t, syscall.SIGKILL)
			agent.wait(t, 10*time.Second)
			t.Logf("agent killed after %d lines written, %d committed", (i+1)*chunk, len(rc.received()))
			agent = root.startReady()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ckptRun{rc: rc, root: root, agent: agent, want: want}
}

// finish stops the agent and the receiver and returns the receiver's
// summary figures; failovers or fresh restarts must have happened, or
// the run did not test what it names.
func (r ckptRun) finish(t *testing.T, fault string) map[string]int {
	t.Helper()
	if code := r.root.stop(r.agent); code != 0 {
		t.Errorf("agent stop exit code %d", code)
	}
	r.rc.stop()
	fig := r.rc.modelFigures()
	if !strings.Contains(tail(r.rc.p.stderr, 1), "done records=") || fig == nil {
		t.Fatalf("no summary line from the receiver: %s", tail(r.rc.p.stderr, 3))
	}
	if fig[fault] == 0 {
		t.Errorf("the engine model reports %s=0: the run never exercised them", fault)
	}
	return fig
}

// CHECKPOINT mode: the job fails over to its last checkpoint every 1.7 s
// (rows emitted since are dropped from its output, the agent is
// disconnected) while 10,000 lines are written with a rotation and an
// agent killed with SIGKILL and restarted. Every line must be in the
// committed output, and the WAL empty once the checkpoints cover it.
// Duplicates are allowed (rows resent after a loss the engine could not
// tell apart) and reported.
func TestCheckpointSurvivesFailovers(t *testing.T) {
	skipShort(t)
	for _, packet := range []bool{false, true} {
		name := "RAW"
		if packet {
			name = "PACKET"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			run := runFailoverScenario(t, "CHECKPOINT", packet, "--checkpoint-interval", "500ms", "--failover-every", "1.7s")
			run.rc.waitDelivered(run.want, 45*time.Second)
			waitStatus(t, run.root, 20*time.Second, "the WAL emptied by checkpoints", func(d ckptDoc) bool { return d.inWAL() == 0 })
			fig := run.finish(t, "failovers")
			d := checkDelivery(run.want, run.rc.received())
			t.Logf("CHECKPOINT %s: %s in %s; engine: failovers=%d checkpoints=%d lost_open_tx=%d lost_queued=%d commit_resend=%d",
				name, d, time.Since(start).Round(time.Millisecond), fig["failovers"], fig["checkpoints"], fig["lost_open_tx"], fig["lost_queued"], fig["commit_resend"])
			if len(d.missing) != 0 {
				t.Errorf("lines lost in CHECKPOINT mode: %s", d)
			}
			if d.duplicates >= len(run.want) {
				t.Errorf("%d duplicates for %d lines: more than one resend of everything", d.duplicates, len(run.want))
			}
		})
	}
}

// BEST_EFFORT in the same scenario: the agent deletes a row once the
// engine answered RECEIVED, so rows the job held in memory at a failover
// are lost; that is the engine's documented limit. The loss is measured
// once the agent holds nothing more and three more checkpoints completed
// (later ones cannot commit anything more), and reported, not judged.
func TestBestEffortLossUnderFailovers(t *testing.T) {
	skipShort(t)
	start := time.Now()
	run := runFailoverScenario(t, "BEST_EFFORT", false, "--checkpoint-interval", "500ms", "--failover-every", "1.7s")
	waitStatus(t, run.root, 45*time.Second, "the agent read every file and holds no row", func(d ckptDoc) bool { return d.readAll() && d.inWAL() == 0 })
	cp := run.rc.modelFigures()["checkpoints"]
	eventually(t, 20*time.Second, "three more checkpoints", func() bool {
		return run.rc.modelFigures()["checkpoints"] >= cp+3
	})
	if doc := ckptStatus(t, run.root); !doc.readAll() || doc.inWAL() != 0 {
		t.Fatalf("the agent took up rows again after it held none: %+v", doc)
	}
	d := checkDelivery(run.want, run.rc.received())
	fig := run.finish(t, "failovers")
	t.Logf("BEST_EFFORT: %d of %d lines lost (%s) in %s; engine: failovers=%d checkpoints=%d lost_open_tx=%d lost_queued=%d",
		len(d.missing), len(run.want), d, time.Since(start).Round(time.Millisecond), fig["failovers"], fig["checkpoints"], fig["lost_open_tx"], fig["lost_queued"])
	if d.foreign != 0 {
		t.Errorf("%d payloads nobody wrote", d.foreign)
	}
}

// CHECKPOINT mode against a job without checkpointing: nothing is ever
// committed, so the rows stay RECEIVED in the WAL and health turns
// degraded naming checkpoints after agent.checkpoint-timeout-ms. Once the
// job runs again with checkpointing (a new job: it lost every row it
// held), the agent resends them and every line is committed, the WAL
// empties and health recovers.
func TestCheckpointWithoutCheckpointing(t *testing.T) {
	skipShort(t)
	start := time.Now()
	rc := startReceiver(t, ckptToken, modelArgs("", "--checkpoint-interval", "0")...)
	root := newRoot(t, options{port: rc.port, guarantee: "CHECKPOINT", checkpointPollMs: 200, checkpointTimeoutMs: 2000, api: true})
	want := makeLines(t.Name(), 0, 2000)
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()

	waitStatus(t, root, 30*time.Second, "every line held as received", func(d ckptDoc) bool {
		return d.WAL.Received == int64(len(want))
	})
	// The timeout is 2 s: 15 s is a hang guard. A miss is reported and the
	// recovery below still checked.
	doc, degraded := pollStatus(t, root, 15*time.Second, func(d ckptDoc) bool {
		return d.Health != nil && d.Health.Reason != ""
	})
	switch {
	case !degraded:
		t.Errorf("health not degraded 15 s after 2,000 rows were held as received with checkpoint-timeout-ms 2000: %+v", doc.Health)
	case !doc.Health.Healthy || !strings.Contains(doc.Health.Reason, "checkpoint"):
		t.Errorf("health %+v, want degraded (still healthy) with a reason naming checkpoints", *doc.Health)
	default:
		if !strings.Contains(root.logText(), "has not completed a checkpoint") {
			t.Errorf("no ERROR about the missing checkpoints in the agent's log")
		}
	}
	if doc.WAL.Received != int64(len(want)) {
		t.Errorf("%d rows held as received, want all %d: nothing may leave the WAL without a checkpoint", doc.WAL.Received, len(want))
	}
	if n := len(rc.received()); n != 0 {
		t.Fatalf("%d lines committed by a job without checkpointing", n)
	}
	if !strings.Contains(root.logText(), "has not completed a checkpoint") {
		t.Errorf("no ERROR about the missing checkpoints in the agent's log")
	}
	rc.stop()

	rc = startReceiverAt(t, rc.port, ckptToken, modelArgs("", "--checkpoint-interval", "500ms")...)
	rc.waitDelivered(want, 30*time.Second)
	waitStatus(t, root, 20*time.Second, "the WAL emptied and health recovered", func(d ckptDoc) bool {
		return d.inWAL() == 0 && d.Health != nil && d.Health.Reason == ""
	})
	if code := root.stop(agent); code != 0 {
		t.Errorf("agent stop exit code %d", code)
	}
	rc.stop()
	d := checkDelivery(want, rc.received())
	t.Logf("after checkpointing came on: %s in %s; engine: %v", d, time.Since(start).Round(time.Millisecond), rc.modelFigures())
}

// CHECKPOINT mode while the job is killed and started with no state every
// 2 s: the rows it held are gone, as are the ids it knew; the agent asks
// about its received ids on each new session and resends what is lost.
// Duplicates are not bounded: a job with no state cannot tell a committed
// id from a lost one, so rows not yet acked at a restart come again.
func TestCheckpointFreshRestart(t *testing.T) {
	skipShort(t)
	start := time.Now()
	run := runFailoverScenario(t, "CHECKPOINT", false, "--checkpoint-interval", "500ms", "--restart-fresh-every", "2s")
	run.rc.waitDelivered(run.want, 45*time.Second)
	waitStatus(t, run.root, 20*time.Second, "the WAL emptied by checkpoints", func(d ckptDoc) bool { return d.inWAL() == 0 })
	fig := run.finish(t, "fresh_restarts")
	d := checkDelivery(run.want, run.rc.received())
	t.Logf("CHECKPOINT with fresh restarts: %s in %s; engine: fresh_restarts=%d checkpoints=%d lost_open_tx=%d lost_queued=%d commit_resend=%d",
		d, time.Since(start).Round(time.Millisecond), fig["fresh_restarts"], fig["checkpoints"], fig["lost_open_tx"], fig["lost_queued"], fig["commit_resend"])
	if len(d.missing) != 0 {
		t.Errorf("lines lost in CHECKPOINT mode: %s", d)
	}
}

// Edge agents → a relay in CHECKPOINT mode → the engine model failing
// over every 1.7 s: the relay's RECEIVED is durable (its WAL), and the
// relay keeps each row until the job's checkpoint covers it, so every
// line reaches the committed output although the job keeps losing what
// it held in memory.
func TestRelayCheckpointUpstream(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "engine-token-0123456789", modelArgs("", "--checkpoint-interval", "500ms", "--failover-every", "1700ms")...)
	hold := holdPort(t)
	relay := newRoot(t, options{port: rc.port, token: "engine-token-0123456789", api: true,
		guarantee: "CHECKPOINT", checkpointPollMs: 200, inputs: relayInput(hold.port, 2, "")})
	hold.release()
	relayP := relay.startReady()
	const perAgent, chunk = 3000, 100
	var want []string
	var roots []*agentRoot
	var procs []*proc
	var files []*writer
	for i := range 2 {
		r := newRoot(t, options{port: hold.port, token: agentToken(i)})
		roots, files = append(roots, r), append(files, r.createFile("in/app.log"))
		procs = append(procs, r.startReady())
	}
	lines := make([][]string, 2)
	for i := range 2 {
		lines[i] = makeLines(fmt.Sprintf("%s-a%d", t.Name(), i), 0, perAgent)
		want = append(want, lines[i]...)
	}
	for j := 0; j < perAgent; j += chunk { // about 4 s of writing, across failovers
		for i := range 2 {
			files[i].lines(lines[i][j : j+chunk])
		}
		time.Sleep(130 * time.Millisecond)
	}
	d := rc.waitDelivered(want, 3*deliverTimeout)
	fig := rc.modelFigures()
	t.Logf("2 agents → relay (CHECKPOINT) → model failing over: %d lines, %s; engine %v", len(want), d, fig)
	if fig["failovers"] == 0 {
		t.Fatalf("the job never failed over while the lines went through: the run tests nothing (figures %v)", fig)
	}
	for i, r := range roots {
		if code := r.stop(procs[i]); code != 0 {
			t.Errorf("agent %d stop exit code %d", i, code)
		}
	}
	if code := relay.stop(relayP); code != 0 {
		t.Errorf("relay stop exit code %d", code)
	}
}
