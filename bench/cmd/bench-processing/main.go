// Command bench-processing measures the agent's processors: it generates
// N JSON log lines (one in six debug, one in ten with an e-mail address,
// one in twenty with a card number), and runs `edge-agent process` over
// them twice, without processors and with the typical chain (parse json,
// drop debug, redact e-mail and cards in the payload, set two fields),
// printing lines/s, CPU seconds and CPU seconds per 1M lines of each, and
// the chain's share. `process` reads stdin, builds each line's event and
// writes what comes out to /dev/null: no WAL, no network. The difference
// of the two rows is the chain's own cost, to be added to the agent's
// plain path (make bench-e2e).
//
// Every process it starts is waited for; its files live in a temporary
// directory it removes.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// configs are the two rows: the agent.yaml each run loads.
var configs = []struct{ name, processors string }{
	{"plain", ""},
	{"typical", `  processors:
    - parse: {format: json}
    - drop: 'payload.level == "debug"'
    - redact: {detectors: [email, credit-card]}
    - set: {site: plant-7, env: prod}
`},
}

func main() {
	agent := flag.String("agent", "bin/edge-agent", "the agent binary")
	n := flag.Int("n", 1_000_000, "lines per run")
	runs := flag.Int("runs", 3, "runs per config; the row shows the median")
	flag.Parse()
	if err := run(*agent, *n, *runs, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-processing:", err)
		os.Exit(1)
	}
}

func run(agent string, n, runs int, out io.Writer) error {
	if n < 1 || runs < 1 {
		return errors.New("-n and -runs must be at least 1")
	}
	dir, err := os.MkdirTemp("", "bench-processing-")
	if err != nil {
		return fmt.Errorf("make a temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	input := filepath.Join(dir, "lines.ndjson")
	if err := writeLines(input, n); err != nil {
		return err
	}
	results := make(map[string][]result)
	for r := range runs {
		for _, c := range configs {
			cfg := filepath.Join(dir, c.name+".yaml")
			text := "input:\n  paths: [" + filepath.Join(dir, "*.log") + "]\n" + c.processors + "output:\n  type: console\n"
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				return fmt.Errorf("write %s: %w", cfg, err)
			}
			res, err := measure(agent, cfg, input)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", c.name, r+1, err)
			}
			results[c.name] = append(results[c.name], res)
		}
	}
	fmt.Fprintf(out, "%-8s %10s %8s %14s\n", "config", "lines/s", "CPU s", "CPU s per 1M")
	var plain float64
	for _, c := range configs {
		m := median(results[c.name])
		perM := m.cpu.Seconds() / float64(n) * 1e6
		fmt.Fprintf(out, "%-8s %10.0f %8.2f %14.2f\n", c.name, float64(n)/m.wall.Seconds(), m.cpu.Seconds(), perM)
		if c.name == "plain" {
			plain = perM
		} else {
			fmt.Fprintf(out, "chain's own cost: %.2f CPU s per 1M lines\n", perM-plain)
		}
	}
	return nil
}

type result struct{ wall, cpu time.Duration }

// measure runs `process` once over input and returns its wall and CPU
// time (user + system, from the kernel's accounting of the child).
func measure(agent, cfg, input string) (result, error) {
	in, err := os.Open(input)
	if err != nil {
		return result{}, fmt.Errorf("open the lines: %w", err)
	}
	defer in.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return result{}, err
	}
	defer devnull.Close()
	cmd := exec.Command(agent, "process", "--config", cfg)
	cmd.Stdin, cmd.Stdout = in, devnull
	var stderr boundedBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s process: %w: %s", agent, err, stderr.b)
	}
	wall := time.Since(start)
	st := cmd.ProcessState
	return result{wall: wall, cpu: st.UserTime() + st.SystemTime()}, nil
}

// boundedBuffer keeps the first 4 KiB written to it.
type boundedBuffer struct{ b []byte }

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func median(rs []result) result {
	sorted := append([]result(nil), rs...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if sorted[j].cpu < sorted[i].cpu {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	return sorted[len(sorted)/2]
}

// writeLines writes n JSON lines of about 200 bytes.
func writeLines(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	levels := []string{"info", "info", "warn", "debug", "error", "info"}
	for i := range n {
		msg := fmt.Sprintf("request %d served in %d ms for session s-%06d upstream status 200 cache hit", i, i%997, i)
		switch {
		case i%20 == 0:
			msg += " paid with 4111 1111 1111 1111"
		case i%10 == 0:
			msg += " user jane.doe@example.com"
		}
		fmt.Fprintf(w, `{"ts":%d,"level":%q,"component":"http","msg":%q}`+"\n", 1764000000000+i, levels[i%6], msg)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
