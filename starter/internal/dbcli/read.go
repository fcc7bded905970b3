package dbcli

import (
	"encoding/hex"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/api"
	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Read commands print only once the whole answer is in (one read
// transaction, here or in the running agent), so a failure prints an
// error, never half a table.

func (r *runner) info(c *cli.Context) error {
	s, err := r.source(c)
	if err != nil {
		return err
	}
	in, err := read(r, s, func(a *api.Client) (dbview.Info, error) { return a.DBInfo(c.Context) }, dbview.ReadInfo)
	if err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintf(out, "db-path:\t%s\n", in.Path)
	fmt.Fprintf(out, "file-size:\t%d bytes\n", in.FileBytes)
	fmt.Fprintf(out, "schema-version:\t%d\n", in.SchemaVersion)
	switch {
	case s.client != nil:
		fmt.Fprintf(out, "agent:\trunning (pid %d, pid file %s); read through its API\n", s.pid, r.pidFile())
	case s.running:
		fmt.Fprintf(out, "agent:\trunning (pid %d, pid file %s)\n", s.pid, r.pidFile())
	default:
		fmt.Fprintf(out, "agent:\tnot running (pid file %s)\n", r.pidFile())
	}
	fmt.Fprintf(out, "next-batch-id:\t%d\n", in.NextBatchID)
	if in.LastRowID == 0 {
		fmt.Fprintf(out, "wal-row-ids:\tnone (the WAL holds no rows)\n")
	} else {
		fmt.Fprintf(out, "wal-row-ids:\t%d..%d\n", in.FirstRowID, in.LastRowID)
	}
	counts := in.Counts
	fmt.Fprintf(out, "rows:\tPENDING %d (delayed %d), SENDING %d, RECEIVED %d, ACKED %d, DEAD %d\n",
		counts.Pending, counts.Delayed, counts.Sending, counts.Received, counts.Acked, counts.Dead)
	fmt.Fprintf(out, "payload-bytes:\t%d\n", counts.PayloadBytes)
	fmt.Fprintf(out, "oldest-pending:\t%s\n", fmtTime(counts.OldestPending))
	fmt.Fprintf(out, "oldest-received:\t%s\n", fmtTime(counts.OldestReceived))
	fmt.Fprintf(out, "stand-ins:\t%d\n", counts.StandIns)
	fmt.Fprintf(out, "checksum-failures:\t%d\n", counts.ChecksumFailures)
	fmt.Fprintf(out, "hint:\tedge-agent db wal-list --status DEAD; edge-agent db wal-show --id <id(pk)>\n")
	return out.Flush()
}

func (r *runner) summary(c *cli.Context) error {
	s, err := r.source(c)
	if err != nil {
		return err
	}
	sum, err := read(r, s, func(a *api.Client) (dbview.Summary, error) { return a.DBSummary(c.Context) }, dbview.ReadSummary)
	if err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "status\tcount\toldest id(pk)\toldest created_at\toldest updated_at")
	for _, l := range sum.Statuses {
		if l.Oldest == nil {
			fmt.Fprintf(out, "%s\t%d\t-\t-\t-\n", l.Status, l.Count)
			continue
		}
		fmt.Fprintf(out, "%s\t%d\t%d\t%s\t%s\n", l.Status, l.Count, l.Oldest.ID, fmtTime(l.Oldest.CreatedAt), fmtTime(l.Oldest.UpdatedAt))
	}
	counts := sum.Counts
	fmt.Fprintf(out, "total\t%d\t\t\t\n", counts.Total())
	fmt.Fprintf(out, "(PENDING includes %d rows waiting for a retry backoff; %d payload bytes; %d checksum failures; %d stand-ins appended)\n",
		counts.Delayed, counts.PayloadBytes, counts.ChecksumFailures, counts.StandIns)
	return out.Flush()
}

func (r *runner) list(c *cli.Context) error {
	var q dbview.ListQuery
	if v := c.String("status"); v != "" {
		st, err := wal.ParseStatus(v)
		if err != nil {
			return fmt.Errorf("--status: %w", err)
		}
		q.Status = &st
	}
	q.Limit, q.AfterID = c.Int("limit"), c.Uint64("after-id")
	if q.Limit < 0 {
		return fmt.Errorf("--limit must be >= 0, got %d", q.Limit)
	}
	s, err := r.source(c)
	if err != nil {
		return err
	}
	page, err := read(r, s, func(a *api.Client) (dbview.List, error) { return a.DBList(c.Context, q) },
		func(w *wal.WAL) (dbview.List, error) { return dbview.ReadList(w, q) })
	if err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "id(pk)\tbatch_id\tstatus\tattempts\tsource_id\tcreated_at\tupdated_at\tnot_before\tbytes\treason")
	for _, row := range page.Rows {
		fmt.Fprintf(out, "%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", row.ID, row.BatchID, row.Status, row.Attempts,
			dash(row.SourceID), fmtTime(row.CreatedAt), fmtTime(row.UpdatedAt), fmtTime(row.NotBefore), row.PayloadBytes, dash(dbview.OneLine(row.Reason)))
	}
	if err := out.Flush(); err != nil {
		return err
	}
	o := r.stdout(c)
	fmt.Fprintf(o, "(%d rows)", len(page.Rows))
	if page.More {
		fmt.Fprintf(o, " next page: --after-id %d", page.Rows[len(page.Rows)-1].ID)
	}
	fmt.Fprintln(o)
	fmt.Fprintln(o, "hint: show one row with: edge-agent db wal-show --id <id(pk)>")
	return nil
}

