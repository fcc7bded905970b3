package dbcli

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Env is what the db command needs from the surrounding CLI.
type Env struct {
	// Home is the install root; relative paths resolve against it.
	Home string
	// PIDFile returns the agent's pid file path; nil means
	// EDGE_AGENT_PID_FILE, else <Home>/edge-agent.pid.
	PIDFile func() string
	// Stdout and Stderr default to the app's writers.
	Stdout, Stderr io.Writer
	// Getenv defaults to os.Getenv (tests inject their own).
	Getenv func(string) string
	// Now defaults to time.Now.
	Now func() time.Time
	// Logger receives WAL warnings; default discard.
	Logger *slog.Logger
	// LoadConfig reads agent.yaml: explicit is --config, empty for the
	// default place; an error wrapping paths.ErrNoConfig means there is
	// none. nil: no config (tests).
	LoadConfig func(explicit string) (Config, error)
	// AgentFlags returns the mounting CLI's flags for naming the agent
	// meant, extra appended; they must include a string flag named
	// "config", read as LoadConfig's explicit path. nil: extra alone.
	AgentFlags func(extra ...cli.Flag) []cli.Flag
}

// Environment variables naming the WAL, in priority order.
const (
	envDBPath     = "EDGE_AGENT_DB_PATH"
	envSQLitePath = "EDGE_AGENT_SQLITE_PATH" // Java agent's name
	envPIDFile    = "EDGE_AGENT_PID_FILE"
)

const (
	flagConfig     = "config"
	flagDBPath     = "db-path"
	flagYes        = "yes"
	flagDryRun     = "dry-run"
	flagKeyFile    = "key-file"
	flagNewKeyFile = "new-key-file"
)

