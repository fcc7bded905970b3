// Package lanes splits the rows of each claim among queues of rows that
// wait to be sent, in priority order with a guaranteed minimum share
// each: the priority lanes of queue.lanes, and within a lane the rows
// appended since the link came back against the backlog
// (queue.drain: newest-first, queue.backlog-share).
//
// A Scheduler holds one credit per queue and nothing else: no clock, no
// rows. It is not safe for concurrent use; the agent's loop owns it.
package lanes
