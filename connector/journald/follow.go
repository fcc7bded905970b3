package journald

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edge-agent/edge-agent/transport/backoff"
)

// Bounds on what journalctl's stderr may put in the agent's log: each
// line is cut to stderrLineBytes and at most stderrLines are logged per
// journalctl process.
const (
	stderrLineBytes = 1024
	stderrLines     = 100
)

// startMode is where a journalctl run starts when there is no cursor.
type startMode uint8

const (
	fromSince startMode = iota // follower.since (journalctl --since)
	fromHead                   // the oldest entry
)

// counters are what the reader goroutine counts; Stats reads them.
type counters struct {
	entries, bytes, restarts, errors, truncated atomic.Int64
}

// follower runs journalctl --follow and feeds the queue with the entries
// it prints, one goroutine (run), restarting journalctl with the shared
// backoff when it exits or hangs.
type follower struct {
	bin     string
	src     []string // where to read: --directory, --file
	filters []string // what to read: units, priority, matches
	sel     selector
	limit   int
	log     *slog.Logger
	q       *queue
	pol     backoff.Policy
	hang    time.Duration
	c       *counters

	// Where the next run starts: after cursor when set, else by mode.
	cursor string
	mode   startMode
	since  string
	// savedRealtime is the saved cursor's time (µs), for the gap report
	// when the journal no longer holds it; 0 when unknown.
	savedRealtime int64

	mu   sync.Mutex
	proc *exec.Cmd // the journalctl --follow running now
	// cur is the cursor of the last entry queued, for the watcher and
	// Stats (cursor is the reader's own copy).
	cur atomic.Pointer[string]
	// lastOut is when the running journalctl last printed (unix ns);
	// blocked is set while the reader waits for room in the queue.
	lastOut atomic.Int64
	blocked atomic.Bool
}

func (f *follower) baseArgs() []string {
	return append([]string{"--output=export", "--no-pager", "--quiet"}, f.src...)
}

// followArgs are the arguments of one journalctl --follow run, and the
// cursor whose own entry it prints first and the reader drops.
func (f *follower) followArgs(at string, mode startMode) []string {
	// --no-tail: with --follow journalctl otherwise prints only 10
	// entries of the backlog after a --cursor, then waits for new ones.
	args := append(f.baseArgs(), "--follow", "--no-tail")
	switch {
	case at != "":
		args = append(args, "--cursor="+at)
	case mode == fromHead: // no position: from the oldest entry
	default:
		args = append(args, "--since="+f.since)
	}
	return append(args, f.filters...)
}

