package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/check"
)

// Delivery is agent.delivery-guarantee.
type Delivery uint8

const (
	// DeliveryBestEffort keeps every event in the WAL until the engine
	// answered RECEIVED.
	DeliveryBestEffort Delivery = iota
	// DeliveryNon keeps no WAL: events are held in memory and dropped
	// when a send fails or the agent stops.
	DeliveryNon
	// DeliveryCheckpoint keeps every event in the WAL until a completed
	// checkpoint of the job covers it (ACK:<watermark> to __COMMIT__).
	DeliveryCheckpoint
)

func (d Delivery) String() string {
	switch d {
	case DeliveryNon:
		return "NON"
	case DeliveryCheckpoint:
		return "CHECKPOINT"
	}
	return "BEST_EFFORT"
}

// UnmarshalText accepts what the Java agent accepts: BEST_EFFORT (also
// best-effort, best_effort, or nothing) and NON (also NONE), in any case;
// and CHECKPOINT, which the Java agent does not have.
func (d *Delivery) UnmarshalText(b []byte) error {
	switch strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "_")) {
	case "", "BEST_EFFORT":
		*d = DeliveryBestEffort
	case "NON", "NONE":
		*d = DeliveryNon
	case "CHECKPOINT":
		*d = DeliveryCheckpoint
	default:
		//lint:ignore ST1005 the Java agent's wording, capital included: its tests match on it
		return fmt.Errorf("Unsupported agent.delivery-guarantee %q: use BEST_EFFORT (or best-effort, best_effort), NON (or NONE) or CHECKPOINT", string(b))
	}
	return nil
}

// Settings are agent.yaml's agent.* keys but id, which names the
// agent rather than tuning it.
type Settings struct {
	Delivery Delivery `yaml:"delivery-guarantee"`
	// IdleSleep is the pause when the input had nothing to read (unless
	// it wakes the loop sooner).
	IdleSleep time.Duration `yaml:"idle-sleep-ms"`
	// BulkMaxSize is how many events are buffered before they are written
	// to the WAL in one transaction: the first group; while the input
	// keeps the buffer full the group doubles, up to four jobs' rows (512
	// without fsync; more on a slow disk: FsyncShare) or GroupMaxBytes of
	// payloads, and shrinks back once the input runs dry (grouping).
	BulkMaxSize int `yaml:"bulk-max-size"`
	// FlushInterval bounds how long a buffered event waits for the WAL
	// (CommitInterval, if longer, for an event with an input position).
	FlushInterval time.Duration `yaml:"flush-interval-ms"`
	// CommitInterval bounds how long, at low rates, an event with an
	// input position (a line of a file, read again after a crash until
	// its position commits) and a send result wait for a WAL commit:
	// fewer commits spare flash, at the cost of latency (cadence.go).
	CommitInterval time.Duration `yaml:"commit-interval-ms"`
	// ShutdownTimeout bounds a graceful stop.
	ShutdownTimeout time.Duration `yaml:"shutdown-timeout-ms"`
	// CheckpointPoll (CHECKPOINT) is how often the agent asks the engine,
	// while no batch goes out, whether a checkpoint covers the rows it
	// holds as received; while batches go out, the commit barriers ask.
	CheckpointPoll time.Duration `yaml:"checkpoint-poll-ms"`
	// CheckpointTimeout (CHECKPOINT): once the oldest row held as
	// received has waited this long for a checkpoint, health is degraded
	// and an ERROR names the fix.
	CheckpointTimeout time.Duration `yaml:"checkpoint-timeout-ms"`
	// Account stamps every row with "_input" and "_seq" and accounts for
	// every row given up with a gap record (package account). Off by
	// default: events are then byte-identical to the Java agent's.
	Account bool `yaml:"account"`
}

// DefaultSettings are the Java agent's defaults.
func DefaultSettings() Settings {
	return Settings{
		Delivery:        DeliveryBestEffort,
		IdleSleep:       200 * time.Millisecond,
		BulkMaxSize:     256,
		FlushInterval:   time.Second,
		CommitInterval:  4 * time.Second,
		ShutdownTimeout: 10 * time.Second,

		CheckpointPoll:    time.Second,
		CheckpointTimeout: 2 * time.Minute,
	}
}

// Validate names keys relative to the agent section.
func (a Settings) Validate() error {
	var p check.Problems
	if a.Delivery > DeliveryCheckpoint {
		p.Add("delivery-guarantee", "must be BEST_EFFORT, NON or CHECKPOINT, got %d", a.Delivery)
	}
	if a.Account && a.Delivery == DeliveryNon {
		p.Add("account", "needs the WAL, which delivery-guarantee NON does not keep: use BEST_EFFORT or CHECKPOINT, or account: false")
	}
	p.PositiveMillis("checkpoint-poll-ms", a.CheckpointPoll)
	p.PositiveMillis("checkpoint-timeout-ms", a.CheckpointTimeout)
	p.PositiveMillis("idle-sleep-ms", a.IdleSleep)
	p.Positive("bulk-max-size", int64(a.BulkMaxSize))
	p.PositiveMillis("flush-interval-ms", a.FlushInterval)
	p.PositiveMillis("commit-interval-ms", a.CommitInterval)
	p.PositiveMillis("shutdown-timeout-ms", a.ShutdownTimeout)
	return p.Err()
}

