package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/config"
	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/identity"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

func (a *agentCLI) statusCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "status",
		Usage:     "show the agent's state and backlog (exit 0 running, 3 not running)",
		UsageText: "edge-agent status [--config FILE] [--json]",
		Description: `Whether the agent runs comes from the lock on the pid file (the running agent
holds it for its whole life; the kernel releases it when the agent ends, even
by kill -9). While it runs, the rest comes from its HTTP API (http.listen):
state, uptime, connection, backlog per status, oldest pending row, last
error. When it is stopped, the backlog is read from the WAL file (queue.path)
opened read-only. --json prints the same as /debug/status, for scripts. Both
show the OpAMP instance uid and, while it runs, whether the config in force
is the local file or a remote one from the OpAMP server, with the server's
connection and the last remote config's status (management.opamp).

Exit codes follow LSB init scripts: 0 running, 3 not running (no pid file,
or one nobody holds), 1 when it cannot tell. Prints no secrets.

Examples:
   edge-agent status
   edge-agent status --json | jq .wal.pending
   edge-agent status >/dev/null || systemctl start edge-agent`,
		Flags: agentFlags(
			&ucli.BoolFlag{Name: "json", Usage: "print JSON"},
		),
		OnUsageError: usageError,
		Action:       a.status,
	}
}

func (a *agentCLI) status(c *ucli.Context) error {
	home := a.home()
	pidFile := paths.PIDFile(a.env.Getenv, home)
	probe, err := process.Probe(pidFile)
	if err != nil {
		return err
	}
	// The config only adds detail: without it the answer to "does it
	// run" still stands, with the reason the rest is missing.
	cfg, cfgErr := a.statusConfig(c.String(flagConfig), home)
	var st api.Status
	var detailErr error
	switch {
	case cfgErr != nil:
		detailErr = cfgErr
	case probe.Running:
		st, detailErr = runningStatus(c.Context, cfg.HTTP, pidFile)
	default:
		st, detailErr = stoppedStatus(cfg.Queue.Path, cfg.Queue.Encryption, time.Now())
	}
	st.Running, st.PID = probe.Running, probe.PID
	if st.Management == nil {
		// A stopped agent (or one without its API) still has its
		// instance uid on disk; status never creates one.
		if raw, err := os.ReadFile(paths.InstanceUIDFile(a.env.Getenv, home)); err == nil {
			if uid, err := identity.ParseInstanceUID("", raw); err == nil {
				st.Management = &api.Management{InstanceUID: uid.String()}
			}
		}
	}
	a.fillVersions(&st, home)
	if st.State == "" {
		st.State = "stopped"
		if probe.Running {
			st.State = "unknown"
		}
	}
	if c.Bool("json") {
		if err := writeStatusJSON(a.env.Stdout, st, detailErr); err != nil {
			return err
		}
	} else {
		writeStatusText(a.env.Stdout, st, pidFile, detailErr)
	}
	if !probe.Running {
		return quietCode(exitcode.NotRunning)
	}
	return nil
}

