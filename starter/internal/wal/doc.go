// Package wal is edge-agent's durable outbound queue and input-position
// store: one bbolt file holding every event until the engine acknowledged
// it, with the positions of the inputs that produced the events.
//
// # Transactions and durability
//
// Everything one Update callback does (Append, SavePositions, Claim, Ack,
// ...) commits together or not at all: a row is durable no later than the
// input position that follows it. With Options.Fsync the commit is on
// disk when Update returns, one fsync per Update, so callers batch work
// into few transactions; without it a host crash can lose commits. A Tx
// method that returns an error may have done part of its work: return the
// error from the callback so that the transaction rolls back.
//
// # Rows
//
// A row is PENDING, SENDING (Claim), RECEIVED (Receive), ACKED (Ack,
// kept for the retention) or DEAD, and is deleted by CleanupAcked, by Ack
// with retention 0, or by PurgeDead. RECEIVED is for an engine that
// holds rows in memory until a checkpoint commits them: such a row is
// never claimed on its own, survives restarts (ResurrectSending leaves
// it), is acked by Ack or by AckReceivedThrough once the engine's
// committed watermark covers its batch id, and goes back to PENDING,
// due at once and uncharged, by Unreceive when the engine lost it. Claim takes the oldest due PENDING rows
// (with Options.Lanes, lane by lane; ClaimFrom takes one lane or a range of
// its row ids: lanes.go). Fail returns rows to
// PENDING with a backoff and, with charge=true, counts an attempt; at
// maxAttempts a row goes DEAD. Release and ResurrectSending return rows
// without charging; nothing else charges. RetryDead makes DEAD rows
// PENDING again. Row ids and batch ids only grow and are never reused,
// batch ids even across a deleted and recreated file. A block of rows
// that fails its checksum makes its rows DEAD at their claim, counted in
// Counts.ChecksumFailures. Operations cost O(rows touched), independent
// of the backlog; Verify and the operator operations are O(rows).
//
// # Stand-ins
//
// With Options.GapFree (CHECKPOINT delivery, whose committed watermark
// only passes consecutive batch ids), a row that leaves the WAL or goes
// DEAD without being delivered gets, in the same transaction, a stand-in:
// a new PENDING row with a new row id, the same batch id and source id,
// marked Row.StandIn, whose payload is one JSON object (Gap):
//
//	{"edge_agent_gap":{"batch_id":123,"source":"<source id>","reason":"<reason>","created_ms":<created>}}
//
// reason is "dropped: queue full" or "dropped: max-age" (DropUnsent, of
// PENDING and RECEIVED rows), "dead: <the row's reason>" (Fail at
// maxAttempts, or Claim's quarantine of a bad block) or "purged"
// (PurgeDead of a DEAD row that went DEAD without one); created_ms is the
// creation time of the row stood for. A stand-in is never dropped, and
// Fail at maxAttempts backs it off instead of making it DEAD, so it is
// eventually delivered and never needs a stand-in of its own (only a
// stand-in whose block fails its checksum does). Stand-ins allocate no
// batch id, skip Append's room check (they are tiny, like the acks the
// disk reserve is kept for), sit in blocks of their own, and are counted
// in Counts.StandIns. A batch id may reach the engine twice (a row
// retried by RetryDead after its stand-in was sent): the engine does not
// deduplicate, so the job gets the stand-in and the row.
//
// # Gap records
//
// With Options.GapRecords, every row that would get a stand-in (the
// cases above, GapFree or not) is also accounted for, in the same
// transaction, by a gap record: a new row, in a block flagged like a
// stand-in's, whose payload is package account's Record naming the input,
// the "_seq" range read from the rows' payloads, the count, the event
// times and the reason (gaprecord.go).
//
// # Concurrency
//
// A WAL may be used from several goroutines: Updates are serialised, and
// View runs beside them on one committed state. A Tx or ReadTx must not be
// used after its callback returns. Returned values are copies, except a
// Row's Payload, which is read-only (it may be shared with the WAL's
// cache of decoded blocks). Append copies the payloads it is given.
//
// Memory: the WAL drops the pages it read or wrote from its mapping every
// few MiB, and after a commit that came a second or more after the one
// before (a quiet WAL) from the page cache too, so that a later one-page
// write does not dirty a whole cached folio.
//
// A file is open in one process at a time: a read-write Open holds
// bbolt's exclusive lock and a read-only Open its shared lock, each for
// the life of the WAL, waiting up to Options.LockTimeout; meeting the
// other kind fails with ErrLocked. Read-only opens never create or change
// the file.
//
// # Damage and a full disk
//
// bbolt trusts its file and may crash the process on a damaged one. So a
// read-write Open of an existing file first has it checked by bbolt in a
// child process (the running binary again, entered through this
// package's init) and refuses a damaged one with ErrDamaged, naming
// `edge-agent db salvage` (SalvageCommand). A read-only Open of a damaged
// file succeeds so that Verify and Salvage reach it; its reads fail with
// ErrCorrupt. Salvage copies every readable row, position and metadata
// entry into a new file without bbolt (package boltraw), never writing to
// the source; rows whose status is lost come back PENDING: sent again,
// never lost.
//
// On a full disk Append fails with ErrNoSpace while acks, claims and
// deletes still commit, in space the WAL keeps allocated in its file.
//
// # Positions and schema versions
//
// SavePositions and Positions keep opaque states by (source id, key), in
// the same transactions as the rows. A file has schema version
// SchemaVersion (4), the only one this build reads and writes: the
// positions are flat keys <source id> 0x00 <key> in one bucket, which
// bbolt keeps inline in the root page while a few inputs have positions,
// so a commit saving one writes no page of its own; source ids and keys
// must not contain the byte 0x00 (SavePositions refuses them). A file of
// schema 3 (the same with the positions nested, one bucket per source id,
// written only by development builds before the first release) is
// refused by Open, naming Salvage, which copies its rows and positions
// into a new file of schema 4 and leaves it unchanged. Builds before
// schema 4 refuse a schema-4 file as written by a newer edge-agent.
//
// # Encryption at rest
//
// With Options.Encryption.Key every block's payload area and every
// position's state is sealed with AES-256-GCM; ids, times, states,
// sources and lengths stay clear but a block authenticates them
// (seal.go, where the nonce rule is). A file records that it is
// encrypted and a check value of its key: a missing or wrong key, a key
// for a clear file holding rows, or an unfinished rotation is refused
// at Open with ErrKey, the file unchanged. WAL.Rekey rotates the key in
// bounded transactions and resumes after a crash (rekey.go).
//
// # Errors
//
// Every error names the file and wraps one of the sentinels of errors.go
// or an I/O error. A file of a schema version other than SchemaVersion is
// refused with ErrSchemaVersion, never converted in place.
package wal
