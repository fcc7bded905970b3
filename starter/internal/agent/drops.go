package agent

import (
	"log/slog"
	"strings"
	"time"

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

// queueDrops is what one transaction's Drop deleted, and the totals since
// the WAL file was created.
type queueDrops struct {
	full, age wal.Dropped
	totals    DropStatus
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
}

func dropStatus(t map[string]wal.DropTotal) DropStatus {
	return DropStatus{
		FullRows: t[wal.DropFull].Rows, FullBytes: t[wal.DropFull].Bytes,
		AgeRows: t[wal.DropAge].Rows, AgeBytes: t[wal.DropAge].Bytes,
	}
}

// dropEpisode gathers the drops to log in one line.
type dropEpisode struct {
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
		l.r.pub.set(func(p *published) {
			p.drops = d.totals
			p.drops.Dropping = true
		})
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
	*ep = dropEpisode{}
	if quiet {
		l.r.pub.set(func(p *published) { p.drops.Dropping = false })
		return
	}
	ep.open, ep.start, ep.last = true, now, now
}
