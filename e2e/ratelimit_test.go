//go:build unix

package e2e

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// rateStatusDoc is the part of status --json the rate-cap test reads.
type rateStatusDoc struct {
	Running    bool `json:"running"`
	Management *struct {
		ConfigSource string `json:"config_source"`
	} `json:"management"`
	WAL struct {
		Pending int64 `json:"pending"`
		Sending int64 `json:"sending"`
	} `json:"wal"`
	Counters struct {
		RowsAppended         uint64  `json:"rows_appended"`
		Acked                uint64  `json:"acked"`
		SendThrottledSeconds float64 `json:"send_throttled_seconds"`
	} `json:"counters"`
	RateLimit *struct {
		EventsPerSecond   float64 `json:"events_per_second"`
		BurstEvents       int     `json:"burst_events"`
		BacklogETASeconds float64 `json:"backlog_eta_seconds"`
	} `json:"rate_limit"`
}

func rateStatus(t *testing.T, root *agentRoot) rateStatusDoc {
	t.Helper()
	out, _, code := root.cli("status", "--json")
	var doc rateStatusDoc
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
	}
	return doc
}

// A backlog drains at the send-rate cap: the whole file goes into the WAL
// at once while the cap holds the sending back, `status` shows the cap
// and the backlog's ETA at it, a reload raises the cap without replacing
// the output, and the engine gets every line exactly once.
func TestRateCapDrainsBacklog(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true, outputExtra: "  rate-limit:\n    events-per-second: 5\n"})
	want := makeLines(t.Name(), 0, 400)
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	started := time.Now()

	var doc rateStatusDoc
	eventually(t, deliverTimeout, "the whole file in the WAL", func() bool {
		doc = rateStatus(t, root)
		return doc.Counters.RowsAppended == uint64(len(want))
	})
	rl := doc.RateLimit
	if rl == nil || rl.EventsPerSecond != 5 || rl.BurstEvents != 5 {
		t.Fatalf("status --json rate_limit = %+v, want 5 events/s, burst 5", rl)
	}
	// The ETA is the backlog at the cap, from the same snapshot.
	if backlog := float64(doc.WAL.Pending + doc.WAL.Sending); math.Abs(rl.BacklogETASeconds-backlog/5) > 1e-6 {
		t.Errorf("backlog ETA %.3f s with %v rows queued at 5 events/s, want %.3f", rl.BacklogETASeconds, backlog, backlog/5)
	}
	out, _, code := root.cli("status")
	if code != 0 || !regexp.MustCompile(`rate limit:\s+5 events/s \(burst 5 events\); backlog ETA \S+ at the cap`).MatchString(out) {
		t.Errorf("status: exit %d, no rate limit line:\n%s", code, out)
	}
	t.Logf("status at 5 events/s:\n%s", out)

	// A few seconds at the cap, for the log: the rate is shown, not
	// asserted (the synctest suite holds it within 5 %).
	var acked uint64
	eventually(t, deliverTimeout, "25 rows acked at the cap", func() bool {
		acked = rateStatus(t, root).Counters.Acked
		return acked >= 25
	})
	took := time.Since(started)
	t.Logf("measured: %d events acked in %v at a cap of 5 events/s, burst 5 (%.1f/s)",
		acked, took.Round(time.Millisecond), float64(acked)/took.Seconds())

	root.opts.outputExtra = "  rate-limit:\n    events-per-second: 2000\n"
	root.writeConfig()
	if stdout, stderr, code := root.cli("reload"); code != 0 {
		t.Fatalf("reload exit %d: %s %s", code, stdout, stderr)
	}
	if d := rc.waitDelivered(want, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after raising the cap: %s", d)
	}
	eventually(t, deliverTimeout, "every row acked", func() bool {
		doc = rateStatus(t, root)
		return doc.Counters.Acked == uint64(len(want)) && doc.WAL.Pending == 0 && doc.WAL.Sending == 0
	})
	if doc.RateLimit == nil || doc.RateLimit.EventsPerSecond != 2000 || doc.RateLimit.BacklogETASeconds != 0 {
		t.Errorf("rate_limit after the reload = %+v, want 2000 events/s and nothing left", doc.RateLimit)
	}
	if doc.Counters.SendThrottledSeconds <= 0 {
		t.Errorf("send_throttled_seconds = %v after a backlog held back by the cap", doc.Counters.SendThrottledSeconds)
	}
	if !regexp.MustCompile(`"msg":"reload applied"[^\n]*"output_replaced":false`).MatchString(root.logText()) {
		t.Errorf("no reload applied without replacing the output in the log:\n%s", tail(root.path("log/edge-agent.log"), 20))
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	if strings.Contains(root.logText(), "dropped") {
		t.Errorf("the log mentions dropped events:\n%s", tail(root.path("log/edge-agent.log"), 20))
	}
}

// A remote config from the OpAMP server changes the cap like a reload:
// at once, without replacing the output, and the backlog the old cap held
// back is delivered exactly once.
func TestRateCapFromRemoteConfig(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	root := newRoot(t, options{port: rc.port, api: true, extra: managed(srv.Endpoint()),
		outputExtra: "  rate-limit:\n    events-per-second: 2\n"})
	want := makeLines(t.Name(), 0, 300)
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	defer root.stop(agent)
	uid := root.instanceUID()
	eventually(t, deliverTimeout, "the whole file in the WAL", func() bool {
		return rateStatus(t, root).Counters.RowsAppended == uint64(len(want))
	})

	remote := *root
	remote.opts.extra = "" // management always comes from the local file
	remote.opts.outputExtra = "  rate-limit:\n    events-per-second: 1000\n    burst: 50\n"
	hash := srv.Push([]byte(remote.configText()))
	waitAgent(t, srv, uid, "APPLIED", func(a opampdev.Agent) bool {
		return a.RemoteStatus() == "APPLIED" && string(a.RemoteConfig.GetLastRemoteConfigHash()) == string(hash)
	})
	if d := rc.waitDelivered(want, deliverTimeout); d.duplicates != 0 {
		t.Fatalf("after the remote config: %s", d)
	}
	doc := rateStatus(t, root)
	if doc.RateLimit == nil || doc.RateLimit.EventsPerSecond != 1000 || doc.RateLimit.BurstEvents != 50 ||
		doc.Management == nil || doc.Management.ConfigSource != "remote" {
		t.Errorf("status --json: rate_limit %+v, management %+v; want the remote cap in force", doc.RateLimit, doc.Management)
	}
	if !regexp.MustCompile(`"msg":"reload applied"[^\n]*"output_replaced":false`).MatchString(root.logText()) {
		t.Errorf("no reload applied without replacing the output in the log:\n%s", tail(root.path("log/edge-agent.log"), 20))
	}
}
