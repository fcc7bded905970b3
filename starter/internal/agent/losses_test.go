package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// An input's loss report (input.Event.Loss) becomes, with agent.account,
// a gap record sent between the rows read before and after it, naming
// the file, the byte offsets and the bytes, counting no row; the audit of
// what the engine got still adds up. With account off nothing is added:
// the engine gets the input's rows as they were read.
func TestInputLossIsAGapRecord(t *testing.T) {
	loss := input.Loss{Reason: input.LossGone, Path: "/logs/app.log.1", From: 100, To: 350}
	for _, account := range []bool{true, false} {
		t.Run(map[bool]string{true: "account", false: "off"}[account], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				cfg.Agent.Account = account
				clientOptions(t, cfg).MaxInFlight = 1
				in := &fakeInput{}
				in.push(lineEvents("a.log", 0, 3)...)
				in.push(input.Event{Pos: input.Position{Key: "b.log"}, Loss: &loss})
				in.push(lineEvents("a.log", 3, 5)...)
				snd := newFakeSender(nil)
				h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, snd))
				want := 5
				if account {
					want = 6
				}
				transporttest.Eventually(t, time.Minute, "every row delivered", func() bool {
					st := h.rt.Snapshot()
					return in.left() == 0 && st.Queue.Pending == 0 && st.Queue.Sending == 0 && len(snd.payloads()) == want
				})
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				snd.mu.Lock()
				order := snd.order
				snd.mu.Unlock()
				var gaps []int
				for i, b := range order {
					if bytes.Contains(b.Payload, []byte(`"_gap":true`)) {
						gaps = append(gaps, i)
					}
				}
				if !account {
					if len(gaps) != 0 || bytes.Contains(order[0].Payload, []byte(`"_seq"`)) {
						t.Fatalf("account off: sent %s", sentText(order))
					}
					return
				}
				if len(gaps) != 1 || gaps[0] != 3 {
					t.Fatalf("gap records at %v of %s, want one after the 3 rows read before the loss", gaps, sentText(order))
				}
				var rec struct {
					Input   string   `json:"_input"`
					Reason  string   `json:"reason"`
					Count   *int64   `json:"count"`
					File    string   `json:"file"`
					Offsets [2]int64 `json:"offsets"`
					Bytes   int64    `json:"bytes"`
					Seq     *uint64  `json:"_seq"`
				}
				p := order[gaps[0]].Payload
				if err := json.Unmarshal(p, &rec); err != nil {
					t.Fatalf("gap record %s: %v", p, err)
				}
				if rec.Input == "" || rec.Reason != loss.Reason || rec.Count == nil || *rec.Count != 0 || rec.File != loss.Path ||
					rec.Offsets != [2]int64{100, 350} || rec.Bytes != 250 || rec.Seq != nil {
					t.Fatalf("gap record %s, want input, reason %s, count 0, file, offsets [100,350], 250 bytes, no _seq", p, loss.Reason)
				}
				rep := auditSent(t, snd)
				if !rep.OK() || len(rep.Streams) != 1 || rep.Streams[0].Max != 5 || rep.Streams[0].Rows != 5 || rep.Streams[0].UnreadBytes != 250 {
					t.Fatalf("audit %+v, want one stream of 5 rows, complete, 250 bytes never read", rep)
				}
			})
		})
	}
}

func sentText(bs []transport.Batch) string {
	var b strings.Builder
	for _, x := range bs {
		fmt.Fprintf(&b, "%d %s\n", x.ID, x.Payload)
	}
	return b.String()
}