// QueueSettings are the queue.* keys the scheduler uses; path and fsync
// are the WAL's own (wal.Options).
type QueueSettings struct {
	// PollBatchSize is the most events asked of the input at once.
	PollBatchSize int `yaml:"poll-batch-size"`
	// CleanupBatchSize is the most acknowledged rows removed per pass.
	CleanupBatchSize int `yaml:"cleanup-batch-size"`
	// AckedRetention keeps acknowledged rows this long; 0 removes them
	// in the transaction that records the ack.
	AckedRetention time.Duration `yaml:"acked-retention-ms"`
	// ResurrectBatchSize and ResurrectInterval are the Java agent's
	// timer for rows stuck in SENDING. They are accepted and checked so
	// its files keep working, but this agent needs no timer: rows return
	// to PENDING when their send ends and at every start.
	ResurrectBatchSize int           `yaml:"resurrect-batch-size"`
	ResurrectInterval  time.Duration `yaml:"resurrect-interval-ms"`
	// MaxBytes bounds the payload of every row in the WAL (DEAD and
	// ACKED included); 0 = unlimited. WhenFull says what happens above it.
	MaxBytes int64 `yaml:"max-bytes"`
	// WhenFull is WhenFullBlock (reading pauses until the backlog drains,
	// nothing is dropped) or WhenFullDropOldest (the oldest unsent commit
	// groups are deleted to make room and reading goes on).
	WhenFull string `yaml:"when-full"`
	// MaxAge, when above zero, deletes unsent rows older than it,
	// whatever WhenFull says.
	MaxAge time.Duration `yaml:"max-age-ms"`
	// Drain is DrainOldestFirst or DrainNewestFirst: which rows of a lane
	// go out first after an outage (drain.go).
	Drain string `yaml:"drain"`
	// BacklogShare (newest-first) is the least share of the rows sent
	// that goes to the backlog while newer rows wait, 0 to 1.
	BacklogShare float64 `yaml:"backlog-share"`
	// Lanes are the priority lanes, highest first (drain.go); none: one
	// lane.
	Lanes []LaneSpec `yaml:"lanes"`
	// DropFrom is DropFromOldest or DropFromLowestLane: which rows
	// when-full: drop-oldest deletes first when there are lanes.
	DropFrom string `yaml:"drop-from"`
	// FsyncShare is the most of each row's time a commit's fsync may
	// take under load: the commit group grows until the disk time it
	// amortises is that share (grouping.adapt). 0 keeps groups at
	// their fast-disk size whatever the disk.
	FsyncShare float64 `yaml:"fsync-share"`
	// GroupMaxBytes bounds the memory of one commit group while the
	// disk keeps up: its payload bytes and eventCost per event. A
	// quarter of MaxBytes bounds it too (groupMaxBytes).
	GroupMaxBytes int `yaml:"group-max-bytes"`
	// SlowDiskGroupMaxBytes bounds it on a disk too slow for a
	// GroupMaxBytes group: when the rows FsyncShare asks for hold more
	// bytes than GroupMaxBytes, the group's bound is their bytes, up to
	// this (grouping.adapt). At most GroupMaxBytes turns that off. A
	// quarter of MaxBytes bounds it too (slowDiskGroupMaxBytes).
	SlowDiskGroupMaxBytes int `yaml:"slow-disk-group-max-bytes"`
}

// Defaults and lower bound of queue.fsync-share, queue.group-max-bytes
// and queue.slow-disk-group-max-bytes. A slow disk's group defaults to
// what the jobs out carry at most: a commit cannot hand out more than
// that, so a bigger group would only wait in the WAL for delivery.
const (
	defaultFsyncShare            = 0.25
	defaultGroupMaxBytes         = 4 << 20
	defaultSlowDiskGroupMaxBytes = maxJobs * jobBytes
	minGroupMaxBytes             = 64 << 10
)

// groupMaxBytes is the bound of a commit group in bytes: group-max-bytes,
// and no more than a quarter of max-bytes (one group must not fill the
// queue), never below minGroupMaxBytes.
func (q QueueSettings) groupMaxBytes() int {
	n := int64(q.GroupMaxBytes)
	if q.MaxBytes > 0 {
		n = min(n, q.MaxBytes/4)
	}
	return int(max(n, minGroupMaxBytes))
}

// slowDiskGroupMaxBytes is the most bytes a group grows to on a slow
// disk: slow-disk-group-max-bytes, never below groupMaxBytes, and no more
// than a quarter of max-bytes, as groupMaxBytes.
func (q QueueSettings) slowDiskGroupMaxBytes() int {
	n := int64(q.SlowDiskGroupMaxBytes)
	if q.MaxBytes > 0 {
		n = min(n, q.MaxBytes/4)
	}
	return max(int(n), q.groupMaxBytes())
}

