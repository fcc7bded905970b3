//go:build linux

package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/protocol"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"

	"github.com/edge-agent/edge-agent/bench/internal/proc"

	"github.com/edge-agent/edge-agent/bench/internal/figures"
)

const token = "bench-token"

// apiToken is the agent's http.token: its status and profiler need one.
const apiToken = "bench-api-token"

// setup resolves the agent binary and makes the run's temporary root;
// done removes the root unless -keep.
func setup(o options, prefix string) (agent, root string, done func(), err error) {
	agent, err = filepath.Abs(o.agent)
	if err != nil {
		return "", "", nil, fmt.Errorf("-agent %s: %w", o.agent, err)
	}
	if st, err := os.Stat(agent); err != nil || st.IsDir() {
		return "", "", nil, fmt.Errorf("-agent %s: not a file (run make build first): %v", o.agent, err)
	}
	root, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", "", nil, fmt.Errorf("temporary directory: %w", err)
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", root)
		return agent, root, func() {}, nil
	}
	return agent, root, func() { os.RemoveAll(root) }, nil
}

func run(o options) error {
	agent, root, done, err := setup(o, "edge-agent-bench-")
	if err != nil {
		return err
	}
	defer done()
	key := make([]byte, codec.KeySize)
	_, _ = rand.Read(key)
	b := &bench{o: o, agent: agent, root: root, key: key, data: map[dataKey]dataFile{}}

	all := map[string][]result{}
	for run := 1; run <= o.runs; run++ {
		for _, c := range o.configs { // interleaved, so a noisy minute hits every config
			r, err := b.runOne(c, run)
			if err != nil {
				r.note = err.Error()
				fmt.Fprintf(os.Stderr, "run %d %s: %v\n", run, c, err)
			}
			fmt.Fprintf(os.Stderr, "run %d/%d %-9s ok=%v lines=%d wall=%.2fs cpu=%.2fs rss=%.1fMiB write=%.0fMB dups=%d %s\n",
				run, o.runs, c, r.ok, r.lines, r.wall, r.cpu, float64(r.hwm)/(1<<20), float64(r.writeBytes)/1e6, r.dups, r.note)
			all[c] = append(all[c], r)
		}
	}
	fmt.Printf("edge-agent end to end: %s; %d run(s) per config, median (min..max)\n", agent, o.runs)
	printTable(os.Stdout, o.configs, all)
	raw, bolt := all["raw-fsync"], all["bolt"]
	if len(raw) > 0 && len(bolt) > 0 {
		rate := func(r result) float64 { return float64(r.lines) / r.wall }
		perLine := func(r result) float64 { return float64(r.writeBytes) / float64(r.lines) }
		fmt.Printf("WAL efficiency vs bare bbolt (medians): lines/s %.2f, disk bytes per line %.2f (agent %.0f, bbolt %.0f)\n",
			figures.Median(column(raw, rate))/figures.Median(column(bolt, rate)),
			figures.Median(column(raw, perLine))/figures.Median(column(bolt, perLine)),
			figures.Median(column(raw, perLine)), figures.Median(column(bolt, perLine)))
	}
	return nil
}

type dataFile struct {
	path  string
	bytes int64
}

type bench struct {
	o     options
	agent string
	root  string
	key   []byte
	data  map[dataKey]dataFile
}

// dataKey names a generated file: its lines, and whether all are JSON.
type dataKey struct {
	n       int
	allJSON bool
}

// dataFor generates (once) the file of n lines, all JSON with allJSON.
func (b *bench) dataFor(n int, allJSON bool) (dataFile, error) {
	k := dataKey{n, allJSON}
	if d, ok := b.data[k]; ok {
		return d, nil
	}
	path := filepath.Join(b.root, fmt.Sprintf("log-%d-%v.log", n, allJSON))
	f, err := os.Create(path)
	if err != nil {
		return dataFile{}, fmt.Errorf("create %s: %w", path, err)
	}
	size, err := generate(f, n, 1, allJSON)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dataFile{}, err
	}
	d := dataFile{path: path, bytes: size}
	b.data[k] = d
	return d, nil
}

