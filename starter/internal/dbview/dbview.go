// Package dbview reads and changes what the `edge-agent db` commands show
// and do, on an open WAL. The running agent's API serves these documents
// from the WAL it has open (package api), and `edge-agent db` prints them,
// whether they came from that API or from the file of a stopped agent: one
// reading, one JSON shape, whichever process holds the file.
package dbview

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Info is `db info`.
type Info struct {
	Path          string     `json:"path"`
	FileBytes     int64      `json:"file_bytes"`
	SchemaVersion int        `json:"schema_version"`
	NextBatchID   int64      `json:"next_batch_id"`
	FirstRowID    uint64     `json:"first_row_id"`
	LastRowID     uint64     `json:"last_row_id"` // 0: no rows
	Counts        wal.Counts `json:"counts"`
}

// ReadInfo reads Info in one transaction.
func ReadInfo(w *wal.WAL) (Info, error) {
	in := Info{Path: w.Path()}
	err := w.View(func(tx *wal.ReadTx) error {
		in.SchemaVersion = tx.SchemaVersion()
		in.Counts, in.NextBatchID = tx.Counts(), tx.NextBatchID()
		in.FirstRowID, in.LastRowID = tx.RowIDRange()
		return nil
	})
	in.FileBytes = w.Size()
	return in, err
}

// Summary is `db wal-summary`.
type Summary struct {
	Path     string        `json:"path"`
	Statuses []StatusCount `json:"statuses"`
	Counts   wal.Counts    `json:"counts"`
}

// StatusCount is one status's line of the summary.
type StatusCount struct {
	Status wal.Status `json:"status"`
	Count  int        `json:"count"`
	// Oldest is the status's row with the lowest id, without its payload;
	// nil when the status has none.
	Oldest *wal.Row `json:"oldest,omitempty"`
}

// ReadSummary reads Summary in one transaction, so the per-status counts
// and the total agree even while the agent commits.
func ReadSummary(w *wal.WAL) (Summary, error) {
	s := Summary{Path: w.Path()}
	err := w.View(func(tx *wal.ReadTx) error {
		s.Statuses = s.Statuses[:0]
		s.Counts = tx.Counts()
		for _, st := range wal.AllStatuses() {
			row, ok, err := tx.OldestRow(st)
			if err != nil {
				return err
			}
			line := StatusCount{Status: st, Count: s.Counts.Of(st)}
			if ok {
				row.Payload = nil
				line.Oldest = &row
			}
			s.Statuses = append(s.Statuses, line)
		}
		return nil
	})
	return s, err
}

// ListQuery are wal-list's filters.
type ListQuery struct {
	Status  *wal.Status
	AfterID uint64
	// Limit is the page size; 0 means every row.
	Limit int
}

// List is one page of `db wal-list`.
type List struct {
	Rows []ListRow `json:"rows"`
	// More says a next page starts after the last row's id.
	More bool `json:"more"`
}

// ListRow is a row without its payload, which a listing does not show.
type ListRow struct {
	wal.Row
	PayloadBytes int `json:"payload_bytes"`
}

// ReadList reads one page.
func ReadList(w *wal.WAL, q ListQuery) (List, error) {
	if q.Limit < 0 {
		return List{}, fmt.Errorf("limit must be >= 0, got %d", q.Limit)
	}
	var l List
	err := w.View(func(tx *wal.ReadTx) error {
		n := q.Limit
		if n > 0 {
			n++ // one more tells whether there is a next page
		}
		rows, err := tx.List(q.Status, q.AfterID, n)
		if err != nil {
			return err
		}
		l.More = q.Limit > 0 && len(rows) > q.Limit
		if l.More {
			rows = rows[:q.Limit]
		}
		l.Rows = make([]ListRow, len(rows))
		for i, r := range rows {
			l.Rows[i] = ListRow{Row: r, PayloadBytes: len(r.Payload)}
			l.Rows[i].Payload = nil
		}
		return nil
	})
	return l, err
}

// ErrNoRow is wrapped when wal-show's id names no row.
var ErrNoRow = errors.New("no such row")

// ReadRow reads one row with its payload.
func ReadRow(w *wal.WAL, id uint64) (wal.Row, error) {
	var row wal.Row
	var found bool
	err := w.View(func(tx *wal.ReadTx) error {
		var err error
		row, found, err = tx.Get(id)
		return err
	})
	if err != nil {
		return row, err
	}
	if !found {
		return row, fmt.Errorf("no row with id(pk) %d in %s (see edge-agent db wal-list): %w", id, w.Path(), ErrNoRow)
	}
	return row, nil
}

