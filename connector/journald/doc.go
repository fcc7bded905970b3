// Package journald is the `type: journald` input: it reads the systemd
// journal, with the journal cursor as its position, saved in the same WAL
// transaction as the events read before it, so a restart (or a kill -9)
// resumes exactly after the last entry stored.
//
// It reads without cgo by running journalctl --follow --output=export. The
// export format rather than --output=json: export is the journal's own
// serialization (what systemd-journal-remote reads back), binary-safe by a
// length prefix, so a MESSAGE or any field that is not UTF-8, or holds
// newlines or NULs, arrives byte for byte; json turns such values into
// arrays of numbers and cuts fields above a size into null (journalctl's
// --all aside), and costs a JSON decoder per entry. The cursor comes from
// each entry's __CURSOR field (journalctl's --show-cursor line is only
// printed when it exits).
//
// Contract:
//   - A reader goroutine parses journalctl's output into a bounded queue
//     (entries and bytes); while it is full it stops reading, journalctl
//     blocks on its pipe and nothing is dropped. Poll only drains the queue.
//   - On resume the saved cursor is looked up first (journalctl --cursor
//     without filters): when the journal still holds it, reading restarts
//     at it and the entry itself, delivered already, is dropped. When the
//     journal rotated it away, the input logs a WARN with the time range
//     between the saved entry and the oldest entry left (what is lost) and
//     resumes from that oldest entry; a cursor journalctl refuses restarts
//     from the oldest entry of the journal.
//   - journalctl that exits, or that printed nothing for hang-timeout-ms
//     while the journal holds a newer matching entry, is killed by its PID
//     and started again after the shared backoff (restart-backoff-ms,
//     doubling to restart-backoff-max-ms). Its stderr is logged line by
//     line, bounded. Close kills it by PID and reaps it; on Linux the
//     kernel kills it too if the agent dies first.
//   - Event JSON: {"_index":0,"_ts":ms,"payload":MESSAGE, FIELD: value…}
//     (format.go); multiline and include-lines/exclude-lines work on the
//     MESSAGE values as they do on a file's lines.
package journald
