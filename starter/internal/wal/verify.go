package wal

import (
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// quarantined: a row Claim moved to DEAD for a bad checksum or an
// undecodable value; its checksum fails by design.
func quarantined(r *Row) bool {
	return r.Status == StatusDead && quarantinedReason(r.Reason)
}

func quarantinedReason(reason string) bool {
	return reason == ReasonChecksum || strings.HasPrefix(reason, reasonUndecodable)
}

// damageProblems turns the damage bbolt found into Verify's problems,
// with what was not checked.
func damageProblems(path string, damage []string, more int) []Problem {
	out := make([]Problem, 0, len(damage)+2)
	for _, d := range damage {
		out = append(out, Problem{What: "damaged: " + d})
	}
	if more > 0 {
		out = append(out, Problem{What: fmt.Sprintf("damaged: ... and %d more", more)})
	}
	return append(out, Problem{What: fmt.Sprintf("indexes and counters not checked: the B-tree is damaged; "+
		"copy what is readable into a new file with `%s`", SalvageCommand(path))})
}

// Verify checks the file with bbolt's own check (Tx.Check), then runs
// ReadTx.Verify, and returns the problems and the counters. On a
// read-only WAL, which may be a damaged file, bbolt's check runs in a
// child process as at a read-write open; on the agent's own WAL, which
// passed that check at open and was written by bbolt since, in this one
// with no commit meanwhile. When bbolt finds the tree damaged, or cannot
// read it, Verify reports that and the counters are zero.
func (w *WAL) Verify(max int) ([]Problem, Counts, error) {
	damage, more, err := w.checkTree()
	if err != nil {
		return nil, Counts{}, fmt.Errorf("verify wal %s: %w", w.path, err)
	}
	if len(damage) > 0 {
		return clip(damageProblems(w.path, damage, more), max), Counts{}, nil
	}
	if !w.opts.ReadOnly {
		defer w.releaseMapped()
	}
	var problems []Problem
	var counts Counts
	err = w.View(func(tx *ReadTx) error {
		problems, counts = tx.Verify(max), tx.Counts()
		return nil
	})
	if errors.Is(err, ErrCorrupt) {
		damage = []string{fmt.Sprintf("bbolt cannot read the file: %v", err)}
		return clip(damageProblems(w.path, damage, 0), max), Counts{}, nil
	}
	return problems, counts, err
}

// checkTree runs bbolt's check of the B-tree (see Verify).
func (w *WAL) checkTree() (damage []string, more int, err error) {
	if w.opts.ReadOnly {
		v, err := w.runCheck(checkRequest{Path: w.path, LockTimeout: w.opts.LockTimeout}, w.opts.CheckTimeout)
		switch {
		case err != nil:
			return nil, 0, err
		case v.Locked:
			return nil, 0, fmt.Errorf("another edge-agent is using %s: %w", w.path, ErrLocked)
		case v.OpenError != "":
			return []string{"bbolt cannot open the file: " + v.OpenError}, 0, nil
		}
		return v.Damage, v.More, nil
	}
	// Tx.Check in a read transaction is safe only without a writer.
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	db := w.db
	w.mu.Unlock()
	if db == nil {
		return nil, 0, ErrClosed
	}
	err = db.View(func(btx *bolt.Tx) error {
		for err := range btx.Check() {
			if len(damage) < checkMaxDamage {
				damage = append(damage, checkError(err))
			} else {
				more++
			}
		}
		return nil
	})
	return damage, more, err
}

// releaseMapped drops the pages Verify read through bbolt's mapping from
// the agent's resident set, as afterCommit does for commits: Verify
// reads every page of the file.
func (w *WAL) releaseMapped() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	db := w.db
	w.mu.Unlock()
	if db == nil {
		return
	}
	if used, ok := usedSize(db); ok {
		_ = dropResident(db, used)
	}
}

func clip(p []Problem, max int) []Problem {
	if max > 0 && len(p) > max {
		return p[:max]
	}
	return p
}
