// Package dbcli implements `edge-agent db`: operator commands that inspect
// and repair the WAL (package wal) of an installed agent.
//
// A bbolt file is open in one process at a time. While the agent runs (an
// agent holds the lock on its pid file, package process) and the WAL asked
// for is its own, the read commands (info, wal-summary, wal-list, wal-show,
// positions, verify) and wal-retry-dead / wal-purge-dead ask the agent
// through its HTTP API (package api, /db/; http.listen and http.token from
// the config): it reads its own WAL and makes the two changes in its
// scheduler loop. When the agent runs with http.listen: off they fail with
// ErrAPIOff, never opening the file beside it. On a stopped agent they
// open the file: read-only for reads (never creating or changing it),
// read-write for writes. The documents are package dbview's, printed the
// same way from either source. reread asks the running agent to read a
// file again from an offset (POST /db/reread, the same change as the
// OpAMP task); it changes nothing on a stopped agent, whose positions
// only its file input can move meaningfully.
//
// Write commands need --yes; --dry-run instead prints what would change
// and changes nothing. wal-unstick-sending, wal-purge-acked and compact
// need the agent stopped (bbolt's lock refuses them otherwise, and the API
// does not make those changes).
//
// salvage is for a damaged WAL (start refuses it with wal.ErrDamaged): it
// reads the file without bbolt, never changes it, and writes what is
// readable into a new file given by --out (or, with --dry-run, only
// reports). It needs the agent stopped, since it reads the file without
// bbolt's lock.
//
// rekey seals a stopped agent's WAL with a new key (--new-key-file), or
// encrypts a clear one (wal.WAL.Rekey); run again after an interruption,
// it finishes the rotation. Every command that opens the file takes the
// key of an encrypted WAL from --key-file, else from
// queue.encryption.key-file of the config; a missing or wrong key is
// refused with wal.ErrKey.
//
// The WAL path is, in order: --db-path (alias --sqlite-path; relative paths
// resolve against the install root), EDGE_AGENT_DB_PATH, then
// EDGE_AGENT_SQLITE_PATH, then queue.path of the config (--config, else
// found as start finds it), then <install root>/data/wal.db when there is
// no config. A path other than the running agent's queue.path is opened
// directly.
package dbcli
