package main

import (
	"fmt"
	"io"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// statsSnapshot is everything a periodic stats line shows.
type statsSnapshot struct {
	records, unique, dups int
	server                standin.Stats
}

// statsReporter prints the periodic running count, but only when something
// changed since the last line: a receiver left waiting overnight would
// otherwise bury the lines that matter under identical ones.
type statsReporter struct {
	last   statsSnapshot
	lastAt time.Time
}

func newStatsReporter(start time.Time) *statsReporter {
	return &statsReporter{lastAt: start}
}

// report writes one line for snap taken at now, unless snap equals the
// previous one. The rate covers only the interval just ended, so a burst
// after a quiet hour shows its own speed, not an average over the hour.
func (r *statsReporter) report(w io.Writer, now time.Time, snap statsSnapshot) {
	prev, prevAt := r.last, r.lastAt
	r.last, r.lastAt = snap, now
	if snap == prev {
		return
	}
	rate := 0.0
	if d := now.Sub(prevAt).Seconds(); d > 0 {
		rate = float64(snap.records-prev.records) / d
	}
	st := snap.server
	fmt.Fprintf(w, "edgesocket-receiver: records=%d rate=%.0f/s unique_batch_ids=%d duplicate_batch_ids=%d sessions=%d rejected=%d decode_failed=%d decrypt_failed=%d\n",
		snap.records, rate, snap.unique, snap.dups, st.Sessions, st.Rejected, st.DecodeFailures, st.DecryptFailures)
}