// Position is one saved input position.
type Position struct {
	SourceID string `json:"source_id"`
	Key      string `json:"key"`
	// State is the saved state as text, or "hex:…" when it is not text.
	State string `json:"state"`
}

// ReadPositions reads the positions of one input id, or of all when
// sourceID is empty, sorted by input id and key.
func ReadPositions(w *wal.WAL, sourceID string) ([]Position, error) {
	var out []Position
	err := w.View(func(tx *wal.ReadTx) error {
		out = out[:0]
		sources := []string{sourceID}
		if sourceID == "" {
			var err error
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
				out = append(out, Position{SourceID: s, Key: k, State: Printable(v)})
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].SourceID != out[j].SourceID {
			return out[i].SourceID < out[j].SourceID
		}
		return out[i].Key < out[j].Key
	})
	return out, err
}

// Verification is `db verify`.
type Verification struct {
	Path     string        `json:"path"`
	Problems []wal.Problem `json:"problems"`
	Counts   wal.Counts    `json:"counts"`
}

// Verify checks the WAL (wal.WAL.Verify), listing at most max problems
// (0: all).
func Verify(w *wal.WAL, max int) (Verification, error) {
	if max < 0 {
		return Verification{}, fmt.Errorf("max problems must be >= 0, got %d", max)
	}
	p, c, err := w.Verify(max)
	return Verification{Path: w.Path(), Problems: p, Counts: c}, err
}

// Change names a write command the API also serves.
type Change string

// The changes a running agent makes on request, in its scheduler loop.
const (
	RetryDead Change = "retry-dead"
	PurgeDead Change = "purge-dead"
)

// ParseChange accepts the names above.
func ParseChange(s string) (Change, error) {
	switch c := Change(s); c {
	case RetryDead, PurgeDead:
		return c, nil
	}
	return "", fmt.Errorf("unknown change %q: want %s or %s", s, RetryDead, PurgeDead)
}

// What says what the change does, for messages.
func (c Change) What() string {
	switch c {
	case RetryDead:
		return "move DEAD rows to PENDING"
	case PurgeDead:
		return "delete DEAD rows"
	}
	return string(c)
}

// Apply makes the change in tx; now (unix ms) stamps the rows changed.
func (c Change) Apply(tx *wal.Tx, now int64) (int, error) {
	switch c {
	case RetryDead:
		return tx.RetryDead(now)
	case PurgeDead:
		return tx.PurgeDead()
	}
	return 0, fmt.Errorf("unknown change %q", string(c))
}

// SampleSize is how many affected rows a dry run lists.
const SampleSize = 20

// Result is what a write command did, or with DryRun would do.
type Result struct {
	Path   string `json:"path"`
	What   string `json:"what"`
	DryRun bool   `json:"dry_run"`
	Rows   int    `json:"rows"`
	// Sample lists up to SampleSize of the rows a dry run would change,
	// without payloads.
	Sample []wal.Row `json:"sample,omitempty"`
}

// StatusSample counts the rows of one status and lists the first
// SampleSize of them, for a dry run.
func StatusSample(tx *wal.ReadTx, s wal.Status) (int, []wal.Row, error) {
	rows, err := tx.List(&s, 0, SampleSize)
	for i := range rows {
		rows[i].Payload = nil
	}
	return tx.Counts().Of(s), rows, err
}

// DryRun counts what the change would touch, changing nothing.
func (c Change) DryRun(w *wal.WAL) (Result, error) {
	res := Result{Path: w.Path(), What: c.What(), DryRun: true}
	err := w.View(func(tx *wal.ReadTx) error {
		var err error
		res.Rows, res.Sample, err = StatusSample(tx, wal.StatusDead)
		return err
	})
	return res, err
}

// Printable is a saved state or payload as one line of text, or hex.
func Printable(b []byte) string {
	if IsText(b) {
		return OneLine(string(b))
	}
	return "hex:" + hex.EncodeToString(b)
}

// IsText reports whether b prints as text (valid UTF-8 without control
// characters other than tab and line ends).
func IsText(b []byte) bool {
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

// OneLine keeps a multi-line text in one table cell.
func OneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
