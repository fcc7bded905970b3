package dbcli

import (
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Read commands buffer nothing themselves: they print after the read
// transaction returned successfully, so a read overtaken by the agent
// prints an error, never half a table.

func (r *runner) info(c *cli.Context) error {
	w, err := r.openRead(c)
	if err != nil {
		return err
	}
	defer w.Close()
	var counts wal.Counts
	var first, last uint64
	var next int64
	if err := w.View(func(tx *wal.ReadTx) error {
		counts, next = tx.Counts(), tx.NextBatchID()
		first, last = tx.RowIDRange()
		return nil
	}); err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintf(out, "db-path:\t%s\n", w.Path())
	fmt.Fprintf(out, "file-size:\t%d bytes\n", w.Size())
	fmt.Fprintf(out, "schema-version:\t%d\n", wal.SchemaVersion)
	if pid, alive := r.agentPID(); alive {
		fmt.Fprintf(out, "agent:\trunning (pid %d, pid file %s)\n", pid, r.pidFile())
	} else {
		fmt.Fprintf(out, "agent:\tnot running (pid file %s)\n", r.pidFile())
	}
	fmt.Fprintf(out, "next-batch-id:\t%d\n", next)
	if last == 0 {
		fmt.Fprintf(out, "wal-row-ids:\tnone (the WAL holds no rows)\n")
	} else {
		fmt.Fprintf(out, "wal-row-ids:\t%d..%d\n", first, last)
	}
	fmt.Fprintf(out, "rows:\tPENDING %d (delayed %d), SENDING %d, ACKED %d, DEAD %d\n",
		counts.Pending, counts.Delayed, counts.Sending, counts.Acked, counts.Dead)
	fmt.Fprintf(out, "payload-bytes:\t%d\n", counts.PayloadBytes)
	fmt.Fprintf(out, "oldest-pending:\t%s\n", fmtTime(counts.OldestPending))
	fmt.Fprintf(out, "checksum-failures:\t%d\n", counts.ChecksumFailures)
	fmt.Fprintf(out, "hint:\tedge-agent db wal-list --status DEAD; edge-agent db wal-show --id <id(pk)>\n")
	return out.Flush()
}

func (r *runner) summary(c *cli.Context) error {
	w, err := r.openRead(c)
	if err != nil {
		return err
	}
	defer w.Close()
	type line struct {
		s      wal.Status
		n      int
		oldest wal.Row
		ok     bool
	}
	var lines []line
	var counts wal.Counts
	if err := w.View(func(tx *wal.ReadTx) error {
		counts = tx.Counts()
		for _, s := range wal.AllStatuses() {
			row, ok, err := tx.OldestRow(s)
			if err != nil {
				return err
			}
			lines = append(lines, line{s, counts.Of(s), row, ok})
		}
		return nil
	}); err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "status\tcount\toldest id(pk)\toldest created_at\toldest updated_at")
	for _, l := range lines {
		if !l.ok {
			fmt.Fprintf(out, "%s\t%d\t-\t-\t-\n", l.s, l.n)
			continue
		}
		fmt.Fprintf(out, "%s\t%d\t%d\t%s\t%s\n", l.s, l.n, l.oldest.ID, fmtTime(l.oldest.CreatedAt), fmtTime(l.oldest.UpdatedAt))
	}
	fmt.Fprintf(out, "total\t%d\t\t\t\n", counts.Total())
	fmt.Fprintf(out, "(PENDING includes %d rows waiting for a retry backoff; %d payload bytes; %d checksum failures)\n",
		counts.Delayed, counts.PayloadBytes, counts.ChecksumFailures)
	return out.Flush()
}

