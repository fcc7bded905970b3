// Package process holds the operating-system side of running edge-agent as a
// daemon: the pid file, the liveness probe used by `status`, `stop` and the
// `db` write guard, the systemd readiness notification, and raising the
// open-files limit at start.
//
// The pid file is advisory. The authority on "one agent per data dir" is the
// WAL's file lock; the pid file only lets `status` and `stop` find the
// process. A pid file is therefore written atomically (never half-written)
// and a stale one, left by a process that died, is replaced.
//
// Probe semantics match the Java agent's process probe: a missing pid file,
// one that does not hold a positive decimal number, or one naming a process
// that no longer exists all mean "not running"; none of them is an error.
package process
