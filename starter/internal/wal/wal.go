package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edge-agent/edge-agent/starter/internal/check"
	"github.com/edge-agent/edge-agent/starter/internal/fsspace"
)

// Options configures Open. The zero value is NOT durable: set Fsync.
//
// Path and Fsync are agent.yaml's queue.path and queue.fsync; the yaml
// tags name them for the config layer, which decodes the queue section
// into these options.
type Options struct {
	// Path is the bbolt file. Its parent directory is created (read-write
	// opens only).
	Path string `yaml:"path"`
	// Fsync makes every commit durable before Update returns. false maps to
	// bbolt NoSync: a crash (of the host, not just the process) can lose or
	// corrupt committed transactions. Only for tests and benchmarks.
	Fsync bool `yaml:"fsync"`
	// LockTimeout bounds the wait for the file lock; default 1s. On timeout
	// Open fails with an error wrapping ErrLocked whose message is
	// "another edge-agent is using <path>".
	LockTimeout time.Duration `yaml:"-"`
	// CheckTimeout bounds the damage check of an existing file before a
	// read-write open, and Verify's check of a read-only one; default
	// 5 minutes.
	CheckTimeout time.Duration `yaml:"-"`
	// ReadOnly opens for the db read commands of a stopped agent. It never
	// creates or changes the file; it fails with ErrLocked while another
	// process (the agent) has the file open (doc.go, "Locking").
	ReadOnly bool `yaml:"-"`
	// Now is the clock for created/updated times of appended rows and for
	// seeding next_batch_id; default time.Now.
	Now func() time.Time `yaml:"-"`
	// Logger receives warnings (bad checksums, skipped ids); default discard.
	Logger *slog.Logger `yaml:"-"`
	// GapFree keeps the batch ids the engine is sent free of gaps, for a
	// delivery whose committed watermark only passes consecutive ids
	// (CHECKPOINT): a row that leaves the WAL or goes DEAD undelivered
	// gets a stand-in row with its batch id (standin.go). Set by the
	// agent from its delivery mode, not by agent.yaml's queue section.
	GapFree bool `yaml:"-"`
	// Lanes names the lanes other than the default one that Append may
	// be given (NewRow.Lane), highest first; Claim takes from them in
	// this order and from the default lane last, ClaimFrom from the one
	// named (lanes.go). Set by the agent from queue.lanes.
	Lanes []string `yaml:"-"`
	// SendOrderBatchIDs gives each row its batch id when it is claimed
	// (ClaimFunc, ClaimFrom), from the same counter, instead of when it
	// is appended: rows claimed out of append order (lanes, newest-first
	// draining) still go out with increasing ids. A row retried gets a
	// new id at each claim, so it cannot be combined with GapFree, whose
	// ids must each reach the engine.
	SendOrderBatchIDs bool `yaml:"-"`
	// Encryption seals the stored payloads and positions (queue.encryption).
	Encryption Encryption `yaml:"encryption"`
	// GapRecords, when set, makes every row given up undelivered (as for
	// a stand-in) accounted for by an in-band gap record naming this
	// origin (gaprecord.go). Set by the agent, not by agent.yaml's queue
	// section.
	GapRecords *GapOrigin `yaml:"-"`
	// statDisk overrides the filesystem figures of the disk holding the
	// WAL (fsspace.Of); for tests.
	statDisk func(path string) (fsspace.Space, bool)
}

// DefaultPath is where the WAL lives, relative to the install root, when
// queue.path is not set (the agent and the db commands alike).
const DefaultPath = "data/wal.db"

// DefaultOptions are the agent's defaults for queue.path and queue.fsync.
func DefaultOptions() Options {
	return Options{Path: DefaultPath, Fsync: true}
}

// Validate checks the options agent.yaml sets; keys are relative to the
// queue section.
func (o Options) Validate() error {
	var p check.Problems
	if strings.TrimSpace(o.Path) == "" {
		p.Add("path", "must not be empty")
	}
	return p.Err()
}

const (
	defaultLockTimeout  = time.Second
	defaultCheckTimeout = 5 * time.Minute
	// initialMmapSize skips the first few remaps (which wait for read
	// transactions). bbolt grows a small file straight to the mapping size,
	// so it is kept small: a new WAL costs about 1 MiB on disk (most of it
	// the space reserve, space.go), not 16+.
	initialMmapSize = 1 << 20
	// walPageSize: see pageSize.
	walPageSize = 4 << 10
	// residentDropBytes is how many bytes of rows read, and of pages
	// written (later commits read them), through bbolt's mapping make the
	// WAL drop the mapped pages from the resident set (afterCommit): the
	// resident share of the file stays about this size, for one madvise
	// call per this many bytes sent or queued.
	residentDropBytes = 4 << 20
	// compactTxMaxSize keeps Compact's memory bounded on big files.
	compactTxMaxSize = 64 << 20
)