func (b *bench) runOne(config string, run int) (result, error) {
	n := b.o.n
	if _, ok := linkRTT[config]; ok {
		n = b.o.rttN
	}
	switch config {
	case "model", "model-min", "checkpoint":
		n = b.o.rttN
	case "backlog":
		n = b.o.backlogN
	}
	d, err := b.dataFor(n, config == "chain" || config == "json")
	if err != nil {
		return result{}, err
	}
	work := filepath.Join(b.root, fmt.Sprintf("%s-%d", config, run))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return result{}, err
	}
	defer func() {
		if !b.o.keep {
			_ = os.RemoveAll(work)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), b.o.timeout)
	defer cancel()
	if config == "bolt" {
		return boltLoop(ctx, filepath.Join(work, "bolt.db"), n, b.o.timeout)
	}
	if config == "model-min" {
		t := newTally(n)
		endpoint, err := startModel(ctx, t)
		if err != nil {
			return result{}, err
		}
		wall, err := minimalRun(ctx, endpoint, d.path, t)
		return result{ok: err == nil, lines: n, bytes: d.bytes, wall: wall, cpu: -1, hwm: -1, writeBytes: -1}, err
	}
	return b.agentRun(ctx, config, run, work, d, n)
}

func (b *bench) agentRun(ctx context.Context, config string, run int, work string, d dataFile, n int) (result, error) {
	res := result{lines: n, bytes: d.bytes, cpu: -1, hwm: -1, writeBytes: -1}
	mode := codec.ModeRaw
	if isPacket(config) {
		mode = codec.ModePacket
	}
	dec, err := codec.NewDecoder(mode, b.key)
	if err != nil {
		return res, err
	}
	t := newTally(n)
	var srv *standin.Server
	var endpoint string
	if config == "model" || config == "checkpoint" {
		if endpoint, err = startModel(ctx, t); err != nil {
			return res, err
		}
	} else {
		srv, err = standin.New(standin.Config{Token: token, Decoder: dec,
			Handler: func(_ int64, rec []byte) { t.add(rec) },
			Faults:  standin.Faults{Reject: config == "backlog"}})
		if err != nil {
			return res, err
		}
		if err := srv.Start(ctx); err != nil {
			return res, fmt.Errorf("start the sink: %w", err)
		}
		defer srv.Close()
		endpoint = srv.Addr()
	}
	if rtt, ok := linkRTT[config]; ok {
		p, err := transporttest.StartDelayProxy(endpoint, rtt)
		if err != nil {
			return res, err
		}
		defer p.Close()
		endpoint = p.Addr()
	}
	// The API listens on a port the kernel picks; the agent logs it.
	apiAddr := apiFromLog(filepath.Join(work, "edge-agent.log"))
	conf := filepath.Join(work, "agent.yaml")
	if err := os.WriteFile(conf, []byte(b.agentYAML(config, work, d.path, endpoint, "127.0.0.1:0")), 0o600); err != nil {
		return res, err
	}
	logf, err := os.Create(filepath.Join(work, "agent.log"))
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd := exec.Command(b.agent, "start", "--config", conf)
	delay, slowDisk := fsyncDelays[config]
	if slowDisk {
		cmd = exec.Command("strace", "-f", "-qq", "--seccomp-bpf", "-o", "/dev/null",
			"-e", "trace=fsync,fdatasync", "-e", fmt.Sprintf("inject=fsync,fdatasync:delay_exit=%d", delay.Microseconds()),
			"--", b.agent, "start", "--config", conf)
	}
	cmd.Dir, cmd.Stdout, cmd.Stderr = work, logf, logf
	cmd.Env = append(os.Environ(), "EDGE_AGENT_HOME="+work)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start %s: %w", b.agent, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if slowDisk {
		// Measure and stop the agent, strace's child, not strace.
		if pid, err = tracee(ctx, pid, b.agent); err != nil {
			_ = cmd.Process.Kill() // strace's PID only
			<-exited
			return res, err
		}
	}
	profiled := b.startProfile(ctx, apiAddr, fmt.Sprintf("%s-%d.pprof", config, run))
	var last proc.Sample
	sample := func() {
		if s, err := proc.Read(pid); err == nil {
			last = s
			res.hwm = max(res.hwm, s.HWMBytes)
		}
	}
	stop := func() {
		// The profile needs the agent up until it is written.
		if err := <-profiled; err != nil {
			fmt.Fprintf(os.Stderr, "run %d %s: cpu profile: %v\n", run, config, err)
		}
		sample()
		_ = syscall.Kill(pid, syscall.SIGTERM) // the agent's PID
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill() // this PID only
			<-exited
		}
		res.cpu, res.writeBytes = last.CPUSeconds, last.WriteBytes
	}

	if config == "backlog" {
		if err := waitBacklog(ctx, apiAddr, n, exited, sample); err != nil {
			stop()
			return res, fmt.Errorf("build the backlog: %w (agent log: %s)", err, logf.Name())
		}
		srv.SetFaults(standin.Faults{})
		start = time.Now()
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			res.wall = time.Since(start).Seconds()
			stop()
			_, res.dups, _ = t.counts()
			res.ok = true
			return res, nil
		case err := <-exited:
			exited <- err
			stop()
			u, _, bad := t.counts()
			return res, fmt.Errorf("agent exited early (%v) after %d of %d lines, %d without a sequence number; see %s", err, u, n, bad, logf.Name())
		case <-ctx.Done():
			stop()
			u, _, _ := t.counts()
			return res, fmt.Errorf("timed out after %d of %d lines", u, n)
		case <-tick.C:
			sample()
		}
	}
}

