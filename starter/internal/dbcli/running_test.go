package dbcli

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/paths"
	"github.com/edge-agent/edge-agent/starter/internal/process"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// agentDB stands for the running agent: it holds the WAL read-write, as
// the agent does, and makes changes itself.
type agentDB struct {
	w       *wal.WAL
	updates int
}

func (a *agentDB) WAL() *wal.WAL { return a.w }

func (a *agentDB) UpdateWAL(_ context.Context, fn func(tx *wal.Tx) error) error {
	a.updates++
	return a.w.Update(fn)
}

// runningAgent holds the pid lock and the WAL and serves the real API on
// loopback, so that db must go through it: bbolt's lock refuses any open
// of the file beside it.
func runningAgent(t *testing.T, f *fixture, token string) *agentDB {
	t.Helper()
	lock, err := process.AcquirePID(f.pid, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release() })
	w, err := wal.Open(wal.Options{Path: f.walPath()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	db := &agentDB{w: w}
	srv, err := api.Start(api.Options{Settings: api.Settings{Listen: "127.0.0.1:0", Token: token}, Source: nil, DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	f.cfg = &Config{QueuePath: f.walPath(), HTTP: api.Settings{Listen: srv.Addr(), Token: token}}
	return db
}

func TestRunningAgentAnswersThroughAPI(t *testing.T) {
	f := newFixture(t)
	db := runningAgent(t, f, "s3cret")
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"info"}, []string{f.walPath(), "1..6", "DEAD 2", "running (pid " + strconv.Itoa(os.Getpid()), "through its API"}},
		{[]string{"wal-summary"}, []string{"PENDING", "SENDING", "ACKED", "DEAD", "total"}},
		{[]string{"wal-list", "--status", "dead"}, []string{"\n1 ", "\n2 ", "DECODE_FAILED", "(2 rows)"}},
		{[]string{"wal-list", "--limit", "2", "--after-id", "2"}, []string{"\n3 ", "\n4 ", "next page: --after-id 4"}},
		{[]string{"wal-show", "--id", "5"}, []string{"id(pk):", "PENDING", `{"_line":5}`}},
		{[]string{"positions"}, []string{"/var/log/app.log", `{"offset":42}`, "other", "hex:0001"}},
		{[]string{"positions", "--source-id", "app"}, []string{"/var/log/app.log", "(1 positions)"}},
		{[]string{"verify"}, []string{"OK:", "6 rows"}},
		{[]string{"wal-retry-dead", "--dry-run"}, []string{"DRY-RUN", "2 rows", "id(pk) 1", "by the running agent"}},
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
	if _, err := f.run(t, "wal-show", "--id", "99"); err == nil || !strings.Contains(err.Error(), "no row with id(pk) 99") {
		t.Fatalf("missing row: %v", err)
	}
	if db.updates != 0 {
		t.Fatalf("reads and a dry run asked the agent to write %d times", db.updates)
	}

	out, err := f.run(t, "wal-retry-dead", "--yes")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "move DEAD rows to PENDING: 2 rows", "by the running agent")
	var c wal.Counts
	_ = db.w.View(func(tx *wal.ReadTx) error { c = tx.Counts(); return nil })
	if db.updates != 1 || c.Dead != 0 || c.Pending != 4 {
		t.Fatalf("retry-dead: %d updates, counts %+v", db.updates, c)
	}
	if _, err := f.run(t, "wal-purge-dead", "--yes"); err != nil {
		t.Fatal(err)
	}
	if db.updates != 2 {
		t.Fatalf("purge-dead did not go through the agent")
	}

	// Changes the API does not make need the agent stopped.
	for _, args := range [][]string{{"wal-unstick-sending", "--yes"}, {"wal-purge-acked", "--dry-run"}, {"compact", "--out", "x.db"}} {
		if _, err := f.run(t, args...); err == nil || !strings.Contains(err.Error(), "needs it stopped") {
			t.Errorf("%v: err = %v, want the agent to be stopped first", args, err)
		}
	}
	// A wrong token is the agent's refusal, not a silent open of the file.
	f.cfg.HTTP.Token = "wrong"
	if _, err := f.run(t, "wal-summary"); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestRunningAgentWithoutAPI(t *testing.T) {
	f := newFixture(t)
	runningAgent(t, f, "")
	f.cfg.HTTP.Listen = api.Off
	for _, args := range [][]string{{"wal-summary"}, {"info"}, {"verify"}, {"wal-retry-dead", "--yes"}, {"wal-purge-dead", "--dry-run"}} {
		_, err := f.run(t, args...)
		if !errors.Is(err, ErrAPIOff) || !strings.Contains(err.Error(), "http.listen: off") {
			t.Errorf("%v: err = %v, want ErrAPIOff naming http.listen", args, err)
		}
	}
}

func TestConfigNamesTheWAL(t *testing.T) {
	f := newFixture(t)
	other := f.home + "/alt/wal.db"
	if err := os.MkdirAll(f.home+"/alt", 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f.walPath())
	if err := os.WriteFile(other, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f.cfg = &Config{QueuePath: other, HTTP: api.DefaultSettings()}
	if out, err := f.run(t, "info"); err != nil || !strings.Contains(out, other) {
		t.Fatalf("queue.path ignored: %v\n%s", err, out)
	}
	if out, err := f.run(t, "info", "--db-path", "data/wal.db"); err != nil || !strings.Contains(out, f.walPath()) {
		t.Fatalf("--db-path must win over queue.path: %v\n%s", err, out)
	}
	if _, err := f.run(t, "--config", "missing.yaml", "info"); err == nil || !strings.Contains(err.Error(), "config") {
		t.Fatalf("a --config that does not load must fail: %v", err)
	}
}

// db reread goes to the running agent's API with the flags as args and
// prints the agent's note; a stopped agent is not changed.
func TestRereadThroughTheRunningAgent(t *testing.T) {
	f := newFixture(t)
	if _, err := f.run(t, "reread", "--path", "/var/log/app.log", "--yes"); err == nil || !strings.Contains(err.Error(), "needs the running agent") {
		t.Fatalf("stopped agent: %v", err)
	}
	lock, err := process.AcquirePID(f.pid, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release() })
	var asked []dbview.RereadArgs
	// No http.token: db finds the token file beside the pid file, as the
	// agent's user does.
	fileToken := api.NewFileToken()
	if err := os.WriteFile(paths.APITokenFile(f.pid), []byte(fileToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := api.Start(api.Options{Settings: api.Settings{Listen: "127.0.0.1:0"}, FileToken: fileToken, DB: &agentDB{},
		Reread: func(_ context.Context, a dbview.RereadArgs) (dbview.RereadReport, error) {
			asked = append(asked, a)
			if a.Path != "/var/log/app.log" {
				return dbview.RereadReport{}, errors.New("reread " + a.Path + ": no file input reads it")
			}
			return dbview.NewRereadReport("app", input.RereadResult{Path: a.Path, Requested: a.OffsetOr0(), Start: 16, Aligned: true, Line: 2, Previous: 24, Size: 24, Reread: 8}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	f.cfg = &Config{QueuePath: f.walPath(), HTTP: api.Settings{Listen: srv.Addr()}}

	out, err := f.run(t, "reread", "--path", "/var/log/app.log", "--offset", "10", "--input", "app", "--yes")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "input app reads /var/log/app.log again from byte 16 (line 3)", "after offset 10", "8 bytes delivered before", "by the running agent")
	if len(asked) != 1 || asked[0].Input != "app" || asked[0].OffsetOr0() != 10 {
		t.Fatalf("the agent was asked %+v", asked)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reread", "--path", "/var/log/app.log"}, "--yes"},
		{[]string{"reread", "--yes"}, `no "path"`},
		{[]string{"reread", "--path", "/var/log/app.log", "--offset", "-4", "--yes"}, "negative"},
		{[]string{"reread", "--path", "/elsewhere.log", "--yes"}, "no file input reads it"},
	} {
		if _, err := f.run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	if len(asked) != 2 {
		t.Fatalf("refused flags reached the agent: %d asks", len(asked))
	}
}