func (a *agentCLI) statusConfig(explicit, home string) (*config.Config, error) {
	// Reading the config builds no sender: the console output needs no writer.
	cfg, _, _, err := a.readConfig(explicit, home, nil)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

func runningStatus(ctx context.Context, s api.Settings, pidFile string) (api.Status, error) {
	s, err := s.Local(pidFile)
	if err != nil {
		return api.Status{}, err
	}
	client, err := api.NewClient(s)
	if err != nil {
		return api.Status{}, err
	}
	return client.Status(ctx)
}

// stoppedStatus reads the backlog of a stopped agent from its WAL.
func stoppedStatus(path string, enc wal.Encryption, now time.Time) (api.Status, error) {
	st := api.Status{Source: "wal", State: "stopped"}
	w, err := wal.Open(wal.Options{Path: path, ReadOnly: true, Fsync: true, Encryption: enc})
	if errors.Is(err, wal.ErrNotFound) {
		return st, fmt.Errorf("no WAL at %s yet", path)
	}
	if err != nil {
		return st, err
	}
	defer w.Close()
	var c wal.Counts
	if err := w.View(func(tx *wal.ReadTx) error { c = tx.Counts(); return nil }); err != nil {
		return st, err
	}
	st.WAL = api.WALStatus{
		Pending: int64(c.Pending), Sending: int64(c.Sending), Acked: int64(c.Acked), Dead: int64(c.Dead),
		Received: int64(c.Received), Bytes: c.PayloadBytes, FileBytes: w.Size(),
	}
	if c.OldestPending > 0 {
		st.WAL.OldestPendingAgeSeconds = max(0, now.Sub(time.UnixMilli(c.OldestPending)).Seconds())
	}
	return st, nil
}

func writeStatusJSON(w io.Writer, st api.Status, detailErr error) error {
	doc := struct {
		api.Status
		// DetailError says why only part of the document is filled.
		DetailError string `json:"detail_error,omitempty"`
	}{Status: st}
	if detailErr != nil {
		doc.DetailError = detailErr.Error()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

// maxLaggingShown keeps the summary short on hosts tailing many files.
const maxLaggingShown = 5

func writeStatusText(w io.Writer, st api.Status, pidFile string, detailErr error) {
	if st.Running {
		fmt.Fprintf(w, "edge-agent is running (pid %d)\n", st.PID)
	} else {
		fmt.Fprintln(w, "edge-agent is not running")
	}
	out := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer out.Flush()
	fmt.Fprintf(out, "pid file:\t%s\n", pidFile)
	if m := st.Management; m != nil {
		fmt.Fprintf(out, "instance uid:\t%s\n", m.InstanceUID)
	}
	if detailErr != nil {
		fmt.Fprintf(out, "details:\tunavailable: %s\n", oneLine(detailErr.Error()))
		return
	}
	if st.Running {
		fmt.Fprintf(out, "state:\t%s\n", st.State)
		fmt.Fprintf(out, "uptime:\t%s\n", (time.Duration(st.UptimeSeconds) * time.Second).String())
		fmt.Fprintf(out, "agent id:\t%s\n", st.AgentID)
		fmt.Fprintf(out, "version:\t%s\n", st.Version)
		fmt.Fprintf(out, "connection:\t%s\n", st.Connection)
		writeEndpointsText(out, st)
		writeManagementText(out, st)
	}
	fmt.Fprintf(out, "backlog:\tPENDING %d, SENDING %d, RECEIVED %d, DEAD %d (%d bytes)\n", st.WAL.Pending, st.WAL.Sending, st.WAL.Received, st.WAL.Dead, st.WAL.Bytes)
	if st.WAL.OldestPendingAgeSeconds > 0 {
		fmt.Fprintf(out, "oldest pending:\t%s ago\n", (time.Duration(st.WAL.OldestPendingAgeSeconds) * time.Second).String())
	} else {
		fmt.Fprintf(out, "oldest pending:\t-\n")
	}
	if c := st.WAL.Commit; st.Running && c != nil {
		fmt.Fprintf(out, "commit:\t%s\n", commitText(c))
	}
	if st.Running {
		writeRateLimitText(out, st)
	}
	writeFilesText(out, st)
	if st.Backpressure {
		why := ""
		if st.WAL.DropHeld {
			why = "; only rows drop-oldest may not delete are left: inputs with queue-drop: never, or in flight"
		}
		fmt.Fprintf(out, "backpressure:\treading paused (queue above queue.max-bytes%s)\n", why)
	}
	if d := st.WAL.Dropped; d.FullRows > 0 || d.AgeRows > 0 || st.WAL.Dropping {
		now := ""
		if st.WAL.Dropping {
			now = ", dropping now"
		}
		fmt.Fprintf(out, "dropped unsent:	%d rows (%d bytes) for size, %d rows (%d bytes) for age%s\n", d.FullRows, d.FullBytes, d.AgeRows, d.AgeBytes, now)
	}
	if st.WALError != "" {
		fmt.Fprintf(out, "WAL error:\t%s\n", oneLine(st.WALError))
	}
	if st.LastError != "" {
		at := ""
		if st.LastErrorAt != nil {
			at = " (at " + st.LastErrorAt.Local().Format(time.RFC3339) + ")"
		}
		fmt.Fprintf(out, "last error:\t%s%s\n", oneLine(st.LastError), at)
	}
}

// writeRateLimitText shows the send-rate cap in force and how long the
// backlog takes at it.
func writeRateLimitText(out io.Writer, st api.Status) {
	rl := st.RateLimit
	if rl == nil {
		fmt.Fprintf(out, "rate limit:\tnone\n")
		return
	}
	var caps, bursts []string
	if rl.EventsPerSecond > 0 {
		caps = append(caps, strconv.FormatFloat(rl.EventsPerSecond, 'f', -1, 64)+" events/s")
		bursts = append(bursts, strconv.Itoa(rl.BurstEvents)+" events")
	}
	if rl.BytesPerSecond > 0 {
		caps = append(caps, strconv.FormatInt(rl.BytesPerSecond, 10)+" bytes/s")
		bursts = append(bursts, strconv.Itoa(rl.BurstBytes)+" bytes")
	}
	eta := time.Duration(rl.BacklogETASeconds * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(out, "rate limit:\t%s (burst %s); backlog ETA %s at the cap\n",
		strings.Join(caps, ", "), strings.Join(bursts, ", "), eta)
	if c := st.Counters; c != nil && c.SendThrottledSeconds > 0 {
		fmt.Fprintf(out, "throttled:\t%s waiting for the cap\n", time.Duration(c.SendThrottledSeconds*float64(time.Second)).Round(time.Millisecond))
	}
}

// writeFilesText shows each input's line, as the input described itself
// (its summary, then its lines of detail), and the files lagging.
func writeFilesText(out io.Writer, st api.Status) {
	for _, in := range st.Inputs {
		summary := in.Summary
		if summary == "" {
			summary = "-"
		}
		fmt.Fprintf(out, "input %s (%s):\t%s\n", in.ID, in.Type, oneLine(summary))
		for _, l := range in.Lines {
			fmt.Fprintf(out, "%s\t%s\n", labelOf(l.Label), oneLine(l.Text))
		}
	}
	shown := 0
	for _, f := range st.Files {
		if f.Lag <= 0 {
			continue
		}
		if shown == maxLaggingShown {
			fmt.Fprintf(out, "\t… (status --json lists every file)\n")
			break
		}
		fmt.Fprintf(out, "lagging:\t%s: %d bytes unread (offset %d of %d)\n", f.Path, f.Lag, f.Offset, f.Size)
		shown++
	}
}

// labelOf is a detail line's label column: "label:", or nothing for a
// line that continues the one before.
func labelOf(label string) string {
	if label == "" {
		return ""
	}
	return label + ":"
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// writeManagementText shows where the config in force came from and, with
// OpAMP on, the server and the last remote config.
func writeManagementText(out io.Writer, st api.Status) {
	m := st.Management
	if m == nil {
		return
	}
	fmt.Fprintf(out, "config:\t%s (hash %.12s)\n", m.ConfigSource, st.ConfigHash)
	if m.Endpoint == "" {
		return
	}
	conn := "not connected"
	if m.Connected != nil && *m.Connected {
		conn = "connected"
	}
	fmt.Fprintf(out, "opamp:\t%s, %s\n", m.Endpoint, conn)
	writeVersionsText(out, m.Versions)
	if m.RemoteConfig != "" {
		line := m.RemoteConfig
		if m.RemoteConfigError != "" {
			line += ": " + oneLine(m.RemoteConfigError)
		}
		fmt.Fprintf(out, "remote config:\t%s\n", line)
	}
}

// writeEndpointsText lists each endpoint of output.endpoints: the one(s)
// sent to marked with *, its state, rows sent and received, last error.
func writeEndpointsText(out io.Writer, st api.Status) {
	for _, e := range st.Endpoints {
		mark := " "
		if e.Active {
			mark = "*"
		}
		line := fmt.Sprintf("endpoint:\t%s %s %s, sent %d, received %d", mark, e.Endpoint, e.State, e.Sent, e.Received)
		if e.LastError != "" {
			line += ", last error: " + oneLine(e.LastError)
		}
		fmt.Fprintln(out, line)
	}
}

// commitText is the WAL commit estimate as status prints it: the disk
// time of one commit, and the commit group it sizes.
func commitText(c *api.CommitStatus) string {
	d := func(sec float64) string {
		return time.Duration(sec * float64(time.Second)).Round(time.Microsecond / 10).String()
	}
	s := fmt.Sprintf("fsync %s per commit, groups up to %d events", d(c.FsyncSeconds), c.GroupMaxEvents)
	if c.RowSeconds > 0 {
		s += fmt.Sprintf(" (%s per event under load besides)", d(c.RowSeconds))
	}
	return s
}
