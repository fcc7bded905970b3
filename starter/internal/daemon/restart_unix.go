//go:build unix

package daemon

// canRestart: on unix the caller restarts in place with exec (same pid, so
// the pid file, systemd and `edge-agent stop` keep tracking it).
const canRestart = true
