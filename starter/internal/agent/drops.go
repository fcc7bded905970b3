package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// Drop episodes: the drops of one stretch of time are logged in one line,
// when no row was dropped for dropQuiet, and at least every
// dropEpisodeMax while drops go on.
const (
	dropQuiet      = 10 * time.Second
	dropEpisodeMax = time.Minute
	// dropRecheck spaces the age checks, and the size checks that found
	// nothing they may drop (only rows in flight, DEAD or acknowledged
	// rows left): each walks the oldest commit groups.
	dropRecheck = time.Second
)

// inputs[].queue-drop values: which of an input's unsent rows
// queue.when-full: drop-oldest and queue.max-age-ms may delete.
const (
	// QueueDropNormal rows are dropped oldest first, in the order of
	// queue.drop-from.
	QueueDropNormal = "normal"
	// QueueDropFirst rows are dropped, oldest first, before any normal
	// row, whatever their lane.
	QueueDropFirst = "first"
	// QueueDropNever rows are never dropped for size or age: when only
	// they are left above queue.max-bytes, reading pauses.
	QueueDropNever = "never"
)

// queueDropPolicy is the WAL's policy for an input's queue-drop.
func queueDropPolicy(v string) (wal.DropPolicy, error) {
	switch v {
	case "", QueueDropNormal:
		return wal.DropNormal, nil
	case QueueDropFirst:
		return wal.DropFirst, nil
	case QueueDropNever:
		return wal.DropNever, nil
	}
	return wal.DropNormal, fmt.Errorf("must be %s (the default), %s or %s, got %q", QueueDropNormal, QueueDropFirst, QueueDropNever, v)
}

// CheckQueueDrop checks an input's queue-drop value; a problem names the
// key queue-drop, relative to the input's entry.
func CheckQueueDrop(v string) error {
	if _, err := queueDropPolicy(v); err != nil {
		return check.Errorf("queue-drop", "%s", err)
	}
	return nil
}

// inputDropPolicies are the WAL's drop policies of the inputs that set
// one other than normal, by input id; nil when none does, so the drops
// look up no row's input.
func inputDropPolicies(specs []InputSpec) map[string]wal.DropPolicy {
	var out map[string]wal.DropPolicy
	for _, sp := range specs {
		p, err := queueDropPolicy(sp.QueueDrop)
		if err != nil || p == wal.DropNormal {
			continue // CheckQueueDrop refused err before the start
		}
		if out == nil {
			out = map[string]wal.DropPolicy{}
		}
		out[sp.ID] = p
	}
	return out
}

// queueDrops is what one transaction's Drop deleted, and the totals since
// the WAL file was created.
type queueDrops struct {
	full, age wal.Dropped
	totals    DropStatus
	// sized says the size bound was checked with an input that has
	// queue-drop: never; held that the queue is then still above
	// queue.max-bytes with no row left that the drops may delete.
	sized, held bool
}

func (d queueDrops) rows() int { return d.full.Rows + d.age.Rows }

// DropStatus counts the unsent rows the WAL's bounds deleted, by reason,
// since the WAL file was created (the WAL keeps the totals, so they
// survive restarts): Full for queue.when-full: drop-oldest, Age for
// queue.max-age-ms.
type DropStatus struct {
	FullRows, FullBytes int64
	AgeRows, AgeBytes   int64
	// Dropping is true from a drop until no row was dropped for 10 s.
	Dropping bool
	// Held is true while the queue is above queue.max-bytes and no row
	// left may be dropped (rows of inputs with queue-drop: never, or in
	// flight): reading pauses as with when-full: block.
	Held bool `json:",omitempty"`
}

func dropStatus(t map[string]wal.DropTotal) DropStatus {
	return DropStatus{
		FullRows: t[wal.DropFull].Rows, FullBytes: t[wal.DropFull].Bytes,
		AgeRows: t[wal.DropAge].Rows, AgeBytes: t[wal.DropAge].Bytes,
	}
}

// dropEpisode gathers the drops to log in one line.
type dropEpisode struct {
	// held is the last queueDrops.held, logged when it changes; it
	// outlives the episode.
	held        bool
	open        bool
	start, last time.Time
	full, age   wal.Dropped
}

func mergeDropped(into *wal.Dropped, d wal.Dropped) {
	if d.Rows == 0 {
		return
	}
	if into.Rows == 0 || d.OldestMS < into.OldestMS {
		into.OldestMS = d.OldestMS
	}
	into.NewestMS = max(into.NewestMS, d.NewestMS)
	into.Rows += d.Rows
	into.Bytes += d.Bytes
	for _, s := range d.Sources {
		if !strings.Contains(","+strings.Join(into.Sources, ",")+",", ","+s+",") {
			into.Sources = append(into.Sources, s)
		}
	}
}

// noteDrops records a committed transaction's drops and closes the
// episode when it is due.
func (l *loop) noteDrops(now time.Time, d queueDrops) {
	ep := &l.drops
	if d.rows() > 0 {
		if !ep.open {
			ep.open, ep.start = true, now
		}
		ep.last = now
		mergeDropped(&ep.full, d.full)
		mergeDropped(&ep.age, d.age)
		held := ep.held
		l.r.pub.set(func(p *published) {
			p.drops = d.totals
			p.drops.Dropping, p.drops.Held = true, held
		})
	}
	if d.sized && d.held != ep.held {
		ep.held = d.held
		l.r.pub.set(func(p *published) { p.drops.Held = d.held })
		if d.held {
			l.log.Warn("queue above queue.max-bytes holds only rows drop-oldest may not delete (inputs with queue-drop: never, or rows in flight); reading pauses as with when-full: block until rows are acknowledged",
				slog.Int64("max_bytes", l.r.opts.Queue.MaxBytes))
		} else {
			l.log.Info("queue within queue.max-bytes again, or drop-oldest may delete rows again")
		}
	}
	l.tickDrops(now)
}

// tickDrops logs and closes the episode once it is due.
func (l *loop) tickDrops(now time.Time) {
	ep := &l.drops
	if !ep.open {
		return
	}
	quiet := now.Sub(ep.last) >= dropQuiet
	if !quiet && now.Sub(ep.start) < dropEpisodeMax {
		return
	}
	for _, r := range []struct {
		reason string
		d      wal.Dropped
	}{{wal.DropFull, ep.full}, {wal.DropAge, ep.age}} {
		if r.d.Rows == 0 {
			continue
		}
		msg := "queue above queue.max-bytes with when-full: drop-oldest; dropped the oldest unsent rows"
		if r.reason == wal.DropAge {
			msg = "dropped unsent rows older than queue.max-age-ms"
		}
		l.log.Warn(msg,
			slog.String("reason", r.reason),
			slog.Int("rows", r.d.Rows), slog.Int64("bytes", r.d.Bytes),
			slog.Time("oldest_created", time.UnixMilli(r.d.OldestMS).UTC()),
			slog.Time("newest_created", time.UnixMilli(r.d.NewestMS).UTC()),
			slog.String("inputs", strings.Join(r.d.Sources, ",")),
			slog.Duration("over", ep.last.Sub(ep.start)))
	}
	*ep = dropEpisode{held: ep.held}
	if quiet {
		l.r.pub.set(func(p *published) { p.drops.Dropping = false })
		return
	}
	ep.open, ep.start, ep.last = true, now, now
}
