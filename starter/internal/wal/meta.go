package wal

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket names. Every index is written in the same transaction as the row it
// points at, so the indexes and counters can never disagree after a crash.
var (
	bucketBlocks    = []byte("blocks")    // first row id -> block of rows appended together (block.go)
	bucketState     = []byte("state")     // row id -> mutable state, only for rows that have any (state.go)
	bucketPending   = []byte("pending")   // first id -> last id: runs of PENDING rows due now (pending.go)
	bucketDelayed   = []byte("delayed")   // row id -> not-before: PENDING rows backed off
	bucketTimers    = []byte("timers")    // (not-before, row id) -> {}: due order of delayed rows
	bucketSending   = []byte("sending")   // first id -> last id, claim ms: runs of SENDING rows, the only record of it (sending.go)
	bucketReceived  = []byte("received")  // first id -> last id, first batch id, received ms: runs of RECEIVED rows, the only record of it (received.go)
	bucketAcked     = []byte("acked")     // (acked at, row id) -> {}: cleanup order
	bucketDead      = []byte("dead")      // row id -> {}
	bucketMeta      = []byte("meta")      // internal metadata, keys below
	bucketApp       = []byte("app")       // SetMeta/Meta: metadata of the agent
	bucketPositions = []byte("positions") // source id 0x00 key -> state (positions.go)

	allBuckets = [][]byte{bucketBlocks, bucketState, bucketPending, bucketDelayed, bucketTimers, bucketSending,
		bucketAcked, bucketDead, bucketMeta, bucketApp, bucketPositions}
	// addedBuckets came after files of this schema version were written,
	// and need no schema version of their own: a new file has them, a
	// read-write open creates them in an older one, and a read-only open
	// of an older one reads them as empty. A build that predates one
	// ignores it (and so does not see the rows only it records).
	addedBuckets = [][]byte{bucketReceived}
)

const (
	// SchemaVersion is the one layout version this build reads and writes:
	// rows in blocks, one per Append, with the mutable part of a row apart
	// (block.go, state.go), and the positions flat in one bucket
	// (positions.go). A file of any other version is refused, never
	// converted in place: 1 and 2 (one key per row) and 3
	// (nestedPositionsSchema) were only written by development builds
	// before the first release, and a newer version by a newer build.
	SchemaVersion = 4
	// nestedPositionsSchema is the version before SchemaVersion: the same
	// layout with the positions nested, one bucket per input. Open refuses
	// it; Salvage reads it and copies its rows and positions into a new
	// file of SchemaVersion, which is how such a file is carried over.
	nestedPositionsSchema = 3

	metaSchemaVersion = "schema_version"
	metaNextBatchID   = "next_batch_id"
	metaNextRowID     = "next_row_id"
	metaCounters      = "counters"
	metaCreatedAt     = "created_at"

	// appendFillPercent packs pages of buckets whose keys mostly grow at the
	// tail (row ids, ack times): bbolt's default 0.5 would leave every page
	// half empty and double the pages written per commit.
	appendFillPercent = 0.95
)

// empty is the value of index entries. Never nil: bbolt reports nested
// buckets with a nil value.
var empty = []byte{}

