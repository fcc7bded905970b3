// Package exitcode holds the exit codes of every edge-agent command and
// the mapping from the agent's sentinel errors to them. It is the only
// place a code is defined: the CLI, the runtime, the systemd unit's
// RestartPreventExitStatus and docs/exit-codes.md all follow this table.
//
// The codes keep clear of 2, which the Go runtime uses for an unrecovered
// panic: a crash must look like a crash, so that a service manager
// restarts it, while a configuration problem (78, as sysexits.h defines
// EX_CONFIG) is one that restarting cannot fix.
package exitcode

import (
	"errors"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport"
)

const (
	OK      = 0 // clean stop, or the command did what was asked
	Failure = 1 // runtime or start-up failure; retrying may help
	// 2 is left to the Go runtime: an unrecovered panic.
	NotRunning = 3 // status, reload: the agent is not running (as LSB init scripts expect)
	// AuthFailed and DecryptFailed: the engine answered AUTH_FAILED (fix
	// output.token) or DECRYPT_FAILED (fix the AES key), and
	// output.on-refusal is exit; by default the agent keeps running.
	AuthFailed    = 4
	DecryptFailed = 5
	InUse         = 6  // another edge-agent holds the pid file or the WAL
	Usage         = 64 // EX_USAGE: bad flags or arguments
	// Damaged is EX_DATAERR: the WAL is damaged; the message gives the
	// `edge-agent db salvage` command. It is restarted like a failure:
	// once the operator swaps in the salvaged file, the next restart
	// picks it up.
	Damaged = 65
	Config  = 78 // EX_CONFIG: the config file is missing or invalid
)

// NoRestart lists the codes a service manager must not restart on: each
// names a setting an operator has to change first (4 and 5 occur only
// with output.on-refusal: exit, which asks for exactly that stop).
// Everything else, crashes included, is worth a restart.
var NoRestart = []int{Config, AuthFailed, DecryptFailed}

// For maps an error returned by the agent's start-up or run to its code.
func For(err error) int {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, check.ErrInvalid), errors.Is(err, wal.ErrKey):
		return Config
	case errors.Is(err, transport.ErrAuthFailed):
		return AuthFailed
	case errors.Is(err, transport.ErrDecryptFailed):
		return DecryptFailed
	case errors.Is(err, wal.ErrLocked):
		return InUse
	case errors.Is(err, wal.ErrDamaged):
		return Damaged
	}
	return Failure
}
