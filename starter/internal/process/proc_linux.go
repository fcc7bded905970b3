package process

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// isZombie reads the state field of /proc/<pid>/stat. The command name in
// parentheses may itself contain spaces or parentheses, so the state is
// found after the LAST ')'.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state == 'Z' || state == 'X'
}

// otherProgram reports whether pid positively runs a different program than
// this one: its argv[0] names neither this executable nor edge-agent. A pid
// file survives a reboot or a kill -9, and its pid may since belong to an
// unrelated process; treating that one as "the agent" would block every
// start and let `stop` signal a stranger. When nothing can be read
// (permissions, no /proc) it answers false: unknown counts as the agent.
func otherProgram(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return false // unreadable, or a kernel thread / zombie: undecided
	}
	argv0, _, _ := bytes.Cut(b, []byte{0})
	name := filepath.Base(string(argv0))
	if strings.Contains(name, "edge-agent") {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	return name != filepath.Base(self)
}