// Command returns the `db` command.
func Command(env Env) *cli.Command {
	r := &runner{env: env}
	agentFlags := env.AgentFlags
	if agentFlags == nil {
		agentFlags = func(extra ...cli.Flag) []cli.Flag { return extra }
	}
	pathFlags := func(extra ...cli.Flag) []cli.Flag {
		return agentFlags(append([]cli.Flag{
			&cli.StringFlag{Name: flagDBPath, Aliases: []string{"sqlite-path"},
				Usage: "WAL file (relative: against the install root); default $" + envDBPath + ", then queue.path of --config, then <install root>/data/wal.db"},
			&cli.StringFlag{Name: flagKeyFile,
				Usage: "file holding the key of an encrypted WAL (base64, 32 bytes); default queue.encryption.key-file of --config"},
		}, extra...)...)
	}
	writeFlags := func(extra ...cli.Flag) []cli.Flag {
		return pathFlags(append([]cli.Flag{
			&cli.BoolFlag{Name: flagYes, Usage: "really change the WAL"},
			&cli.BoolFlag{Name: flagDryRun, Usage: "print what would change and change nothing"},
		}, extra...)...)
	}
	return &cli.Command{
		Name:  "db",
		Usage: "inspect and repair the WAL (outbound queue and input positions)",
		UsageText: "edge-agent db <subcommand> [--config agent.yaml] [--db-path data/wal.db] [flags]\n" +
			"   edge-agent db wal-summary\n   edge-agent db wal-list --status DEAD --limit 20\n" +
			"   edge-agent db wal-retry-dead --yes",
		Description: "The WAL is queue.path of agent.yaml (--config, found as start finds it), unless --db-path\n" +
			"or EDGE_AGENT_DB_PATH names another file. A bbolt file is open in one process at a time: while\n" +
			"the agent runs (it holds the lock on its pid file), info, wal-summary, wal-list, wal-show,\n" +
			"positions, verify, wal-retry-dead, wal-purge-dead and reread ask it through its HTTP API (http.listen,\n" +
			"with http.token), and fail with a clear error when it runs with http.listen: off. On a stopped\n" +
			"agent they open the file: read-only for reads, read-write for writes. Write commands need --yes,\n" +
			"or --dry-run to only print what would change. wal-unstick-sending, wal-purge-acked, compact and\n" +
			"salvage need the agent stopped; salvage (for a WAL that start or verify report as damaged)\n" +
			"writes only the new file given by --out.",
		Flags: pathFlags(),
		// No Action: a mistyped subcommand is the mounting CLI's to report,
		// so that it reads and exits like one at any other level.
		Subcommands: []*cli.Command{
			{
				Name: "info", Usage: "WAL path, size, schema, row counts and whether the agent runs",
				UsageText: "edge-agent db info [--db-path data/wal.db]",
				Flags:     pathFlags(), Action: r.info,
			},
			{
				Name: "wal-summary", Usage: "row count and oldest row per status",
				UsageText: "edge-agent db wal-summary",
				Flags:     pathFlags(), Action: r.summary,
			},
			{
				Name: "wal-list", Usage: "list rows in id order (first column id(pk) is what wal-show --id takes)",
				UsageText: "edge-agent db wal-list --status PENDING --limit 50 --after-id 1200",
				Flags: pathFlags(
					&cli.StringFlag{Name: "status", Usage: "PENDING, SENDING, RECEIVED, ACKED or DEAD (default: all)"},
					&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most this many rows (0: all)"},
					&cli.Uint64Flag{Name: "after-id", Usage: "start after this row id (paging)"},
				), Action: r.list,
			},
			{
				Name: "wal-show", Usage: "one row with its payload, by row id (id(pk), not batch id)",
				UsageText: "edge-agent db wal-show --id 1234",
				Flags: pathFlags(
					&cli.Uint64Flag{Name: "id", Usage: "row id: the id(pk) column of wal-list"},
				), Action: r.show,
			},
			{
				Name: "positions", Usage: "saved input positions (per input id and file)",
				UsageText: "edge-agent db positions --source-id app-logs",
				Flags: pathFlags(
					&cli.StringFlag{Name: "source-id", Usage: "only this input id"},
				), Action: r.positions,
			},
			{
				Name: "verify", Usage: "check checksums, indexes, counters and bbolt pages",
				UsageText: "edge-agent db verify --max-problems 50",
				Flags: pathFlags(
					&cli.IntFlag{Name: "max-problems", Value: 100, Usage: "stop after this many problems (0: all)"},
				), Action: r.verify,
			},
			{
				Name:  "compact",
				Usage: "write a compacted copy of the WAL (the WAL itself is not changed)",
				UsageText: "edge-agent db compact --out data/wal.compact.db\n" +
					"   (to use it: stop the agent, move it over data/wal.db, start the agent)",
				Flags: pathFlags(
					&cli.StringFlag{Name: "out", Usage: "new file to write (must not exist; relative: against the install root)"},
				), Action: r.compact,
			},
			{
				Name:  "salvage",
				Usage: "copy every readable row and position of a damaged WAL into a new file (the WAL itself is not changed)",
				UsageText: "edge-agent db salvage --out data/wal.salvaged.db\n" +
					"   edge-agent db salvage --db-path /var/lib/edge-agent/data/wal.db --out /var/lib/edge-agent/data/wal.salvaged.db\n" +
					"   edge-agent db salvage --dry-run\n" +
					"   (to use the copy: keep the damaged file aside, move the copy over data/wal.db, start the agent)",
				Description: "For a WAL that start or verify report as damaged. Reads the file without bbolt, so it\n" +
					"works where bbolt cannot open it, and never writes to it. Rows keep their id(pk), batch id,\n" +
					"status, attempts and reason (SENDING rows come back PENDING, as at every start); a row whose\n" +
					"key is damaged gets a new id(pk) and keeps its batch id. Rows that do not decode or fail their\n" +
					"checksum, and the parts of the file that cannot be read, are listed, not copied.\n" +
					"The agent must be stopped. --dry-run reads and reports and writes nothing.",
				Flags: pathFlags(
					&cli.StringFlag{Name: "out", Usage: "new WAL file to write (must not exist; relative: against the install root)"},
					&cli.BoolFlag{Name: flagDryRun, Usage: "report what would be copied and write nothing"},
					&cli.IntFlag{Name: "max-problems", Value: 100, Usage: "list at most this many rows and damaged parts of each kind (0: all)"},
				), Action: r.salvage,
			},
			{
				Name:  "rekey",
				Usage: "seal the WAL with a new key (or encrypt a clear WAL); the agent must be stopped",
				UsageText: "edge-agent db rekey --new-key-file /etc/edge-agent/wal.key.new --yes\n" +
					"   edge-agent db rekey --key-file /etc/edge-agent/wal.key --new-key-file /etc/edge-agent/wal.key.new --yes\n" +
					"   (then point queue.encryption.key-file at the new key and start the agent)",
				Description: "Re-seals every position, then every block, in transactions of bounded size. The current\n" +
					"key is --key-file, else queue.encryption.key-file of --config; none for a clear WAL, which\n" +
					"this encrypts. Interrupted (a crash, ^C), the WAL opens only with both keys: run the same\n" +
					"command again, which finishes the rotation. The agent must be stopped.",
				Flags: pathFlags(
					&cli.StringFlag{Name: flagNewKeyFile, Usage: "file holding the new key (base64, 32 bytes: openssl rand -base64 32)"},
					&cli.BoolFlag{Name: flagYes, Usage: "really change the WAL"},
				), Action: r.rekey,
			},
			{
				Name: "wal-purge-dead", Usage: "delete every DEAD row",
				UsageText: "edge-agent db wal-purge-dead --dry-run\n   edge-agent db wal-purge-dead --yes",
				Flags:     writeFlags(), Action: r.purgeDead,
			},
			{
				Name: "wal-retry-dead", Usage: "move every DEAD row back to PENDING with its attempts reset",
				UsageText: "edge-agent db wal-retry-dead --yes",
				Flags:     writeFlags(), Action: r.retryDead,
			},
			{
				Name:  "reread",
				Usage: "have the running agent read a file again from a byte offset (its lines from there are delivered again)",
				UsageText: "edge-agent db reread --path /var/log/app.log --offset 0 --yes\n" +
					"   edge-agent db reread --path /var/log/app.log --offset 73412 --input app-logs --yes",
				Description: "The file is one a file input reads (its globs match it); --input picks the input when\n" +
					"several file inputs run. An offset inside a line starts at the next line; one beyond the file's\n" +
					"size is refused. Needs the running agent (through its HTTP API), like the OpAMP task reread.",
				Flags: pathFlags(
					&cli.StringFlag{Name: "path", Usage: "the file to read again, as the input's globs name it"},
					&cli.Int64Flag{Name: "offset", Usage: "byte offset to read again from (default 0)"},
					&cli.StringFlag{Name: "input", Usage: "the input's id, when several file inputs run"},
					&cli.BoolFlag{Name: flagYes, Usage: "really move the position"},
				), Action: r.reread,
			},
			{
				Name: "wal-unstick-sending", Usage: "move every SENDING row back to PENDING",
				UsageText: "edge-agent db wal-unstick-sending --yes",
				Flags:     writeFlags(), Action: r.unstickSending,
			},
			{
				Name: "wal-purge-acked", Usage: "delete ACKED rows acknowledged at least --older-than-ms ago",
				UsageText: "edge-agent db wal-purge-acked --older-than-ms 3600000 --yes",
				Flags:     writeFlags(&cli.Int64Flag{Name: "older-than-ms", Usage: "minimum age of the ack in ms (0: all ACKED rows)"}),
				Action:    r.purgeAcked,
			},
		},
	}
}