// chainProcessors is the chain config's processors: the typical chain
// (parse json, drop debug, redact, set), but for the drop, which tests a
// level the lines never have, so that every line reaches the sink (which
// waits for all of them).
const chainProcessors = `  processors:
    - parse: {format: json}
    - drop: 'payload.level == "TRACE"'
    - redact: {detectors: [email, credit-card]}
    - set: {site: plant-7, env: prod}
`

// linkRTT is the round trip the delay proxy adds for each long-link config.
var linkRTT = map[string]time.Duration{
	"rtt20": 20 * time.Millisecond, "rtt100": 100 * time.Millisecond, "rtt600": 600 * time.Millisecond,
	"rtt20-packet": 20 * time.Millisecond, "rtt100-packet": 100 * time.Millisecond, "rtt600-packet": 600 * time.Millisecond,
}

// isPacket reports the configs that send PACKET (gzip, aes_gcm).
func isPacket(config string) bool {
	return config == "packet" || config == "packet-store" || strings.HasSuffix(config, "-packet")
}

// agentYAML is the config of one run: the defaults but for what the
// config name says.
func (b *bench) agentYAML(config, work, data, endpoint, api string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "input:\n  paths: [%q]\n  read-from-beginning: true\n", data)
	if config == "chain" {
		s.WriteString(chainProcessors)
	}
	if config == "checkpoint" {
		s.WriteString("agent:\n  delivery-guarantee: CHECKPOINT\n")
	}
	fmt.Fprintf(&s, "queue:\n  path: %q\n", filepath.Join(work, "data", "wal.db"))
	if config == "nosync" {
		s.WriteString("  fsync: false\n")
	}
	fmt.Fprintf(&s, "output:\n  type: transport\n  endpoint: %q\n  token: %s\n", endpoint, token)
	switch config {
	case "if1":
		s.WriteString("  max-in-flight: 1\n")
	case "packet", "packet-store", "rtt20-packet", "rtt100-packet", "rtt600-packet":
		fmt.Fprintf(&s, "  packet-mode: PACKET\n  compression: gzip\n  encryption: aes_gcm\n  aes-secret-key-base64: %q\n",
			base64.StdEncoding.EncodeToString(b.key))
		if config == "packet-store" {
			s.WriteString("  compression-level: 0\n")
		}
	case "backlog":
		// The sink refuses while the backlog builds: ask again soon once
		// it accepts, rather than after the default 30 s.
		s.WriteString("  max-backoff-ms: 200\n")
	}
	fmt.Fprintf(&s, "http:\n  listen: %q\n  token: %s\n", api, apiToken)
	if b.o.pprofDir != "" {
		s.WriteString("  pprof: true\n")
	}
	fmt.Fprintf(&s, "log:\n  file: %q\n", filepath.Join(work, "edge-agent.log"))
	return s.String()
}

// startProfile saves a CPU profile of the agent, pprofSeconds long from
// when its API first answers, as name in -pprof's directory. The channel
// gets the outcome (nil at once without -pprof).
func (b *bench) startProfile(ctx context.Context, api func() string, name string) <-chan error {
	done := make(chan error, 1)
	if b.o.pprofDir == "" {
		done <- nil
		return done
	}
	go func() { done <- b.saveProfile(ctx, api, filepath.Join(b.o.pprofDir, name)) }()
	return done
}

