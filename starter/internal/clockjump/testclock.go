package clockjump

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvTestClock names, for tests of the built binary only, a file holding
// "<wall_ms>" or "<wall_ms> <boot_ms>": milliseconds added to every
// reading of the agent's wall clock (the agent's, its WAL's and its
// inputs') and of its monotonic clock since boot. The wall alone moved
// is a jump: -1700000000000 puts the clock near 1970, and rewriting the
// file to 0 sets it. Both moved by the same amount is time passing: "1800000
// 1800000" is half an hour later, with no jump. Rewrite the file by
// rename, so that no reading sees it half written. It is read at every
// reading; a missing or malformed file is 0 0. The boot id stays the
// system's. The agent logs a WARN naming the setting at start.
const EnvTestClock = "EDGE_AGENT_TEST_CLOCK_OFFSET_FILE"

// Shifted is base with its clocks moved by the offsets in file
// (EnvTestClock).
func Shifted(base Clock, file string) Clock { return shifted{base: base, file: file} }

type shifted struct {
	base Clock
	file string
}

func (c shifted) Wall() time.Time {
	wall, _ := ReadOffsets(c.file)
	return c.base.Wall().Add(time.Duration(wall) * time.Millisecond)
}

func (c shifted) SinceBoot() time.Duration {
	_, boot := ReadOffsets(c.file)
	return c.base.SinceBoot() + time.Duration(boot)*time.Millisecond
}

func (c shifted) Boot() string { return c.base.Boot() }

// ReadOffsets returns the wall and boot milliseconds file holds, 0 0
// when it holds none.
func ReadOffsets(file string) (wall, boot int64) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0
	}
	return parseOffsets(string(b))
}

// parseOffsets parses "<wall_ms>" or "<wall_ms> <boot_ms>", 0 0 when s
// is neither.
func parseOffsets(s string) (wall, boot int64) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return 0, 0
	}
	var err error
	if wall, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return 0, 0
	}
	if len(f) == 2 {
		if boot, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return 0, 0
		}
	}
	return wall, boot
}