func (r *runner) list(c *cli.Context) error {
	var status *wal.Status
	if s := c.String("status"); s != "" {
		st, err := wal.ParseStatus(s)
		if err != nil {
			return fmt.Errorf("--status: %w", err)
		}
		status = &st
	}
	limit := c.Int("limit")
	if limit < 0 {
		return fmt.Errorf("--limit must be >= 0, got %d", limit)
	}
	w, err := r.openRead(c)
	if err != nil {
		return err
	}
	defer w.Close()
	var rows []wal.Row
	var more bool
	if err := w.View(func(tx *wal.ReadTx) error {
		q := limit
		if q > 0 {
			q++ // one more tells whether there is a next page
		}
		rows, err = tx.List(status, c.Uint64("after-id"), q)
		if limit > 0 && len(rows) > limit {
			rows, more = rows[:limit], true
		}
		return err
	}); err != nil {
		return err
	}
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "id(pk)\tbatch_id\tstatus\tattempts\tsource_id\tcreated_at\tupdated_at\tnot_before\tbytes\treason")
	for _, row := range rows {
		fmt.Fprintf(out, "%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", row.ID, row.BatchID, row.Status, row.Attempts,
			dash(row.SourceID), fmtTime(row.CreatedAt), fmtTime(row.UpdatedAt), fmtTime(row.NotBefore), len(row.Payload), dash(oneLine(row.Reason)))
	}
	if err := out.Flush(); err != nil {
		return err
	}
	o := r.stdout(c)
	fmt.Fprintf(o, "(%d rows)", len(rows))
	if more {
		fmt.Fprintf(o, " next page: --after-id %d", rows[len(rows)-1].ID)
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
	w, err := r.openRead(c)
	if err != nil {
		return err
	}
	defer w.Close()
	var row wal.Row
	var found bool
	if err := w.View(func(tx *wal.ReadTx) error {
		row, found, err = tx.Get(id)
		return err
	}); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no row with id(pk) %d in %s (see edge-agent db wal-list): %w", id, w.Path(), wal.ErrNotFound)
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
	fmt.Fprintf(out, "payload:\t%d bytes\n", len(row.Payload))
	if err := out.Flush(); err != nil {
		return err
	}
	writePayload(r.stdout(c), row.Payload)
	return nil
}

func (r *runner) positions(c *cli.Context) error {
	w, err := r.openRead(c)
	if err != nil {
		return err
	}
	defer w.Close()
	type entry struct{ src, key, state string }
	var entries []entry
	if err := w.View(func(tx *wal.ReadTx) error {
		sources := []string{c.String("source-id")}
		if sources[0] == "" {
			if sources, err = tx.Sources(); err != nil {
				return err
			}
		}
		for _, s := range sources {
			pos, err := tx.Positions(s)
			if err != nil {
				return err
			}
			for k, v := range pos {
				entries = append(entries, entry{s, k, printable(v)})
			}
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].src != entries[j].src {
			return entries[i].src < entries[j].src
		}
		return entries[i].key < entries[j].key
	})
	out := tabwriter.NewWriter(r.stdout(c), 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "source_id\tkey\tstate")
	for _, e := range entries {
		fmt.Fprintf(out, "%s\t%s\t%s\n", e.src, e.key, e.state)
	}
	fmt.Fprintf(out, "(%d positions)\n", len(entries))
	return out.Flush()
}

func (r *runner) verify(c *cli.Context) error {
	w, err := r.openRead(c)
	if err != nil {
		return err
	}
	defer w.Close()
	problems, counts, err := w.Verify(c.Int("max-problems"))
	if err != nil {
		return err
	}
	o := r.stdout(c)
	for _, p := range problems {
		fmt.Fprintln(o, "PROBLEM:", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("verify %s: %d problems (listed above)", w.Path(), len(problems))
	}
	fmt.Fprintf(o, "OK: %s: %d rows, checksums, indexes, counters and bbolt pages consistent (%d rows quarantined for bad checksums so far)\n",
		w.Path(), counts.Total(), counts.ChecksumFailures)
	return nil
}

func (r *runner) compact(c *cli.Context) error {
	dst := r.resolve(c.String("out"))
	if dst == "" {
		return fmt.Errorf("compact needs --out <new file>")
	}
	w, err := r.openRead(c)
	if err != nil {
		return err
	}
	defer w.Close()
	before := w.Size()
	if err := w.Compact(dst); err != nil {
		return err
	}
	cw, err := wal.Open(r.walOptions(dst, true))
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

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

func printable(b []byte) string {
	if isText(b) {
		return oneLine(string(b))
	}
	return "hex:" + hex.EncodeToString(b)
}

func writePayload(w io.Writer, p []byte) {
	if isText(p) {
		fmt.Fprintf(w, "%s\n", p)
		return
	}
	fmt.Fprint(w, "(binary payload, hex dump)\n"+hex.Dump(p))
}
