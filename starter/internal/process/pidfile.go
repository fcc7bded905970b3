package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrNoPID is returned by ReadPID when the pid file is missing or does not
// hold a positive decimal pid.
var ErrNoPID = errors.New("no pid in pid file")

// RunningError is returned by WritePID when the pid file names another live
// process.
type RunningError struct {
	Path string
	PID  int
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("another edge-agent is running (pid %d, pid file %s)", e.PID, e.Path)
}

// State is the result of Probe.
type State struct {
	// Running is true when the pid file names a live process.
	Running bool
	// PID is the pid read from the file, 0 when there was none.
	PID int
}

// ReadPID returns the pid stored in path. A missing file or one that does
// not hold a positive number yields an error wrapping ErrNoPID; other read
// failures (permissions) are returned as they are.
func ReadPID(path string) (int, error) {
	b, err := os.ReadFile(path)
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

// IsRunning reports whether a process with this pid exists. Signal 0 checks
// existence without delivering anything; EPERM means it exists but belongs
// to another user, which still counts as running. A zombie (exited, not yet
// reaped because its parent or a container's init does not reap) has ended
// and is not running, although signal 0 still succeeds on it.
func IsRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !isZombie(pid)
}

// IsAgent is IsRunning plus a check that pid is not positively another
// program (on Linux: its argv[0] names edge-agent or this executable). A
// pid from a stale pid file that now belongs to a stranger is not running
// as far as the agent is concerned.
func IsAgent(pid int) bool {
	return IsRunning(pid) && !otherProgram(pid)
}

// Probe reads path and reports whether the agent it names is alive (see
// IsAgent). It never fails: anything unreadable is "not running".
func Probe(path string) State {
	pid, err := ReadPID(path)
	if err != nil {
		return State{}
	}
	return State{Running: IsAgent(pid), PID: pid}
}

// WritePID records pid in path, creating parent folders. It refuses with a
// *RunningError when the file already names a live agent other than pid,
// and replaces a stale file (dead process, another program, garbage).
//
// The content is written to a temporary file and hard-linked into place:
// link fails when the target exists, so two starters never both win and a
// reader never sees a half-written pid.
//
// On a full disk a stale file is removed first, so the agent can start
// again after it was killed on a disk that filled up meanwhile.
func WritePID(path string, pid int) error {
	err := writePID(path, pid)
	if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
		return err
	}
	// A full disk. The stale file of an agent that was killed holds the
	// room a pid needs: give it up and try once more.
	old, rerr := ReadPID(path)
	if (rerr == nil && old != pid && !IsAgent(old)) || errors.Is(rerr, ErrNoPID) {
		if os.Remove(path) == nil {
			return writePID(path, pid)
		}
	}
	return err
}

func writePID(path string, pid int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create pid file folder: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".edge-agent.pid.*")
	if err != nil {
		return fmt.Errorf("create pid file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	_, werr := fmt.Fprintf(tmp, "%d\n", pid)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	if err := os.Chmod(tmpName, 0o644); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	// Two rounds: the second follows the removal of a stale file. A third
	// conflict means another starter is racing us; report it as running.
	for range 2 {
		err := os.Link(tmpName, path)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write pid file: %w", err)
		}
		old, rerr := ReadPID(path)
		switch {
		case rerr == nil && old == pid:
			return nil
		case rerr == nil && IsAgent(old):
			return &RunningError{Path: path, PID: old}
		case rerr != nil && !errors.Is(rerr, ErrNoPID):
			return rerr
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale pid file: %w", err)
		}
	}
	old, _ := ReadPID(path)
	return &RunningError{Path: path, PID: old}
}

// RemovePID deletes path if it still names pid. A file taken over by another
// process, or already gone, is left alone.
func RemovePID(path string, pid int) error {
	cur, err := ReadPID(path)
	if err != nil || cur != pid {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove pid file: %w", err)
	}
	return nil
}
