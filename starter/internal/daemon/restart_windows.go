//go:build windows

package daemon

// canRestart: Windows has no exec that keeps the process; a restart would
// be a new process the service manager does not know. The agent therefore
// does not offer the OpAMP restart capability there.
const canRestart = false
