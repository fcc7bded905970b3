//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"

	"github.com/edge-agent/edge-agent/bench/internal/proc"
)

const sinkToken = "bench-sink-token"

// apiToken is the relay's http.token: its profiler needs one.
const apiToken = "bench-api-token"

func tokenOf(i int) string { return fmt.Sprintf("bench-collector-token-%05d", i) }

func run(o options) error {
	agent, err := filepath.Abs(o.agent)
	if err != nil {
		return err
	}
	if st, err := os.Stat(agent); err != nil || st.IsDir() {
		return fmt.Errorf("-agent %s: not a file (run make build first)", o.agent)
	}
	root, err := os.MkdirTemp("", "edge-agent-bench-relay-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", root)
	} else {
		defer os.RemoveAll(root)
	}

	var sunk atomic.Int64
	var sinkAddr string
	if o.receiver != "" {
		addr, stop, err := startReceiver(o.receiver, root, &sunk)
		if err != nil {
			return err
		}
		defer stop()
		sinkAddr = addr
	} else {
		sink, err := standin.New(standin.Config{Token: sinkToken, Handler: func(int64, []byte) { sunk.Add(1) }})
		if err != nil {
			return err
		}
		if err := sink.Start(context.Background()); err != nil {
			return fmt.Errorf("start the sink: %w", err)
		}
		defer sink.Close()
		sinkAddr = sink.Addr()
	}

	listen, err := freeAddr()
	if err != nil {
		return err
	}
	httpSection := "http:\n  listen: \"off\"\n"
	apiAddr := ""
	if o.pprof != "" {
		if apiAddr, err = freeAddr(); err != nil {
			return err
		}
		httpSection = fmt.Sprintf("http:\n  listen: %q\n  token: %s\n  pprof: true\n", apiAddr, apiToken)
	}
	var tokens strings.Builder
	for i := range o.collectors {
		fmt.Fprintf(&tokens, "c%05d %s\n", i, tokenOf(i))
	}
	tokensFile := filepath.Join(root, "tokens")
	if err := os.WriteFile(tokensFile, []byte(tokens.String()), 0o600); err != nil {
		return err
	}
	conf := filepath.Join(root, "agent.yaml")
	bulk := ""
	if o.bulk > 0 {
		bulk = fmt.Sprintf("  bulk-max-size: %d\n", o.bulk)
	}
	maxBytes := ""
	if o.maxBytes > 0 {
		maxBytes = fmt.Sprintf("  max-bytes: %d\n", o.maxBytes)
	}
	yaml := fmt.Sprintf(`agent:
  flush-interval-ms: 20
%sinputs:
  - id: relay
    type: edgesocket
    listen: %q
    tokens-file: %q
    max-connections: %d
queue:
  path: %q
%soutput:
  type: transport
  endpoint: %q
  token: %s
%slog:
  file: %q
`, bulk, listen, tokensFile, o.collectors+16, filepath.Join(root, "data", "wal.db"), maxBytes, sinkAddr, sinkToken, httpSection, filepath.Join(root, "edge-agent.log"))
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(root, "agent.out"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(agent, "start", "--config", conf)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, logf, logf
	cmd.Env = append(os.Environ(), "EDGE_AGENT_HOME="+root)
	if o.memLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+o.memLimit)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", agent, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopAgent := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill() // this PID only
			<-exited
		}
	}
	defer stopAgent()
	if err := waitListening(listen, exited); err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(root, "edge-agent.log"))
	}

	peak := &peakRSS{pid: pid}
	rss0, _ := proc.Read(pid)

	// Connect every collector with one batch, so the RSS per idle
	// connection can be read before the load.
	cols := make([]*collector, o.collectors)
	for i := range cols {
		c, err := newCollector(o, listen, i)
		if err != nil {
			return err
		}
		cols[i] = c
		defer c.cl.Close()
	}
	if err := connectAll(cols); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	rss1, _ := proc.Read(pid)
	peak.sample()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range cols {
		wg.Add(1)
		go func() { defer wg.Done(); c.loop(ctx) }()
	}
	sampler := time.NewTicker(200 * time.Millisecond)
	defer sampler.Stop()
	wait := func(d time.Duration) error {
		end := time.After(d)
		for {
			select {
			case <-end:
				return nil
			case <-sampler.C:
				peak.sample()
			case err := <-exited:
				exited <- err
				return fmt.Errorf("the relay exited: %v", err)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "bench-relay: %d collectors connected; warm-up %s, window %s\n", o.collectors, o.warmup, o.duration)
	if err := wait(o.warmup); err != nil {
		cancel()
		wg.Wait()
		return err
	}
	startCounts, startSunk, startCPU, t0 := counts(cols), sunk.Load(), cpuOf(pid), time.Now()
	selfCPU0 := cpuOf(os.Getpid())
	profiled := make(chan error, 1)
	if o.pprof != "" {
		go func() { profiled <- saveProfile(apiAddr, o.pprof, o.duration) }()
	} else {
		profiled <- nil
	}
	err = wait(o.duration)
	if o.pprof != "" {
		if herr := saveHeap(apiAddr, o.pprof+".heap"); herr != nil {
			fmt.Fprintln(os.Stderr, "bench-relay: heap profile:", herr)
		}
	}
	endCounts, endSunk, endCPU, el := counts(cols), sunk.Load(), cpuOf(pid), time.Since(t0).Seconds()
	selfCPU := cpuOf(os.Getpid()) - selfCPU0
	if perr := <-profiled; perr != nil {
		fmt.Fprintln(os.Stderr, "bench-relay: cpu profile:", perr)
	}
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}

	per := make([]float64, len(cols))
	var total float64
	for i := range cols {
		per[i] = float64(endCounts[i] - startCounts[i])
		total += per[i]
	}
	sort.Float64s(per)
	mean := total / float64(len(per))
	var refused int64
	for _, c := range cols {
		refused += c.failed.Load()
	}
	cpu := endCPU - startCPU
	limit := o.memLimit
	if limit == "" {
		limit = "the agent's default"
	}
	where := "in this process"
	if o.receiver != "" {
		where = "an edgesocket-receiver process"
	}
	fmt.Printf("edge-agent relay: %s; %d collectors (client library, window %d, %d batches per Send, %d-byte lines) -> relay (queue.fsync on, GOMEMLIMIT %s) -> sink (%s)\n",
		agent, o.collectors, o.inFlight, o.batch, o.lineBytes, limit, where)
	fmt.Printf("%-44s %s\n", "measured window", fmt.Sprintf("%.1f s after %.0f s of warm-up", el, o.warmup.Seconds()))
	fmt.Printf("%-44s %.0f\n", "lines/s stored by the relay (RECEIVED)", total/el)
	fmt.Printf("%-44s %.0f\n", "lines/s delivered to the sink", float64(endSunk-startSunk)/el)
	if total > 0 {
		fmt.Printf("%-44s %.2f (relay process, %.1f CPU-s in the window)\n", "CPU-s per 1M lines stored", cpu/total*1e6, cpu)
	}
	fmt.Printf("%-44s %.1f CPU-s in the window (collectors and sink share the machine with the relay)\n", "this process", selfCPU)
	fmt.Printf("%-44s %.1f\n", "peak RSS MiB (VmHWM)", float64(peak.hwm)/(1<<20))
	fmt.Printf("%-44s %.1f (%.1f MiB idle before, %.1f MiB with %d idle connections)\n", "RSS KiB per connection",
		float64(rss1.RSSBytes-rss0.RSSBytes)/1024/float64(o.collectors), float64(rss0.RSSBytes)/(1<<20), float64(rss1.RSSBytes)/(1<<20), o.collectors)
	if mean > 0 {
		fmt.Printf("%-44s %.2f (slowest %.0f, median %.0f, fastest %.0f lines in the window)\n", "fairness: slowest / mean", per[0]/mean,
			per[0], per[len(per)/2], per[len(per)-1])
	}
	fmt.Printf("%-44s %d\n", "batches not RECEIVED (failed after retries)", refused)
	return nil
}

