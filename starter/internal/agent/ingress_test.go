package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/output"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

const testToken = "test-token-1"

// engine is a loopback EdgeSocket ingress that records every record.
type engine struct {
	t   testing.TB
	srv *standin.Server
	mu  sync.Mutex
	got map[string]int
}

func startEngine(t testing.TB, addr string, faults standin.Faults, dec *codec.Decoder) *engine {
	t.Helper()
	e := &engine{t: t, got: map[string]int{}}
	srv, err := standin.New(standin.Config{
		Addr:    addr,
		Token:   testToken,
		Decoder: dec,
		Faults:  faults,
		Handler: func(_ int64, rec []byte) {
			e.mu.Lock()
			e.got[string(rec)]++
			e.mu.Unlock()
		},
		RejectGrace: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(func() { _ = srv.Close() })
	return e
}

func (e *engine) distinct() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.got)
}

// checkAll asserts that every payload arrived at least once, exactly as
// written, and returns the number of duplicates.
func (e *engine) checkAll(want []string) int {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	dups := 0
	for _, p := range want {
		n := e.got[p]
		if n == 0 {
			e.t.Fatalf("payload %s never delivered", p)
		}
		dups += n - 1
	}
	if len(e.got) != len(want) {
		e.t.Fatalf("engine got %d distinct records, want %d", len(e.got), len(want))
	}
	return dups
}

func transportConfig(t testing.TB, addr string) *testCfg {
	cfg := testConfig(t)
	tc := output.NewTransportConfig()
	tc.Client.Endpoint = addr
	tc.Client.Token = testToken
	tc.Client.InitialBackoff = 10 * time.Millisecond
	tc.Client.MaxBackoff = 200 * time.Millisecond
	tc.Client.ConnectTimeout = time.Second
	tc.Client.ReadTimeout = 2 * time.Second
	tc.Client.MaxReconnectCycles = 3
	tc.Client.MaxInFlight = 16
	cfg.Output.Type, cfg.Output.Options = output.TypeTransport, tc
	return cfg
}

func ingressOptions(t testing.TB, cfg *testCfg, home string, in *fakeInput) Options {
	return newOptions(t, cfg, home, in, nil)
}

func payloadsOf(from, to int) []string {
	var out []string
	for _, ev := range lineEvents("a.log", from, to) {
		out = append(out, string(ev.Payload))
	}
	return out
}

func TestDeliveryThroughIngressFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults standin.Faults
	}{
		{"no faults", standin.Faults{}},
		{"RETRY every 3rd batch", standin.Faults{RetryEvery: 3}},
		{"QUEUE_FULL every 5th batch", standin.Faults{QueueFullEvery: 5, QueueFullDelay: 5 * time.Millisecond}},
		{"connection cut after every 50th batch", standin.Faults{CutAfter: 50}},
		{"all at once, with reply delay", standin.Faults{RetryEvery: 7, QueueFullEvery: 11, QueueFullDelay: 2 * time.Millisecond, CutAfter: 97, ReplyDelay: 100 * time.Microsecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := startEngine(t, "127.0.0.1:0", tc.faults, nil)
			cfg := transportConfig(t, eng.srv.Addr())
			home := t.TempDir()
			in := &fakeInput{}
			in.push(lineEvents("a.log", 0, 1000)...)
			h := startRuntime(t, ingressOptions(t, cfg, home, in))
			transporttest.Eventually(t, 20*time.Second, "1000 acks", func() bool { return h.rt.Snapshot().Acked == 1000 })
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			dups := eng.checkAll(payloadsOf(0, 1000))
			st := h.rt.Snapshot()
			if st.Dead != 0 {
				t.Fatalf("%d rows DEAD", st.Dead)
			}
			if c := readCounts(t, home); c.Total() != 0 {
				t.Fatalf("WAL not empty after everything was acked: %+v", c)
			}
			t.Logf("duplicates %d, reconnects %d, failed %d, engine %+v", dups, st.Reconnects, st.Failed, eng.srv.Stats())
		})
	}
}

// refusals are the engine's answers that a setting of ours is wrong.
var refusals = []struct {
	name       string
	faults     standin.Faults
	want       error
	connection string
	code       int
	logged     string // the start of the ERROR logged at each refused try
}{
	{"AUTH_FAILED", standin.Faults{AuthReply: "AUTH_FAILED"}, transport.ErrAuthFailed, "auth_failed", exitcode.AuthFailed,
		"engine refused the token (AUTH_FAILED)"},
	{"DECRYPT_FAILED", standin.Faults{BatchReply: "DECRYPT_FAILED"}, transport.ErrDecryptFailed, "decrypt_failed", exitcode.DecryptFailed,
		"engine could not decrypt the payload (DECRYPT_FAILED)"},
}

func onRefusal(t testing.TB, cfg *testCfg, p output.RefusalPolicy) {
	t.Helper()
	switch o := cfg.Output.Options.(type) {
	case *output.ConsoleConfig:
		o.Transport.OnRefusal = p
	case *output.TransportConfig:
		o.OnRefusal = p
	default:
		t.Fatalf("output options are %T", cfg.Output.Options)
	}
}

