package upgrade

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Clock is time as the supervisor sees it; tests inject their own.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Child is a started trial process.
type Child interface {
	// Done is closed when the process has exited.
	Done() <-chan struct{}
	// ExitCode is valid once Done is closed (-1: killed by a signal).
	ExitCode() int
	Signal(sig os.Signal) error
}

// Supervisor runs a trial and judges it (the launcher's role).
type Supervisor struct {
	Layout Layout
	// Start runs the binary at path as the trial of version.
	Start func(path, version string) (Child, error)
	Clock Clock
	Log   *slog.Logger
	// StopGrace is how long a trial that missed its deadline gets to stop
	// on SIGTERM before SIGKILL; zero means 30 s (the unit's
	// TimeoutStopSec).
	StopGrace time.Duration
}

// Verdict is how a trial ended.
type Verdict int

const (
	// Confirmed: the new version proved healthy; exec Result.Exec.
	Confirmed Verdict = iota + 1
	// RolledBack: the previous version runs again; exec Result.Exec.
	RolledBack
	// Stopped: the agent was asked to stop during the trial; exit with
	// Result.ExitCode. The trial is tried again at the next start.
	Stopped
)

// Result is Supervise's answer.
type Result struct {
	Verdict  Verdict
	Exec     string
	ExitCode int
	Reason   string
}

// Supervise runs the pending trial to its verdict. ctx done means a stop
// request: the trial is told to stop (SIGTERM) and waited for.
func (s *Supervisor) Supervise(ctx context.Context) (Result, error) {
	if s.Clock == nil {
		s.Clock = realClock{}
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.StopGrace <= 0 {
		s.StopGrace = 30 * time.Second
	}
	st, err := s.Layout.Load()
	if err != nil {
		return Result{}, err
	}
	if st.Trial == nil {
		return Result{Verdict: Confirmed, Exec: st.Current.Path}, nil
	}
	tr := *st.Trial
	if tr.Starts >= MaxTrialStarts {
		return s.rollback(st, fmt.Sprintf("started %d times without proving healthy (a crash loop, or killed each time)", tr.Starts))
	}
	st.Trial.Starts++
	if err := s.Layout.Save(st); err != nil {
		return Result{}, err
	}
	s.Log.Info("trying the new version", "version", tr.Version, "previous_version", st.Current.Version,
		"start", st.Trial.Starts, "health_deadline", time.Duration(tr.Deadline).String())
	child, err := s.Start(tr.Path, tr.Version)
	if err != nil {
		return s.rollback(st, fmt.Sprintf("could not start: %v", err))
	}
	deadline := s.Clock.After(time.Duration(tr.Deadline))
	reason := ""
	stopping, stoppedClean := false, false
	select {
	case <-child.Done():
		// Exit 0 unconfirmed is a clean stop (`edge-agent stop` reaches
		// the trial through its pid file): not a failure of the version.
		stoppedClean = child.ExitCode() == 0
		reason = fmt.Sprintf("exited with code %d before it reported healthy", child.ExitCode())
	case <-deadline:
		reason = fmt.Sprintf("not healthy within %s", time.Duration(tr.Deadline))
		s.stopChild(child)
	case <-ctx.Done():
		stopping = true
		s.stopChild(child)
	}
	after, err := s.Layout.Load()
	if err != nil {
		return Result{}, err
	}
	if after.Trial == nil && after.Current.Version == tr.Version {
		s.Log.Info("the new version proved healthy and is confirmed", "version", tr.Version)
		if stopping {
			return Result{Verdict: Stopped, ExitCode: 0}, nil
		}
		return Result{Verdict: Confirmed, Exec: after.Current.Path}, nil
	}
	if stopping || stoppedClean {
		s.Log.Info("stopped during the trial of a new version; it is tried again at the next start", "version", tr.Version)
		return Result{Verdict: Stopped, ExitCode: 0}, nil
	}
	return s.rollback(after, reason)
}

// stopChild asks the trial to stop and, past StopGrace, kills it.
func (s *Supervisor) stopChild(c Child) {
	_ = c.Signal(syscall.SIGTERM)
	select {
	case <-c.Done():
		return
	case <-s.Clock.After(s.StopGrace):
	}
	_ = c.Signal(syscall.SIGKILL)
	<-c.Done()
}

// rollback names the previous version again, records why, and removes
// the failed one's directory.
func (s *Supervisor) rollback(st State, reason string) (Result, error) {
	tr := st.Trial
	if tr == nil {
		return Result{Verdict: Confirmed, Exec: st.Current.Path}, nil
	}
	msg := fmt.Sprintf("version %s rolled back to %s: %s", tr.Version, st.Current.Version, reason)
	s.Log.Error("the new version failed its trial; rolling back", "version", tr.Version,
		"back_to", st.Current.Version, "reason", reason)
	st.Trial = nil
	st.Last = &Outcome{Version: tr.Version, Hash: tr.Hash, AllHash: tr.AllHash, Name: tr.Name, Failed: true, Error: msg, At: s.Clock.Now()}
	if err := s.Layout.Save(st); err != nil {
		return Result{}, err
	}
	if dir := filepath.Dir(filepath.Dir(tr.Path)); filepath.Dir(dir) == s.Layout.Root() && !samePath(tr.Path, st.Current.Path) {
		if err := os.RemoveAll(dir); err != nil {
			s.Log.Warn("could not remove the failed version", "dir", dir, "error", err)
		}
	}
	return Result{Verdict: RolledBack, Exec: st.Current.Path, Reason: msg}, nil
}

// Confirm is the trial's own call once it is healthy: version becomes
// current, the one it replaces previous, and older versions are removed.
func (l Layout) Confirm(version string, now time.Time) error {
	st, err := l.Load()
	if err != nil {
		return err
	}
	if st.Trial == nil || st.Trial.Version != version {
		return fmt.Errorf("confirm %s: no trial of it in %s", version, l.StateFile())
	}
	tr := st.Trial
	prev := st.Current
	next := State{Current: tr.Slot, Previous: &prev,
		Last: &Outcome{Version: tr.Version, Hash: tr.Hash, AllHash: tr.AllHash, Name: tr.Name, At: now}}
	if err := l.Save(next); err != nil {
		return err
	}
	l.prune(next)
	return nil
}

// prune keeps the staged versions that state names, and the downloads.
func (l Layout) prune(st State) {
	keep := map[string]bool{"download": true}
	for _, s := range []*Slot{&st.Current, st.Previous} {
		if s != nil {
			keep[s.Version] = true
		}
	}
	entries, err := os.ReadDir(l.Root())
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && !keep[e.Name()] {
			_ = os.RemoveAll(filepath.Join(l.Root(), e.Name()))
		}
	}
}
