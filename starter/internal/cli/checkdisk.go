package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/diskcheck"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
)

// Bounds of `check disk`: how many page writes it times, and for how long
// at most (a card at 50 ms per fdatasync still gives its 40 samples).
const (
	diskCheckWrites = 40
	diskCheckBudget = 5 * time.Second
	// diskCheckLineBytes is the line size the figures assume.
	diskCheckLineBytes = 200
)

// diskCheckRates are the input rates of the wear table, lines/s: the low
// rates where each commit's pages, not the lines, are what is written.
var diskCheckRates = []float64{1, 10, 100}

func (a *agentCLI) checkDiskCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "disk",
		Usage:     "time fdatasync in the queue directory and say what throughput and flash wear to expect",
		UsageText: "edge-agent check disk [--config FILE | FILE]",
		Description: `Loads the config start would use and, in the directory of queue.path (created
if missing), writes one 4 KiB page at a time to a temporary file, each
followed by fdatasync as the WAL's commits do, at most 40 times or 5 s, then
removes the file. It prints the latency (median, 90th percentile, slowest),
what one WAL commit waits for the disk (two fdatasyncs: its pages, then its
meta page), the lines/s the disk lets through with the fast-disk commit
group and with groups grown to queue.slow-disk-group-max-bytes (200-byte lines; the
agent's own time per line comes on top), and an estimate of flash wear at
1, 10 and 100 lines/s: commits and fsyncs per hour, bytes written per day
and per input byte. Run it on the host, with the agent stopped or not, to
judge an SD card before deploying.

Exit codes: 0 measured, 1 the directory cannot be written, 78 missing or
invalid config.

Examples:
   edge-agent check disk
   edge-agent check disk --config /etc/edge-agent/agent.yaml`,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "agent.yaml to load", TakesFile: true},
		},
		OnUsageError: usageError,
		Action:       a.checkDisk,
	}
}

func (a *agentCLI) checkDisk(c *ucli.Context) error {
	explicit, err := explicitConfig(c)
	if err != nil {
		return err
	}
	cfg, path, err := a.loadConfig(explicit, a.env.Stdout)
	if err != nil {
		return err
	}
	dir := filepath.Dir(cfg.Queue.Path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return withCode(exitcode.Failure, fmt.Errorf("create the queue directory %s (queue.path in %s): %w", dir, path, err))
	}
	res, err := diskcheck.Measure(c.Context, dir, diskCheckWrites, diskCheckBudget)
	if err != nil {
		return withCode(exitcode.Failure, fmt.Errorf("check disk: %w", err))
	}
	s := diskcheck.Settings{
		CommitInterval: cfg.Agent.CommitInterval,
		BulkMaxSize:    cfg.Agent.BulkMaxSize,
		GroupMaxBytes:  agent.SlowDiskGroupMaxBytes(cfg.Queue.QueueSettings),
		LineBytes:      diskCheckLineBytes,
	}
	s.FastGroup = agent.FastGroup(cfg.Agent.Settings, cfg.Queue.QueueSettings, cfg.Output.Options)
	writeDiskCheck(a.env.Stdout, res, s, cfg.Queue.Fsync)
	return nil
}

// writeDiskCheck prints what check disk measured and what it means.
func writeDiskCheck(w io.Writer, r diskcheck.Result, s diskcheck.Settings, fsync bool) {
	med := r.Median()
	fmt.Fprintf(w, "queue directory %s: %d writes of 4 KiB, each followed by fdatasync\n", r.Dir, len(r.Samples))
	fmt.Fprintf(w, "fdatasync: median %s, p90 %s, slowest %s\n", roundDur(med), roundDur(r.P90()), roundDur(r.Max()))
	fmt.Fprintf(w, "WAL commit: about %s of disk time (two fdatasyncs: its pages, then its meta page)\n", roundDur(diskcheck.CommitTime(med)))
	if !fsync {
		fmt.Fprintln(w, "queue.fsync is off: commits do not wait for the disk, and a host crash can lose the last ones")
	}
	fmt.Fprintf(w, "throughput the disk allows (%d-byte lines; the agent's own time per line comes on top):\n", s.LineBytes)
	fmt.Fprintf(w, "  fast-disk group of %s lines: %s lines/s\n", thousands(float64(s.FastGroup)), thousands(diskcheck.MaxRate(med, s.FastGroup)))
	fmt.Fprintf(w, "  groups grown to %s lines (queue.slow-disk-group-max-bytes): %s lines/s\n", thousands(float64(s.GrownGroup())), thousands(diskcheck.MaxRate(med, s.GrownGroup())))
	fmt.Fprintf(w, "flash wear, estimated (agent.commit-interval-ms %d; make bench-flash measures it):\n", s.CommitInterval.Milliseconds())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  lines/s\tcommits/hour\tfsyncs/hour\twritten/day\tper input byte")
	for _, rate := range diskCheckRates {
		e := s.WearAt(med, rate)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.1f MB\t%.1fx\n", thousands(rate), thousands(e.CommitsPerHour), thousands(e.SyncsPerHour), e.BytesPerDay/1e6, e.PerInputByte)
	}
	_ = tw.Flush()
}

func roundDur(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

// thousands prints a non-negative figure rounded to a whole number with
// comma separators.
func thousands(f float64) string {
	n := int64(f + 0.5)
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
