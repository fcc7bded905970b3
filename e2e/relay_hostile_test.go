//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flood keeps n connections open to addr from the loopback addresses
// srcs, each silent or sending half a token line, redialling each one the
// listener closes, until stop (which the test's cleanup also runs, so a
// failed test does not leave it running). Bounded: each worker dials at
// most maxDialsPerWorker times, and all of them together at most once per
// floodDialEvery.
type flood struct {
	dials, live atomic.Int64
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	tick        *time.Ticker
	once        sync.Once
}

const maxDialsPerWorker = 10_000

// floodDialEvery paces the whole flood. The attacker here shares the
// machine's cores with the agent it attacks; unpaced, its redial loop
// measures the CPU scheduler rather than the agent. Paced at 2,000 dials a
// second it still fills any budget in about a second and evicts thousands
// of connections while the test's sender works.
const floodDialEvery = 500 * time.Microsecond

func startFlood(t *testing.T, addr string, srcs []string, silent, halfAuth int) *flood {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &flood{cancel: cancel, tick: time.NewTicker(floodDialEvery)}
	worker := func(i int, half bool) {
		defer f.wg.Done()
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(srcs[i%len(srcs)])}}
		var buf [64]byte // io.Copy would allocate 32 KiB per connection
		for range maxDialsPerWorker {
			select {
			case <-ctx.Done():
				return
			case <-f.tick.C:
			}
			c, err := d.DialContext(ctx, "tcp", addr)
			f.dials.Add(1)
			if err != nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			f.live.Add(1)
			if half {
				_, _ = io.WriteString(c, "__AUTH__:half-a-tok")
			}
			stop := context.AfterFunc(ctx, func() { _ = c.Close() })
			for range 1000 { // until the relay closes it, or stop; bounded
				if _, err := c.Read(buf[:]); err != nil {
					break
				}
			}
			stop()
			_ = c.Close()
			f.live.Add(-1)
		}
	}
	for i := range silent + halfAuth {
		f.wg.Add(1)
		go worker(i, i >= silent)
	}
	t.Cleanup(f.stop)
	return f
}

func (f *flood) stop() {
	f.once.Do(func() {
		f.cancel()
		f.wg.Wait()
		f.tick.Stop()
	})
}

