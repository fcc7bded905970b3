//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest/standin"

	"github.com/edge-agent/edge-agent/bench/internal/proc"
)

// flashRate is one row of the write-amplification table: lines appended
// to the agent's input at rate lines/s for the window, or n lines written
// before the agent starts when rate is 0 (as fast as the agent goes).
type flashRate struct {
	rate int
	n    int
}

// flashRow is what one rate measured.
type flashRow struct {
	flashRate
	lines      int
	inBytes    int64
	writeBytes int64 // the agent's write_bytes over the window and drain
	latencyP50 time.Duration
	latencyMax time.Duration
	note       string
}

// runFlash prints the write-amplification table: for each rate, the bytes
// the agent caused to be written to disk (/proc/<pid>/io write_bytes, from
// once its API listens to once the last line was delivered) per input byte,
// with the agent's defaults (RAW, queue.fsync on) and the in-process sink.
func runFlash(o options) error {
	agent, root, done, err := setup(o, "edge-agent-flash-")
	if err != nil {
		return err
	}
	defer done()
	b := &bench{o: o, agent: agent, root: root}
	var rows []flashRow
	for i, r := range o.flashRates {
		work := filepath.Join(root, fmt.Sprintf("rate-%d", i))
		row, err := b.flashOne(work, r)
		if err != nil {
			row.note = err.Error()
		}
		fmt.Fprintf(os.Stderr, "%s: %d lines, %d B in, %d B written, p50 %v max %v %s\n",
			r.label(), row.lines, row.inBytes, row.writeBytes, row.latencyP50, row.latencyMax, row.note)
		rows = append(rows, row)
	}
	fmt.Printf("edge-agent write amplification: %s, defaults (RAW, queue.fsync on), %v per paced rate\n", agent, o.flashWindow)
	fmt.Printf("| input rate | input | written by the agent | written per input byte | delivery latency p50 / max |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		amp := "NA"
		if r.inBytes > 0 && r.writeBytes >= 0 {
			amp = fmt.Sprintf("%.2f×", float64(r.writeBytes)/float64(r.inBytes))
		}
		lat := "NA"
		if r.rate > 0 && r.lines > 0 {
			lat = fmt.Sprintf("%v / %v", r.latencyP50.Round(time.Millisecond), r.latencyMax.Round(time.Millisecond))
		}
		fmt.Printf("| %s | %d B | %d B | %s | %s |%s\n", r.label(), r.inBytes, r.writeBytes, amp, lat, r.noteCell())
	}
	for _, r := range rows {
		if r.rate == 10 && r.inBytes > 0 {
			// A day of input at the window's rate, times what each byte cost.
			in := float64(r.inBytes) / o.flashWindow.Seconds() * 86400
			fmt.Printf("at 10 lines/s: %.2f GB written per day for %.2f GB of input\n",
				in*float64(r.writeBytes)/float64(r.inBytes)/1e9, in/1e9)
		}
	}
	return nil
}

func (r flashRate) label() string {
	if r.rate == 0 {
		return fmt.Sprintf("%d lines as fast as possible", r.n)
	}
	return fmt.Sprintf("%d lines/s", r.rate)
}

func (r flashRow) noteCell() string {
	if r.note == "" {
		return ""
	}
	return " " + r.note
}

