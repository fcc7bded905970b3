package wal

// Row is one WAL row: one event, sent as one __BATCH__ with BatchID.
// Times are unix milliseconds.
type Row struct {
	// ID is the local primary key (ack, cleanup, `db wal-show --id`).
	ID uint64 `json:"id"`
	// BatchID is the wire batch id: allocated at append, > 0, never reused,
	// and the same on every retry of the row; with
	// Options.SendOrderBatchIDs, allocated anew at each claim instead.
	BatchID  int64  `json:"batch_id"`
	SourceID string `json:"source_id"`
	// Payload is read-only: it may share memory with the WAL's cache of
	// decoded blocks (see the package doc).
	Payload []byte `json:"payload,omitempty"`
	Status  Status `json:"status"`
	// Attempts counts sends the engine refused or left unanswered (Fail
	// with charge=true), not claims.
	Attempts  int   `json:"attempts"`
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
	// NotBefore: a PENDING row is not claimed before this time (retry backoff).
	NotBefore int64 `json:"not_before"`
	// Reason says why the row failed last or went DEAD.
	Reason string `json:"reason,omitempty"`
	// StandIn marks a stand-in row (Options.GapFree): its payload is a
	// Gap document standing for the row of its batch id that left
	// undelivered.
	StandIn bool `json:"stand_in,omitempty"`
}

// NewRow is an event to append.
type NewRow struct {
	SourceID string
	Payload  []byte
	// Lane is the row's lane, one of Options.Lanes; "" the default lane.
	Lane string
}