type runner struct{ env Env }

func (r *runner) getenv(k string) string {
	if r.env.Getenv != nil {
		return r.env.Getenv(k)
	}
	return os.Getenv(k)
}

func (r *runner) now() time.Time {
	if r.env.Now != nil {
		return r.env.Now()
	}
	return time.Now()
}

func (r *runner) stdout(c *cli.Context) io.Writer {
	if r.env.Stdout != nil {
		return r.env.Stdout
	}
	return c.App.Writer
}

func (r *runner) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.env.Home, p)
}

// explicitDBPath is the WAL the operator named (--db-path before or after
// the subcommand name, else the environment), or "" to take queue.path
// from the config. Priority: doc.go.
func (r *runner) explicitDBPath(c *cli.Context) string {
	for _, lc := range c.Lineage() {
		for _, n := range lc.LocalFlagNames() {
			if n == flagDBPath || n == "sqlite-path" {
				return r.resolve(lc.String(flagDBPath))
			}
		}
	}
	for _, k := range []string{envDBPath, envSQLitePath} {
		if v := r.getenv(k); v != "" {
			return r.resolve(v)
		}
	}
	return ""
}

func (r *runner) pidFile() string {
	if r.env.PIDFile != nil {
		if p := r.env.PIDFile(); p != "" {
			return r.resolve(p)
		}
	}
	if v := r.getenv(envPIDFile); v != "" {
		return r.resolve(v)
	}
	return filepath.Join(r.env.Home, "edge-agent.pid")
}

// agentPID returns the pid recorded in the pid file and whether an agent
// holds that file's lock, the one sign of a live agent (package process).
// When that cannot be told, it answers running: a write command refused
// by mistake is better than one run beside the agent.
func (r *runner) agentPID() (int, bool) {
	st, err := process.Probe(r.pidFile())
	if err != nil {
		return st.PID, true
	}
	return st.PID, st.Running
}

func (r *runner) walOptions(path string, readOnly bool, enc wal.Encryption) wal.Options {
	return wal.Options{Path: path, ReadOnly: readOnly, Fsync: true, Now: r.env.Now, Logger: r.env.Logger, Encryption: enc}
}

// flagString is the string flag name given before or after the
// subcommand's name, "" when none is.
func (r *runner) flagString(c *cli.Context, name string) string {
	for _, lc := range c.Lineage() {
		if lc.IsSet(name) {
			return lc.String(name)
		}
	}
	return ""
}
