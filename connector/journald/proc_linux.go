package journald

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill journalctl when the agent dies
// without closing the input (kill -9): a journalctl waiting on an idle
// journal would otherwise outlive it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
