package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// fsyncDelays are the slow-disk configs: the delay strace adds to the
// end of each fsync and fdatasync the agent makes.
var fsyncDelays = map[string]time.Duration{
	"fsync3.5": 3500 * time.Microsecond,
	"fsync10":  10 * time.Millisecond,
	"fsync30":  30 * time.Millisecond,
}

// tracee waits for the child of strace (PID tracer) that runs agent and
// returns its PID: strace forks short-lived probes of its own at start.
func tracee(ctx context.Context, tracer int, agent string) (int, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/children", tracer, tracer)
	for i := 0; i < 1000; i++ {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("find the agent under strace: %w", err)
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			// Once it has exec'd, its first argument is the agent's path.
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if arg0, _, _ := strings.Cut(string(cmdline), "\x00"); arg0 == agent {
				return pid, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("find the agent under strace: no child of PID %d after 10 s (is strace installed?)", tracer)
}
