package wal

// The sending index (index.go, sendingKind) holds the SENDING rows as
// runs claimed together, each with its claim time; it is the only record
// of SENDING (codec.go). Claim takes rows from the front of the pending
// runs, so claiming a group costs one index write instead of one per row,
// and acking that group costs up to three (delete the run, put what is
// left on either side) instead of one per row.

// takeFrom says which in-flight statuses takeIDs takes rows from.
type takeFrom uint8

const (
	fromSending takeFrom = 1 << iota
	fromReceived
	fromEither = fromSending | fromReceived
)

// takeIDs removes ids from SENDING or RECEIVED (as from says). visit is
// called for each id that is, in order, before it leaves its index; it
// returns false to leave that id where it is (a row it cannot use:
// skipped, logged by visit). Other ids are skipped with a warning:
// acking twice, or a row an operator already moved, must not abort the
// whole group commit. Each stretch of consecutive ids inside one run
// costs one seek and at most three index writes.
func (tx *Tx) takeIDs(op string, ids []uint64, from takeFrom, visit func(id uint64) (bool, error)) error {
	for i := 0; i < len(ids); {
		first := ids[i]
		var in index
		var r run
		var count *int64
		if sr, ok := tx.send.find(first); ok && from&fromSending != 0 {
			in, r, count = tx.send, sr, &tx.ctr.sending
		} else if rr, ok := tx.recv.find(first); ok && from&fromReceived != 0 {
			in, r, count = tx.recv, rr, &tx.ctr.received
		} else {
			tx.warnNotInFlight(op, first, from)
			i++
			continue
		}
		j, refused := i, false
		for j < len(ids) && ids[j] == first+uint64(j-i) && ids[j] <= r.end {
			ok, err := visit(ids[j])
			if err != nil {
				return err
			}
			if !ok {
				refused = true
				break
			}
			j++
		}
		if j > i {
			if err := in.cut(r, first, ids[j-1]); err != nil {
				return err
			}
			*count -= int64(j - i)
			tx.dirty = true
		}
		if refused {
			j++ // stays where it is
		}
		i = j
	}
	return nil
}

func (tx *Tx) warnNotInFlight(op string, id uint64, from takeFrom) {
	r, ok, _ := tx.row(id)
	if !ok {
		tx.w.log.Warn("wal: unknown row id", "op", op, "row_id", id)
		return
	}
	want := map[takeFrom]string{fromSending: "SENDING", fromReceived: "RECEIVED", fromEither: "SENDING or RECEIVED"}[from]
	tx.w.log.Warn("wal: row is not "+want, "op", op, "row_id", id, "status", r.Status.String())
}

// SendingIDs returns the ids of every SENDING row, in id order.
func (tx *ReadTx) SendingIDs() []uint64 { return tx.send.ids(0, 0) }