// staleLockSuffixes name the lock files earlier versions kept beside the
// WAL for readers in other processes; a read-write open removes them.
var staleLockSuffixes = []string{"-readgate.lock", "-readintent.lock"}

// WAL is the durable outbound queue plus input positions in one bbolt file.
// Update and View may be called from several goroutines (bbolt serialises
// writers); a Tx must not escape its callback.
type WAL struct {
	opts Options
	path string
	log  *slog.Logger
	now  func() time.Time

	wmu sync.Mutex // serialises Update and Verify's check of the tree
	mu  sync.Mutex // guards db/closed
	db  *bolt.DB   // open for life, holding bbolt's file lock

	// file is bbolt's file (read-write only), reservedEnd the end of the
	// disk reserve allocated in it, reserveShort whether the last attempt
	// to keep the reserve failed (space.go). Guarded by wmu.
	file         *os.File
	reservedEnd  int64
	reserveShort bool
	// readSinceDrop counts the row bytes transactions read through the
	// mapping, and the page bytes they wrote, since dropResident last
	// ran; dropFailed records that it failed (warned once). Guarded by
	// wmu.
	readSinceDrop int64
	dropFailed    bool
	// lastCommit is when the last write transaction committed
	// (quietCommitGap). Guarded by wmu.
	lastCommit time.Time
	// cache keeps decoded blocks between write transactions. Guarded by
	// wmu.
	cache blockCache
	// enc assembles the block values of Append, in buffers kept from one
	// write transaction to the next (blockEncoder). Guarded by wmu.
	enc blockEncoder
	// claimIDs: the file's rows get their batch ids at claim
	// (claimids.go); set by a read-write Open.
	claimIDs bool
	// keys open and seal the file's data (seal.go); nil until Open read
	// them.
	keys atomic.Pointer[keyring]
	// diskTime is what the last commit spent writing and syncing
	// (CommitDiskTime), in nanoseconds.
	diskTime atomic.Int64

	closed bool
}

// Path is the absolute path of the WAL file.
func (w *WAL) Path() string { return w.path }

