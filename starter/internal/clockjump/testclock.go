package clockjump

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvTestClock names, for tests of the built binary only, a file holding
// an integer number of milliseconds added to every reading of the wall
// clock by the agent, its WAL and its inputs: -1700000000000 puts the
// clock near 1970, and rewriting the file (by rename, so that no reading
// sees it half written) to 0 is a jump back to the real time. The file is
// read at every reading; a missing, empty or malformed file is 0. The
// monotonic clock and the boot are the system's. The agent logs a WARN
// naming the setting at start.
const EnvTestClock = "EDGE_AGENT_TEST_CLOCK_OFFSET_FILE"

// Shifted is base with its wall clock moved by the offset in file
// (EnvTestClock).
func Shifted(base Clock, file string) Clock { return shifted{base: base, file: file} }

type shifted struct {
	base Clock
	file string
}

func (c shifted) Wall() time.Time {
	return c.base.Wall().Add(time.Duration(ReadOffset(c.file)) * time.Millisecond)
}

func (c shifted) SinceBoot() time.Duration { return c.base.SinceBoot() }
func (c shifted) Boot() string             { return c.base.Boot() }

// ReadOffset returns the milliseconds file holds, 0 when it holds none.
func ReadOffset(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return ms
}
