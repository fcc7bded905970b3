package journald

import (
	"os/exec"
	"syscall"
)

// setDeathSignal puts journalctl in a process group of its own, so a
// Ctrl-C or a signal to the agent's group reaches the agent alone (the
// input stops journalctl itself, by PID), and has the kernel kill it when
// the agent dies without closing the input (kill -9): a journalctl waiting
// on an idle journal would otherwise outlive it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
