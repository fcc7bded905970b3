// Package file is the `type: file` input: it finds files by glob, follows
// each one by identity through renames, copytruncate and deletion, and
// turns complete lines (or multiline groups) into events whose payload is
// the event JSON of the EdgeSocket RAW format.
//
// Identity is device+inode (on Windows volume serial number + file index)
// plus a fingerprint of the first fingerprint-bytes, matched by prefix so
// a growing file keeps it; on Windows files are opened sharing delete
// access, so the application can rotate a log being read. A position (input.Position, State in JSON, see
// savedState) is kept per identity, not per path. Given a scheduler that
// stores each event's position with it, the input promises:
//
//   - every complete line is delivered once, in order per file, while the
//     file is reachable (by a glob, or by an open descriptor after a
//     rename or delete); a partial last line waits for its newline;
//   - files found after the first start are read from 0; files present
//     when their pattern was first configured are tailed unless
//     read-from-beginning;
//   - copytruncate with the copies in the globs (app.log*, exclude *.gz):
//     nothing is delivered twice and nothing is lost, whether a scan
//     lists the copy before, during or after it is written, and before or
//     after the truncate; without the copies in the globs, the lines
//     written between the last read and the truncate are lost;
//   - rotation while stopped: a saved position whose file the globs no
//     longer name is found in its directory by identity and drained;
//     one not found is dropped after two scans, its unread bytes reported
//     (WARN with "lost_bytes", Stats().LostBytes);
//   - buffered multiline groups are delivered, never dropped: on idle
//     timeout, close-inactive, rotation, skipped errors and Drain;
//   - with several inputs, a file is read by the first in config order
//     that matches it (input.Claims);
//   - a directory that cannot be listed is not taken as empty: its files
//     keep their positions;
//   - errors end Poll only with on-error: fail; with skip they are logged
//     once per file and counted.
//
// Poll never waits and is bounded (max events, maxPollBytes), shared
// round-robin between files. Each file's lifecycle (opened, renamed,
// rotated, truncated, deleted, closed, reopened, forgotten) is logged
// once per event at INFO, never per line.
//
// Concurrency: one goroutine drives Open, Poll, Drain and Close. Stats,
// Files and Wakeup may be called from any goroutine.
//
// Limits: content rewritten in place with identical first bytes and a size
// that did not shrink reads as appended data; a file renamed out of the
// globs or deleted while closed (close-inactive, max-open-files) cannot be
// finished; a copy whose whole content is shorter than fingerprint-bytes
// is read as a new file; one listed while it holds fewer than
// fingerprint-bytes of a longer original is told for a copy only when its
// name extends the original's (app.log.1, app.log-20261201).
//
// Parts: internal/tracker holds every index by which a file is found
// (key, identity, path, fingerprint, prior content, restored positions);
// reader (reader.go) is one file's descriptor, line splitter, multiline
// assembler, position and event text; the emitter builds the poll's
// events and positions; the report logs and counts; the manager holds the
// globs, the claims and the watcher. Input schedules scans and reads; a
// fileSet (fileset.go) decides what a file found, renamed, truncated or
// copied is, in the file sets manager_* (listing, discovery), reader_*
// (open, evict, the read loop), rotation_* (copytruncate and truncation)
// and tracker_* (state encoding, lifecycle).
package file
