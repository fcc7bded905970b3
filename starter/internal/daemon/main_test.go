package daemon

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind. The
// one exception is lumberjack's mill goroutine: v2.2.1 starts it at a log
// file's first write and its Close never stops it (an upstream bug). The agent opens one log file per process, so in
// production it is one idle goroutine; the tests start agents in-process
// and see one per run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
