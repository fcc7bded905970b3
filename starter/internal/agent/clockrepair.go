package agent

import (
	"bytes"
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/clockjump"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// metaClockEpochs holds the WAL's clock epochs (clockjump.Epochs), written
// in the transactions that append the rows they describe.
const metaClockEpochs = "clock_epochs"

// stampRepair records clock epochs beside the rows and repairs the "_ts"
// of rows stamped before a jump when they are claimed. Only the loop
// goroutine uses it.
type stampRepair struct {
	clock clockjump.Clock
	// raw is the meta value epochs were parsed from: a transaction that
	// rolled back leaves the stored value, which is then parsed again.
	raw    []byte
	epochs clockjump.Epochs
}

// sync makes epochs the ones tx holds.
func (s *stampRepair) sync(tx *wal.Tx) error {
	v, err := tx.Meta(metaClockEpochs)
	if err != nil {
		return fmt.Errorf("read clock epochs: %w", err)
	}
	if bytes.Equal(v, s.raw) && (v != nil) == (s.raw != nil) {
		return nil
	}
	e, err := clockjump.Parse(v)
	if err != nil {
		return fmt.Errorf("read clock epochs: %w", err)
	}
	s.raw, s.epochs = bytes.Clone(v), e
	return nil
}

// observe starts an epoch at row first when the clock jumped since the
// last one (or the host booted again).
func (s *stampRepair) observe(tx *wal.Tx, first uint64) error {
	if err := s.sync(tx); err != nil {
		return err
	}
	if !s.epochs.Observe(first, s.clock.Boot(), clockjump.Offset(s.clock)) {
		return nil
	}
	v := s.epochs.Marshal()
	if err := tx.SetMeta(metaClockEpochs, v); err != nil {
		return fmt.Errorf("store clock epochs: %w", err)
	}
	s.raw = v
	return nil
}

// repair rewrites the payloads of claimed rows stamped before a jump.
func (s *stampRepair) repair(tx *wal.Tx, rows []row) error {
	if err := s.sync(tx); err != nil {
		return err
	}
	boot, off := s.clock.Boot(), clockjump.Offset(s.clock)
	if !s.epochs.Jumped(boot, off) {
		return nil
	}
	for i := range rows {
		if d, ok := s.epochs.Correction(rows[i].ID, boot, off); ok {
			if p, ok := clockjump.Repair(nil, rows[i].Payload, d); ok {
				rows[i].Payload = p // the WAL's copy is read-only
			}
		}
	}
	return nil
}