// Size is the file size in bytes. bbolt never shrinks its file, so after a
// backlog drains Size stays high; UsedBytes is the figure that falls again.
func (w *WAL) Size() int64 {
	st, err := os.Stat(w.path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// UsedBytes is Size minus the bytes in free pages: what the rows, indexes
// and positions occupy. Use it (not Size) for queue.max-bytes backpressure,
// or backpressure would never lift once the file had grown. Read-only WALs
// return Size.
func (w *WAL) UsedBytes() int64 {
	size := w.Size()
	w.mu.Lock()
	db := w.db
	w.mu.Unlock()
	if db == nil || w.opts.ReadOnly {
		return size
	}
	used := size - int64(db.Stats().FreeAlloc)
	if used < 0 {
		return 0
	}
	return used
}

// Close releases the file lock. It is idempotent.
func (w *WAL) Close() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	if w.db != nil {
		err = w.db.Close()
		w.db = nil
	}
	if err != nil {
		return fmt.Errorf("close wal %s: %w", w.path, err)
	}
	return nil
}

// Update runs fn in one bbolt read-write transaction: everything fn does
// is committed together, with one fsync (group commit), or not at all when
// fn returns an error. The Tx must not be used after fn returns.
func (w *WAL) Update(fn func(tx *Tx) error) (err error) {
	if w.opts.ReadOnly {
		return fmt.Errorf("update wal %s: %w", w.path, ErrReadOnly)
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	db := w.db
	w.mu.Unlock()
	if db == nil {
		return fmt.Errorf("update wal %s: %w", w.path, ErrClosed)
	}
	// bbolt holds the values Append put until the transaction ends.
	defer w.enc.release()
	defer func() {
		if err != nil {
			// The row ids of blocks a rolled-back transaction appended
			// are handed out again: their cached decoding must go too.
			w.cache.clear()
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer w.recoverCorrupt("update", &err)
	var (
		warnings []warning
		read     int64
		freed    []fileRange
	)
	// Pages a commit writes are read through the mapping by the commits
	// after it (the path an append or an ack walks), so they count toward
	// the next drop as row reads do: a backlog that only grows (nothing
	// claimed while the engine is down) would otherwise stay resident.
	// Only this transaction allocates meanwhile (wmu).
	before := db.Stats()
	err = db.Update(func(btx *bolt.Tx) error {
		warnings, read, freed = nil, 0, nil
		tx, err := w.newTx(btx)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		warnings, read, freed = tx.onCommit, tx.readBytes, tx.freed
		return tx.flush()
	})
	if err != nil {
		return err
	}
	for _, wa := range warnings {
		w.log.Warn(wa.msg, wa.args...)
	}
	after := db.Stats()
	w.diskTime.Store(int64(after.TxStats.GetWriteTime() - before.TxStats.GetWriteTime()))
	w.dropFreed(db, freed)
	w.afterCommit(db, read+after.TxStats.GetPageAlloc()-before.TxStats.GetPageAlloc())
	return nil
}

// afterCommit keeps the disk reserve (space.go) and, once transactions
// have read residentDropBytes of rows through bbolt's mapping, or written
// as many bytes of pages, since the last time, drops the mapped pages
// from the resident set (dropResident). Called with wmu held.
func (w *WAL) afterCommit(db *bolt.DB, read int64) {
	used, ok := usedSize(db)
	if !ok {
		return
	}
	w.keepReserve(used)
	if w.quiet() {
		// Unmapped first: the kernel keeps mapped pages in the cache.
		if dropResident(db, used) == nil && w.file != nil {
			_ = dropCache(w.file) // a failure only costs writes
		}
		w.readSinceDrop = 0
		return
	}
	w.readSinceDrop += read
	if w.readSinceDrop < residentDropBytes {
		return
	}
	w.readSinceDrop = 0
	if err := dropResident(db, used); err != nil && !errors.Is(err, errors.ErrUnsupported) && !w.dropFailed {
		w.dropFailed = true
		w.log.Warn("cannot release the WAL's mapped pages; the agent's resident memory grows with the rows it reads",
			"error", err.Error())
	}
}

// quietCommitGap: a commit this long after the one before it is a
// quiet WAL's (quiet).
const quietCommitGap = time.Second

// quiet reports whether this commit came quietCommitGap or more after
// the one before. After such a commit the WAL drops the file's pages from
// its mapping and the page cache: bbolt writes a run of pages with one
// write, which the kernel caches as one large folio, and a later one-page
// write into a cached large folio dirties the whole folio (the meta
// pages, which every commit writes, sit in the folio of bbolt's first
// write), so a quiet WAL wrote several times the pages it changed.
// Uncached, each page comes back on its own when read through the
// mapping (bbolt maps it MADV_RANDOM). The cost is reading the pages of
// the next commit from disk, once per gap at most. Called with wmu held.
func (w *WAL) quiet() bool {
	now := w.now()
	q := !w.lastCommit.IsZero() && now.Sub(w.lastCommit) >= quietCommitGap
	w.lastCommit = now
	return q
}

// View runs fn in a read-only transaction that sees one committed state.
// It runs beside Update (bbolt allows that within one process), so the
// agent's API reads the WAL the agent writes.
func (w *WAL) View(fn func(tx *ReadTx) error) (err error) {
	w.mu.Lock()
	db := w.db
	w.mu.Unlock()
	if db == nil {
		return fmt.Errorf("view wal %s: %w", w.path, ErrClosed)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer w.recoverCorrupt("view", &err)
	return db.View(func(btx *bolt.Tx) error {
		rt, err := w.newReadTx(btx)
		if err != nil {
			return err
		}
		return fn(rt)
	})
}

// recoverCorrupt turns a panic inside bbolt (it panics on damaged pages) or
// a memory fault on the mapping into an error wrapping ErrCorrupt, so a
// damaged file stops one transaction instead of the process. Callers
// enable SetPanicOnFault: a file truncated below its mapping (a torn copy,
// a full disk during a restore) faults where bbolt reads past its end, and
// db verify must report that rather than crash.
func (w *WAL) recoverCorrupt(op string, err *error) {
	if r := recover(); r != nil {
		w.log.Error("wal panic recovered", "op", op, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = fmt.Errorf("%s wal %s: %v (the file is damaged; `edge-agent db verify --db-path %s` lists the problems): %w",
			op, w.path, r, w.path, ErrCorrupt)
	}
}

// Compact writes a compacted copy of the WAL to dst, which must not exist.
// It reads one consistent snapshot; the WAL itself is not changed.
func (w *WAL) Compact(dst string) (err error) {
	dst, err = filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("compact wal %s: %w", w.path, err)
	}
	if dst == w.path {
		return fmt.Errorf("compact wal %s: destination is the WAL itself", w.path)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("compact wal %s: destination %s already exists", w.path, dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("compact wal %s: %w", w.path, err)
	}
	run := func(src *bolt.DB) error {
		out, err := bolt.Open(dst, 0o600, &bolt.Options{Timeout: w.opts.LockTimeout, FreelistType: bolt.FreelistMapType,
			NoFreelistSync: true, PageSize: pageSize()})
		if err != nil {
			return fmt.Errorf("compact wal %s: open %s: %w", w.path, dst, err)
		}
		if err := bolt.Compact(out, src, compactTxMaxSize); err != nil {
			_ = out.Close()
			_ = os.Remove(dst)
			return fmt.Errorf("compact wal %s into %s: %w", w.path, dst, err)
		}
		if err := out.Close(); err != nil {
			return fmt.Errorf("compact wal %s: close %s: %w", w.path, dst, err)
		}
		return nil
	}
	w.mu.Lock()
	db := w.db
	w.mu.Unlock()
	if db == nil {
		return fmt.Errorf("compact wal %s: %w", w.path, ErrClosed)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer w.recoverCorrupt("compact", &err)
	return run(db)
}