type collector struct {
	cl      *client.Client
	batches []transport.Batch
	nextID  int64
	ok      atomic.Int64
	failed  atomic.Int64
}

func newCollector(o options, addr string, i int) (*collector, error) {
	cfg := client.DefaultConfig()
	cfg.Endpoint, cfg.Token, cfg.MaxInFlight = addr, tokenOf(i), o.inFlight
	cfg.InitialBackoff, cfg.MaxBackoff = 50*time.Millisecond, time.Second
	cl, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf(`{"collector":%d,"msg":"`, i)
	pad := max(0, o.lineBytes-len(head)-2)
	payload := []byte(head + strings.Repeat("x", pad) + `"}`)
	c := &collector{cl: cl, batches: make([]transport.Batch, o.batch)}
	for k := range c.batches {
		c.batches[k].Payload = payload
	}
	return c, nil
}

// send sends the first n batches with the next ids and counts what was
// RECEIVED.
func (c *collector) send(ctx context.Context, n int) error {
	bs := c.batches[:n]
	for k := range bs {
		c.nextID++
		bs[k].ID = c.nextID
	}
	res, err := c.cl.Send(ctx, bs)
	for _, r := range res {
		switch r.Outcome {
		case transport.Received:
			c.ok.Add(1)
		case transport.Failed:
			c.failed.Add(1)
		}
	}
	return err
}