// run is the reader goroutine; it returns when ctx ends.
func (f *follower) run(ctx context.Context) {
	attempt := 0
	for ctx.Err() == nil {
		started := time.Now()
		got, err := f.once(ctx)
		if ctx.Err() != nil {
			return
		}
		if got > 0 || time.Since(started) > f.pol.Max {
			attempt = 0
		}
		wait := f.pol.Jittered(attempt)
		attempt++
		// Logged before it is counted: whoever sees the restart counted
		// finds why in the log.
		f.log.Warn("journalctl stopped; starting it again after a pause", "error", err, "retry_in", wait.String())
		f.c.restarts.Add(1)
		if backoff.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// once checks the resume cursor, runs one journalctl --follow and reads
// it until it ends. It returns how many entries it queued and why it
// ended.
func (f *follower) once(ctx context.Context) (int, error) {
	at, skip := "", ""
	if f.cursor != "" {
		var (
			err       error
			delivered bool
		)
		if at, delivered, err = f.resumeAt(ctx); err != nil {
			return 0, err
		}
		if delivered {
			skip = at // journalctl prints it first
		}
	}
	cmd := exec.Command(f.bin, f.followArgs(at, f.mode)...)
	setDeathSignal(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, fmt.Errorf("journalctl stdout: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, fmt.Errorf("journalctl stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", f.bin, err)
	}
	f.mu.Lock()
	f.proc = cmd
	f.mu.Unlock()
	// Close cancels ctx, then kills f.proc; this covers a Close that came
	// between Start and the line above.
	stopKill := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stopKill()
	f.lastOut.Store(time.Now().UnixNano())
	f.log.Debug("journalctl started", "pid", cmd.Process.Pid, "args", strings.Join(cmd.Args[1:], " "))

	var wg sync.WaitGroup
	wg.Go(func() { f.logStderr(stderr, cmd.Process.Pid) })
	watchCtx, stopWatch := context.WithCancel(ctx)
	wg.Go(func() { f.watch(watchCtx, cmd) })

	n, readErr := f.read(ctx, stdout, skip)
	stopWatch()
	// Stop it by its PID (a no-op when it already exited), then reap it.
	_ = cmd.Process.Kill()
	wg.Wait()
	waitErr := cmd.Wait()
	f.mu.Lock()
	f.proc = nil
	f.mu.Unlock()
	if readErr != nil && !errors.Is(readErr, io.EOF) && !errors.Is(readErr, io.ErrUnexpectedEOF) {
		return n, readErr
	}
	if waitErr != nil {
		return n, fmt.Errorf("journalctl (pid %d) ended: %w", cmd.Process.Pid, waitErr)
	}
	return n, fmt.Errorf("journalctl (pid %d) exited", cmd.Process.Pid)
}

// read parses journalctl's output into the queue until it ends.
func (f *follower) read(ctx context.Context, r io.Reader, skip string) (int, error) {
	p := newParser(&activity{r: r, at: &f.lastOut}, f.limit)
	var raw rawEntry
	n := 0
	for {
		if err := p.next(&raw); err != nil {
			if errors.Is(err, errSyntax) {
				f.c.errors.Add(1)
				f.log.Error("journalctl printed something that is not the export format; restarting it after the last entry read", "error", err)
			}
			return n, err
		}
		e := newEntry(&raw, f.sel)
		if skip != "" {
			first := skip
			skip = ""
			if sameEntry(e.cursor, first) {
				continue
			}
		}
		// Counted as read before it is handed over, so that no reader of
		// the counters sees more events than entries read.
		f.c.entries.Add(1)
		f.c.bytes.Add(e.bytes)
		f.c.truncated.Add(int64(e.truncated))
		f.blocked.Store(true)
		ok := f.q.push(ctx, e)
		f.blocked.Store(false)
		f.lastOut.Store(time.Now().UnixNano())
		if !ok {
			return n, ctx.Err()
		}
		if e.cursor != "" {
			f.cursor, f.savedRealtime = e.cursor, e.realtime
			f.cur.Store(&e.cursor)
		}
		n++
	}
}

// activity records the time of every read that returned bytes.
type activity struct {
	r  io.Reader
	at *atomic.Int64
}

func (a *activity) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// logStderr logs journalctl's stderr line by line, bounded.
func (f *follower) logStderr(r io.Reader, pid int) {
	br := bufio.NewReaderSize(r, stderrLineBytes)
	logged := 0
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\r\n") // copied: line is bufio's
			cut := errors.Is(err, bufio.ErrBufferFull)
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of an over-long line
				_, err = br.ReadSlice('\n')
			}
			switch {
			case logged < stderrLines:
				f.log.Warn("journalctl: "+text, "pid", pid, "cut", cut)
			case logged == stderrLines:
				f.log.Warn("journalctl: further stderr lines are not logged", "pid", pid)
			}
			logged++
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// watch kills cmd when it hangs: it printed nothing for the hang timeout
// while the reader was ready for more, and the journal holds a matching
// entry newer than the last one it printed, still after a short grace.
func (f *follower) watch(ctx context.Context, cmd *exec.Cmd) {
	tick := time.NewTicker(max(f.hang/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		last := f.lastOut.Load()
		if f.blocked.Load() || time.Since(time.Unix(0, last)) < f.hang {
			continue
		}
		newest, err := f.newest(ctx)
		if ctx.Err() != nil {
			return
		}
		cur := f.cursorNow()
		if err != nil || newest == nil || (cur != "" && sameEntry(newest.cursor, cur)) ||
			(cur == "" && newest.realtime*1000 < last) {
			// Idle, not hung (nothing matches, journalctl printed the
			// newest entry, or it is older than this run's start), or
			// the journal cannot say now: look again after a timeout.
			f.lastOut.CompareAndSwap(last, time.Now().UnixNano())
			continue
		}
		grace := min(f.hang, 5*time.Second)
		if backoff.Sleep(ctx, grace) != nil || f.lastOut.Load() != last || f.blocked.Load() {
			continue
		}
		f.log.Warn("journalctl printed nothing although the journal holds newer entries; killing it",
			"pid", cmd.Process.Pid, "silent_for", time.Since(time.Unix(0, last)).Round(time.Millisecond).String())
		_ = cmd.Process.Kill()
		return
	}
}

// cursorNow is the cursor of the last entry queued, or "".
func (f *follower) cursorNow() string {
	if c := f.cur.Load(); c != nil {
		return *c
	}
	return ""
}

// newest returns the newest entry the filters match, or nil.
func (f *follower) newest(ctx context.Context) (*entry, error) {
	args := append(append(f.baseArgs(), "--lines=1"), f.filters...)
	es, _, err := f.oneShot(ctx, args)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	return es[0], nil
}

// resumeAt finds where to resume after f.cursor: at f.cursor itself
// (delivered) when the journal still holds it, else at the oldest entry
// after its position (the journal rotated the entries between away; logged
// with the time range lost, not delivered), else "" with f.mode set to
// start from the oldest entry.
func (f *follower) resumeAt(ctx context.Context) (at string, delivered bool, err error) {
	args := append(f.baseArgs(), "--cursor="+f.cursor, "--lines=1")
	es, stderr, oerr := f.oneShot(ctx, args)
	if oerr != nil {
		if strings.Contains(stderr, "cursor") {
			f.log.Warn("the saved journal cursor is not valid for this journal; reading from its oldest entry",
				"cursor", f.cursor, "journalctl", stderr)
			f.cursor, f.mode = "", fromHead
			return "", false, nil
		}
		return "", false, oerr
	}
	if len(es) == 0 {
		f.log.Warn("the journal no longer holds the entry of the saved cursor, nor any after it; reading what comes next", "cursor", f.cursor)
		return f.cursor, true, nil
	}
	e := es[0]
	if sameEntry(e.cursor, f.cursor) {
		return f.cursor, true, nil
	}
	attrs := []any{"cursor", f.cursor, "resume_cursor", e.cursor}
	if f.savedRealtime > 0 && e.realtime > 0 {
		from, to := time.UnixMicro(f.savedRealtime).UTC(), time.UnixMicro(e.realtime).UTC()
		attrs = append(attrs, "lost_from", from.Format(time.RFC3339Nano), "lost_to", to.Format(time.RFC3339Nano),
			"lost_span", to.Sub(from).String())
	}
	f.log.Warn("journal entries after the saved cursor were rotated away before they were read; resuming from the oldest entry left", attrs...)
	f.c.errors.Add(1)
	return e.cursor, false, nil
}

// oneShot runs journalctl without --follow and parses what it prints
// (a bounded amount: the callers ask for one entry).
func (f *follower) oneShot(ctx context.Context, args []string) ([]*entry, string, error) {
	ctx, cancel := context.WithTimeout(ctx, max(f.hang, 10*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, f.bin, args...)
	setDeathSignal(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &limited{b: &errb, n: stderrLineBytes * 4}
	err := cmd.Run()
	stderr := strings.TrimSpace(errb.String())
	if err != nil {
		return nil, stderr, fmt.Errorf("%s %s: %w (%s)", f.bin, strings.Join(args, " "), err, stderr)
	}
	p := newParser(&out, f.limit)
	var raw rawEntry
	var es []*entry
	for p.next(&raw) == nil {
		es = append(es, newEntry(&raw, f.sel))
	}
	return es, stderr, nil
}

// limited keeps the first n bytes written to it and drops the rest.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// kill stops the running journalctl by its PID (Close); run reaps it.
func (f *follower) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.proc != nil && f.proc.Process != nil {
		_ = f.proc.Process.Kill()
	}
}

// sinceArg formats a time for journalctl --since (@seconds.micros).
func sinceArg(us int64) string {
	return "@" + strconv.FormatInt(us/1e6, 10) + "." + fmt.Sprintf("%06d", us%1e6)
}
