package diskcheck

import "time"

// Settings are the agent settings a disk's figures are read against.
type Settings struct {
	// CommitInterval is agent.commit-interval-ms: how long lines with a
	// position wait for a commit at low rates.
	CommitInterval time.Duration
	// BulkMaxSize is agent.bulk-max-size: the group at moderate rates.
	BulkMaxSize int
	// FastGroup is the most lines a group holds on a fast disk.
	FastGroup int
	// GroupMaxBytes is queue.slow-disk-group-max-bytes: the memory cap
	// of a group grown on a slow disk.
	GroupMaxBytes int
	// LineBytes is the size of the lines assumed.
	LineBytes int
}

// The write model, calibrated against `make bench-flash` on ext4 (the
// flash table of docs/performance.md): at low rates a commit writes a few
// tree pages and the meta page, the filesystem journals its metadata for
// the two fdatasyncs, and rows are stored compressed.
const (
	// syncsPerCommit: bbolt fdatasyncs a commit's pages, then its meta
	// page.
	syncsPerCommit = 2
	// pagesPerCommit: the new block's leaf, the positions bucket, the
	// root page and the meta page.
	pagesPerCommit = 4
	// fsBytesPerCommit is the filesystem's metadata per commit.
	fsBytesPerCommit = 8 << 10
	// storedPerInputByte is what a row costs on disk per byte of line.
	storedPerInputByte = 0.7
)

// CommitTime is what one WAL commit waits for the disk, given the
// latency of one page write and its fdatasync.
func CommitTime(sync time.Duration) time.Duration { return syncsPerCommit * sync }

// GrownGroup is how many lines of s.LineBytes a group holds at most once
// grown on a slow disk (queue.slow-disk-group-max-bytes), never fewer than
// s.FastGroup.
func (s Settings) GrownGroup() int {
	return max(s.FastGroup, s.GroupMaxBytes/max(1, s.LineBytes))
}

// MaxRate is the most lines/s the disk lets through with groups of group
// lines, one commit each: group / CommitTime. The loop's own time per
// line comes on top.
func MaxRate(sync time.Duration, group int) float64 {
	c := CommitTime(sync)
	if c <= 0 {
		return 0
	}
	return float64(group) / c.Seconds()
}

// Wear is what the WAL writes at an input rate.
type Wear struct {
	Rate           float64 // input lines/s
	CommitsPerHour float64
	SyncsPerHour   float64
	BytesPerDay    float64
	// PerInputByte is the bytes written per byte of input.
	PerInputByte float64
}

// WearAt estimates the writes at rate lines/s: one commit per
// commit-interval while lines arrive, one per bulk-max-size lines when
// they arrive faster, never more than the disk can sync.
func (s Settings) WearAt(sync time.Duration, rate float64) Wear {
	w := Wear{Rate: rate}
	if rate <= 0 {
		return w
	}
	perSec := rate / float64(max(1, s.BulkMaxSize))
	if s.CommitInterval > 0 {
		perSec = max(perSec, min(rate, 1/s.CommitInterval.Seconds()))
	}
	if c := CommitTime(sync); c > 0 {
		perSec = min(perSec, 1/c.Seconds())
	}
	w.CommitsPerHour = perSec * 3600
	w.SyncsPerHour = w.CommitsPerHour * syncsPerCommit
	input := rate * float64(s.LineBytes) * 86400
	w.BytesPerDay = perSec*86400*(pagesPerCommit*PageSize+fsBytesPerCommit) + input*storedPerInputByte
	w.PerInputByte = w.BytesPerDay / input
	return w
}
