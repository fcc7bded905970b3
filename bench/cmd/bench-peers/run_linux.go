//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest/standin"

	"github.com/edge-agent/edge-agent/bench/internal/proc"
)

// token is what the agent presents to the stand-in ingress (its configs say so).
const token = "bench-token"

func run(o options) error {
	var bins = map[string]string{}
	for _, r := range o.rows {
		path := map[string]string{"agent": o.agent, "otel": o.otelcol}[r.peer]
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		if st, err := os.Stat(abs); err != nil || st.IsDir() {
			return fmt.Errorf("%s binary %s: not a file (make build, make otelcol): %v", r.peer, path, err)
		}
		bins[r.peer] = abs
	}
	root, err := os.MkdirTemp("", "bench-peers-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", root)
	} else {
		defer os.RemoveAll(root)
	}
	data := filepath.Join(root, "lines.log")
	f, err := os.Create(data)
	if err != nil {
		return fmt.Errorf("create %s: %w", data, err)
	}
	size, err := generate(f, o.n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	all := map[string][]result{}
	for i := 1; i <= o.runs; i++ {
		for _, r := range o.rows { // interleaved, so a noisy minute hits every row
			res, err := runOne(o, r, i, bins[r.peer], root, data)
			if err != nil {
				res.note = err.Error()
			}
			fmt.Fprintf(os.Stderr, "run %d/%d %-18s ok=%v lines=%d wall=%.2fs cpu=%.2fs rss=%.1fMiB %s\n",
				i, o.runs, r.name, res.ok, res.lines, res.wall, res.cpu, float64(res.hwm)/(1<<20), res.note)
			all[r.name] = append(all[r.name], res)
		}
	}
	fmt.Printf("peers on the same work: %d JSON lines (%d bytes), %d run(s) per row, median (min..max)\n", o.n, size, o.runs)
	printTable(os.Stdout, o.n, o.rows, all)
	return nil
}

func runOne(o options, r row, i int, bin, root, data string) (result, error) {
	res := result{cpu: -1, hwm: -1}
	work := filepath.Join(root, fmt.Sprintf("%s-%d", r.name, i))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return res, err
	}
	if !o.keep {
		defer os.RemoveAll(work)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	wanted := func(int) bool { return true }
	if r.chain {
		wanted = func(seq int) bool { return !isDebug(seq) }
	}
	t := newTally(o.n, wanted)
	res.lines = t.want
	var endpoint string
	if r.peer == "agent" {
		srv, err := standin.New(standin.Config{Token: token, Handler: func(_ int64, rec []byte) { t.add(rec) }})
		if err != nil {
			return res, err
		}
		if err := srv.Start(ctx); err != nil {
			return res, fmt.Errorf("start the EdgeSocket sink: %w", err)
		}
		defer srv.Close()
		endpoint = srv.Addr()
	} else {
		s, err := startOTLPSink(ctx, t.add)
		if err != nil {
			return res, err
		}
		defer s.Close()
		endpoint = s.addr
	}

	tmpl := templateName(r)
	text, err := os.ReadFile(filepath.Join(o.peersDir, tmpl))
	if err != nil {
		return res, fmt.Errorf("read the %s config template: %w", r.peer, err)
	}
	conf := filepath.Join(work, tmpl)
	filled := strings.NewReplacer("@FILE@", data, "@WORK@", work, "@ENDPOINT@", endpoint).Replace(string(text))
	if err := os.WriteFile(conf, []byte(filled), 0o600); err != nil {
		return res, err
	}
	args := []string{"start", "--config", conf}
	if r.peer == "otel" {
		args = []string{"--config", conf, "--feature-gates=stanza.synchronousLogEmitter"}
	}
	cmd := exec.Command(bin, args...)
	if r.delay > 0 {
		cmd = exec.Command("strace", append([]string{"-f", "-qq", "--seccomp-bpf", "-o", "/dev/null",
			"-e", "trace=fsync,fdatasync", "-e", fmt.Sprintf("inject=fsync,fdatasync:delay_exit=%d", r.delay.Microseconds()),
			"--", bin}, args...)...)
	}
	logPath := filepath.Join(work, "peer.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd.Dir, cmd.Stdout, cmd.Stderr = work, logf, logf
	cmd.Env = append(os.Environ(), "EDGE_AGENT_HOME="+work)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start %s: %w", bin, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if r.delay > 0 {
		// Measure and stop the peer, strace's child, not strace.
		if pid, err = tracee(ctx, pid, bin); err != nil {
			_ = cmd.Process.Kill() // strace's PID only
			<-exited
			return res, err
		}
	}
	var last proc.Sample
	sample := func() {
		if s, err := proc.Read(pid); err == nil {
			last = s
			res.hwm = max(res.hwm, s.HWMBytes)
		}
	}
	stop := func() {
		sample()
		_ = syscall.Kill(pid, syscall.SIGTERM) // the peer's PID
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(pid, syscall.SIGKILL) // the peer's PID
			if pid != cmd.Process.Pid {
				_ = cmd.Process.Kill() // strace's PID
			}
			<-exited
		}
		res.cpu = last.CPUSeconds
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			res.wall = time.Since(start).Seconds()
			stop()
			c := t.counts()
			if c.leaked > 0 || (r.chain && c.secrets > 0) || c.bad > 0 {
				return res, fmt.Errorf("the chain let through %d debug lines and %d secrets in clear; %d records without a sequence number (see %s)", c.leaked, c.secrets, c.bad, logPath)
			}
			res.ok = true
			if c.dups > 0 {
				res.note = fmt.Sprintf("%d duplicates", c.dups)
			}
			return res, nil
		case err := <-exited:
			exited <- err
			stop()
			c := t.counts()
			return res, fmt.Errorf("%s exited early (%v) after %d of %d lines; see %s", r.peer, err, c.unique, c.want, logPath)
		case <-ctx.Done():
			stop()
			c := t.counts()
			return res, fmt.Errorf("timed out after %d of %d lines (%d debug lines, %d secrets, %d without a sequence number); see %s", c.unique, c.want, c.leaked, c.secrets, c.bad, logPath)
		case <-tick.C:
			sample()
		}
	}
}

// tracee returns the PID of strace's child that runs bin: strace forks
// short-lived probes of its own at start, so the first child may not be it.
func tracee(ctx context.Context, stracePID int, bin string) (int, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/children", stracePID, stracePID)
	for range 1000 { // 10 s at most
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("strace's children: %w", err)
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			// Once it has exec'd, its first argument is bin.
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if arg0, _, _ := strings.Cut(string(cmdline), "\x00"); arg0 == bin {
				return pid, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("strace (PID %d) started no %s in 10 s", stracePID, bin)
}
