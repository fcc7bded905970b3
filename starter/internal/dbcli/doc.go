// Package dbcli implements `edge-agent db`: operator commands that inspect
// and repair the WAL (package wal) of an installed agent.
//
// Read commands (info, wal-summary, wal-list, wal-show, positions, verify,
// compact) open the WAL read-only: they never create or change it and work
// while the agent runs. Write commands (wal-purge-dead, wal-retry-dead,
// wal-unstick-sending, wal-purge-acked) need the agent stopped and --yes;
// --dry-run instead prints what would change and changes nothing (it works
// while the agent runs).
//
// salvage is for a damaged WAL (start refuses it with wal.ErrDamaged): it
// reads the file without bbolt, never changes it, and writes what is
// readable into a new file given by --out (or, with --dry-run, only
// reports). It needs the agent stopped, since it reads outside the
// coordination the agent offers readers.
//
// The WAL path is, in order: --db-path (alias --sqlite-path; relative paths
// resolve against the install root), EDGE_AGENT_DB_PATH, then
// EDGE_AGENT_SQLITE_PATH, then <install root>/data/wal.db. `db` never reads
// queue.path from agent.yaml, like the Java agent.
package dbcli