// initOrCheck creates the buckets of a new file or checks an existing one. To an existing WAL it writes only the
// addedBuckets it lacks, once it passed the check.
func initOrCheck(btx *bolt.Tx, now interface{ UnixMilli() int64 }) error {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		foreign := false
		_ = btx.ForEach(func([]byte, *bolt.Bucket) error { foreign = true; return nil })
		if foreign {
			return fmt.Errorf("bbolt file without edge-agent buckets: %w", ErrNotWAL)
		}
		for _, name := range append(allBuckets[:len(allBuckets):len(allBuckets)], addedBuckets...) {
			if _, err := btx.CreateBucket(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta = btx.Bucket(bucketMeta)
		ms := now.UnixMilli()
		// Seeding from the clock keeps batch ids increasing even when the
		// WAL file is deleted and recreated, as long as fewer than 1000 ids
		// per millisecond were used on average.
		seed := ms * 1000
		if seed <= 0 {
			seed = 1
		}
		var v [4]byte
		binary.BigEndian.PutUint32(v[:], SchemaVersion)
		puts := map[string][]byte{
			metaSchemaVersion: v[:],
			metaNextBatchID:   u64key(uint64(seed)),
			metaNextRowID:     u64key(1),
			metaCounters:      (&counters{}).encode(),
			metaCreatedAt:     u64key(uint64(ms)),
		}
		for k, val := range puts {
			if err := meta.Put([]byte(k), val); err != nil {
				return fmt.Errorf("init meta %s: %w", k, err)
			}
		}
		return nil
	}
	if err := checkSchema(btx); err != nil {
		return err
	}
	for _, name := range addedBuckets {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// checkSchema checks that the file is a WAL of SchemaVersion.
func checkSchema(btx *bolt.Tx) error {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		return fmt.Errorf("bbolt file without edge-agent buckets: %w", ErrNotWAL)
	}
	v := meta.Get([]byte(metaSchemaVersion))
	if len(v) != 4 {
		return fmt.Errorf("meta has no schema version: %w", ErrNotWAL)
	}
	got := binary.BigEndian.Uint32(v)
	switch {
	case got == nestedPositionsSchema:
		return fmt.Errorf("the file has WAL schema version %d (positions nested per input), written by a development "+
			"build before the first release; this edge-agent reads only version %d and converts no file in place. "+
			"Either drain the file with the build that wrote it, or stop the agent and run `%s`, which copies every "+
			"row and position into a new file of version %d and leaves this one unchanged, then move the new file "+
			"into place: %w", got, SchemaVersion, SalvageCommand(btx.DB().Path()), SchemaVersion, ErrSchemaVersion)
	case got < SchemaVersion:
		return fmt.Errorf("the file has WAL schema version %d, this edge-agent reads only version %d and converts no "+
			"other (version %d was only written by development builds before the first release): move the file "+
			"aside and start the agent, which creates a new WAL: %w", got, SchemaVersion, got, ErrSchemaVersion)
	case got > SchemaVersion:
		return fmt.Errorf("the file has WAL schema version %d, written by a newer edge-agent; this one reads only "+
			"version %d: run the newer edge-agent on it: %w", got, SchemaVersion, ErrSchemaVersion)
	}
	for _, name := range allBuckets {
		if btx.Bucket(name) == nil {
			return fmt.Errorf("missing bucket %q: %w", name, ErrNotWAL)
		}
	}
	return nil
}

// counters make Counts O(1); they change in the same transaction as rows.
// Fields are only ever added at the end: a file written before one was
// added decodes it as 0, which is right for a status no row had then.
// checksumFailures and standIns are totals over the life of the file.
type counters struct {
	pending, sending, acked, dead, delayed, payloadBytes, checksumFailures int64
	received, standIns                                                     int64
}

func (c *counters) fields() []*int64 {
	return []*int64{&c.pending, &c.sending, &c.acked, &c.dead, &c.delayed, &c.payloadBytes, &c.checksumFailures,
		&c.received, &c.standIns}
}

func (c *counters) encode() []byte {
	f := c.fields()
	b := make([]byte, 8*len(f))
	for i, p := range f {
		binary.BigEndian.PutUint64(b[8*i:], uint64(*p))
	}
	return b
}

func (c *counters) decode(b []byte) {
	for i, p := range c.fields() {
		if len(b) >= 8*(i+1) {
			*p = int64(binary.BigEndian.Uint64(b[8*i:]))
		}
	}
}

func (c *counters) add(s Status, d int64) {
	switch s {
	case StatusPending:
		c.pending += d
	case StatusSending:
		c.sending += d
	case StatusAcked:
		c.acked += d
	case StatusDead:
		c.dead += d
	case StatusReceived:
		c.received += d
	}
}