// By default a refusal stops nothing: reading goes on into the WAL, no row
// is charged, the status says what is wrong, and once the engine accepts
// the agent (after a restart, or at a later try) every row arrives once.
func TestRefusalsKeepTheAgentReading(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			eng := startEngine(t, "127.0.0.1:0", tc.faults, nil)
			cfg := transportConfig(t, eng.srv.Addr())
			clientOptions(t, cfg).MaxBackoff = 50 * time.Millisecond
			home := t.TempDir()
			in := &fakeInput{}
			in.push(lineEvents("a.log", 0, 10)...)
			lines := newLineCounter()
			opts := ingressOptions(t, cfg, home, in)
			opts.Logger = slog.New(lines)
			h := startRuntime(t, opts)
			transporttest.Eventually(t, 10*time.Second, "three refused sends", func() bool { return h.rt.Snapshot().SendErrors >= 3 })
			transporttest.Eventually(t, 10*time.Second, "an ERROR naming the fix at each try", func() bool { return lines.count(tc.logged) >= 3 })
			in.push(lineEvents("a.log", 10, 20)...)
			transporttest.Eventually(t, 10*time.Second, "reading goes on", func() bool { return h.rt.Snapshot().RowsAppended == 20 })
			st := h.rt.Snapshot()
			if st.State != "running" || st.Connection != tc.connection || !strings.Contains(st.LastError, "must equal") {
				t.Fatalf("state %q connection %q last error %q, want running, %q and what to fix",
					st.State, st.Connection, st.LastError, tc.connection)
			}
			if st.Failed != 0 || st.Dead != 0 || st.Acked != 0 {
				t.Fatalf("failed %d dead %d acked %d while refused", st.Failed, st.Dead, st.Acked)
			}
			if err := h.stop(); err != nil {
				t.Fatalf("stop after refusals: %v", err)
			}
			checkRows(t, home, 20, func(r wal.Row) bool { return r.Status == wal.StatusPending && r.Attempts == 0 },
				"PENDING with 0 attempts: a refusal is no fault of the rows")

			// Restarted on the same WAL: still refused at first, then the
			// engine takes the setting and everything arrives, once.
			in = &fakeInput{}
			in.push(lineEvents("a.log", 20, 30)...)
			h = startRuntime(t, ingressOptions(t, cfg, home, in))
			transporttest.Eventually(t, 10*time.Second, "refused again", func() bool { return h.rt.Snapshot().Connection == tc.connection })
			eng.srv.SetFaults(standin.Faults{})
			transporttest.Eventually(t, 10*time.Second, "30 acks", func() bool { return h.rt.Snapshot().Acked == 30 })
			if st := h.rt.Snapshot(); st.Connection != "connected" {
				t.Fatalf("connection %q after the engine accepted", st.Connection)
			}
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			if dups := eng.checkAll(payloadsOf(0, 30)); dups != 0 {
				t.Fatalf("%d duplicates", dups)
			}
		})
	}
}

// output.on-refusal: exit keeps the Java agent's behaviour: the agent stops
// with the refusal's exit code, and the rows wait, uncharged, in the WAL.
func TestRefusalsStopTheAgentWithOnRefusalExit(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			eng := startEngine(t, "127.0.0.1:0", tc.faults, nil)
			cfg := transportConfig(t, eng.srv.Addr())
			onRefusal(t, cfg, output.RefusalExit)
			home := t.TempDir()
			in := &fakeInput{}
			in.push(lineEvents("a.log", 0, 10)...)
			h := startRuntime(t, ingressOptions(t, cfg, home, in))
			err := h.wait(10 * time.Second)
			if !errors.Is(err, tc.want) || exitcode.For(err) != tc.code {
				t.Fatalf("Run = %v (exit %d), want %v (exit %d)", err, exitcode.For(err), tc.want, tc.code)
			}
			if !strings.Contains(err.Error(), "must equal") {
				t.Fatalf("error %q does not say what to fix", err)
			}
			checkRows(t, home, 10, func(r wal.Row) bool { return r.Status == wal.StatusPending && r.Attempts == 0 },
				"PENDING with 0 attempts after the stop")
		})
	}
}