func (r *runner) show(c *cli.Context) error {
	if !c.IsSet("id") {
		return fmt.Errorf("wal-show needs --id <row id> (the id(pk) column of wal-list, not the batch id)")
	}
	id := c.Uint64("id")
	s, err := r.source(c)
	if err != nil {
		return err
	}
	row, err := read(r, s, func(a *api.Client) (wal.Row, error) { return a.DBRow(c.Context, id) },
		func(w *wal.WAL) (wal.Row, error) { return dbview.ReadRow(w, id) })
	if err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintf(out, "id(pk):\t%d\n", row.ID)
	fmt.Fprintf(out, "batch_id:\t%d\n", row.BatchID)
	fmt.Fprintf(out, "status:\t%s\n", row.Status)
	fmt.Fprintf(out, "attempts:\t%d\n", row.Attempts)
	fmt.Fprintf(out, "source_id:\t%s\n", dash(row.SourceID))
	fmt.Fprintf(out, "created_at:\t%s (%d)\n", fmtTime(row.CreatedAt), row.CreatedAt)
	fmt.Fprintf(out, "updated_at:\t%s (%d)\n", fmtTime(row.UpdatedAt), row.UpdatedAt)
	fmt.Fprintf(out, "not_before:\t%s (%d)\n", fmtTime(row.NotBefore), row.NotBefore)
	fmt.Fprintf(out, "reason:\t%s\n", dash(row.Reason))
	if row.StandIn {
		fmt.Fprintf(out, "stand-in:\tyes (stands for the undelivered row of its batch id)\n")
	}
	fmt.Fprintf(out, "payload:\t%d bytes\n", len(row.Payload))
	if err := out.Flush(); err != nil {
		return err
	}
	writePayload(r.stdout(c), row.Payload)
	return nil
}

func (r *runner) positions(c *cli.Context) error {
	src := c.String("source-id")
	s, err := r.source(c)
	if err != nil {
		return err
	}
	entries, err := read(r, s, func(a *api.Client) ([]dbview.Position, error) { return a.DBPositions(c.Context, src) },
		func(w *wal.WAL) ([]dbview.Position, error) { return dbview.ReadPositions(w, src) })
	if err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "source_id\tkey\tstate")
	for _, e := range entries {
		fmt.Fprintf(out, "%s\t%s\t%s\n", e.SourceID, e.Key, e.State)
	}
	fmt.Fprintf(out, "(%d positions)\n", len(entries))
	return out.Flush()
}

func (r *runner) verify(c *cli.Context) error {
	max := c.Int("max-problems")
	if max < 0 {
		return fmt.Errorf("--max-problems must be >= 0, got %d", max)
	}
	s, err := r.source(c)
	if err != nil {
		return err
	}
	v, err := read(r, s, func(a *api.Client) (dbview.Verification, error) { return a.DBVerify(c.Context, max) },
		func(w *wal.WAL) (dbview.Verification, error) { return dbview.Verify(w, max) })
	if err != nil {
		return err
	}
	o := r.stdout(c)
	for _, p := range v.Problems {
		fmt.Fprintln(o, "PROBLEM:", p)
	}
	if len(v.Problems) > 0 {
		return fmt.Errorf("verify %s: %d problems (listed above)", v.Path, len(v.Problems))
	}
	fmt.Fprintf(o, "OK: %s: %d rows, checksums, indexes, counters and bbolt pages consistent (%d rows quarantined for bad checksums so far)\n",
		v.Path, v.Counts.Total(), v.Counts.ChecksumFailures)
	return nil
}

func (r *runner) compact(c *cli.Context) error {
	dst := r.resolve(c.String("out"))
	if dst == "" {
		return fmt.Errorf("compact needs --out <new file>")
	}
	s, err := r.source(c)
	if err != nil {
		return err
	}
	if err := s.needStopped("compact"); err != nil {
		return err
	}
	w, err := r.open(s)
	if err != nil {
		return err
	}
	defer w.Close()
	before := w.Size()
	if err := w.Compact(dst); err != nil {
		return err
	}
	cw, err := wal.Open(r.walOptions(dst, true, s.enc))
	if err != nil {
		return fmt.Errorf("compact: check the copy: %w", err)
	}
	after := cw.Size()
	_ = cw.Close()
	fmt.Fprintf(r.stdout(c), "compacted %s (%d bytes) into %s (%d bytes); the WAL itself is unchanged\n", w.Path(), before, dst, after)
	fmt.Fprintln(r.stdout(c), "to use the copy: stop the agent, move it over the WAL file, start the agent")
	return nil
}

func fmtTime(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writePayload(w io.Writer, p []byte) {
	if dbview.IsText(p) {
		fmt.Fprintf(w, "%s\n", p)
		return
	}
	fmt.Fprint(w, "(binary payload, hex dump)\n"+hex.Dump(p))
}