// drops says whether the WAL's bounds may delete unsent rows.
func (q QueueSettings) drops() bool {
	return (q.WhenFull == WhenFullDropOldest && q.MaxBytes > 0) || q.MaxAge > 0
}

// queue.when-full values.
const (
	WhenFullBlock      = "block"
	WhenFullDropOldest = "drop-oldest"
)

// DefaultQueueSettings are the Java agent's defaults, and
// defaultQueueMaxBytes (1 GiB; 512 MiB on 32-bit builds) for our
// backpressure limit.
func DefaultQueueSettings() QueueSettings {
	return QueueSettings{
		PollBatchSize:      128,
		CleanupBatchSize:   128,
		ResurrectBatchSize: 100,
		ResurrectInterval:  time.Minute,
		MaxBytes:           defaultQueueMaxBytes,
		WhenFull:           WhenFullBlock,
		Drain:              DrainOldestFirst,
		BacklogShare:       defaultBacklogShare,
		Lanes:              []LaneSpec{},
		DropFrom:           DropFromOldest,
		FsyncShare:         defaultFsyncShare,
		GroupMaxBytes:      defaultGroupMaxBytes,

		SlowDiskGroupMaxBytes: defaultSlowDiskGroupMaxBytes,
	}
}

// Validate names keys relative to the queue section.
func (q QueueSettings) Validate() error {
	var p check.Problems
	p.Positive("poll-batch-size", int64(q.PollBatchSize))
	p.Positive("cleanup-batch-size", int64(q.CleanupBatchSize))
	p.NonNegativeMillis("acked-retention-ms", q.AckedRetention)
	p.Positive("resurrect-batch-size", int64(q.ResurrectBatchSize))
	p.PositiveMillis("resurrect-interval-ms", q.ResurrectInterval)
	p.NonNegative("max-bytes", q.MaxBytes)
	if queueMaxBytesLimit > 0 && (q.MaxBytes == 0 || q.MaxBytes > queueMaxBytesLimit) {
		p.Add("max-bytes", "must be between 1 and %d (%d MiB) on a 32-bit build, where bbolt maps at most 2 GiB of WAL (0, unlimited, is refused there too), got %d",
			int64(queueMaxBytesLimit), queueMaxBytesLimit>>20, q.MaxBytes)
	}
	if q.WhenFull != WhenFullBlock && q.WhenFull != WhenFullDropOldest {
		p.Add("when-full", "must be %s or %s, got %q", WhenFullBlock, WhenFullDropOldest, q.WhenFull)
	}
	p.NonNegativeMillis("max-age-ms", q.MaxAge)
	q.validateDrain(&p)
	if !(q.FsyncShare >= 0 && q.FsyncShare < 1) {
		p.Add("fsync-share", "must be at least 0 (groups do not follow the disk) and below 1, got %g", q.FsyncShare)
	}
	if q.GroupMaxBytes < minGroupMaxBytes {
		p.Add("group-max-bytes", "must be at least %d (64 KiB), got %d", minGroupMaxBytes, q.GroupMaxBytes)
	}
	if q.SlowDiskGroupMaxBytes < minGroupMaxBytes {
		p.Add("slow-disk-group-max-bytes", "must be at least %d (64 KiB; at most group-max-bytes keeps groups within that on any disk), got %d",
			minGroupMaxBytes, q.SlowDiskGroupMaxBytes)
	}
	return p.Err()
}

// RetrySettings are the retry.* keys: how rows the engine refused are
// retried.
type RetrySettings struct {
	// MaxAttempts refusals make a row DEAD.
	MaxAttempts int `yaml:"max-attempts"`
	// Backoff and BackoffMax bound the jittered exponential wait before
	// a refused row is sent again.
	Backoff    time.Duration `yaml:"backoff-ms"`
	BackoffMax time.Duration `yaml:"backoff-max-ms"`
}

// DefaultRetrySettings are the Java agent's defaults.
func DefaultRetrySettings() RetrySettings {
	return RetrySettings{MaxAttempts: 16, Backoff: 250 * time.Millisecond, BackoffMax: 5 * time.Minute}
}

// Validate names keys relative to the retry section.
func (r RetrySettings) Validate() error {
	var p check.Problems
	p.Positive("max-attempts", int64(r.MaxAttempts))
	p.PositiveMillis("backoff-ms", r.Backoff)
	p.PositiveMillis("backoff-max-ms", r.BackoffMax)
	if r.Backoff > 0 && r.BackoffMax > 0 && r.BackoffMax < r.Backoff {
		p.Add("backoff-max-ms", "retry.backoff-max-ms (%d) must be >= retry.backoff-ms (%d)", r.BackoffMax.Milliseconds(), r.Backoff.Milliseconds())
	}
	return p.Err()
}
