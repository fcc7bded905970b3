package process

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// ErrNoPID is returned by ReadPID when the pid file is missing or does not
// hold a positive decimal pid.
var ErrNoPID = errors.New("no pid in pid file")

// errHeld is what tryLock returns when another open file holds the lock.
var errHeld = errors.New("pid file is locked")

// RunningError is returned by AcquirePID when a live agent holds the pid
// file.
type RunningError struct {
	Path string
	PID  int // 0 while that agent has not written its pid yet
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("another edge-agent is running (pid %d, pid file %s)", e.PID, e.Path)
}

// State is the result of Probe.
type State struct {
	// Running is true while a process holds the pid file's lock.
	Running bool
	// PID is the pid read from the file, 0 when there was none (no file,
	// garbage, or an agent that has locked the file but not written yet).
	PID int
}

// ReadPID returns the pid stored in path. A missing file or one that does
// not hold a positive number yields an error wrapping ErrNoPID; other read
// failures (permissions) are returned as they are.
func ReadPID(path string) (int, error) {
	b, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("read pid file %s: %w", path, ErrNoPID)
	}
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("read pid file %s: %q: %w", path, strings.TrimSpace(string(b)), ErrNoPID)
	}
	return pid, nil
}

// readFile reads the pid file through openFile, so that a read never makes
// the holder's removal of it fail.
func readFile(path string) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Probe tells whether an agent holds the pid file at path. The lock, not
// the pid in the file, decides: the kernel drops it when the holder exits,
// however it exits, so a pid file left by a kill -9 (whose pid may since
// belong to a stranger) reads as not running. An error means the answer is
// unknown (the file cannot be opened or locked for a reason other than
// another holder); State then carries what could be read.
func Probe(path string) (State, error) {
	f, err := openFile(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("probe pid file: %w", err)
	}
	defer f.Close()
	pid, _ := ReadPID(path)
	switch err := tryLock(f, false); {
	case err == nil:
		_ = unlock(f)
		return State{PID: pid}, nil
	case errors.Is(err, errHeld):
		return State{Running: true, PID: pid}, nil
	default:
		return State{PID: pid}, fmt.Errorf("probe pid file %s: %w", path, err)
	}
}

// PIDLock is a running agent's hold on its pid file. It lasts until
// Release or the end of the process.
type PIDLock struct {
	f       *os.File
	path    string
	release sync.Once
	err     error
}

// AcquirePID locks path for this process and writes pid into it, creating
// parent folders. It fails with a *RunningError while another process
// holds the lock. A file left behind by an agent that died is simply taken
// over: its lock died with it.
func AcquirePID(path string, pid int) (*PIDLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("create pid file folder: %w", err)
	}
	// A stopping agent removes its file while still holding the lock: a
	// file opened just before that removal can be locked but is no longer
	// the path, so check and try the new file. Three rounds cover two
	// agents stopping and starting in a row; more means a fight.
	for range 3 {
		f, err := openFile(path, os.O_RDWR|os.O_CREATE)
		if err != nil {
			return nil, fmt.Errorf("open pid file: %w", err)
		}
		if err := tryLock(f, true); err != nil {
			f.Close()
			if errors.Is(err, errHeld) {
				old, _ := ReadPID(path)
				return nil, &RunningError{Path: path, PID: old}
			}
			return nil, fmt.Errorf("lock pid file %s: %w", path, err)
		}
		if !samePath(f, path) {
			f.Close()
			continue
		}
		if err := writePID(f, pid); err != nil {
			f.Close()
			return nil, fmt.Errorf("write pid file %s: %w", path, err)
		}
		return &PIDLock{f: f, path: path}, nil
	}
	old, _ := ReadPID(path)
	return nil, &RunningError{Path: path, PID: old}
}

func samePath(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Stat(path)
	return err == nil && os.SameFile(held, named)
}

func writePID(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0); err != nil {
		return err
	}
	// Readers open the file by name: the permission must hold also when
	// the file was left by an older agent with a wider mode.
	return f.Chmod(0o640)
}

// Release removes the pid file and drops the lock; removing first means
// no reader sees a file without a holder once the agent is gone. Safe to
// call more than once and from a signal handler's goroutine.
func (l *PIDLock) Release() error {
	l.release.Do(func() {
		var rmErr error
		if samePath(l.f, l.path) {
			if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				rmErr = fmt.Errorf("remove pid file: %w", err)
			}
		}
		l.err = errors.Join(rmErr, l.f.Close())
	})
	return l.err
}
