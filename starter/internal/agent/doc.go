// Package agent is the scheduler of edge-agent: it joins the input
// (connector), the outbound queue (the bbolt WAL, or memory in NON mode) and
// the transport Sender, following SPEC §2.
//
// # Ownership
//
// Run uses three goroutines (its own and two it starts), plus, with
// several inputs that signal new data (input.Waker), one per such input
// that forwards its signal to the loop, and owns them all:
//
//   - the loop (the goroutine that called Run) owns the inputs, the queue
//     (WAL) and the in-memory event buffer. Nothing else touches them; none
//     of them is safe for concurrent use. Each loop turn does at most ONE
//     queue transaction (group commit): it appends the buffered events with
//     their input positions, applies send results (ack, fail, release),
//     claims the next rows for the sender and cleans up ACKED rows. The
//     group starts at agent.bulk-max-size events and doubles, up to four
//     jobs' rows (4 × 1,024 by default; 512 without fsync) or 2 MiB of payloads, while the input keeps the
//     buffer full (halving back once it runs dry); jobs keep their size
//     (a released job must fit the WAL's disk reserve, see loop.group). Each commit costs an
//     fsync and a few pages whatever its size, so under load few big
//     transactions replace many small ones (loop.group).
//     Between turns it also makes the WAL changes an operator asks for
//     through the API (UpdateWAL: db wal-retry-dead, wal-purge-dead), so
//     it stays the WAL's only writer and its counts stay exact; WAL hands
//     the open WAL to the API for reads (View runs beside commits).
//
//   - the sender goroutine owns the transport.Sender and every network
//     wait. The loop hands it jobs (claimed rows, at most jobSize of them
//     and jobBytes of payload, one row at least) over a channel, at most
//     maxJobs at a time, so the jobs out hold at most maxJobs·jobBytes
//     whatever the size of the events, and gets one jobResult back per
//     job. Connecting,
//     reconnecting and the pause after an unreachable or rejecting engine
//     all happen there, so a slow or absent engine never stops the loop
//     from reading input into the WAL. In PACKET mode it encodes each
//     job in parts on short-lived goroutines, one per core, that only
//     read the job's rows and write their own arenas; it joins them,
//     in row order, before Send. While a job is in Send, a short-lived
//     goroutine takes the next job handed over and encodes it the same
//     way, on one core fewer, into a second set of arenas, so the wire
//     does not wait for the encoding between jobs; the sender joins it
//     when the Send returns and sends that job next, or hands it back
//     unsent if sending is paused or the loop takes its queued jobs back
//     to stop. Jobs reach Send, and batch ids the wire, in the order they
//     were handed over.
//
//   - the summary goroutine reads Snapshot every 30 s and logs one INFO
//     line, "non-zero metrics since the last summary", with the counters
//     that moved (as deltas: events_read, rows_appended, acked, failed,
//     dead, dropped, retries, send_errors, reconnects, commits and the
//     input's input_lines, input_bytes, truncated_lines, file_rotations,
//     file_truncations, input_errors) and the gauges wal_pending,
//     wal_sending and backpressure when non-zero or changed. Nothing is
//     logged while nothing moves. It touches no state of the loop.
//
// Snapshot, Reload, RejectReload, WAL and UpdateWAL are the only methods
// safe from other goroutines. Snapshot reads atomic counters and a
// mutex-guarded copy of what the loop last published. Reload and
// UpdateWAL hand their request to the loop over a channel and wait for
// its answer: the loop alone replaces the input, the sender and its own
// settings (see Reload below), and alone writes the WAL.
//
// Durations in log lines are strings with their unit ("took=17ms",
// "retry_in=1.5s"), in the JSON log as in the text one.
//
// # Delivery
//
// BEST_EFFORT: a row is on disk, together with the input position after its
// event, before anything is sent; it is acked only after RECEIVED; a crash
// at any point re-sends (at least once) but never skips. A row the engine
// refused (Failed) is charged one attempt and may be sent again after the
// retry backoff, min(retry.backoff-max-ms, retry.backoff-ms·2^n) jittered,
// n = consecutive failed jobs; at retry.max-attempts it is DEAD. A row that
// never reached the engine (NotSent) is released uncharged, and so is one
// refused with AUTH_FAILED or DECRYPT_FAILED: those refuse our settings,
// not the row. An unreachable engine pauses sending for the retry backoff;
// a REJECTED one, and one answering AUTH_FAILED or DECRYPT_FAILED, for
// output.max-backoff-ms, while input is still read into the WAL and an
// ERROR names what to fix at each try (output.on-refusal: exit stops the
// agent instead, exit code 4 or 5, as the Java agent does).
// Each of these pauses is shortened at random by up to half, never
// lengthened (transport/backoff), so agents cut off together spread out.
// Until a Send goes through again, each attempt after such a pause hands
// the sender one row (probeRows), not full jobs: a claimed row that comes
// back unsent is rewritten in the WAL, and a long outage must not rewrite
// the head of the backlog at every attempt.
//
// NON: rows live in memory (bounded; input pauses when full), a refused row
// is dropped with a warning, a row that never reached the engine is kept
// and sent later; positions are not kept; queue.* and retry.* are ignored.
//
// Rows are never in flight unseen: every claimed row comes back as a result,
// so queue.resurrect-interval-ms and queue.resurrect-batch-size have nothing
// to do at run time; SENDING rows left by a crash return to PENDING at
// start (on a full disk, where that one transaction may not fit, start goes
// on and the loop returns them 64 at a time as delivery frees space).
//
// # Backpressure and storage errors
//
// While the payload bytes queued in the WAL exceed queue.max-bytes the input
// is not polled (never dropped); it is polled again once they are a quarter
// below the limit, so a queue at the limit does not pause and resume the
// input (and log it) at every ack. A failing WAL transaction (disk full, I/O
// error) is not fatal: the buffer and the send results are kept and the
// transaction is retried with a growing delay; the input is not polled once
// the buffer holds bulk-max-size events (a failure starts the group, which
// grows under load, at bulk-max-size again). When a transaction that appends
// fails, its acks, releases, claims and cleanup are committed at once
// without the appends (positions stay with their rows), and go on
// committing on their own while the appends wait: on a full disk that is
// what frees room (the WAL keeps a reserve for it, see package wal), and
// the held-back events go in as soon as acks have freed pages.
//
// # Several inputs
//
// Options.InputList (agent.yaml inputs:) runs several inputs; the single
// Options.Input (input:) is one input under the id settled with the WAL
// and the id file, exactly as before. Each input's rows, positions and
// started mark are stored under its own id. The loop polls the inputs
// round-robin, offering each an equal share of the buffer's room left and
// starting one input further at every poll, so a flooded input never
// starves the others; any input's wake-up signal wakes the loop. An
// input.Claims shared by the inputs settles which one reads a file
// several match: the first in the config's order. Snapshot sums the
// inputs' Stats and Files and lists each input in Status.Inputs.
//
// # Reload
//
// Reload (SIGHUP, edge-agent reload) is applied by the loop between two
// turns, along the shutdown's path short of closing: no new jobs; the jobs
// in flight come back (waited for up to agent.shutdown-timeout-ms, then
// the sender is stopped and they are released uncharged); a replaced
// input is drained; the buffer and the send results are written to the
// queue. Then the new output and inputs are built, each input opened from
// the positions the queue holds for its id (a file still matched goes on
// at its offset; one newly matched is read from its start; an input new
// to inputs: has its first start), and a new sender goroutine starts with
// the new retry settings. An input or output left unchanged is kept as it
// is: of an inputs: list only the entries added, removed or changed
// (Replace.Inputs, from config.Changes) are drained, closed or opened. If the buffer cannot be written,
// or the new input or output cannot be built, the old ones go on and
// Reload returns the error. NON mode keeps the positions in memory for
// this (none survive a restart).
//
// # Shutdown
//
// When ctx is done (or a fatal error happens) the loop stops polling and
// hands out no more jobs, drains the input's held-back groups, flushes the
// buffer to the WAL, waits for the jobs in flight to come back, stops the
// sender, applies the results that came back, and closes input, sender
// and WAL, all within agent.shutdown-timeout-ms. The wait lets the engine
// answer what is already on the wire, so a stop (SIGTERM, edge-agent stop,
// the OpAMP restart command) does not make the next start send it again;
// it takes at most half of the time left after the flush, keeping the
// other half for stopping a sender that ignores its context and writing
// the results. Rows still in flight then are released uncharged, or return
// to PENDING at the next start. A second SIGTERM/SIGINT (package cli) exits
// at once, the wait included.
package agent
