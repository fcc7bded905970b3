package wal

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves goroutines behind and removes the
// benchmark backlog files. The damage check's child process is this test
// binary again: the package's init runs the check and exits before
// TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	if backlogs.dir != "" {
		_ = os.RemoveAll(backlogs.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
