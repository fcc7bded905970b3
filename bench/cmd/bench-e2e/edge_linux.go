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

// tracee waits for the process strace (PID tracer) started and returns
// its PID.
func tracee(ctx context.Context, tracer int) (int, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/children", tracer, tracer)
	for i := 0; i < 1000; i++ {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("find the agent under strace: %w", err)
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			return strconv.Atoi(f[0])
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("find the agent under strace: no child of PID %d after 10 s (is strace installed?)", tracer)
}