// checkRows asserts that the stopped agent's WAL holds n rows, each as ok
// says, and closes it again.
func checkRows(t *testing.T, home string, n int, ok func(wal.Row) bool, want string) {
	t.Helper()
	w, err := wal.Open(wal.Options{Path: home + "/data/wal.db", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var rows []wal.Row
	if err := w.View(func(tx *wal.ReadTx) (err error) { rows, err = tx.List(nil, 0, 0); return err }); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("WAL holds %d rows, want %d", len(rows), n)
	}
	for _, r := range rows {
		if !ok(r) {
			t.Fatalf("row %d: status %v attempts %d (%s), want %s", r.ID, r.Status, r.Attempts, r.Reason, want)
		}
	}
}

func TestRejectedIngressIsRetriedSlowly(t *testing.T) {
	eng := startEngine(t, "127.0.0.1:0", standin.Faults{Reject: true}, nil)
	cfg := transportConfig(t, eng.srv.Addr())
	clientOptions(t, cfg).MaxBackoff = 300 * time.Millisecond
	home := t.TempDir()
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 100)...)
	start := time.Now()
	h := startRuntime(t, ingressOptions(t, cfg, home, in))
	transporttest.Eventually(t, 5*time.Second, "4 connection attempts", func() bool { return eng.srv.Stats().Connections >= 4 })
	in.push(lineEvents("a.log", 100, 200)...)
	transporttest.Eventually(t, 5*time.Second, "reading goes on", func() bool { return h.rt.Snapshot().RowsAppended == 200 })
	// Jitter shortens the 300ms wait to no less than 150ms: no storm.
	conns, elapsed := eng.srv.Stats().Connections, time.Since(start)
	if most := uint64(elapsed/(150*time.Millisecond)) + 1; conns > most {
		t.Fatalf("%d connections in %v, want at most %d", conns, elapsed, most)
	}
	st := h.rt.Snapshot()
	if st.Connection != "rejected" || st.Failed != 0 || st.Dead != 0 {
		t.Fatalf("connection %q failed %d dead %d", st.Connection, st.Failed, st.Dead)
	}
	// The other collector goes away: everything is delivered.
	eng.srv.SetFaults(standin.Faults{})
	transporttest.Eventually(t, 10*time.Second, "200 acks", func() bool { return h.rt.Snapshot().Acked == 200 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	eng.checkAll(payloadsOf(0, 200))
}

func TestEngineDownAtStartThenUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cfg := transportConfig(t, addr)
	cfg.Retry.Backoff = 50 * time.Millisecond
	cfg.Retry.BackoffMax = 200 * time.Millisecond
	cfg.Retry.MaxAttempts = 2
	home := t.TempDir()
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 300)...)
	h := startRuntime(t, ingressOptions(t, cfg, home, in))
	transporttest.Eventually(t, 5*time.Second, "reading while the engine is down", func() bool { return h.rt.Snapshot().RowsAppended == 300 })
	transporttest.Eventually(t, 10*time.Second, "two failed sends", func() bool { return h.rt.Snapshot().SendErrors >= 2 })
	if st := h.rt.Snapshot(); st.Acked != 0 || st.Connection != "unavailable" {
		t.Fatalf("acked %d connection %q with no engine", st.Acked, st.Connection)
	}
	eng := startEngine(t, addr, standin.Faults{}, nil)
	in.push(lineEvents("a.log", 300, 400)...)
	transporttest.Eventually(t, 10*time.Second, "400 acks", func() bool { return h.rt.Snapshot().Acked == 400 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	eng.checkAll(payloadsOf(0, 400))
	if st := h.rt.Snapshot(); st.Dead != 0 || st.Failed != 0 {
		t.Fatalf("dead %d failed %d after an outage", st.Dead, st.Failed)
	}
}

func TestRestartDoesNotResendAckedRows(t *testing.T) {
	eng := startEngine(t, "127.0.0.1:0", standin.Faults{}, nil)
	cfg := transportConfig(t, eng.srv.Addr())
	home := t.TempDir()
	for round := 0; round < 3; round++ {
		in := &fakeInput{}
		in.push(lineEvents("a.log", round*200, (round+1)*200)...)
		h := startRuntime(t, ingressOptions(t, cfg, home, in))
		if round > 0 {
			if got := string(in.openOptions().Saved["a.log"]); got != itoa(round*200-1) {
				t.Fatalf("round %d: saved position %q", round, got)
			}
		}
		transporttest.Eventually(t, 10*time.Second, "acks", func() bool { return h.rt.Snapshot().Acked == 200 })
		// The status carries the EdgeSocket session's window after a send:
		// at least one line, at most output.max-in-flight.
		if w := h.rt.Snapshot().Window; w < 1 || w > 16 {
			t.Errorf("round %d: window %d after delivery, want 1..16", round, w)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	}
	if dups := eng.checkAll(payloadsOf(0, 600)); dups != 0 {
		t.Fatalf("%d duplicates without any failure", dups)
	}
}

func TestPacketModeDeliversExactPayloads(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	dec, err := codec.NewDecoder(codec.ModePacket, key)
	if err != nil {
		t.Fatal(err)
	}
	eng := startEngine(t, "127.0.0.1:0", standin.Faults{}, dec)
	cfg := transportConfig(t, eng.srv.Addr())
	tc := cfg.Output.Options.(*output.TransportConfig)
	tc.PacketMode.Value = codec.ModePacket
	tc.Compression.Value = codec.CompressionGzip
	tc.Encryption.Value = codec.EncryptionAESGCM
	tc.AESSecretKeyBase64 = base64.StdEncoding.EncodeToString(key)
	in := &fakeInput{}
	in.push(lineEvents("a.log", 0, 200)...)
	h := startRuntime(t, ingressOptions(t, cfg, t.TempDir(), in))
	transporttest.Eventually(t, 10*time.Second, "200 acks", func() bool { return h.rt.Snapshot().Acked == 200 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	eng.checkAll(payloadsOf(0, 200))
}

func itoa(i int) string { return string(lineEvent("", i).Pos.State) }
