// Package agent is the scheduler of edge-agent: it reads the inputs
// (connector) into the outbound queue (the bbolt WAL, or memory in NON
// mode) and delivers the queue through a transport.Sender.
//
// # Delivery
//
// BEST_EFFORT: a row is on disk, with the input position after its event,
// before it is sent, and is acked only after the engine answered RECEIVED;
// a crash re-sends (at least once) but never skips. A row the engine
// refused (Failed) is charged an attempt and retried after the jittered
// retry.* backoff; at retry.max-attempts it is DEAD. A row that never
// reached the engine, or was refused for our token or key (AUTH_FAILED,
// DECRYPT_FAILED), is released uncharged. An unreachable, rejecting or
// refusing engine pauses sending, never reading; while the link is down
// each attempt sends one row, not full jobs. output.on-refusal: exit stops
// the agent on a refusal instead (exit code 4 or 5).
//
// NON: rows live in memory (bounded: input pauses when full); a refused row
// is dropped, one never sent is kept; positions do not survive a restart.
//
// Every claimed row comes back as a result; SENDING rows left by a crash
// return to PENDING at start.
//
// # Limits and failures
//
// Input is not polled while the queued payload exceeds queue.max-bytes,
// nor, once the buffer holds a group, while the WAL fails (disk full, I/O
// error): nothing is dropped, and the transaction is retried with a
// growing delay. When appends fail, acks, releases, claims and cleanups
// still commit without them, which is what frees room on a full disk.
// Several inputs share the buffer round-robin, so a flooded one cannot
// starve the others; each keeps its rows, positions and started mark under
// its own id, and of several inputs matching a file the first in the
// config reads it.
//
// output.rate-limit caps what the agent sends, all outputs together: the
// sender takes each batch's tokens before it sends it and waits for them;
// nothing is dropped, the backlog waits in the queue. Under a cap a job
// holds at most what the buckets hold, so acks follow the sends. A reload
// retunes the cap in place; a reload or stop ends a wait for tokens and the
// rows waiting go back unsent, uncharged.
//
// # Concurrency
//
// Run owns three goroutines: the loop (Run's own), the sender and the
// summary logger; and, with several inputs that signal new data, one per
// such input forwarding its signal.
//
//   - The loop alone touches the inputs, the queue and the event buffer,
//     and is the WAL's only writer: each turn runs at most one transaction
//     (a group commit: appends with their positions, send results, claims,
//     cleanup), and it applies UpdateWAL's changes between turns.
//   - The sender alone touches the transport.Sender and waits on the
//     network; the loop hands it at most maxJobs jobs at a time over a
//     channel and gets one result back per job, so a slow engine never
//     stops the reading. Jobs reach Send in the order handed over; on a
//     long link (not with CHECKPOINT delivery nor a rate cap) the jobs
//     handed over while one is out join it in one streaming call
//     (client.Stream), each coming back as soon as its rows are answered.
//   - The summary goroutine only reads Snapshot, and logs every 30 s the
//     counters that moved ("non-zero metrics since the last summary").
//
// Snapshot, Reload, RejectReload, WAL and UpdateWAL are safe from any
// goroutine; nothing else is. Reload and UpdateWAL hand their request to
// the loop and wait for its answer.
//
// # Reload and shutdown
//
// Reload is applied by the loop between two turns, on the shutdown's path
// short of closing: no new jobs, the jobs in flight come back, replaced
// inputs are drained, the buffer goes to the queue; then what changed is
// built and swapped in, each new input opened from the positions the
// queue holds. What did not change keeps running; if anything cannot be
// built or written, the old keeps running and Reload returns the error.
//
// When ctx is done (or on a fatal error) the loop stops reading, writes the
// buffer, lets the engine answer the jobs on the wire for at most half of
// what is left of agent.shutdown-timeout-ms, stops the sender, writes the
// results and closes inputs, output and WAL, in that order and within the
// timeout. Rows still in flight are released, or return to PENDING at the
// next start.
//
// Durations in log lines carry their unit ("took=17ms"), in JSON as in
// text.
package agent
