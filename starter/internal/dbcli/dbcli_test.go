package dbcli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

const t0 = int64(1_700_000_000_000)

type fixture struct {
	home string
	pid  string
	env  map[string]string
	// cfg, when set, is what LoadConfig returns (else: no agent.yaml).
	cfg *Config
}

// newFixture creates an install root whose data/wal.db holds rows 1..6:
// 1,2 DEAD, 3 ACKED (at t0), 4 SENDING, 5,6 PENDING, and two positions.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	home := t.TempDir()
	f := &fixture{home: home, pid: filepath.Join(home, "edge-agent.pid"), env: map[string]string{}}
	w, err := wal.Open(wal.Options{Path: filepath.Join(home, "data", "wal.db"), Now: func() time.Time { return time.UnixMilli(t0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	err = w.Update(func(tx *wal.Tx) error {
		rows := []wal.NewRow{}
		for i := 1; i <= 6; i++ {
			rows = append(rows, wal.NewRow{SourceID: "app", Payload: []byte(`{"_line":` + strconv.Itoa(i) + `}`)})
		}
		// Rows 5 and 6 each in a block of their own: a damaged block
		// then costs one row (salvage_test.go).
		for _, group := range [][]wal.NewRow{rows[:4], rows[4:5], rows[5:]} {
			if _, _, err := tx.Append(group); err != nil {
				return err
			}
		}
		if _, err := tx.Claim(4, t0); err != nil {
			return err
		}
		if _, err := tx.Fail([]uint64{1, 2}, true, t0, 1, "DECODE_FAILED", t0); err != nil {
			return err
		}
		if err := tx.Ack([]uint64{3}, time.Hour, t0); err != nil {
			return err
		}
		return tx.SavePositions([]wal.PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: []byte(`{"offset":42}`)},
			{SourceID: "other", Key: "/x", State: []byte{0, 1}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{Home: f.home, PIDFile: func() string { return f.pid }, Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return f.env[k] }, Now: func() time.Time { return time.UnixMilli(t0 + 10_000) },
		LoadConfig: func(explicit string) (Config, error) {
			if explicit != "" && explicit != "agent.yaml" {
				return Config{}, fmt.Errorf("config file from --config: %w", os.ErrNotExist)
			}
			if f.cfg == nil {
				return Config{}, fmt.Errorf("no agent.yaml found: %w", paths.ErrNoConfig)
			}
			return *f.cfg, nil
		},
		AgentFlags: func(extra ...cli.Flag) []cli.Flag {
			return append([]cli.Flag{&cli.StringFlag{Name: flagConfig, Aliases: []string{"c"}}}, extra...)
		}}
	app := &cli.App{Name: "edge-agent", Writer: &out, ErrWriter: &errOut, Commands: []*cli.Command{Command(env)},
		ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"edge-agent", "db"}, args...))
	return out.String(), err
}

func (f *fixture) walPath() string { return filepath.Join(f.home, "data", "wal.db") }

func (f *fixture) counts(t *testing.T) wal.Counts {
	t.Helper()
	w, err := wal.Open(wal.Options{Path: f.walPath(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var c wal.Counts
	_ = w.View(func(tx *wal.ReadTx) error {
		c = tx.Counts()
		if p := tx.Verify(5); len(p) > 0 {
			t.Errorf("verify: %v", p)
		}
		return nil
	})
	return c
}

func mustContain(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestReadCommands(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"info"}, []string{f.walPath(), "wal-row-ids:", "1..6", "wal-list", "not running", "DEAD 2"}},
		{[]string{"wal-summary"}, []string{"PENDING", "SENDING", "ACKED", "DEAD", "total"}},
		{[]string{"wal-list"}, []string{"id(pk)", "wal-show --id", "DECODE_FAILED", "(6 rows)"}},
		{[]string{"wal-list", "--status", "dead"}, []string{"id(pk)", "\n1 ", "\n2 ", "(2 rows)"}},
		{[]string{"wal-list", "--limit", "2", "--after-id", "2"}, []string{"\n3 ", "\n4 ", "next page: --after-id 4"}},
		{[]string{"wal-show", "--id", "5"}, []string{"id(pk):", "PENDING", `{"_line":5}`}},
		{[]string{"positions"}, []string{"/var/log/app.log", `{"offset":42}`, "other", "hex:0001"}},
		{[]string{"positions", "--source-id", "app"}, []string{"/var/log/app.log", "(1 positions)"}},
		{[]string{"verify"}, []string{"OK:"}},
		{[]string{"--db-path", "data/wal.db", "wal-summary"}, []string{"DEAD"}},
		{[]string{"wal-summary", "--sqlite-path", f.walPath()}, []string{"DEAD"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := f.run(t, tc.args...)
			if err != nil {
				t.Fatalf("err %v\n%s", err, out)
			}
			mustContain(t, out, tc.want...)
		})
	}
	if c := f.counts(t); c.Total() != 6 {
		t.Fatalf("read commands changed the WAL: %+v", c)
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"wal-show"}, "--id"},
		{[]string{"wal-show", "--id", "99"}, "no row with id(pk) 99"},
		{[]string{"wal-list", "--status", "DELIVERED"}, "--status"},
		{[]string{"wal-purge-dead"}, "write operations require --yes (or use --dry-run)"},
		{[]string{"--db-path", "nope/wal.db", "info"}, "no WAL at " + filepath.Join(f.home, "nope", "wal.db")},
		{[]string{"compact"}, "--out"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := f.run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(f.home, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a read command created a directory")
	}
	// A foreign file is a clear error, left untouched.
	foreign := filepath.Join(f.home, "foreign.db")
	_ = os.WriteFile(foreign, []byte("not a wal"), 0o600)
	_, err := f.run(t, "--db-path", foreign, "info")
	if !errors.Is(err, wal.ErrNotWAL) || !strings.Contains(err.Error(), foreign) {
		t.Fatalf("foreign: %v", err)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "not a wal" {
		t.Fatal("foreign file modified")
	}
}

func TestPathPriority(t *testing.T) {
	f := newFixture(t)
	other := filepath.Join(f.home, "alt", "wal.db")
	_ = os.MkdirAll(filepath.Dir(other), 0o755)
	data, _ := os.ReadFile(f.walPath())
	_ = os.WriteFile(other, data, 0o600)
	f.env[envSQLitePath] = "missing-sqlite.db"
	if _, err := f.run(t, "info"); err == nil || !strings.Contains(err.Error(), "missing-sqlite.db") {
		t.Fatalf("EDGE_AGENT_SQLITE_PATH ignored: %v", err)
	}
	f.env[envDBPath] = "alt/wal.db" // beats the SQLite name, relative to home
	if out, err := f.run(t, "info"); err != nil || !strings.Contains(out, other) {
		t.Fatalf("EDGE_AGENT_DB_PATH: %v\n%s", err, out)
	}
	if out, err := f.run(t, "info", "--db-path", f.walPath()); err != nil || !strings.Contains(out, f.walPath()) {
		t.Fatalf("flag must win over env: %v\n%s", err, out)
	}
}

func TestWriteCommands(t *testing.T) {
	f := newFixture(t)
	out, err := f.run(t, "wal-purge-dead", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "DRY-RUN", "2 rows", "id(pk) 1")
	if c := f.counts(t); c.Dead != 2 {
		t.Fatalf("dry run changed the WAL: %+v", c)
	}
	// While an agent runs (a lock on the pid file, held here by this
	// test) and holds the WAL, a write beside it is refused by bbolt's
	// lock, named as such; the config being unknown, nothing asks an API.
	lock, err := process.AcquirePID(f.pid, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	held, err := wal.Open(wal.Options{Path: f.walPath(), LockTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.run(t, "wal-retry-dead", "--yes", "--db-path", f.walPath())
	if !errors.Is(err, wal.ErrLocked) || !strings.Contains(err.Error(), "another edge-agent is using") {
		t.Fatalf("err = %v, want wal.ErrLocked", err)
	}
	_ = held.Close()
	// Without a config, a running agent cannot be asked: said so.
	if _, err := f.run(t, "wal-retry-dead", "--yes"); err == nil || !strings.Contains(err.Error(), "needs the config") {
		t.Fatalf("err = %v, want the config named", err)
	}
	// Released, the same pid file means not running.
	_ = lock.Release()
	_ = os.WriteFile(f.pid, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)

	steps := []struct {
		args  []string
		check func(c wal.Counts) bool
	}{
		{[]string{"wal-retry-dead", "--yes"}, func(c wal.Counts) bool { return c.Dead == 0 && c.Pending == 4 }},
		{[]string{"wal-unstick-sending", "--yes"}, func(c wal.Counts) bool { return c.Sending == 0 && c.Pending == 5 }},
		{[]string{"wal-purge-acked", "--older-than-ms", "20000", "--yes"}, func(c wal.Counts) bool { return c.Acked == 1 }},
		{[]string{"wal-purge-acked", "--older-than-ms", "5000", "--yes"}, func(c wal.Counts) bool { return c.Acked == 0 }},
		{[]string{"wal-purge-dead", "--yes"}, func(c wal.Counts) bool { return c.Total() == 5 }},
	}
	for _, s := range steps {
		out, err := f.run(t, s.args...)
		if err != nil {
			t.Fatalf("%v: %v", s.args, err)
		}
		if c := f.counts(t); !s.check(c) {
			t.Fatalf("%v: counts %+v\n%s", s.args, c, out)
		}
	}
}

func TestCompactAndHelp(t *testing.T) {
	f := newFixture(t)
	out, err := f.run(t, "compact", "--out", "backup/wal.compact.db")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "compacted", filepath.Join(f.home, "backup", "wal.compact.db"))
	if _, err := f.run(t, "compact", "--out", "backup/wal.compact.db"); err == nil {
		t.Fatal("compact overwrote its output")
	}
	if out, err := f.run(t, "--db-path", "backup/wal.compact.db", "wal-list"); err != nil || !strings.Contains(out, "(6 rows)") {
		t.Fatalf("compacted copy: %v\n%s", err, out)
	}
	out, err = f.run(t)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "wal-list", "wal-purge-acked", "verify", "compact")
	for _, sub := range Command(Env{}).Subcommands {
		if sub.UsageText == "" || !strings.Contains(sub.UsageText, "edge-agent db "+sub.Name) {
			t.Errorf("%s: usage text lacks an example", sub.Name)
		}
	}
	out, _ = f.run(t, "help", "wal-list")
	mustContain(t, out, "--status", "--after-id")
}

// TestReceivedRows: the read commands show RECEIVED rows and the status
// filter takes the name; verify passes them.
func TestReceivedRows(t *testing.T) {
	f := &fixture{home: t.TempDir(), env: map[string]string{}}
	f.pid = filepath.Join(f.home, "edge-agent.pid")
	w, err := wal.Open(wal.Options{Path: f.walPath(), Now: func() time.Time { return time.UnixMilli(t0) }})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Update(func(tx *wal.Tx) error {
		if _, _, err := tx.Append([]wal.NewRow{{SourceID: "app", Payload: []byte("a")}, {SourceID: "app", Payload: []byte("b")},
			{SourceID: "app", Payload: []byte("c")}}); err != nil {
			return err
		}
		if _, err := tx.Claim(2, t0); err != nil {
			return err
		}
		return tx.Receive([]uint64{1, 2}, t0)
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"info"}, []string{"RECEIVED 2", "oldest-received:"}},
		{[]string{"wal-summary"}, []string{"RECEIVED  2", "PENDING   1", "total     3"}},
		{[]string{"wal-list", "--status", "received"}, []string{"\n1 ", "\n2 ", "RECEIVED", "(2 rows)"}},
		{[]string{"wal-show", "--id", "2"}, []string{"RECEIVED", "b"}},
		{[]string{"verify"}, []string{"OK:"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := f.run(t, tc.args...)
			if err != nil {
				t.Fatalf("err %v\n%s", err, out)
			}
			mustContain(t, out, tc.want...)
		})
	}
}
