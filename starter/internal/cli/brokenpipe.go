package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// survivePipeClose makes a write to stdout or stderr whose reader has gone
// (`edge-agent start | jq .` after jq exits) fail with EPIPE instead of
// killing the agent: Go lets SIGPIPE kill a process writing to fds 1 and 2
// unless the program asks for the signal. The console output then reports
// the failed write and keeps its rows in the WAL. Nothing reads the
// channel; the runtime drops signals a full channel cannot take.
func survivePipeClose() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	return func() { signal.Stop(ch) }
}
