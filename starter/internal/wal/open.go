package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Open opens or creates the WAL at opts.Path. See doc.go for the errors.
func Open(opts Options) (*WAL, error) {
	if opts.Path == "" {
		return nil, errors.New("open wal: empty path")
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = defaultLockTimeout
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = defaultCheckTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	path, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open wal %s: %w", opts.Path, err)
	}
	opts.Path = path
	if err := checkLaneOptions(opts); err != nil {
		return nil, fmt.Errorf("open wal %s: %w", path, err)
	}
	w := &WAL{opts: opts, path: path, log: opts.Logger.With("wal", path), now: opts.Now}
	if opts.ReadOnly {
		return w, w.openReadOnly()
	}
	return w, w.openReadWrite()
}

func (w *WAL) openReadWrite() error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return fmt.Errorf("open wal %s: create parent dir: %w", w.path, err)
	}
	if err := w.precheck(); err != nil {
		return err
	}
	var file *os.File
	bo := w.boltOptions()
	bo.InitialMmapSize = initialMmapSize
	bo.PageSize = pageSize()
	bo.OpenFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, mode)
		file = f // kept for the disk reserve (space.go)
		return f, err
	}
	db, err := w.openBolt(bo)
	if err != nil {
		return err
	}
	if !w.opts.Fsync {
		w.log.Warn("wal fsync disabled: committed rows can be lost on a host crash")
	}
	if err := w.initOrCheck(db); err != nil {
		_ = db.Close()
		return err
	}
	w.db = db
	w.file = file
	// bbolt's open read a header of every page through the mapping (the
	// free-page scan): release them (afterCommit), and keep the reserve.
	// The page cache goes too: a new file's first write put its meta
	// pages, which every commit writes, in one large folio (WAL.quiet).
	w.afterCommit(db, residentDropBytes)
	if file != nil {
		_ = dropCache(file) // a failure only costs writes
	}
	for _, s := range staleLockSuffixes {
		_ = os.Remove(w.path + s)
	}
	return nil
}

// openBolt is bolt.Open with what bbolt panics on in this goroutine (a
// file changed between the check and the open) turned into an error.
func (w *WAL) openBolt(bo *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("wal panic recovered", "op", "open", "panic", fmt.Sprint(r))
			db, err = nil, damagedError(w.path, []string{fmt.Sprintf("bbolt: %v", r)}, 0)
		}
	}()
	db, err = bolt.Open(w.path, 0o600, bo)
	if err != nil {
		return nil, w.openError(err)
	}
	return db, nil
}

func (w *WAL) initOrCheck(db *bolt.DB) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("wal panic recovered", "op", "open", "panic", fmt.Sprint(r))
			err = damagedError(w.path, []string{fmt.Sprintf("bbolt: %v", r)}, 0)
		}
	}()
	err = db.Update(func(btx *bolt.Tx) error {
		if err := initOrCheck(btx, w.now()); err != nil {
			return err
		}
		if err := w.initKeys(btx); err != nil {
			return err
		}
		if err := setUpLanes(btx, w.opts.Lanes); err != nil {
			return err
		}
		on, err := setUpClaimIDs(btx, w.opts)
		w.claimIDs = on
		return err
	})
	if err != nil {
		return fmt.Errorf("open wal %s: %w", w.path, err)
	}
	return nil
}

func (w *WAL) openReadOnly() error {
	st, err := os.Stat(w.path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open wal %s: no such file: %w", w.path, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("open wal %s: %w", w.path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("open wal %s: is a directory: %w", w.path, ErrNotWAL)
	}
	if st.Size() == 0 {
		return fmt.Errorf("open wal %s: empty file: %w", w.path, ErrNotWAL)
	}
	// bbolt's shared lock: the open fails with ErrLocked while an agent
	// has the file, and keeps one from starting while this is open.
	db, err := bolt.Open(w.path, 0o600, w.boltOptions())
	if err != nil {
		return w.openError(err)
	}
	w.db = db
	// A first read validates the file now rather than at the first command,
	// and reads its keys. A damaged tree is not an open error: verify and
	// salvage must get to the file, and every other read reports the
	// damage itself.
	err = w.View(func(rt *ReadTx) error {
		if err := w.initKeys(rt.btx); err != nil {
			return fmt.Errorf("open wal %s: %w", w.path, err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrCorrupt) {
		_ = w.Close()
		return err
	}
	return nil
}

// pageSize is the bbolt page size of a new WAL file (an existing file
// keeps the one it was created with): every commit rewrites a few pages
// whatever its size, so smaller pages write fewer bytes per commit
// (BenchmarkWriteAmplification).
func pageSize() int {
	return max(walPageSize, os.Getpagesize())
}

func (w *WAL) boltOptions() *bolt.Options {
	return &bolt.Options{
		Timeout:  w.opts.LockTimeout,
		ReadOnly: w.opts.ReadOnly,
		NoSync:   !w.opts.Fsync,
		// The freelist is rebuilt at open instead of written at every
		// commit: a queue frees pages constantly, and writing the list each
		// time would cost more than the rows.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	}
}

func (w *WAL) openError(err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("another edge-agent is using %s: %w", w.path, ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return fmt.Errorf("open wal %s: not a bbolt file or its header is damaged (%v); if it is the agent's WAL, "+
			"`%s` copies the rows still on its pages into a new file: %w", w.path, err, SalvageCommand(w.path), ErrNotWAL)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("open wal %s: no such file: %w", w.path, ErrNotFound)
	}
	// bbolt reports a too-short foreign file as a plain error.
	if st, serr := os.Stat(w.path); serr == nil && st.Mode().IsRegular() && st.Size() > 0 && st.Size() < 2*1024 {
		return fmt.Errorf("open wal %s: not a bbolt file (%v): %w", w.path, err, ErrNotWAL)
	}
	return fmt.Errorf("open wal %s: %w", w.path, err)
}
