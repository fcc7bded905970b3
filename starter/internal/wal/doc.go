// Package wal is edge-agent's durable outbound queue and input-position
// store: one bbolt file (default data/wal.db) holding every event until the
// engine acknowledged it, plus the positions of the inputs that produced
// the events.
//
// # Contract
//
//   - Atomicity: everything done in one WAL.Update callback (Append,
//     SavePositions, Claim, Ack, ...) commits together or not at all. With
//     Options.Fsync the commit is on disk when Update returns; a row is
//     therefore durable before its input position advances, and before
//     anything is acknowledged upstream. One Update is one fsync: batch
//     appends, claims and acks into few transactions (group commit). A
//     Tx method that returns an error may have done part of its work:
//     return the error from the callback so that the whole transaction
//     rolls back.
//   - State machine (SPEC §2): PENDING -> SENDING (Claim) -> ACKED (Ack) ->
//     deleted (CleanupAcked, or at once with retention 0). Fail returns a
//     row to PENDING with a NotBefore backoff and, with charge=true, counts
//     an attempt; at maxAttempts it goes DEAD. Release and
//     ResurrectSending return rows to PENDING without charging. Only
//     Fail(charge=true) charges: claims, resurrection and an unreachable
//     engine never do. DEAD rows stay until RetryDead or PurgeDead.
//   - Ids: row ids (the local primary key) and batch ids (the wire id)
//     are allocated from counters in the meta bucket, never reused. A new
//     file seeds next_batch_id with Unix ms × 1000, so batch ids keep
//     increasing even when the file is deleted and recreated. Batch ids
//     are > 0.
//   - Layout (schema 3, block.go, state.go): the rows of one Append are
//     stored as one immutable block (split past 512 rows or 1 MiB),
//     keyed by its first row id: the rows' batch ids, creation time and
//     input ids, and their payloads compressed with s2. The mutable part
//     of a row (status at rest, attempts, times, reason) has an entry in
//     the state bucket only once it differs from a fresh row's; SENDING
//     is recorded only by the sending index. A row exists while an index
//     or a state entry holds it; a block is deleted with its last row
//     (three seeks per block, not per row). A read-write open converts a
//     schema-2 file (one key per row) in bounded transactions that a
//     kill only interrupts (migrate.go); read-only opens of such a file
//     fail with ErrSchemaVersion and say to start the agent once.
//   - Integrity: each block stores a CRC32C of all it holds. Claim moves
//     the rows of a block that fails it (or no longer decodes) to DEAD
//     with a reason, counts each in Counts.ChecksumFailures and carries
//     on; they stay DEAD when retried. No per-row checksum: payloads are
//     only read by decoding their block, so it would catch nothing the
//     block's does not. A bbolt panic on a damaged page becomes an error
//     wrapping ErrCorrupt.
//   - Damaged files (boltfile.go, damage.go): bbolt trusts its file and
//     panics on a damaged B-tree, partly in goroutines of its own that no
//     recover reaches (the free-page scan of every read-write open,
//     Tx.Check). So a read-write open first walks the whole file with a
//     reader that checks every page id, offset and key order itself (and
//     that every block still has a row in an index, that the indexes hold
//     every row the counters count and no row outside a block: a row
//     whose key or index entry was damaged would otherwise silently never
//     be sent), and refuses a damaged file with
//     ErrDamaged, naming `edge-agent db salvage` (SalvageCommand). Verify
//     uses the same walk instead of Tx.Check. Salvage copies every
//     readable, checksum-valid row, every position and the agent's
//     metadata of a damaged file into a new WAL, reading the source only
//     with that walk and never writing to it; a row's status comes from
//     the indexes and its state entry, so when those are damaged (or lost
//     with a truncated file) the rows of a block no index holds are
//     copied as PENDING: sent again rather than lost. The walk costs one read of
//     the used part of the file per read-write open, of the order of
//     bbolt's own free-page scan at open (BenchmarkOpen compares them).
//   - Cost: Append, Claim, Ack, Fail, Release, CleanupAcked and Counts are
//     O(rows touched), independent of the backlog: per-status index
//     buckets (due PENDING rows as runs of consecutive ids, so a group
//     append adds one index entry; backed-off PENDING rows keyed by id plus
//     a timers index keyed by due time; SENDING as runs of ids claimed
//     together; ACKED keyed by ack time; DEAD) and counters are kept in the
//     same transaction as the rows. An Append writes its payloads once, in
//     its block; a Claim writes only the sending runs, decoding each block
//     once for all its rows (the WAL keeps up to 4 MiB of decoded blocks,
//     those an append wrote included, so that a claim soon after an
//     append decompresses nothing; an append behind more queued payload
//     than that keeps none, its claim comes too late to find it; the
//     values of an append are assembled in buffers the WAL reuses once
//     the transaction has ended; blocks never change and ids are never
//     reused, a deleted block leaves the cache, and the cache is cleared
//     when a transaction rolls back); an Ack with retention 0
//     writes the sending runs and deletes whole blocks. Operator
//     operations and Verify are O(rows).
//   - Values returned (rows, payloads, positions, metadata) are copies and
//     stay valid after the transaction; a Tx or ReadTx must not be used
//     after its callback returns. A row's Payload is read-only: it may
//     share a decoded block with the WAL's cache, which serves it again
//     (a released row claimed anew), so writing it would change what is
//     sent. Append copies the payloads it is given: the caller may reuse
//     them once it returns.
//
// # Full disk
//
// bbolt copies every page it changes and frees the old ones only once the
// transaction is on disk, so on a full disk even a transaction that only
// acks or deletes rows needs new pages first. On Linux the WAL therefore
// keeps spaceReserve (1 MiB) allocated in its file past the last used page
// and re-allocates it after each commit; Append refuses rows, with an error
// wrapping ErrNoSpace, when they would leave less than that, counting free
// disk, bbolt's free pages and the reserve. Acks, releases, claims and
// deletes may use the reserve; the pages they free take new rows again.
// IsNoSpace tells a full disk (ErrNoSpace, ENOSPC, EDQUOT) from other
// write errors.
//
// # Memory
//
// bbolt maps the file and reads rows through the mapping, so every page a
// claim, an append, an ack or the free-page scan at open reads stays in
// the process's resident set, and a backlog of a few hundred MB, drained
// or still growing, would show as as much RSS. On Linux the WAL therefore
// drops its mapped pages (MADV_DONTNEED, resident_linux.go) after open and
// whenever transactions have read residentDropBytes (4 MiB) of rows, or
// written as many bytes of pages, since the last time; the pages stay in
// the page cache and are mapped again when read. After a commit that came
// a second or more after the one before (a quiet WAL), it drops them from
// the page cache too, so that a later one-page write does not dirty a
// whole large cached folio (quiet, in wal.go). At open, bbolt's
// free-page scan reads the first page of every page run (each block is
// one, in a bucket of its own: block.go); the check before it reads the
// whole file, and then drops the file from the page cache
// (POSIX_FADV_DONTNEED), since the kernel's fault-around would otherwise
// map every cached neighbour of the pages the scan reads. The peak at
// open is therefore about one page per block (41 MiB for a 2M-row WAL of
// 194 MB), not the file.
//
// # Locking and readers
//
// A bbolt file is open in one process at a time, as bbolt intends. A
// read-write Open takes bbolt's exclusive file lock with
// Options.LockTimeout, a read-only Open its shared lock, each for the life
// of the WAL value; an Open that meets the other kind fails with an error
// wrapping ErrLocked: "another edge-agent is using <path>". So a second
// agent cannot start on the file, a db command cannot open the file of a
// running agent (it asks the agent's API instead, which reads with View
// on the agent's own WAL), and an agent cannot start while a db command
// has the file open.
//
// Within one process, View runs beside Update: bbolt gives every read
// transaction one committed state while the writer commits. A read-write
// Open removes the lock files earlier versions kept beside the WAL for
// readers in other processes (<path>-readgate.lock, <path>-readintent.lock).
//
// # Errors
//
// Open returns errors wrapping ErrLocked, ErrNotWAL (not a bbolt file, a
// damaged header, or a bbolt file of another program), ErrDamaged (a
// read-write open of a file whose B-tree is damaged), ErrSchemaVersion
// (a WAL written by a newer agent) or ErrNotFound (read-only open of a
// missing file; read-only opens never create files). A read-only open
// of a damaged file succeeds, so that verify and salvage reach it; its
// reads fail with ErrCorrupt where they meet the damage. Every error
// names the WAL path.
package wal