// metricSum sums the samples of a metric whose labels contain match.
func metricSum(text, name, match string) float64 {
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) || !strings.Contains(line, match) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// collectorConnectedAt is when the relay's log says the collector with
// token name first authenticated.
func collectorConnectedAt(t *testing.T, log, name string) time.Time {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"msg":"edgesocket collector connected"`) || !strings.Contains(line, `"token_name":"`+name+`"`) {
			continue
		}
		var rec struct {
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err == nil {
			return rec.Time
		}
	}
	t.Fatalf("the relay's log has no connection of %s", name)
	return time.Time{}
}

// floodSources are the attackers' addresses; collectors connect from
// 127.0.0.1.
var floodSources = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"}

// A relay under a flood of silent, half-AUTH and both kinds of
// connections (2,000 each; 4,000 for both), redialled as the relay closes
// them, from eight addresses: an edge agent that connects during the
// flood delivers everything. The time from the agent's start to full
// delivery, and the relay's RSS and descriptors, are reported per flood;
// the assertion is on delivery only (bounded generously), so a slow
// machine does not fail it from timing.
func TestRelayFloodOfUnauthenticatedDoesNotLockOut(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "engine-token-0123456789")
	hold := holdPort(t)
	relay := newRoot(t, options{port: rc.port, token: "engine-token-0123456789", api: true,
		inputs: relayInput(hold.port, 4, "    auth-log-interval-ms: 1000\n")})
	hold.release()
	rp := relay.startReady()
	addr := "127.0.0.1:" + strconv.Itoa(hold.port)
	rss0, fds0 := procFigures(rp.pid())
	t.Logf("relay before any flood: RSS %d KiB, %d fds", rss0, fds0)

	floods := []struct {
		name             string
		silent, halfAuth int
	}{
		{"no flood (baseline)", 0, 0},
		{"2000 silent", 2000, 0},
		{"2000 half-AUTH", 0, 2000},
		{"2000 silent + 2000 half-AUTH", 2000, 2000},
	}
	var all []string
	for i, fl := range floods {
		f := startFlood(t, addr, floodSources, fl.silent, fl.halfAuth)
		if fl.silent+fl.halfAuth > 0 {
			eventually(t, 60*time.Second, "the flood to dial every connection at least once", func() bool {
				return f.dials.Load() >= int64(fl.silent+fl.halfAuth)
			})
			// The relay has been evicting the flood for a while: the
			// agent connects into a full budget.
			_, metrics := httpGet(t, relay.apiBase()+"/metrics")
			if ev := metricSum(metrics, "edge_agent_relay_unauthenticated_evicted_total", `input="relay"`); ev < 100 {
				t.Errorf("%s: only %v evictions before the agent connects: the flood does not fill the budget", fl.name, ev)
			}
		}

		lines := makeLines(fmt.Sprintf("%s-%d", t.Name(), i), 0, 2000)
		all = append(all, lines...)
		agent := newRoot(t, options{port: hold.port, token: agentToken(i)})
		agent.createFile("in/app.log").lines(lines)
		start := time.Now()
		relayCPU, selfCPU := procCPU(rp.pid()).Seconds(), procCPU(os.Getpid()).Seconds()
		ap := agent.start()
		d := rc.waitDelivered(all, deliverTimeout)
		done := time.Now()
		relayCPU, selfCPU = procCPU(rp.pid()).Seconds()-relayCPU, procCPU(os.Getpid()).Seconds()-selfCPU
		in := collectorConnectedAt(t, relay.logText(), fmt.Sprintf("edge-%d", i))
		rss, fds := procFigures(rp.pid())
		t.Logf("%s: agent in %.2f s after its start, its 2000 lines delivered %.2f s after it got in (%.2f s after its start; %s); relay RSS %d KiB, %d fds, %.1f CPU-s; flood (this test) %.1f CPU-s, dials %d, live %d",
			fl.name, in.Sub(start).Seconds(), done.Sub(in).Seconds(), done.Sub(start).Seconds(), d, rss, fds, relayCPU, selfCPU, f.dials.Load(), f.live.Load())
		if code := agent.stop(ap); code != 0 {
			t.Errorf("%s: agent stop exit code %d", fl.name, code)
		}
		f.stop()
	}
	_, metrics := httpGet(t, relay.apiBase()+"/metrics")
	t.Logf("relay counts: timeout %v, closed %v, evicted %v",
		metricSum(metrics, "edge_agent_relay_auth_failures_total", `reason="timeout"`),
		metricSum(metrics, "edge_agent_relay_auth_failures_total", `reason="closed"`),
		metricSum(metrics, "edge_agent_relay_unauthenticated_evicted_total", ""))
	if n := strings.Count(relay.logText(), "failed to authenticate"); n > 200 {
		t.Errorf("%d log lines about failed authentications: want them aggregated", n)
	}
	if got := relay.logText(); strings.Contains(got, "half-a-tok") {
		t.Error("the relay logs what a client sent before authenticating")
	}
	rc.waitDelivered(all, deliverTimeout)
	if code := relay.stop(rp); code != 0 {
		t.Errorf("relay stop exit code %d", code)
	}
}

// Wrong tokens from one address, 32 at a time for 3 s, are slowed down:
// far fewer are checked than an unslowed relay answers (about 17,000 a
// second), every check is counted in /metrics as wrong_token, and the
// log has aggregate lines that hold none of the guesses. A collector from
// another address meanwhile gets in at once.
func TestRelayWrongTokenFloodIsSlowedAndCounted(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "engine-token-0123456789")
	hold := holdPort(t)
	relay := newRoot(t, options{port: rc.port, token: "engine-token-0123456789", api: true,
		inputs: relayInput(hold.port, 1, "    auth-log-interval-ms: 500\n")})
	hold.release()
	rp := relay.startReady()
	addr := "127.0.0.1:" + strconv.Itoa(hold.port)

	var answered, attempts atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.20")}}
			for i := 0; i < 100_000 && ctx.Err() == nil; i++ {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					continue
				}
				attempts.Add(1)
				stop := context.AfterFunc(ctx, func() { _ = c.Close() })
				_, _ = fmt.Fprintf(c, "__AUTH__:guess-%d-%d\n", w, i)
				line, _ := bufio.NewReader(c).ReadString('\n')
				if line == "AUTH_FAILED\n" {
					answered.Add(1)
				}
				stop()
				_ = c.Close()
			}
		}()
	}
	// A collector from another address during the flood.
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "__AUTH__:%s\n", agentToken(0))
	if line, err := bufio.NewReader(c).ReadString('\n'); line != "ACK\n" {
		t.Errorf("a collector from a clean address during the flood got %q, %v; want ACK", line, err)
	}
	_ = c.Close()
	wg.Wait()

	var metrics string
	var checked, throttled float64
	eventually(t, 10*time.Second, "every answered guess counted in /metrics", func() bool {
		_, metrics = httpGet(t, relay.apiBase()+"/metrics")
		checked = metricSum(metrics, "edge_agent_relay_auth_failures_total", `reason="wrong_token"`)
		throttled = metricSum(metrics, "edge_agent_relay_auth_failures_total", `reason="throttled"`)
		return checked >= float64(answered.Load())
	})
	t.Logf("3 s of wrong tokens from one address, 32 at a time: %d connections, %d answered AUTH_FAILED; counted %v wrong_token (checked), %v throttled (evicted while slowed, never checked), %v evicted before their line was read",
		attempts.Load(), answered.Load(), checked, throttled, metricSum(metrics, "edge_agent_relay_unauthenticated_evicted_total", ""))
	if checked == 0 {
		t.Fatal("no wrong token was checked at all")
	}
	// The other guesses were evicted before their line was read: counted
	// as evictions.
	evicted := metricSum(metrics, "edge_agent_relay_unauthenticated_evicted_total", "")
	if checked+throttled+evicted < float64(attempts.Load())*9/10 {
		t.Errorf("%d guesses sent, only %v counted (%v evicted before their line was read)", attempts.Load(), checked+throttled+evicted, evicted)
	}
	// Each check after the first waits 250 ms doubling to 5 s, holding
	// one of the address's 8 places: a few dozen checks in 3 s at most,
	// whatever the machine's speed.
	if checked > 200 {
		t.Errorf("%v wrong tokens checked in 3 s from one address: not slowed", checked)
	}
	eventually(t, 10*time.Second, "an aggregate log line", func() bool {
		return strings.Contains(relay.logText(), "failed to authenticate since the last report")
	})
	if got := relay.logText(); strings.Contains(got, "guess-") {
		t.Error("the relay logs a presented token")
	}
	if code := relay.stop(rp); code != 0 {
		t.Errorf("relay stop exit code %d", code)
	}
}

// A PACKET relay with an AES key stores an encrypted agent's events and
// refuses an unencrypted one's (DECRYPT_FAILED: nothing of it reaches the
// engine), unless allow-unencrypted is set.
func TestRelayWithKeyRefusesUnencrypted(t *testing.T) {
	skipShort(t)
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i * 7)
	}
	keyB64 := base64.StdEncoding.EncodeToString(key)
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow-unencrypted=%v", allow), func(t *testing.T) {
			extra := "    packet-mode: PACKET\n    aes-secret-key-base64: " + keyB64 + "\n"
			if allow {
				extra += "    allow-unencrypted: true\n"
			}
			f := newRelayFleet(t, 2, extra, func(i int) options {
				if i == 0 {
					return options{packetMode: "PACKET", compression: "gzip", encryption: "aes_gcm", keyB64: keyB64}
				}
				return options{packetMode: "PACKET", compression: "gzip"}
			})
			enc := makeLines(t.Name()+"-encrypted", 0, 200)
			plain := makeLines(t.Name()+"-plain", 0, 200)
			f.files[0].lines(enc)
			f.files[1].lines(plain)
			if allow {
				f.rc.waitDelivered(append(append([]string(nil), enc...), plain...), deliverTimeout)
			} else {
				f.rc.waitDelivered(enc, deliverTimeout)
				eventually(t, 30*time.Second, "the relay refusing the unencrypted agent's batches", func() bool {
					_, m := httpGet(t, f.relay.apiBase()+"/metrics")
					return metricSum(m, "edge_agent_relay_batches_refused_total", `name="edge-1"`) > 0
				})
				if got := f.rc.received(); got[plain[0]] > 0 {
					t.Error("an unencrypted agent's lines reached the engine through a relay with a key")
				}
				if st := f.relay.logText(); !strings.Contains(st, "requires encryption") {
					t.Error("the relay's log does not say why it refuses the unencrypted batches")
				}
			}
			f.stopAll()
		})
	}
}
