// Package file is the `type: file` input: it finds files by glob, follows
// each one by identity through renames, copytruncate and deletion, and
// turns complete lines (or multiline groups) into events whose payload is
// the event JSON of the EdgeSocket RAW format.
//
// Identity is device+inode (on Windows volume serial number + file index,
// saved in the same "dev" and "ino" fields) plus a fingerprint of the
// first fingerprint-bytes, matched by prefix so a growing file keeps its
// identity; a closed file does not keep its inode, so the same
// device+inode under another name that does not start with that
// fingerprint (or a never-read empty file's inode, now holding data) is a
// new file that reused the inode, and is checked for being a copy. On
// Windows files are opened sharing delete access, so the application can
// rename or delete a log the agent is reading. A position
// (input.Position) is kept per identity, not per path, so a renamed file
// resumes where it was; its State is JSON, see savedState.
//
// Guarantees, given a scheduler that stores each event's position with
// the event (a run of lines from one file in one Poll result carries it
// on its last line only, see input.Event):
//   - every complete line is delivered once, in order per file, while
//     the file stays reachable (by a glob, or by an open descriptor after
//     a rename or delete);
//   - a partial last line is held until its newline arrives and is never
//     delivered on its own; after a restart it is read again from the
//     saved offset;
//   - files found after the first start are read from offset 0;
//     read-from-beginning applies only to files present when their path
//     pattern was first configured: at the first start, or at the first
//     start after the pattern was added (tailed from the end of their
//     last complete line otherwise; _line then counts from that point, as
//     in the Java agent). With read-from-beginning false the input keeps
//     the patterns its positions were taken under in a position of its
//     own, key "patterns";
//   - copytruncate: a new file whose first bytes are a tracked file's
//     content (its fingerprint, and the same bytes up to 4 KiB before the
//     end of the shorter file) is that file's copy. Found after the
//     truncate, it continues from where the original was delivered (the
//     original's old content is kept for the copy as its "prior": for two
//     scans in its saved state, as "prev", so a restart decides the same;
//     up to 1024 in memory); found before, it is not read until the
//     original is truncated or ends, then continues from there. Of two
//     such files the larger is the original. So with the copies in the
//     globs (app.log*, exclude '*.gz') nothing is delivered twice and the
//     lines written between the last read and the truncate are read once,
//     from the copy. Without the copies in the globs those lines are lost.
//     A waiting file that grows past its original takes over from it only
//     while it still holds the original's bytes: one taken for a copy on
//     its first bytes that grows into other content is read as a file of
//     its own from then on;
//   - rotation while stopped: at start, a saved position whose file the
//     globs no longer find is looked up in its directory by device+inode
//     and fingerprint (a rename keeps both) and drained from its offset,
//     also under a name the globs do not match, until quiet for
//     close-inactive. A position whose file is not found is dropped after
//     two scans; if it showed unread bytes (positions save the size known
//     then) they are reported: a WARN with "path" and "lost_bytes", and
//     Stats().LostBytes;
//   - buffered multiline groups are delivered, not dropped, on idle
//     timeout (from the last line), close-inactive, rotation, skipped
//     errors and Drain.
//
// Events can carry static `fields` and, with add-host-fields, "_host" and
// "_agent_id", appended after the payload of every object (sorted field
// names first); names the input writes itself are refused by Validate.
// Neither is set by default, so events stay byte-identical to the Java
// agent's. include-lines / exclude-lines are tested against an event's
// first line after multiline grouping (include first, then exclude, as
// Filebeat does); a dropped event is counted in Stats().Filtered and still
// moves the file's saved position, so its bytes are not read again.
//
// With several inputs (agent.yaml inputs:) a file that an earlier input
// in the config's order also matches is skipped, logged once per path
// (input.Claims): it is read once, by the first.
//
// Poll never waits: it reads at most max events and 16 MiB per call,
// shares the budget round-robin between files, and returns. Each read is
// sized to the lines the poll still wants at the mean line length seen
// (4 KiB to 64 KiB), since what a poll reads past its last line is read
// again by the next one. Errors come
// back only with on-error: fail; with skip they are logged once per file
// and counted in Stats().Errors.
//
// A directory that cannot be listed (permissions, EMFILE, I/O errors) is
// not taken as empty: the files known below it keep their positions and
// are neither finished nor read again; a WARN names the directory once
// per failure streak. Discovery is linear in the number of files and
// stops when Open's context is done. max-open-files is lowered to the
// process's open-files limit less a reserve (see Config.MaxOpenFiles).
//
// Each file's lifecycle is logged at INFO, one line per event (never per
// line read), with "path", "dev", "inode" and "offset": opened, renamed
// (within the globs, with "old_path"), rotated (its path now names another
// file, with "previous_dev" and "previous_inode"), truncated or rewritten
// (reading restarts at offset 0, with "previous_offset"), renamed out of
// the globs, deleted, closed after close-inactive, reopened, and forgotten
// (with why). A file that went away while closed with bytes beyond what
// was read, as far as the last scan saw its size, is a WARN with
// "lost_bytes". Closing and reopening to stay under max-open-files is
// logged at DEBUG: with more files than descriptors it happens constantly.
//
// Limits: directories more than 64 levels below a pattern's base are not
// walked (logged once per directory); content rewritten in place with
// identical first bytes and a size that did not shrink cannot be told
// from appended data; a file renamed out of the globs or deleted while
// closed (close-inactive, max-open-files) cannot be finished. A copy
// shorter than fingerprint-bytes whose original was read past the copy's
// end before the copy was found is read as a new file (its lines twice),
// and a copy still being written when a scan lists it, shorter than the
// original's fingerprint, likewise. A tracked file holding fewer bytes
// than fingerprint-bytes is never taken for a copy or the original of a
// larger new file that merely starts with those bytes. Content decides: a new file that
// starts with exactly what a truncated file delivered is taken for its
// copy, and one whose bytes are a prefix of a tracked file's (identical
// first fingerprint-bytes and 4 KiB before its end) is not read until that
// file is truncated or ends, or it grows past it. An open file
// renamed out of the globs is read on until it has been quiet for
// close-inactive (applications write to the old name until they reopen
// their log); a deleted one is finished at its end.
package file