func (b *bench) saveProfile(ctx context.Context, api func() string, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	secs := b.o.pprofSeconds
	hc := &http.Client{Timeout: time.Duration(secs)*time.Second + 30*time.Second}
	url := ""
	lastErr := errors.New("no HTTP API address logged yet")
	// The API starts with the agent: ask every 20 ms for up to 5 s.
	for range 250 {
		resp, err := func() (*http.Response, error) {
			addr := api()
			if addr == "" {
				return nil, lastErr
			}
			url = fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("Authorization", "Bearer "+apiToken)
			return hc.Do(req)
		}()
		if err != nil {
			lastErr = err
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("save %s: %w", path, err)
		}
		return nil
	}
	return fmt.Errorf("%s: the agent's API never answered: %w", cmp.Or(url, "the agent's API"), lastErr)
}

// waitBacklog waits until the agent has queued n rows, from its status.
func waitBacklog(ctx context.Context, api func() string, n int, exited chan error, sample func()) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	hc := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			exited <- err
			return fmt.Errorf("agent exited: %v", err)
		case <-tick.C:
			sample()
			addr := api()
			if addr == "" {
				continue
			}
			appended, err := rowsAppended(ctx, hc, addr)
			if err == nil && appended >= uint64(n) {
				return nil
			}
		}
	}
}

func rowsAppended(ctx context.Context, hc *http.Client, api string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+api+"/debug/status", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		Counters *struct {
			RowsAppended uint64 `json:"rows_appended"`
		} `json:"counters"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("/debug/status: %w", err)
	}
	if st.Counters == nil {
		return 0, errors.New("/debug/status: no counters")
	}
	return st.Counters.RowsAppended, nil
}

// apiFromLog returns a function giving the address the agent's HTTP API
// bound, read from the line the agent writes to its log file at logPath
// once it listens, or "" before that line is there. Once found, the
// address is kept.
func apiFromLog(logPath string) func() string {
	var addr string
	return func() string {
		if addr == "" {
			addr = apiListening(readFileOrEmpty(logPath))
		}
		return addr
	}
}

// apiListening finds the address in the agent's JSON log line "HTTP API
// listening"; "" without one.
func apiListening(log string) string {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, `"HTTP API listening"`) {
			continue
		}
		var rec struct {
			Msg     string `json:"msg"`
			Address string `json:"address"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "HTTP API listening" {
			return rec.Address
		}
	}
	return ""
}

func readFileOrEmpty(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// startModel serves the engine model until ctx is done, with the
// engine's default queue and QUEUE_FULL delay, and tallies each line once
// a checkpoint committed it; at the end it prints the batches it answered
// and how many of them QUEUE_FULL.
func startModel(ctx context.Context, t *tally) (string, error) {
	job, err := enginemodel.NewJob(enginemodel.JobConfig{
		Source:             enginemodel.SourceConfig{}, // the engine's defaults
		CheckpointInterval: time.Second,
		Output: func(rows []enginemodel.Committed) {
			for _, r := range rows {
				t.add(r.Payload)
			}
		},
	})
	if err != nil {
		return "", err
	}
	var batches, queueFull atomic.Int64
	observe := func(kind protocol.Kind, _ int64, reply string) {
		if kind != protocol.KindBatch {
			return
		}
		batches.Add(1)
		if strings.HasPrefix(reply, protocol.QueueFullPrefix) {
			queueFull.Add(1)
		}
	}
	srv, err := enginemodel.NewServer(job.Source(), enginemodel.ServerConfig{Session: enginemodel.SessionConfig{Token: token, Observe: observe}})
	if err != nil {
		return "", err
	}
	if err := srv.Start(ctx); err != nil {
		return "", fmt.Errorf("start the engine model: %w", err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	// Samples of the queue while rows come: how often the sink had nothing.
	var samples, empty atomic.Int64
	go func() {
		probe := time.NewTicker(10 * time.Millisecond)
		defer probe.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-probe.C:
				if batches.Load() > 0 && !t.complete() {
					samples.Add(1)
					if job.Source().Figures().Queued == 0 {
						empty.Add(1)
					}
				}
			}
		}
	}()
	go func() {
		defer tick.Stop()
		defer srv.Close()
		_ = job.Run(ctx, time.Now(), tick.C)
		fmt.Fprintf(os.Stderr, "engine model: batches=%d queue_full=%d queue empty in %d of %d samples\n",
			batches.Load(), queueFull.Load(), empty.Load(), samples.Load())
	}()
	return srv.Addr(), nil
}