// flashOne runs the agent on an input fed at r and measures it.
func (b *bench) flashOne(work string, r flashRate) (flashRow, error) {
	row := flashRow{flashRate: r, writeBytes: -1}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return row, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.o.timeout)
	defer cancel()
	input := filepath.Join(work, "input.log")
	f, err := os.Create(input)
	if err != nil {
		return row, err
	}
	defer f.Close()
	total := r.n
	if r.rate > 0 {
		total = r.rate * int(b.o.flashWindow/time.Second)
	}
	lines, err := flashLines(total)
	if err != nil {
		return row, err
	}
	if r.rate == 0 {
		for _, l := range lines {
			if _, err := f.Write(l); err != nil {
				return row, err
			}
			row.inBytes += int64(len(l))
		}
	}
	sent := make([]time.Time, total)
	var mu sync.Mutex
	var latencies []time.Duration
	t := newTally(total)
	srv, err := standin.New(standin.Config{Token: token, Handler: func(_ int64, rec []byte) {
		if seq, ok := parseSeq(rec); ok && seq < total && r.rate > 0 {
			mu.Lock()
			latencies = append(latencies, time.Since(sent[seq]))
			mu.Unlock()
		}
		t.add(rec)
	}})
	if err != nil {
		return row, err
	}
	if err := srv.Start(ctx); err != nil {
		return row, fmt.Errorf("start the sink: %w", err)
	}
	defer srv.Close()
	conf := filepath.Join(work, "agent.yaml")
	if err := os.WriteFile(conf, []byte(b.agentYAML("raw-fsync", work, input, srv.Addr(), "127.0.0.1:0")), 0o600); err != nil {
		return row, err
	}
	logf, err := os.Create(filepath.Join(work, "agent.log"))
	if err != nil {
		return row, err
	}
	defer logf.Close()
	cmd := exec.Command(b.agent, "start", "--config", conf)
	cmd.Dir, cmd.Stdout, cmd.Stderr = work, logf, logf
	cmd.Env = append(os.Environ(), "EDGE_AGENT_HOME="+work)
	if err := cmd.Start(); err != nil {
		return row, fmt.Errorf("start %s: %w", b.agent, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // this PID only
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	// The window starts once the agent is up: its WAL is open and its
	// API listens, so start-up writes are not counted.
	api := apiFromLog(filepath.Join(work, "edge-agent.log"))
	for api() == "" {
		select {
		case <-ctx.Done():
			return row, fmt.Errorf("the agent's API never listened: %w", ctx.Err())
		case err := <-exited:
			return row, fmt.Errorf("agent exited at start (%v); see %s", err, logf.Name())
		case <-time.After(20 * time.Millisecond):
		}
	}
	base, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		return row, err
	}
	if r.rate > 0 {
		n, err := feed(ctx, f, lines, r.rate, sent, &mu)
		row.inBytes = n
		if err != nil {
			return row, err
		}
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		u, _, _ := t.counts()
		return row, fmt.Errorf("timed out after %d of %d lines", u, total)
	case err := <-exited:
		return row, fmt.Errorf("agent exited (%v); see %s", err, logf.Name())
	}
	// The acks of the last lines are written after they were delivered:
	// give them the agent's longest commit wait.
	time.Sleep(b.o.flashSettle)
	end, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		return row, err
	}
	row.lines, _, _ = t.counts()
	row.writeBytes = end.WriteBytes - base.WriteBytes
	mu.Lock()
	slices.Sort(latencies)
	if len(latencies) > 0 {
		row.latencyP50, row.latencyMax = latencies[len(latencies)/2], latencies[len(latencies)-1]
	}
	mu.Unlock()
	return row, nil
}

// flashLines are n generated lines (170 to 230 bytes, ~200 on average),
// each with its sequence number.
func flashLines(n int) ([][]byte, error) {
	var buf bytes.Buffer
	if _, err := generate(&buf, n, 1, false); err != nil {
		return nil, err
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	return lines[:n], nil
}

// feed appends lines to f at rate lines/s (in ticks of at most 10 ms, each
// written with one write), noting when each was written.
func feed(ctx context.Context, f *os.File, lines [][]byte, rate int, sent []time.Time, mu *sync.Mutex) (int64, error) {
	tick := max(10*time.Millisecond, time.Second/time.Duration(rate))
	start := time.Now()
	var written int64
	next := 0
	var chunk []byte
	for next < len(lines) {
		due := min(len(lines), int(float64(time.Since(start))/float64(time.Second)*float64(rate))+1)
		chunk = chunk[:0]
		from := next
		for ; next < due; next++ {
			chunk = append(chunk, lines[next]...)
		}
		if len(chunk) > 0 {
			now := time.Now()
			mu.Lock()
			for i := from; i < next; i++ {
				sent[i] = now
			}
			mu.Unlock()
			if _, err := f.Write(chunk); err != nil {
				return written, err
			}
			written += int64(len(chunk))
		}
		select {
		case <-ctx.Done():
			return written, ctx.Err()
		case <-time.After(tick):
		}
	}
	return written, nil
}