func (c *collector) loop(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.send(ctx, len(c.batches)); err != nil && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// connectAll has each collector send one batch, 64 at a time.
func connectAll(cols []*collector) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 64)
	errs := make(chan error, len(cols))
	var wg sync.WaitGroup
	for _, c := range cols {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.send(ctx, 1); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("connect the collectors: %w", err)
	}
	return nil
}

func counts(cols []*collector) []int64 {
	out := make([]int64, len(cols))
	for i, c := range cols {
		out[i] = c.ok.Load()
	}
	return out
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// waitListening waits until the relay accepts connections (up to 30 s).
func waitListening(addr string, exited <-chan error) error {
	for range 300 {
		select {
		case err := <-exited:
			return fmt.Errorf("the relay exited at start: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the relay did not listen within 30 s")
}

func cpuOf(pid int) float64 {
	s, _ := proc.Read(pid)
	return s.CPUSeconds
}

// saveProfile fetches a CPU profile of the relay, d long, into path.
func saveProfile(api, path string, d time.Duration) error {
	secs := max(1, int(d.Seconds())-1)
	hc := &http.Client{Timeout: d + 30*time.Second}
	resp, err := apiGet(hc, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", api, secs))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// apiGet asks the relay's API with its token.
func apiGet(hc *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	return hc.Do(req)
}

// saveHeap fetches a heap profile of the relay into path.
func saveHeap(api, path string) error {
	resp, err := apiGet(http.DefaultClient, fmt.Sprintf("http://%s/debug/pprof/heap", api))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// startReceiver runs the sink as an edgesocket-receiver process (records
// to /dev/null), counting what it reports into sunk; stop ends it by its
// PID.
func startReceiver(bin, root string, sunk *atomic.Int64) (string, func(), error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return "", nil, err
	}
	addrFile := filepath.Join(root, "sink.addr")
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--token", sinkToken,
		"--out", os.DevNull, "--stats-interval", "100ms", "--quiet")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // this PID only
			<-done
		}
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			for _, f := range strings.Fields(sc.Text()) {
				if v, ok := strings.CutPrefix(f, "records="); ok {
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						sunk.Store(n)
					}
				}
			}
		}
	}()
	for range 300 {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b)), stop, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	return "", nil, errors.New("the sink receiver did not listen within 6 s")
}

type peakRSS struct {
	pid int
	hwm int64
}

func (p *peakRSS) sample() {
	if s, err := proc.Read(p.pid); err == nil {
		p.hwm = max(p.hwm, s.HWMBytes)
	}
}
