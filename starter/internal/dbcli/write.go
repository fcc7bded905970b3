package dbcli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// writeOp describes one write command: what its dry run counts and what
// it does for real.
type writeOp struct {
	what    string // "delete DEAD rows", for messages
	dryRun  func(tx *wal.ReadTx) (n int, sample []wal.Row, err error)
	execute func(tx *wal.Tx) (int, error)
	// change is set when the running agent makes this change on request
	// (through its API); the other write commands need it stopped.
	change dbview.Change
}

func (r *runner) runWrite(c *cli.Context, op writeOp) error {
	dry := c.Bool(flagDryRun)
	if !dry && !c.Bool(flagYes) {
		return errors.New("write operations require --yes (or use --dry-run)")
	}
	s, err := r.source(c)
	if err != nil {
		return err
	}
	if s.client != nil {
		if op.change == "" {
			return fmt.Errorf("the agent is running (pid %d, pid file %s); %s needs it stopped: stop the agent before this write operation",
				s.pid, r.pidFile(), c.Command.Name)
		}
		res, err := s.client.DBChange(c.Context, op.change, dry)
		if err != nil {
			return err
		}
		printResult(r.stdout(c), res, "the running agent")
		return nil
	}
	var res dbview.Result
	if dry {
		w, err := r.open(s)
		if err != nil {
			return err
		}
		defer w.Close()
		res = dbview.Result{Path: w.Path(), What: op.what, DryRun: true}
		if err := w.View(func(tx *wal.ReadTx) error {
			res.Rows, res.Sample, err = op.dryRun(tx)
			return err
		}); err != nil {
			return err
		}
		printResult(r.stdout(c), res, "")
		return nil
	}
	// A write command must not create a WAL where there was none.
	if _, err := os.Stat(s.path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no WAL at %s (set --db-path, %s or queue.path in --config): %w", s.path, envDBPath, wal.ErrNotFound)
	}
	// A running agent that holds this file makes the open fail with
	// wal.ErrLocked ("another edge-agent is using …").
	w, err := wal.Open(r.walOptions(s.path, false, s.enc))
	if err != nil {
		return err
	}
	defer w.Close()
	res = dbview.Result{Path: w.Path(), What: op.what}
	if err := w.Update(func(tx *wal.Tx) error {
		res.Rows, err = op.execute(tx)
		return err
	}); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	printResult(r.stdout(c), res, "")
	return nil
}

// printResult prints the outcome the same way whoever made the change.
func printResult(o io.Writer, res dbview.Result, by string) {
	if by != "" {
		by = " (by " + by + ")"
	}
	if !res.DryRun {
		fmt.Fprintf(o, "%s: %d rows in %s%s\n", res.What, res.Rows, res.Path, by)
		return
	}
	fmt.Fprintf(o, "DRY-RUN: would %s: %d rows in %s%s; nothing was changed\n", res.What, res.Rows, res.Path, by)
	for _, row := range res.Sample {
		fmt.Fprintf(o, "  id(pk) %d batch_id %d %s attempts %d %s\n", row.ID, row.BatchID, row.Status, row.Attempts, dash(dbview.OneLine(row.Reason)))
	}
	if res.Rows > len(res.Sample) {
		fmt.Fprintf(o, "  ... and %d more\n", res.Rows-len(res.Sample))
	}
}

// statusSample is a dry run over all rows of one status.
func statusSample(s wal.Status) func(tx *wal.ReadTx) (int, []wal.Row, error) {
	return func(tx *wal.ReadTx) (int, []wal.Row, error) { return dbview.StatusSample(tx, s) }
}

func (r *runner) purgeDead(c *cli.Context) error {
	return r.runWrite(c, writeOp{what: dbview.PurgeDead.What(), dryRun: statusSample(wal.StatusDead), change: dbview.PurgeDead,
		execute: func(tx *wal.Tx) (int, error) { return dbview.PurgeDead.Apply(tx, r.now().UnixMilli()) }})
}

func (r *runner) retryDead(c *cli.Context) error {
	return r.runWrite(c, writeOp{what: dbview.RetryDead.What(), dryRun: statusSample(wal.StatusDead), change: dbview.RetryDead,
		execute: func(tx *wal.Tx) (int, error) { return dbview.RetryDead.Apply(tx, r.now().UnixMilli()) }})
}

func (r *runner) unstickSending(c *cli.Context) error {
	now := r.now().UnixMilli()
	return r.runWrite(c, writeOp{what: "move SENDING rows to PENDING", dryRun: statusSample(wal.StatusSending),
		execute: func(tx *wal.Tx) (int, error) { return tx.ResurrectSending(now) }})
}

func (r *runner) purgeAcked(c *cli.Context) error {
	age := c.Int64("older-than-ms")
	if age < 0 {
		return fmt.Errorf("--older-than-ms must be >= 0, got %d", age)
	}
	cutoff := r.now().UnixMilli() - age
	return r.runWrite(c, writeOp{
		what: fmt.Sprintf("delete ACKED rows acked at least %d ms ago", age),
		dryRun: func(tx *wal.ReadTx) (int, []wal.Row, error) {
			return tx.CountAckedOlderThan(cutoff), nil, nil
		},
		execute: func(tx *wal.Tx) (int, error) { return tx.PurgeAcked(cutoff) },
	})
}
