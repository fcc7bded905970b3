package wal

import "errors"

// Sentinel errors. Callers test them with errors.Is; every returned error
// wraps one of these (or an I/O error) and names the WAL path.
var (
	// ErrLocked: another process holds the WAL file lock (a second agent on
	// the same data dir, a db command opening the file while the agent
	// runs, or an agent starting while a db command has the file open).
	ErrLocked = errors.New("wal locked")
	// ErrNotWAL: the file exists but is not a bbolt file, or is a bbolt file
	// written by something other than edge-agent.
	ErrNotWAL = errors.New("not an edge-agent WAL")
	// ErrSchemaVersion: the file is an edge-agent WAL of a schema version
	// other than SchemaVersion, which this build does not read; it is
	// never converted in place (Salvage copies one of the version before).
	ErrSchemaVersion = errors.New("unsupported WAL schema version")
	// ErrNotFound: the WAL file does not exist (read-only opens never create
	// one).
	ErrNotFound = errors.New("wal not found")
	// ErrReadOnly: a write transaction was requested on a WAL opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("wal opened read-only")
	// ErrCorrupt: bbolt hit a damaged page while reading. The transaction was
	// rolled back; `edge-agent db verify` reports the details.
	ErrCorrupt = errors.New("wal corrupt")
	// ErrDamaged: the file's B-tree is damaged (pages that cannot be read
	// or contradict each other, a truncated file, rows that no index holds).
	// The agent refuses to write to it; `edge-agent db salvage` copies what
	// is readable into a new file (SalvageCommand).
	ErrDamaged = errors.New("wal damaged")
	// ErrNoSpace: Append refused new rows because the disk is full and the
	// space held back for acks and deletes (see spaceReserve) would be
	// touched. The transaction was rolled back; acks, releases and claims
	// still commit. IsNoSpace also recognises the filesystem's own ENOSPC.
	ErrNoSpace = errors.New("no space left for new WAL rows")
	// ErrKey: the WAL's encryption and the keys given disagree: an
	// encrypted file and no key or another key, a key for a clear file
	// that holds rows, or a key rotation left unfinished. The message
	// names the key file and what to do; the file is left unchanged.
	ErrKey = errors.New("wal key refused")
	// ErrClosed: the WAL was used after Close.
	ErrClosed = errors.New("wal closed")
)
