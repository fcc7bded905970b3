package dbcli

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// writeOp describes one write command: what its dry run counts and what
// it does for real.
type writeOp struct {
	what    string // "delete DEAD rows", for messages
	dryRun  func(tx *wal.ReadTx) (n int, sample []wal.Row, err error)
	execute func(tx *wal.Tx) (int, error)
}

// sampleSize is how many affected rows a dry run lists.
const sampleSize = 20

func (r *runner) runWrite(c *cli.Context, op writeOp) error {
	path := r.dbPath(c)
	if c.Bool(flagDryRun) {
		// Read-only, so it works while the agent runs.
		w, err := r.openRead(c)
		if err != nil {
			return err
		}
		defer w.Close()
		var n int
		var sample []wal.Row
		if err := w.View(func(tx *wal.ReadTx) error {
			n, sample, err = op.dryRun(tx)
			return err
		}); err != nil {
			return err
		}
		o := r.stdout(c)
		fmt.Fprintf(o, "DRY-RUN: would %s: %d rows in %s; nothing was changed\n", op.what, n, w.Path())
		for _, row := range sample {
			fmt.Fprintf(o, "  id(pk) %d batch_id %d %s attempts %d %s\n", row.ID, row.BatchID, row.Status, row.Attempts, dash(oneLine(row.Reason)))
		}
		if n > len(sample) {
			fmt.Fprintf(o, "  ... and %d more\n", n-len(sample))
		}
		return nil
	}
	if !c.Bool(flagYes) {
		return errors.New("write operations require --yes (or use --dry-run)")
	}
	if _, alive := r.agentPID(); alive {
		return fmt.Errorf("agent is running (pid file %s); stop the agent before write operations", r.pidFile())
	}
	// A write command must not create a WAL where there was none.
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no WAL at %s (set --db-path or %s): %w", path, envDBPath, wal.ErrNotFound)
	}
	w, err := wal.Open(r.walOptions(path, false))
	if err != nil {
		return err
	}
	defer w.Close()
	var n int
	if err := w.Update(func(tx *wal.Tx) error {
		n, err = op.execute(tx)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout(c), "%s: %d rows in %s\n", op.what, n, w.Path())
	return w.Close()
}

// statusSample is a dry run over all rows of one status.
func statusSample(s wal.Status) func(tx *wal.ReadTx) (int, []wal.Row, error) {
	return func(tx *wal.ReadTx) (int, []wal.Row, error) {
		rows, err := tx.List(&s, 0, sampleSize)
		return tx.Counts().Of(s), rows, err
	}
}

func (r *runner) purgeDead(c *cli.Context) error {
	return r.runWrite(c, writeOp{what: "delete DEAD rows", dryRun: statusSample(wal.StatusDead),
		execute: func(tx *wal.Tx) (int, error) { return tx.PurgeDead() }})
}

func (r *runner) retryDead(c *cli.Context) error {
	now := r.now().UnixMilli()
	return r.runWrite(c, writeOp{what: "move DEAD rows to PENDING", dryRun: statusSample(wal.StatusDead),
		execute: func(tx *wal.Tx) (int, error) { return tx.RetryDead(now) }})
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
